"""The numpy fallback for the C library's float functions (litert_py/libm.py), forced on this machine.

Where no libm loads (WebAssembly, or LITERT_PY_NO_LIBM=1) litert_py evaluates expf/expm1f/tanhf/logf in float64
and rounds once. These tests force that path, check the loader really falls back, bound the distance to glibc
(docs/portability.md: at most 2 ulp, tanhf; expf/expm1f/logf 1 ulp), and run the quantized ops whose lookup tables
are built from those functions against the oracle: within 1 LSB of LiteRT's reference kernels (with libm: equal).
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import libm as L
from litert_py.schema.builder import quant

from .oracle import T, run_litert, run_ours, single_op_model

F32 = np.float32


@pytest.fixture
def no_libm(monkeypatch):
    monkeypatch.setenv("LITERT_PY_NO_LIBM", "1")
    L.libm.cache_clear()
    yield
    monkeypatch.delenv("LITERT_PY_NO_LIBM")
    L.libm.cache_clear()


def _ulps(a, b):
    def ordered(x):
        i = np.asarray(x, F32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    return np.abs(ordered(a) - ordered(b))


def test_libm_loads_here():
    assert L.libm() is not None, "this machine has glibc: the exact path must be the one that runs"


@pytest.mark.parametrize(
    ("name", "lo", "hi", "max_ulp"),
    [("expf", -80, 80, 1), ("expm1f", -20, 20, 1), ("tanhf", -10, 10, 2), ("logf", 1e-6, 1e6, 1)],
)
def test_forced_fallback_is_close_to_glibc(no_libm, name, lo, hi, max_ulp, monkeypatch):
    x = np.random.default_rng(1).uniform(lo, hi, 20000).astype(F32)
    monkeypatch.delenv("LITERT_PY_NO_LIBM")
    L.libm.cache_clear()
    exact = L.libm_float(name)(x)
    monkeypatch.setenv("LITERT_PY_NO_LIBM", "1")
    L.libm.cache_clear()
    assert L.libm() is None
    got = L.libm_float(name)(x)
    np.testing.assert_array_equal(got, getattr(np, name[:-1])(x.astype(np.float64)).astype(F32))
    d = _ulps(got, exact)
    assert d.max() <= max_ulp, (name, int(d.max()))
    assert np.mean(d == 0) > 0.9  # the fallback is exact most of the time


I8, I16 = np.int8, np.int16
LUT_CASES = [  # op, dtype, input (scale, zp), output (scale, zp)
    ("LOGISTIC", I8, (0.1, 3), (1 / 256, -128)),
    ("LOGISTIC", I8, (0.023, -7), (1 / 256, -128)),
    ("TANH", I8, (0.05, 0), (1 / 128, 0)),
    ("TANH", I8, (0.011, 10), (1 / 128, 0)),
    ("EXP", I8, (0.03, -20), (0.05, -128)),
    ("LOG", I8, (0.2, -128), (0.04, 0)),
    ("EXP", I16, (1 / 4096, 0), (1 / 512, 0)),
    ("LOG", I16, (1 / 512, 0), (1 / 2048, 0)),
]


@pytest.mark.parametrize(
    ("op", "dtype", "qi", "qo"),
    LUT_CASES,
    ids=[f"{c[0].lower()}-{np.dtype(c[1]).name}-{k}" for k, c in enumerate(LUT_CASES)],
)
def test_lut_ops_within_one_lsb_of_litert_without_libm(op, dtype, qi, qo, request):
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1, dtype=dtype)  # every input value: every LUT entry
    model = single_op_model(op, [T(x.shape, dtype, q=quant(*qi))], [T(x.shape, dtype, q=quant(*qo))])
    want = run_litert(model, [x])[0].astype(np.int64)
    np.testing.assert_array_equal(run_ours(model, [x])[0], want)  # with glibc: exact
    request.getfixturevalue("no_libm")
    assert L.libm() is None
    d = np.abs(run_ours(model, [x])[0].astype(np.int64) - want)
    assert d.max() <= 1, f"{op}: {np.sum(d != 0)} entries differ, up to {d.max()} LSB"
