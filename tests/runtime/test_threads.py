"""num_threads sets the BLAS thread count (default 1)."""

from __future__ import annotations

import ctypes

import pytest

import litert_py
from litert_py.runtime import threads
from tests.runtime.test_interpreter import _fc_model


def _openblas_threads():
    with open("/proc/self/maps") as f:
        paths = [line.split()[-1] for line in f if "openblas" in line.lower()]
    for path in paths:
        lib = ctypes.CDLL(path)
        for name in (
            "scipy_openblas_get_num_threads64_",
            "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_",
            "openblas_get_num_threads",
        ):
            if hasattr(lib, name):
                return getattr(lib, name)()
    return None


def test_num_threads_sets_blas_threads():
    if not threads._blas_setters():
        pytest.skip("numpy's BLAS here exposes no set_num_threads entry point")  # e.g. Accelerate on macOS
    litert_py.Interpreter(model_content=_fc_model(), num_threads=2)
    assert _openblas_threads() == 2
    litert_py.Interpreter(model_content=_fc_model())
    assert _openblas_threads() == 1
