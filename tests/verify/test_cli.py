"""tflite-verify's command line: outputs parsed back, exit statuses."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from litert_py.verify.cli import main
from litert_py.verify.metrics import DEBUGGER_METRICS, METRICS

ROOT = pathlib.Path(__file__).resolve().parents[1]
FLOAT = str(ROOT / "corpus" / "silabs_mltk__image_example1.float32.tflite")
INT8 = str(ROOT / "corpus" / "silabs_mltk__image_example1.tflite")
TF_FLOAT = str(ROOT / "fixtures" / "tf_verify_float.tflite")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "x.npy"
    np.save(path, np.random.default_rng(0).uniform(0, 1, (3, 1, 96, 96, 1)).astype(np.float32))
    return str(path)


def test_csv_and_json(data, tmp_path, capsys):
    c, j = tmp_path / "l.csv", tmp_path / "r.json"
    assert main([FLOAT, INT8, "--data", data, "--csv", str(c), "--json", str(j), "-q"]) == 0
    assert capsys.readouterr().out == ""  # -q: no table
    rows = list(csv.DictReader(io.StringIO(c.read_text())))
    header = c.read_text().splitlines()[0].split(",")
    assert header[:10] == ["op_name", "tensor_idx", *DEBUGGER_METRICS, "scale", "zero_point", "tensor_name"]
    report = json.loads(j.read_text())
    assert set(report) == {"mode", "samples", "matched", "unmatched", "layers", "outputs"}
    assert (report["mode"], report["samples"], report["matched"], report["unmatched"]) == ("pair", 3, 8, [])
    for layer in report["layers"]:
        assert {"tensor_name", "op_name", "node", "float_tensor_name", *METRICS} <= set(layer)
    assert len(rows) == len(report["layers"]) == 8
    by_name = {r["tensor_name"]: r for r in rows}
    for layer in report["layers"]:
        assert float(by_name[layer["tensor_name"]]["mean_squared_error"]) == pytest.approx(layer["mean_squared_error"])
    assert report["outputs"][0]["top1_agreement"] in (0.0, 1 / 3, 2 / 3, 1.0)


def test_table_suggest_float_and_fail_above(data, capsys):
    assert main([INT8, "--data", data, "--suggest-float", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("mode single: 3 samples")
    line = [x for x in out.splitlines() if x.startswith("keep in float (2): denylisted_nodes=")][0]
    names = eval(line.split("=", 1)[1])  # a Python list literal, as a user pastes it
    assert len(names) == 2 and all(n in out for n in names)
    assert main([INT8, "--data", data, "-q", "--fail-above", "rmse/scale=1000000"]) == 0
    assert main([INT8, "--data", data, "-q", "--fail-above", "max_abs_error=0"]) == 1
    err = capsys.readouterr().err
    assert "max_abs_error" in err and "> 0" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        ([FLOAT], "no quantized tensor"),  # a float model given as the quantized one
        ([TF_FLOAT, INT8], "do not pair"),
        ([INT8, "--fail-above", "bogus=1"], "unknown metric"),
        ([INT8, "--fail-above", "rmse/scale"], "METRIC=VALUE"),
        ([INT8, "--samples", "0"], "must be >= 1"),
        ([str(ROOT / "nope.tflite")], "nope.tflite"),
        ([FLOAT, INT8, INT8], "got 3 models"),
    ],
)
def test_bad_input_exits_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        raise SystemExit(main(argv))
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_data_exits_2(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((2, 3, 3), np.float32))
    assert main([INT8, "--data", str(tmp_path / "x.npy")]) == 2
    assert "expected shape [1, 96, 96, 1]" in capsys.readouterr().err


def test_console_entry_point_runs_as_module(data):
    r = subprocess.run(
        [sys.executable, "-m", "litert_py.verify.cli", INT8, "--data", data, "-q", "--fail-above", "max_abs_error=0"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT.parent,
    )
    assert r.returncode == 1 and r.stdout == "" and "max_abs_error" in r.stderr
