"""Exhaustive check of litert_py.ops.glibc_math against this machine's libm (ctypes), on every input
Box-Muller (RANDOM_STANDARD_NORMAL) can reach: logf of max(Uint32ToFloat(x), 1e-7f) and sincosf of
float(2 * pi * Uint32ToFloat(x)) for all 2^23 mantissas. The default path (plain double with exact
re-evaluation of unsafe lanes), the always-FMA-emulated path (exact=True) and the plain-only path
(check=False, which random.standard_normal relies on) are compared bit for bit.

    python tools/check_glibc_math.py            # about a minute
"""

from __future__ import annotations

import ctypes
import sys
import time

import numpy as np

from litert_py.ops import glibc_math


def libm_reference(u1: np.ndarray, v1: np.ndarray):
    m = ctypes.CDLL("libm.so.6")
    m.logf.restype = ctypes.c_float
    m.logf.argtypes = [ctypes.c_float]
    m.sincosf.restype = None
    m.sincosf.argtypes = [ctypes.c_float, ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_float)]
    logf = m.logf
    lg = np.fromiter((logf(v) for v in u1.tolist()), np.float32, u1.size)
    s, c = ctypes.c_float(), ctypes.c_float()
    ps, pc = ctypes.byref(s), ctypes.byref(c)
    sincosf = m.sincosf
    sin = np.empty(v1.size, np.float32)
    cos = np.empty(v1.size, np.float32)
    for j, v in enumerate(v1.tolist()):
        sincosf(v, ps, pc)
        sin[j] = s.value
        cos[j] = c.value
    return lg, sin, cos


def main() -> int:
    mant = np.arange(2**23, dtype=np.uint32)
    u = (mant | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)
    u1 = np.maximum(u, np.float32(1e-7))
    v1 = (2.0 * np.pi * u.astype(np.float64)).astype(np.float32)
    t = time.perf_counter()
    lg, sin, cos = libm_reference(u1, v1)
    print(f"libm reference: {time.perf_counter() - t:.1f} s")
    ok = True
    for exact in (False, True):
        t = time.perf_counter()
        my_lg = glibc_math.logf(u1, exact=exact)
        my_sin, my_cos = glibc_math.sincosf(v1, exact=exact)
        dt = time.perf_counter() - t
        for name, a, b in (("logf", my_lg, lg), ("sincosf sin", my_sin, sin), ("sincosf cos", my_cos, cos)):
            diff = np.flatnonzero(a.view(np.uint32) != b.view(np.uint32))
            print(f"exact={exact!s:5} {name:12} mismatches {diff.size} / {a.size}  ({dt:.1f} s)")
            if diff.size:
                ok = False
                for j in diff[:5]:
                    x = u1[j] if name == "logf" else v1[j]
                    print(f"    x={float(x).hex()} ours={float(a[j]).hex()} libm={float(b[j]).hex()}")
    # random.standard_normal uses check=False (plain double evaluation only): it must agree everywhere too
    t = time.perf_counter()
    my_lg = glibc_math.logf(u1, check=False)
    my_sin, my_cos = glibc_math.sincosf(v1, check=False)
    dt = time.perf_counter() - t
    for name, a, b in (("logf", my_lg, lg), ("sincosf sin", my_sin, sin), ("sincosf cos", my_cos, cos)):
        bad = int((a.view(np.uint32) != b.view(np.uint32)).sum())
        ok &= bad == 0
        print(f"check=False {name:12} mismatches {bad} / {a.size}  ({dt:.1f} s)")
    y, tol = glibc_math._logf_plain(*glibc_math._logf_parts(u1))
    xd = v1.astype(np.float64)
    n = glibc_math._reduce(xd)
    p = glibc_math._sincos_plain(xd - n * glibc_math._HPI, n & 3)
    flagged = glibc_math._unsafe(p, (np.abs(xd) + 1.0) * glibc_math._TOL).any(axis=0)
    print(
        f"lanes the default path re-evaluates with FMA emulation: logf {int(glibc_math._unsafe(y, tol).sum())}, "
        f"sincosf {int(flagged.sum())}"
    )
    print("OK: bit-identical" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
