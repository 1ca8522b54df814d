"""Every real model of ../shared/corpus against LiteRT's stored reference outputs and intermediates.

Uses the shared checker (../shared/tools/corpus_check.py), the same check anyone can run by hand. A model
matches when its outputs equal LiteRT's reference kernels' (integers exactly, floats to 1e-4 of the largest
magnitude) and every stored intermediate tensor agrees too. Models litert_py cannot run yet are listed
xfails naming the issue that brings them (strict: a model that starts passing must come off the list).
"""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"

NOT_YET: dict[str, str] = {}


def _checker():
    spec = importlib.util.spec_from_file_location("corpus_check", SHARED / "tools" / "corpus_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _models():
    out = []
    for m in sorted(CORPUS.glob("*.tflite")):
        marks = [pytest.mark.xfail(reason=NOT_YET[m.stem], strict=True)] if m.stem in NOT_YET else []
        out.append(pytest.param(m, id=m.stem, marks=marks))
    return out


def test_corpus_present():
    assert len(list(CORPUS.glob("*.tflite"))) >= 7, f"expected the shared corpus at {CORPUS}"


@pytest.mark.parametrize("model", _models())
def test_corpus_model_matches_litert(model):
    refs = CORPUS / "refs" / (model.stem + ".npz")
    result = _checker().check_model(model, refs, bench=False, intermediates=True)
    assert result["status"] == "match", result["detail"]  # equal to the reference kernels, not just close
