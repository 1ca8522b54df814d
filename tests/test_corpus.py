"""Every real model of tests/corpus against LiteRT's stored reference outputs and intermediates.

Uses the project's checker (``python -m litert_py.tools.check``, the same check anyone can run by hand). A model
matches when its outputs equal LiteRT's reference kernels' (integers exactly, floats to 1e-4 of the largest
magnitude) and every stored intermediate tensor agrees too. Models litert_py cannot run yet would be listed
strict xfails naming the issue that brings them (a model that starts passing must come off the list).
The corpus files and their provenance: tests/corpus/README.md.
"""

from __future__ import annotations

import hashlib
import json
import pathlib

import numpy as np
import pytest

from litert_py.tools import check
from tests.oracle import require

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
REFS = CORPUS / "refs"

# The models tests/corpus/README.md lists, each with the reference outputs made by LiteRT's reference kernels.
MODELS = [
    "efficientword_net__logmelcalc",
    "mediapipe__face_detection_short_range",
    "pymicro_wakeword__okay_nabu",
    "silabs_mltk__image_example1",
    "silabs_mltk__image_example1.float32",
    "silabs_mltk__keyword_spotting_mobilenetv2",
    "tflite_micro__sine_float",
]
NOT_YET: dict[str, str] = {}


def _params():
    return [
        pytest.param(m, id=m, marks=[pytest.mark.xfail(reason=NOT_YET[m], strict=True)] if m in NOT_YET else [])
        for m in MODELS
    ]


def test_corpus_present():
    missing = [m for m in MODELS if not (CORPUS / f"{m}.tflite").is_file() or not (REFS / f"{m}.npz").is_file()]
    assert not missing, f"missing from {CORPUS}: {missing}"
    readme = (CORPUS / "README.md").read_text()
    assert all(f"`{m}.tflite`" in readme for m in MODELS), "every vendored model has a provenance row"


@pytest.mark.parametrize("name", _params())
def test_corpus_model_matches_litert(name):
    result = check.check_model(CORPUS / f"{name}.tflite", REFS / f"{name}.npz", intermediates=True)
    assert result.status == "match", result.detail  # equal to the reference kernels, not just close


# -- the checker itself ---------------------------------------------------------------------------------------

SINE = "tflite_micro__sine_float"
WAKEWORD = "pymicro_wakeword__okay_nabu"


def _edited_refs(tmp_path, name, edit) -> pathlib.Path:
    ref = np.load(REFS / f"{name}.npz", allow_pickle=False)
    arrays = {k: ref[k] for k in ref.files}
    edit(arrays)
    out = tmp_path / f"{name}.npz"
    np.savez(out, **arrays)
    return out


def test_check_reads_every_stateful_step():
    ref = np.load(REFS / f"{WAKEWORD}.npz", allow_pickle=False)
    steps = check.read_steps(ref)
    assert len(steps) == 5
    assert all(len(s.outputs[0]) == 2 for s in steps)  # reference kernels' output, then the optimized kernels'
    np.testing.assert_array_equal(steps[3].inputs[0], ref["s3_in_0"])


def test_check_flags_a_wrong_integer_in_a_later_step(tmp_path):
    def edit(a):
        a["s3_out_0"] = a["s3_out_0"].copy()
        a["s3_out_0"].flat[0] ^= 1
        a["s3_opt_out_0"] = a["s3_out_0"]

    result = check.check_model(CORPUS / f"{WAKEWORD}.tflite", _edited_refs(tmp_path, WAKEWORD, edit))
    assert result.status == "mismatch"
    assert "step3/out0: 1/" in result.detail


