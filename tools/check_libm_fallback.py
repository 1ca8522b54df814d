"""How far litert_py's numpy fallback for the C library's float functions is from this machine's libm.

litert_py calls libm's expf/expm1f/tanhf/logf (ctypes) where LiteRT's kernels do (LUT builders at prepare, Eigen's
scalar logistic). Without a loadable libm (or with LITERT_PY_NO_LIBM=1) it uses the float64 function rounded once
to float32 (litert_py/libm.py). This prints, per function, the ulp distance to libm of that fallback and of
numpy's own float32 function, over random float32 inputs of each function's useful domain, and how many entries
of the quantized LUTs that use them change (int8 LOGISTIC/TANH over a range of scales, the integer LSTM's int16
sigmoid/tanh tables).

    python tools/check_libm_fallback.py [--n 1000000]      # about a minute; docs/portability.md quotes it
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from litert_py import libm as L

F32 = np.float32
DOMAINS = {"expf": (-87.0, 88.0), "expm1f": (-20.0, 20.0), "tanhf": (-10.0, 10.0), "logf": (1e-30, 1e30)}


def ordered(x: np.ndarray) -> np.ndarray:
    i = x.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(ordered(a.astype(F32)) - ordered(b.astype(F32)))


def sample(name: str, n: int, rng) -> np.ndarray:
    lo, hi = DOMAINS[name]
    if name == "logf":  # log-uniform over many binades
        return np.exp(rng.uniform(np.log(lo), np.log(hi), n)).astype(F32)
    return rng.uniform(lo, hi, n).astype(F32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    n = ap.parse_args().n
    rng = np.random.default_rng(0)
    assert L.libm() is not None, "no libm here: nothing to compare with"
    print(f"{'function':8} {'inputs':>9}  fallback (float64 rounded) ulp 0/1/>1 (max)  numpy float32 ulp 0/1/>1 (max)")
    for name in DOMAINS:
        x = sample(name, n, rng)
        ref = L.libm_float(name)(x)
        fb = L._NUMPY[name](x.astype(np.float64)).astype(F32)
        nf = L._NUMPY[name](x)
        d1, d2 = ulps(fb, ref), ulps(nf, ref)

        def counts(d):
            return f"{np.sum(d == 0):>8} / {np.sum(d == 1):>6} / {np.sum(d > 1):>4} ({d.max()})"

        print(f"{name:8} {n:>9}  {counts(d1):>36}   {counts(d2):>26}")
    # what it changes in the tables built from them
    from litert_py.ops import lstm_integer8 as li

    tables = {"lstm int16 sigmoid": li.sigmoid_float_table.__wrapped__}
    tables.update({f"lstm int16 tanh({b})": (lambda b=b: li.tanh_float_table.__wrapped__(b)) for b in range(0, 7)})
    with_libm = {k: f() for k, f in tables.items()}
    os.environ["LITERT_PY_NO_LIBM"] = "1"
    L.libm.cache_clear()
    try:
        for k, f in tables.items():
            d = np.abs(f().astype(np.int64) - with_libm[k].astype(np.int64))
            print(f"{k:24} {d.size} entries: {np.sum(d != 0)} differ (max {d.max()} LSB)")
    finally:
        del os.environ["LITERT_PY_NO_LIBM"]
        L.libm.cache_clear()


if __name__ == "__main__":
    main()
