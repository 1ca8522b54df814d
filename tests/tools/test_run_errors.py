"""tflite-run (litert_py.tools.run) errors: one line on stderr, exit 1 (model) or 2 (arguments)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tools.test_run import (
    assert_one_line_error,
    bad_prepare_model,
    custom_op_model,
    fc_model,
    run_main,
    two_input_model,
)


# -- errors: one line on stderr, exit 1 (model) or 2 (arguments) ----------------------------------------
@pytest.mark.parametrize(
    "argv, needles",
    [
        (["--bogus"], ["unrecognized arguments: --bogus"]),
        (["--runs", "0"], ["--runs", ">= 1"]),
        (["--num-threads", "x"], ["--num-threads", "invalid int value"]),
        (["--seed", "1.5"], ["--seed"]),
        (["a.tflite", "b.tflite"], ["unrecognized arguments: b.tflite"]),
    ],
)
def test_usage_errors(capsys, argv, needles):
    rc, out, err = run_main(capsys, *argv)
    assert rc == 2 and out == ""
    assert_one_line_error(err, *needles)


def test_error_missing_model(capsys, tmp_path):
    rc, out, err = run_main(capsys, tmp_path / "nope.tflite")
    assert rc == 1 and out == ""
    assert_one_line_error(err, "nope.tflite", "no such file")


def test_error_model_is_a_directory(capsys, tmp_path):
    rc, _, err = run_main(capsys, tmp_path)
    assert rc == 1
    assert_one_line_error(err, "directory")


def test_error_not_a_tflite_file(capsys, write):
    rc, out, err = run_main(capsys, write("junk.tflite", b"this is not a flatbuffer at all"))
    assert rc == 1 and out == ""
    assert_one_line_error(err, "junk.tflite", "not a valid Flatbuffer")


def test_error_truncated_model(capsys, write):
    rc, _, err = run_main(capsys, write("cut.tflite", fc_model()[:200]))
    assert rc == 1
    assert_one_line_error(err, "cut.tflite")


def test_error_unsupported_ops(capsys, write):
    rc, out, err = run_main(capsys, write("custom.tflite", custom_op_model("NoSuchOpForTfliteRun")))
    assert rc == 1 and out == ""
    assert_one_line_error(err, "cannot load model", "NoSuchOpForTfliteRun")


def test_error_prepare(capsys, write):
    rc, out, err = run_main(capsys, write("bad.tflite", bad_prepare_model()))
    assert rc == 1 and out == ""
    assert_one_line_error(err, "cannot prepare model", "FULLY_CONNECTED", "Node number 0")


def test_error_invoke(capsys, write):
    rc, out, err = run_main(capsys, write("boom.tflite", custom_op_model("TfliteRunTestBoom")))
    assert rc == 1
    assert "Model: " in out  # the summary came before the failing run
    assert_one_line_error(err, "model failed to run", "index 7 is out of bounds", "TfliteRunTestBoom")


def test_error_input_file_not_found(capsys, fc, tmp_path):
    rc, out, err = run_main(capsys, fc, "--input", f"x={tmp_path / 'missing.npy'}")
    assert rc == 2 and out == ""
    assert_one_line_error(err, "input file not found", "missing.npy")


def test_error_input_file_unreadable(capsys, fc, write):
    rc, _, err = run_main(capsys, fc, "--input", f"x={write('text.npy', b'not numpy')}")
    assert rc == 2
    assert_one_line_error(err, "cannot read input file", "text.npy")


@pytest.mark.parametrize(
    "spec, needles",
    [
        ("zz={x}", ["unknown input name 'zz'", "'x'"]),
        ("7={x}", ["unknown input name '7'"]),
        ("={x}", ["expected NAME=FILE"]),
        ("{npz}", ["unknown input name 'nope'"]),
    ],
)
def test_error_input_name_unknown(capsys, fc, write, spec, needles):
    x = write("x.npy", np.ones((2, 4), np.float32))
    npz = write("n.npz", {"nope": np.ones((2, 4), np.float32)})
    rc, out, err = run_main(capsys, fc, "--input", spec.format(x=x, npz=npz))
    assert rc == 2 and out == ""
    assert_one_line_error(err, *needles)


def test_error_input_given_twice_and_ambiguous(capsys, write):
    path = write("two.tflite", two_input_model())
    a = write("a.npy", np.ones((1, 4), np.float32))
    rc, _, err = run_main(capsys, path, "--input", f"a={a}", "--input", f"0={a}")
    assert rc == 2
    assert_one_line_error(err, "given twice")
    rc, _, err = run_main(capsys, path, "--input", a)  # a bare .npy for a two-input model
    assert rc == 2
    assert_one_line_error(err, "has 2 inputs")
    npz = write("ab.npz", {"p": np.ones((1, 4), np.float32), "q": np.ones((1, 4), np.float32)})
    rc, _, err = run_main(capsys, path, "--input", f"a={npz}")
    assert rc == 2
    assert_one_line_error(err, "holds 2 arrays", "none is named 'a'")


@pytest.mark.parametrize("signature", [False, True])
@pytest.mark.parametrize(
    "value, needles",
    [
        (np.ones((2, 4), np.float64), ["Got value of type FLOAT64 but expected type FLOAT32"]),
        (np.ones((3, 4), np.float32), ["Dimension mismatch. Got 3 but expected 2 for dimension 0"]),
        (np.ones((8,), np.float32), ["Dimension mismatch. Got 1 but expected 2"]),
    ],
)
def test_error_input_shape_or_dtype(capsys, fc, write, value, needles, signature):
    extra = ["--signature", "serving_default"] if signature else []
    rc, out, err = run_main(capsys, fc, *extra, "--input", f"0={write('v.npy', value)}")
    assert rc == 2 and out == ""
    assert_one_line_error(err, "v.npy", *needles)


def test_error_unknown_signature(capsys, fc):
    rc, _, err = run_main(capsys, fc, "--signature", "train")
    assert rc == 2
    assert_one_line_error(err, "unknown signature 'train'", "serving_default")


def test_error_output_dir_is_a_file(capsys, fc):
    rc, _, err = run_main(capsys, fc, "--output-dir", fc)
    assert rc == 2
    assert_one_line_error(err, "--output-dir", "not a directory")
