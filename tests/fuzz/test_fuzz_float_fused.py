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
from tests.fuzz.float_models import FLOAT_PATTERNS, float_models

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
