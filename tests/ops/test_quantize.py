"""QUANTIZE and DEQUANTIZE against the oracle (BUILTIN_REF): every integer result bit-exact, and the
float32 results of DEQUANTIZE exact too (one rounding of an exact product in both runtimes).

One table (CASES) drives the differential test.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.ops._diff import check_both
from tests.oracle import T, quant, run_litert, run_ours, single_op_model
from tests.values import INT4, values

#: Float tolerance per op: DEQUANTIZE rounds the exact product once, like the reference: exact.
TOLERANCE = {"DEQUANTIZE": 0.0, "QUANTIZE": 0.0}

RANGES = {
    np.int8: (-128, 127),
    np.uint8: (0, 255),
    np.int16: (-32768, 32767),
    np.int32: (-(2**31), 2**31 - 1),
    INT4: (-8, 7),
}
seeds = st.integers(0, 2**32 - 1)
scales = st.floats(1e-4, 10.0).map(lambda s: float(np.float32(s)))


def _zp(draw, dtype, zero=False):
    if zero or dtype in (np.int16, np.int32):
        return 0 if zero or draw(st.booleans()) else draw(st.integers(-10, 10))
    lo, hi = RANGES[dtype]
    return draw(st.integers(lo, hi))


def _model(op, x_shape, x_dtype, x_q, y_dtype, y_q, const=None):
    """A one-op model; ``*_dtype`` may be INT4 (a TensorType number)."""
    b = ModelBuilder()

    def tensor(name, dtype, q, data=None, graph_input=False):
        kw = {"tensor_type": INT4} if dtype == INT4 else {}
        np_dtype = np.int8 if dtype == INT4 else dtype
        make = b.input if graph_input else b.tensor
        return (
            make(name, x_shape, np_dtype, quantization=q, **kw)
            if data is None
            else b.tensor(name, x_shape, np_dtype, data=data, quantization=q, **kw)
        )

    x = tensor("x", x_dtype, x_q, const, graph_input=const is None)
    y = tensor("y", y_dtype, y_q)
    b.op(op, [x], [y])
    b.output(y)
    return b.build()


@st.composite
def quantize_float(draw):
    """float32 -> int8 / uint8 / int16 / int4, per tensor or per channel, with exact ties and extremes."""
    y_dtype = draw(st.sampled_from([np.int8, np.uint8, np.int16, INT4]))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    per_channel = y_dtype != INT4 and draw(st.booleans())
    rng = np.random.default_rng(draw(seeds))
    if per_channel:
        axis = draw(st.integers(0, len(shape) - 1))
        n = shape[axis]
        sc = [draw(scales) for _ in range(n)]
        zps = [_zp(draw, y_dtype) for _ in range(n)]
        q = quant(sc, zps, axis)
        s_b = np.asarray(sc, np.float32).reshape([n if k == axis else 1 for k in range(len(shape))])
    else:
        q = quant(draw(scales), _zp(draw, y_dtype))
        s_b = np.float32(q.scale[0])
    lo, hi = RANGES[y_dtype]
    k = rng.integers(lo - 300, hi + 300, shape)
    kind = draw(st.sampled_from(["ties", "random", "extreme"]))
    if kind == "ties":  # k + 1/2 steps: the float32 division lands on (or next to) .5
        x = ((k + 0.5) * s_b).astype(np.float32)
    elif kind == "random":
        x = (rng.standard_normal(shape) * (hi - lo) * s_b).astype(np.float32)
    else:
        pool = np.array([0.0, -0.0, 1e10, -1e10, 3e9, -3e9, 2.1e9, np.inf, -np.inf, np.nan, 1e-30, 65504.0], np.float32)
        x = rng.choice(pool, shape).astype(np.float32) * np.float32(s_b if np.ndim(s_b) == 0 else 1.0)
    return _model("QUANTIZE", shape, np.float32, None, y_dtype, q), [x]


@st.composite
def requantize(draw):
    x_dtype = draw(st.sampled_from([np.int8, np.uint8, np.int16, np.int32]))
    y_dtype = draw(
        st.sampled_from(
            {
                np.int8: [np.int8, np.uint8, np.int16],
                np.uint8: [np.int8, np.uint8, np.int16],
                np.int16: [np.int8, np.int16, np.int32],
                np.int32: [np.int8, np.int16],
            }[x_dtype]
        )
    )
    both16 = x_dtype == np.int16 and y_dtype == np.int16
    s_in = draw(scales)
    s_out = draw(st.sampled_from([s_in, s_in * 2, s_in / 3]) | scales)
    x_q = quant(s_in, _zp(draw, x_dtype, zero=both16))
    if draw(st.booleans()) and {x_dtype, y_dtype} == {np.int8, np.uint8}:  # the xor-0x80 fast path
        s_out = s_in
        zp_out = x_q.zero_point[0] + (128 if y_dtype == np.uint8 else -128)
        zp_out = int(np.clip(zp_out, *RANGES[y_dtype]))
    else:
        zp_out = _zp(draw, y_dtype, zero=both16)
    y_q = quant(float(np.float32(s_out)), zp_out)
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    rng = np.random.default_rng(draw(seeds))
    if x_dtype == np.int32:
        x = rng.integers(-(2**20), 2**20, shape).astype(np.int32)
    else:
        x = values(rng, shape, x_dtype)
    return _model("QUANTIZE", shape, x_dtype, x_q, y_dtype, y_q), [x]


@st.composite
def dequantize(draw):
    x_dtype = draw(st.sampled_from([np.int8, np.uint8, np.int16, np.float16, INT4]))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    rng = np.random.default_rng(draw(seeds))
    const = draw(st.booleans()) or x_dtype == INT4  # int4 inputs are fed as constants (packed in the file)
    if x_dtype == np.float16:
        q = None
    elif x_dtype != np.int16 and draw(st.booleans()):
        axis = draw(st.integers(0, len(shape) - 1))
        n = shape[axis]
        q = quant([draw(scales) for _ in range(n)], [_zp(draw, x_dtype) for _ in range(n)], axis)
    else:
        q = quant(draw(scales), _zp(draw, x_dtype, zero=x_dtype == np.int16))
    if x_dtype == INT4:
        x = rng.integers(-8, 8, shape).astype(np.int8)
        nib = np.append(x.reshape(-1), 0 if x.size % 2 else []).astype(np.uint8) & 0xF
        packed = (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)
        return _model("DEQUANTIZE", shape, INT4, q, np.float32, None, const=packed), []
    x = values(rng, shape, x_dtype)
    if const:
        return _model("DEQUANTIZE", shape, x_dtype, q, np.float32, None, const=x), []
    return _model("DEQUANTIZE", shape, x_dtype, q, np.float32, None), [x]


CASES = {
    "quantize-float-to-int": quantize_float(),
    "quantize-requantize": requantize(),
    "dequantize-any": dequantize(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_quantize_ops(case, data):
    model, inputs = data.draw(CASES[case])
    check_both(model, inputs, atol=TOLERANCE["DEQUANTIZE" if "dequantize" in case else "QUANTIZE"])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
def test_requantize_every_input_value(dtype):
    """All 2^8 / 2^16 input values through a few awkward multipliers (> 1, < 1, ties)."""
    lo, hi = RANGES[dtype]
    x = np.arange(lo, hi + 1, dtype=np.int64).astype(dtype)
    zin = 0 if dtype == np.int16 else 5
    for s_in, s_out, zout in [(0.5, 0.125, 0), (0.3, 0.7, 3), (1.0, 16.0, -2), (0.0078125, 0.00390625, 1)]:
        out_dtype = np.int16 if dtype == np.int16 else np.int8
        if out_dtype == np.int16:
            zout = 0
        model = single_op_model(
            "QUANTIZE", [T(x.shape, dtype, q=quant(s_in, zin))], [T(x.shape, out_dtype, q=quant(s_out, zout))]
        )
        assert check_both(model, [x]) is not None


REJECTED = {
    "quantize-float-to-int32": (np.float32, None, np.int32, quant(0.5, 0)),
    "quantize-no-output-quantization": (np.float32, None, np.int8, None),
    "quantize-uint8-to-int32": (np.uint8, quant(0.5, 0), np.int32, quant(0.5, 0)),
    "quantize-int16-to-int16-zero-point": (np.int16, quant(0.5, 3), np.int16, quant(0.5, 0)),
    "dequantize-float32": (np.float32, None, np.float32, None),
    "dequantize-int32": (np.int32, quant(0.5, 0), np.float32, None),
    "dequantize-int16-zero-point": (np.int16, quant(0.5, 2), np.float32, None),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_quantize_rejected_at_prepare(case):
    x_dtype, x_q, y_dtype, y_q = REJECTED[case]
    op = "DEQUANTIZE" if case.startswith("dequantize") else "QUANTIZE"
    model = single_op_model(op, [T((3,), x_dtype, q=x_q)], [T((3,), y_dtype, q=y_q)])
    feeds = [np.zeros(3, x_dtype)]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)


@pytest.mark.parametrize("value, expected", [(1.5, 15), (-1.55, -15), (1e12, -128), (0.05, 1)])
def test_quantize_rank0_float(value, expected):
    """A rank-0 float input (issue 11: it raised 'return arrays must be of ArrayType'); LiteRT: quantize(1.5)
    with scale 0.1 is 15. A quotient outside int32 becomes the type minimum, as in LiteRT."""
    model = single_op_model("QUANTIZE", [T((), np.float32)], [T((), np.int8, q=quant(0.1, 0))])
    x = np.array(value, np.float32)
    ours, theirs = run_ours(model, [x]), run_litert(model, [x])
    assert np.shape(ours[0]) == np.shape(theirs[0]) == ()
    assert int(ours[0]) == int(theirs[0]) == expected


@pytest.mark.parametrize("dtype, zp", [(np.int8, 3), (np.uint8, 128), (np.int16, 0), (np.int8, -128)])
def test_quantize_float_just_below_halves(dtype, zp):
    """Quotients one float32 ulp below and above x.5 (and the halves themselves, both signs): t + 1/2 rounds to
    the next integer in float32 (0.49999997 + 0.5 == 1.0f), so the rounding must not add 1/2 in float32 (it adds
    0.49999997, quant.hybrid.HALF_DOWN); with the clamp bounds, infinities and a zero point at the end of the range."""
    halves = np.arange(-6, 6, dtype=np.float32) + np.float32(0.5)
    near = np.concatenate([np.nextafter(halves, -np.inf), halves, np.nextafter(halves, np.inf)])
    x = np.concatenate([near, np.float32([0.0, -0.0, 1e6, -1e6, np.inf, -np.inf])]).reshape(1, -1)
    model = single_op_model("QUANTIZE", [T(x.shape, np.float32)], [T(x.shape, dtype, q=quant(1.0, zp))])
    ours, theirs = run_ours(model, [x]), run_litert(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    lo, hi = RANGES[dtype]
    assert ours[0][0, 6] == np.clip(zp, lo, hi)  # 0.49999997 rounds to 0
    assert ours[0][0, 17] == np.clip(zp - 1, lo, hi)  # -0.5 rounds away from zero
    assert ours[0][0, 5] == np.clip(zp - 1, lo, hi)  # -0.50000006 too