def test_check_float_tolerance_and_optimized_fallback(tmp_path):
    def off_by(rel, opt_too):
        def edit(a):
            scale = np.max(np.abs(a["out_0"]))
            a["out_0"] = (a["out_0"] + rel * scale).astype(np.float32)
            if opt_too:
                a["opt_out_0"] = a["out_0"]

        return edit

    model = CORPUS / f"{SINE}.tflite"
    assert check.check_model(model, _edited_refs(tmp_path, SINE, off_by(1e-3, True))).status == "mismatch"
    # the optimized kernels still hold the true output: litert_py equals them
    assert check.check_model(model, _edited_refs(tmp_path, SINE, off_by(1e-3, False))).status == "match-opt"
    assert check.check_model(model, _edited_refs(tmp_path, SINE, off_by(1e-3, False)), strict=True).ok is False
    assert check.check_model(model, _edited_refs(tmp_path, SINE, off_by(2e-5, True))).status == "match"


def test_check_names_the_first_differing_intermediate(tmp_path):
    name = "silabs_mltk__keyword_spotting_mobilenetv2"
    inter = np.load(REFS / f"{name}.intermediates.npz", allow_pickle=False)
    arrays = {k: inter[k] for k in inter.files}
    keys = sorted(int(k[1:]) for k in arrays if k.startswith("t") and k[1:].isdigit())
    target = keys[len(keys) // 2]
    arrays[f"t{target}"] = arrays[f"t{target}"] + np.int8(1)
    (tmp_path / "refs").mkdir()
    np.savez(tmp_path / "refs" / f"{name}.intermediates.npz", **arrays)
    (tmp_path / "refs" / f"{name}.npz").write_bytes((REFS / f"{name}.npz").read_bytes())
    result = check.check_model(CORPUS / f"{name}.tflite", tmp_path / "refs" / f"{name}.npz", intermediates=True)
    assert result.status == "mismatch"
    names = json.loads(str(inter["tensor_names"]))
    assert result.notes[0].startswith(f"step0: first differing tensor {target} {names.get(str(target), '')!r}")


def test_check_cli(tmp_path, capsys):
    assert check.main([str(CORPUS), "--filter", "sine|image_example1.float32", "--json", str(tmp_path / "v.json")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == "corpus: 2/2 models match (2 equal to LiteRT's reference kernels)"
    assert json.loads((tmp_path / "v.json").read_text())[f"{SINE}.tflite"]["status"] == "match"

    def edit(a):
        a["out_0"] = a["out_0"] * 2

    bad = _edited_refs(tmp_path, SINE, edit)
    assert check.main([str(CORPUS / f"{SINE}.tflite"), "--refs", str(bad), "--isolate", "--strict"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"mismatch  {SINE}.tflite: step0/out0: rel ")
    assert out.strip().endswith("corpus: 0/1 models match (0 equal to LiteRT's reference kernels)")


def test_vendored_corpus_is_what_the_readme_says():
    """The README's table lists a SHA-256 per file: the vendored bytes are the published ones."""
    readme = (CORPUS / "README.md").read_text()
    for m in MODELS:
        digest = hashlib.sha256((CORPUS / f"{m}.tflite").read_bytes()).hexdigest()
        assert digest[:16] in readme, f"{m}.tflite: sha256 {digest[:16]} not in tests/corpus/README.md"


def test_check_with_a_delegate(capsys):
    """``--delegate onnxruntime``: face_detection's float graph runs in ONNX Runtime and still matches the
    reference; a name that does not load is a usage error (exit 2), not a verdict on every model."""
    require("onnxruntime")
    model = CORPUS / "mediapipe__face_detection_short_range.tflite"
    result = check.check_model(model, REFS / f"{model.stem}.npz", delegates=("onnxruntime",))
    assert result.ok, result.notes
    it = check._interpreter(model, [], {}, preserve=False, delegates=("onnxruntime",))
    assert [d["op_name"] for d in it._get_ops_details()].count("DELEGATE") == 1
    assert check.main([str(model), "--delegate", "onnxruntime"]) == 0
    assert "1/1 models match" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        check.main([str(model), "--delegate", "no_such_delegate_module"])
    assert e.value.code == 2 and "--delegate no_such_delegate_module" in capsys.readouterr().err
