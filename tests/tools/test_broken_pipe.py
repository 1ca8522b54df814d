"""Both console tools stop quietly when their reader goes away (``tflite-verify ... | head``): exit status 1,
nothing on stderr, no BrokenPipeError traceback."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "litert_py.verify.cli", str(FIXTURES / "tf_verify_int8.tflite"), "--samples", "2"],
        ["-m", "litert_py.tools.run", str(FIXTURES / "tf_verify_int8.tflite"), "--nodes"],
    ],
    ids=["tflite-verify", "tflite-run"],
)
def test_closed_stdout_is_not_a_traceback(args):
    p = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # the reader is gone before the tool writes anything: its first write fails with EPIPE
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 1, err
    assert err == ""
