"""CAST (every dtype pair LiteRT casts) and BITCAST against the oracle (BUILTIN_REF); all results exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._values import shapes
from tests.oracle import T, litert_fails, run_both, single_op_model
from tests.values import TENSOR_DTYPES

TYPES = TENSOR_DTYPES
#: every (from, to) pair; one hypothesis test per source type draws the target (keeps the suite fast)
CASES = TYPES


def _values(rng, shape, dtype, regime):
    """Casting corner cases: NaN, +-inf, -0.0, halves, values just beyond each integer range, float16
    overflow, integer extremes (wrap), int64 values that round twice on the way to float16."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return (rng.random(size) < 0.5).reshape(shape)
    if dtype.kind in "fc":
        edges = [
            np.nan,
            np.inf,
            -np.inf,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            127.5,
            128.0,
            -128.5,
            -129.0,
            255.9,
            256.0,
            32767.5,
            32768.0,
            -32769.0,
            65535.9,
            65536.0,
            65520.0,
            65519.0,
            2.0**31,
            -(2.0**31),
            -(2.0**31) - 4096,
            2.0**32,
            2.0**32 - 256,
            2.0**63,
            -(2.0**63),
            2.0**64,
            1e30,
            -1e30,
            1 + 2.0**-11 + 2.0**-30,
        ]
        if regime == "edges":
            x = rng.choice(np.array(edges), size)
        else:
            x = rng.standard_normal(size) * 10.0 ** rng.uniform(-3, 12, size)
        with np.errstate(all="ignore"):
            real = x.astype(np.float64)
            if dtype.kind == "c":
                return (real + 1j * rng.standard_normal(size)).astype(dtype).reshape(shape)
            return real.astype(dtype).reshape(shape)
    info = np.iinfo(dtype)
    if regime == "edges":
        pool = np.array(
            [
                info.min,
                info.max,
                0,
                1,
                -1 if info.min < 0 else 2,
                info.min + 1,
                info.max - 1,
                2**53 + 1 if dtype == np.int64 else info.max,
                2**24 + 1 if dtype.itemsize >= 4 else 3,
                65519 if dtype.itemsize >= 4 else 4,
                65521 if dtype.itemsize >= 4 else 5,
            ],
            dtype=object,
        )
        return np.array(rng.choice(pool, size).tolist(), dtype=dtype).reshape(shape)
    return rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True).reshape(shape)


@pytest.mark.parametrize("src", CASES, ids=lambda d: np.dtype(d).name)
@given(data=st.data(), shape=shapes(0, 4), seed=st.integers(0, 2**31 - 1))
def test_cast(src, data, shape, seed):
    dst = data.draw(st.sampled_from(TYPES), label="to")
    regime = data.draw(st.sampled_from(["edges", "random"]), label="regime")
    x = _values(np.random.default_rng(seed), shape, src, regime)
    model = single_op_model("CAST", [T(shape, src)], [T(shape, dst)])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


def test_cast_float_to_int_saturates_and_nan_is_max():
    x = np.array([np.nan, np.inf, -np.inf, 300.7, -300.7, -0.5, 2.0**31, -1.5], np.float32)
    for dst in (np.int8, np.int32, np.int64, np.uint8, np.uint32):
        model = single_op_model("CAST", [T((8,), np.float32)], [T((8,), dst)])
        ours, theirs = run_both(model, [x])
        assert_close(ours, theirs)
    info = np.iinfo(np.uint32)
    np.testing.assert_array_equal(theirs[0], [info.max, info.max, 0, 300, 0, 0, 2**31, 0])


def test_cast_float64_to_float16_rounds_through_float32():
    x = np.array([1 + 2.0**-11 + 2.0**-40, 2049.0000001], np.float64)  # a float16 tie only after float32 rounding
    model = single_op_model("CAST", [T((2,), np.float64)], [T((2,), np.float16)])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)
    np.testing.assert_array_equal(theirs[0], np.array([1.0, 2048.0], np.float16))


REJECTS = [(np.complex128, np.float32), (np.float32, np.complex128)]


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: f"{np.dtype(c[0]).name}-{np.dtype(c[1]).name}")
def test_cast_rejected(case):
    src, dst = case
    model = single_op_model("CAST", [T((3,), src)], [T((3,), dst)])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    litert_fails(model, [np.zeros(3, src)])


# -- BITCAST ------------------------------------------------------------------------------------------
BITCAST_TYPES = [t for t in TENSOR_DTYPES if t is not np.bool_]


@pytest.mark.parametrize("src", BITCAST_TYPES, ids=lambda d: np.dtype(d).name)
@given(data=st.data(), shape=shapes(0, 4, allow_empty=False), seed=st.integers(0, 2**31 - 1))
def test_bitcast(src, data, shape, seed):
    dst = np.dtype(data.draw(st.sampled_from(BITCAST_TYPES), label="to"))
    a, b = np.dtype(src).itemsize, dst.itemsize
    if a < b:
        shape = shape + (b // a,)
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, size=int(np.prod(shape)) * a, dtype=np.uint8).view(src).reshape(shape)
    out = shape + (a // b,) if a > b else shape[:-1] if a < b else shape
    model = single_op_model("BITCAST", [T(shape, src)], [T(out, dst)])
    ours, theirs = run_both(model, [x])
    assert ours[0].shape == theirs[0].shape and ours[0].dtype == theirs[0].dtype
    bits = [a.reshape(-1).view(np.uint8) for a in (ours[0], theirs[0])]  # the bits, NaN payloads included
    np.testing.assert_array_equal(*bits)


def test_bitcast_rejects_a_wrong_last_dimension():
    model = single_op_model("BITCAST", [T((2, 3), np.int8)], [T((2,), np.int32)])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    litert_fails(model, at="allocate")
