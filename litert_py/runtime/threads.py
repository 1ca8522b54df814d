"""Set the BLAS thread count that conv / fully-connected GEMMs use.

``Interpreter(num_threads=n)`` calls ``set_blas_threads(n)`` (default 1: on a busy 2-core machine two BLAS
threads were measured 10-40x slower). It uses threadpoolctl when installed, otherwise it calls the
``*_set_num_threads`` entry point of the OpenBLAS/MKL library numpy has loaded (found in /proc/self/maps
on Linux). It is best effort: where neither works the BLAS keeps its own setting.
"""

from __future__ import annotations

import ctypes
import functools

_ENTRY_POINTS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
    "MKL_Set_Num_Threads",
)


@functools.cache
def _blas_setters() -> tuple:
    import numpy  # noqa: F401  (loads the BLAS)

    libs = []
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "blas" in line.lower() or "mkl" in line.lower()}
    except OSError:
        return ()
    for path in sorted(paths):
        if not path.startswith("/"):
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _ENTRY_POINTS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                libs.append(fn)
                break
    return tuple(libs)


_current: int | None = None


def set_blas_threads(n: int) -> None:
    global _current
    if n == _current:
        return
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=n, user_api="blas")
    except ImportError:
        for fn in _blas_setters():
            fn(n)
    _current = n
