"""The C library's float32 math functions (``expf``, ``expm1f``, ``tanhf``, ``logf``), loaded once, with a numpy
fallback.

LiteRT's kernels call ``std::exp(float)`` and friends, i.e. the machine's libm (glibc on Linux), when they build
lookup tables at prepare (LOGISTIC/TANH/ELU/EXP/LOG LUTs, the integer LSTM's float gate tables) and in Eigen's
scalar logistic. NumPy's float32 loops are SIMD polynomials that differ from glibc by an ulp now and then, enough
to move a LUT entry by one LSB, so litert_py calls the same libm through ctypes where it can.

Where there is no loadable C math library (WebAssembly/Pyodide, some embedded builds), or when the environment
variable ``LITERT_PY_NO_LIBM=1`` forces it (tests use this to exercise the fallback), each function is computed in
float64 with numpy and rounded once to float32: the correctly rounded result except in rare near-halfway cases,
and within 1 ulp of glibc's (see docs/portability.md for the measured distances). On macOS, Windows and musl a
C library loads, but its functions are that platform's, not glibc's: results may differ from LiteRT-on-Linux in
the last bit of a LUT entry, as LiteRT on those platforms does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable

import numpy as np

__all__ = ["libm", "libm_float"]

F32 = np.float32
_NUMPY = {"expf": np.exp, "expm1f": np.expm1, "tanhf": np.tanh, "logf": np.log}


@functools.cache
def libm() -> ctypes.CDLL | None:
    """The C math library, or None when there is none (or ``LITERT_PY_NO_LIBM=1``). Cached: ``libm.cache_clear()``
    makes the next call look again (tests that force the fallback do this)."""
    if os.environ.get("LITERT_PY_NO_LIBM", "") not in ("", "0"):
        return None
    try:
        path = ctypes.util.find_library("m")
        lib = ctypes.CDLL(path) if path else None
        return lib if lib is not None and hasattr(lib, "expf") else None
    except OSError:  # no C library
        return None


def libm_float(name: str, f64: Callable[[np.ndarray], np.ndarray] | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """libm's float32 function ``name`` elementwise over an array (a Python loop: for prepare-time tables and a
    few scalars, not for hot paths). Without libm: ``f64`` (default: numpy's float64 function of that name) on
    the float64 input, rounded once to float32. Looks the library up at each call, so forcing the fallback takes
    effect without re-importing."""
    f64 = f64 or _NUMPY[name]

    def apply(x) -> np.ndarray:
        a = np.asarray(x, F32)
        fn = getattr(libm(), name, None)
        if fn is None:
            return np.asarray(f64(a.astype(np.float64))).astype(F32)
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
        return np.array([fn(v) for v in a.ravel().tolist()], F32).reshape(a.shape)

    apply.__name__ = name
    return apply
