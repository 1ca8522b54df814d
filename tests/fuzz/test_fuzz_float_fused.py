"""Differential fuzzing of the float prepare-time fusions (litert_py/ops/fusion.py: standalone clamps folded into
their producer, 1-row FULLY_CONNECTED chains, RESHAPE stores): random float32 models of those shapes
(tests/fuzz/float_models.py) with NaN, +-inf, -0.0, +-FLT_MAX and denormals in inputs and constants, several
invokes, a batch resized or tensors allocated again between them. Every output of the fused run (the default) must
be byte for byte that of the unfused run (``experimental_preserve_all_tensors=True``), NaN payloads and signs
included (a difference there only is "nan-payload", a failure too), and within the float tolerance of BUILTIN_REF
(tests/fuzz/float_check.py; differences on invokes whose values reach 1e30 or inf are "overflow": summation order
and FMA decide those). Each case runs in a forked child.

The CI profile draws 50 models per pattern (hypothesis derandomized: a fixed sequence), dev 80,
``LITERT_PY_HYPOTHESIS_PROFILE=long`` 2000. ``python tools/fuzz_fused.py --float --cases N --seed S`` runs more.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings

from tests.fuzz.float_check import PASSING, compare_float_isolated
from tests.fuzz.float_models import BIG, FLOAT_PATTERNS, float_models

#: models per pattern: twice the profile's max_examples (ci 50, dev 80), at most 2000 (long)
EXAMPLES = min(2 * settings.default.max_examples, 2000)


@pytest.mark.parametrize("pattern", FLOAT_PATTERNS)
def test_float_fusions_equal_unfused_and_builtin_ref(pattern):
    results = []

    @settings(max_examples=EXAMPLES)
    @given(float_models(pattern))
    def case(c):
        r = compare_float_isolated(c)
        event(r.kind)
        results.append((r.kind, r.message))
        assert r.kind in PASSING, f"{r.kind}: {r.message}\nsteps: {r.steps}\n{c!r}"

    case()
    kinds = [k for k, _ in results]
    assert kinds.count("ok") >= len(kinds) // 2, f"most cases not compared: {kinds}"
    fused = sum(k == "ok" and not m.startswith("0 ") for k, m in results)
    assert fused >= len(kinds) // 2, f"most cases fused nothing: {results}"


@pytest.mark.parametrize("big", sorted(BIG))
def test_blocked_float_kernels_take_their_clamp(big):
    """Each large layer that selects a blocked float kernel (float_models.BIG: pointwise, per-tap, planes, blocked
    depthwise, channel row), followed by a clamp: the clamp is fused into it (one step fewer) and the outputs equal
    the unfused run's byte for byte and BUILTIN_REF's within the tolerance. The random sequence alone reaches these
    kernels rarely (a large layer in one conv model of eight)."""
    results = []

    @settings(max_examples=4)
    @given(float_models(big=big))
    def case(c):
        r = compare_float_isolated(c)
        results.append((r.kind, r.message))
        assert r.kind in PASSING, f"{r.kind}: {r.message}\nsteps: {r.steps}\n{c!r}"

    case()
    assert any(k == "ok" and not m.startswith("0 ") for k, m in results), f"no clamp fused: {results}"
