"""Differential fuzzing of the prepare-time fusions (litert_py/ops/fusion.py): random int8 / uint8 models of the
shapes the fusions target (tests/fuzz/fused_models.py: MobileNet blocks, classifier tails, streaming ring-buffer
blocks; float input and output through QUANTIZE / DEQUANTIZE; tensors that are outputs or read twice; all tensors
preserved), every output of 3-5 invokes with different inputs equal to BUILTIN_REF's (integers exactly, floats byte
for byte; with ``experimental_preserve_all_tensors`` every intermediate too). A model LiteRT refuses must be refused
by litert_py as well; litert_py may refuse one LiteRT runs into undefined behaviour only with one of its deliberate
refusals (``fused_check.DELIBERATE``: "refused"). Each case runs in a forked child: ai-edge-litert aborts the
process on a few models (nothing to compare then; such a case counts as an "oracle-crash").

The CI profile draws 100 models per pattern, dev 160; ``LITERT_PY_HYPOTHESIS_PROFILE=long`` 2000 random ones.
``python tools/fuzz_fused.py --cases N --seed S`` runs many more and saves the failing models.
Mismatches found so far are listed as strict xfails in tests/fuzz/test_fuzz_fused_found.py.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings

from tests.fuzz.fused_check import compare_isolated
from tests.fuzz.fused_models import PATTERNS, fused_models

#: models per pattern: four times the profile's max_examples (ci 100, dev 160), at most 2000 (long)
EXAMPLES = min(4 * settings.default.max_examples, 2000)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_fused_models_equal_builtin_ref(pattern):
    results = []

    @settings(max_examples=EXAMPLES)
    @given(fused_models(pattern))
    def case(c):
        r = compare_isolated(c)
        event(r.kind)
        results.append(r.kind)
        assert r.kind in ("ok", "rejected", "refused", "oracle-crash"), (
            f"{r.kind}: {r.message}\nsteps: {r.steps}\n{c!r}"
        )

    case()
    assert results.count("ok") >= len(results) // 2, f"most cases rejected: {results}"
