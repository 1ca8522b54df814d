"""FULLY_CONNECTED against the oracle (ai-edge-litert BUILTIN_REF).

Integer outputs are compared for equality; the hybrid path's float32 output is compared exactly too (same
quantized inputs, same int32 dot products, same float operation order), except with a fused TANH (Eigen's
tanh vs numpy's: a few ulp). One table (PATHS) drives the differential test; further tests pin the float
requantization (the tie probe of docs/quantized-arithmetic.md section 8.3), the multiplier precision, the
integer edge cases (int32 wrap, out-of-range casts), LiteRT's x86 hybrid quirks and the error paths.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.quant import round_away
from litert_py.quant.hybrid import round_half_away_inplace
from litert_py.schema.builder import ModelBuilder
from tests.ops._diff import check_both
from tests.oracle import T, oracle, quant, run_litert, run_ours, single_op_model
from tests.values import INT4, int_range, pack_int4

#: Float tolerance (relative to the largest reference magnitude) per path.
TOLERANCE = {"float32": 1e-5, "hybrid": 0.0, "hybrid-tanh": 1e-6}

I8, U8, I16, I32, I64, F32 = np.int8, np.uint8, np.int16, np.int32, np.int64, np.float32

#: id -> (input, weights, bias, output, per-channel, options). bias None: the test draws "no bias" too.
PATHS = {
    "fc-int8-per-tensor": (I8, I8, I32, I8, False, {}),
    "fc-int8-per-channel": (I8, I8, I32, I8, True, {}),
    "fc-int8-int4-weights": (I8, INT4, I32, I8, True, {}),
    "fc-uint8": (U8, U8, I32, U8, False, {}),
    "fc-uint8-to-int16": (U8, U8, I32, I16, False, {}),
    "fc-int16x8-int64-bias": (I16, I8, I64, I16, False, {}),
    "fc-int16x8-int64-bias-per-channel": (I16, I8, I64, I16, True, {"quantized_bias_type": 4}),
    "fc-int16x8-int32-bias": (I16, I8, I32, I16, False, {"quantized_bias_type": 2}),
    "fc-int16x8-int32-bias-per-channel": (I16, I8, I32, I16, True, {"quantized_bias_type": 2}),
    "fc-int16x16": (I16, I16, I32, I16, False, {}),
    "fc-int16x16-per-channel": (I16, I16, I64, I16, True, {"quantized_bias_type": 4}),
}
HYBRID = {
    "fc-hybrid-symmetric": (False, False),
    "fc-hybrid-asymmetric": (True, False),
    "fc-hybrid-symmetric-per-channel": (False, True),
    "fc-hybrid-asymmetric-per-channel": (True, True),
}

seeds = st.integers(0, 2**32 - 1)


def _np(dtype):
    return np.int8 if dtype == INT4 else dtype


def fc_model(
    x_shape, x_dtype, x_q, w, w_dtype, w_q, bias, b_q, out_shape, out_dtype, out_q, options, const_weights=True
) -> bytes:
    """A one-op FULLY_CONNECTED model; ``w_dtype`` may be INT4; bias None is omitted (-1)."""
    b = ModelBuilder()
    x = b.input("x", x_shape, x_dtype, quantization=x_q)
    kw = {"tensor_type": INT4} if w_dtype == INT4 else {}
    if const_weights:
        data = pack_int4(w) if w_dtype == INT4 else w
        wi = b.tensor("w", w.shape, _np(w_dtype), data=data, quantization=w_q, **kw)
    else:
        wi = b.input("w", w.shape, _np(w_dtype), quantization=w_q, **kw)
    bi = -1 if bias is None else b.tensor("b", bias.shape, bias.dtype, data=bias, quantization=b_q)
    y = b.tensor("y", out_shape, out_dtype, quantization=out_q)
    b.op("FULLY_CONNECTED", [x, wi, bi], [y], options)
    b.output(y)
    return b.build()


def _log_uniform(draw, lo, hi) -> float:
    return float(np.float32(10.0 ** draw(st.floats(lo, hi))))


def _zero_point(draw, dtype) -> int:
    lo, hi = int_range(dtype)
    return draw(st.one_of(st.sampled_from([lo, hi, 0]), st.integers(lo, hi)))


@st.composite
def fc_shapes(draw):
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    batch = draw(st.integers(1, 4))
    depth = draw(st.one_of(st.integers(1, 40), st.integers(100, 700)))
    units = draw(st.integers(1, 20))
    return lead, batch, depth, units


@st.composite
def quantized_case(draw, path):
    xt, wt, bt, ot, per_channel, options = PATHS[path]
    lead, batch, depth, units = draw(fc_shapes())
    keep = draw(st.booleans())
    act = draw(st.sampled_from([0, 1, 2, 3]))
    with_bias = path == "fc-uint8-to-int16" or draw(st.booleans())
    rng = np.random.default_rng(draw(seeds))
    zx = 0 if xt == I16 else _zero_point(draw, xt)
    zo = 0 if ot == I16 else _zero_point(draw, ot)
    zw = 0 if per_channel or wt == INT4 else (_zero_point(draw, wt) if wt == U8 else draw(st.integers(-3, 3)))
    s_in = _log_uniform(draw, -10, 4)
    n_scales = units if per_channel else 1
    base = _log_uniform(draw, -10, 2)
    spread = draw(st.floats(0, 4))  # per-channel scales spanning up to 8 orders of magnitude
    s_w = (base * 10.0 ** rng.uniform(-spread, spread, n_scales)).astype(np.float32)
    if per_channel and n_scales == 1:  # a single scale is per-tensor for LiteRT: force two units
        units, n_scales = 2, 2
        s_w = np.concatenate([s_w, s_w * np.float32(3)])
    xlo, xhi = int_range(xt)
    wlo, whi = int_range(wt)
    typical = np.sqrt(depth) * (xhi - xlo) / 2 * (whi - wlo) / 2 / 2
    olo, ohi = int_range(ot)
    regime = draw(st.sampled_from(["typical", "typical", "ties", "saturate", "tiny"]))
    if regime == "ties":  # power-of-two scales, eff = 2^-m, small values: many acc * eff end in .5
        s_in = 2.0 ** draw(st.integers(-20, 4))
        s_w = np.full(n_scales, 2.0 ** draw(st.integers(-12, 2)), np.float32)
        s_out = float(s_in * float(s_w[0]) * 2.0 ** draw(st.integers(1, 3)))
    else:
        ratio = {"typical": 10.0 ** draw(st.floats(-1.5, 1.0)), "saturate": 1e-3, "tiny": 1e3}[regime]
        s_out = float(np.float32(s_in * float(s_w.max()) * typical / (ohi - olo) * ratio))
    x = rng.integers(xlo, xhi + 1, lead + (batch, depth))
    w = rng.integers(wlo, whi + 1, (units, depth))
    if regime == "ties":
        x = np.clip(zx + rng.integers(-3, 4, x.shape), xlo, xhi)
        w = np.clip(zw + rng.integers(-3, 4, w.shape), wlo, whi)
        typical = 20
    x, w = x.astype(_np(xt)), w.astype(_np(wt))
    bias = None
    if with_bias:
        bmax = int(min(typical * 2, 2**30))
        bias = rng.integers(-bmax, bmax + 1, units).astype(bt)
    b_q = quant((np.float32(s_in) * s_w).astype(np.float32), 0)
    w_q = quant(s_w, np.zeros(n_scales, int) if per_channel else zw)
    out_shape = lead + (batch, units) if keep else (int(np.prod(lead + (batch,))), units)
    opts = {"fused_activation_function": act, "keep_num_dims": keep, **options}
    model = fc_model(x.shape, _np(xt), quant(s_in, zx), w, wt, w_q, bias, b_q, out_shape, ot, quant(s_out, zo), opts)
    return model, x


@pytest.mark.parametrize("path", list(PATHS))
@given(data=st.data())
def test_fully_connected_quantized(path, data):
    model, x = data.draw(quantized_case(path))
    check_both(model, [x])  # integers exact; or both runtimes reject it (activation bound overflow)


@st.composite
def hybrid_case(draw, asymmetric, per_channel):
    lead, batch, depth, units = draw(fc_shapes())
    depth = depth if draw(st.integers(0, 9)) else draw(st.integers(2000, 4200))  # SSE row-sum int16 wrap
    rng = np.random.default_rng(draw(seeds))
    act = draw(st.sampled_from([0, 1, 2, 3, 4, 5]))
    keep = draw(st.booleans())
    w_dtype = draw(st.sampled_from([I8, I8, I8, U8]))  # LiteRT reads uint8 hybrid weights as int8
    weights = draw(st.sampled_from(["symmetric", "full", "extremes"]))
    if weights == "symmetric":
        w = rng.integers(-127, 128, (units, depth))
    elif weights == "full":  # includes -128: the SSE dot-product quirk
        w = rng.integers(-128, 128, (units, depth))
    else:
        w = rng.choice([-128, 127, -127, 0], (units, depth))
    w = w.astype(I8).view(w_dtype) if w_dtype == U8 else w.astype(I8)
    n = units if per_channel else 1
    s_w = (_log_uniform(draw, -6, 0) * 10.0 ** rng.uniform(-3, 3, n)).astype(np.float32)
    if per_channel and n == 1:
        w, s_w = np.concatenate([w, w]), np.concatenate([s_w, s_w * np.float32(2)])
        units = 2
    shape = lead + (batch, depth)
    x = rng.standard_normal(shape) * 10.0 ** draw(st.floats(-4, 4))
    kind = draw(st.sampled_from(["normal", "positive", "negative", "zero-row", "constant-row"]))
    if kind == "positive":
        x = np.abs(x)
    elif kind == "negative":
        x = -np.abs(x)
    elif kind == "zero-row":
        x.reshape(-1, depth)[0] = 0
    elif kind == "constant-row":
        x.reshape(-1, depth)[0] = x.reshape(-1)[0]
    x = x.astype(F32)
    bias = rng.standard_normal(units).astype(F32) if draw(st.booleans()) else None
    out_shape = lead + (batch, units) if keep else (int(np.prod(lead + (batch,))), units)
    opts = {"fused_activation_function": act, "keep_num_dims": keep, "asymmetric_quantize_inputs": asymmetric}
    model = fc_model(shape, F32, None, w, w_dtype, quant(s_w, np.zeros(n, int)), bias, None, out_shape, F32, None, opts)
    return model, x, act


@pytest.mark.parametrize("path", list(HYBRID))
@given(data=st.data())
def test_fully_connected_hybrid(path, data):
    model, x, act = data.draw(hybrid_case(*HYBRID[path]))
    rtol = TOLERANCE["hybrid-tanh" if act == 4 else "hybrid"]
    check_both(model, [x], rtol=rtol)


@given(
    batch=st.integers(1, 4),
    depth=st.integers(1, 33),
    units=st.integers(1, 17),
    act=st.sampled_from([0, 1, 2, 3]),
    with_bias=st.booleans(),
    keep=st.booleans(),
    lead=st.integers(1, 3),
    seed=seeds,
)
def test_fully_connected_float(batch, depth, units, act, with_bias, keep, lead, seed):
    rng = np.random.default_rng(seed)
    in_shape = (lead, batch, depth)
    w = rng.standard_normal((units, depth)).astype(np.float32)
    b = rng.standard_normal(units).astype(np.float32)
    out_shape = (lead, batch, units) if keep else (lead * batch, units)
    model = single_op_model(
        "FULLY_CONNECTED",
        [T(in_shape), T.const(w), T.const(b) if with_bias else None],
        [T(out_shape)],
        {"fused_activation_function": act, "keep_num_dims": keep},
    )
    x = rng.standard_normal(in_shape).astype(np.float32)
    check_both(model, [x], rtol=TOLERANCE["float32"] * depth)


# -- requantization semantics -----------------------------------------------------------------------------


def _int8_fc(x, w, bias, s_in, s_w, s_out, zx=0, zo=0, act=0, w_zp=0):
    bq = quant(np.float32(s_in) * np.float32(s_w), 0)
    return single_op_model(
        "FULLY_CONNECTED",
        [
            T(x.shape, I8, q=quant(s_in, zx)),
            T.const(w, q=quant(s_w, w_zp)),
            None if bias is None else T.const(bias, q=bq),
        ],
        [T((x.shape[0], w.shape[0]), I8, q=quant(s_out, zo))],
        {"fused_activation_function": act},
    )


def test_fully_connected_tie_probe_float_requant():
    """Section 8.3: K = 1, W = [[1]], effective scale 1/16. The reference requantizes in double with ties away
    from zero: x = 7 -> 0 (MultiplyByQuantizedMultiplier would give 1: 7/2 rounds up, then 4/8 rounds away)."""
    x = np.arange(-120, 121, dtype=I8).reshape(-1, 1)
    model = _int8_fc(x, np.ones((1, 1), I8), None, 0.5, 0.125, 1.0)
    ours, ref = run_ours(model, [x])[0].ravel(), run_litert(model, [x])[0].ravel()
    np.testing.assert_array_equal(ours, ref)
    xs = x.ravel().astype(int)
    expected = {7: 0, -7: 0, 8: 1, -8: -1, 23: 1, 24: 2, -24: -2, 9: 1, 119: 7, 120: 8}
    assert {k: int(ref[xs == k][0]) for k in expected} == expected


def test_fully_connected_double_product_precision():
    """eff = f64(s_in) * f64(s_w) / f64(s_out): with these scales, f32(s_in * s_w) gives 88, the double
    product 87 (acc = 5702 = 1 * 1 + bias 5701)."""
    s_in, s_w, s_out = 0.023295512422919273, 0.030716462060809135, 0.04662970080971718
    x = np.ones((1, 1), I8)
    model = _int8_fc(x, np.ones((1, 1), I8), np.array([5701], I32), s_in, s_w, s_out)
    ours, ref = run_ours(model, [x])[0], run_litert(model, [x])[0]
    assert int(ref[0, 0]) == 87
    np.testing.assert_array_equal(ours, ref)


def test_fully_connected_int16x16_float32_product_multiplier():
    """int16 x int16 uses MultiplyByQuantizedMultiplier (int64 overload) with the per-tensor multiplier of
    GetQuantizedConvolutionMultipler, f64(f32(s_in * s_w)) / f64(s_out): -7862 here (the double product: -7861)."""
    s_in, s_w, s_out = 0.0005617927527055144, 0.0008586680050939322, 6.433504313463345e-05
    x = np.ones((1, 1), I16)
    bias = T.const(np.array([-1048476], I32), q=quant(np.float32(s_in) * np.float32(s_w)))
    model = single_op_model(
        "FULLY_CONNECTED",
        [T((1, 1), I16, q=quant(s_in, 0)), T.const(np.ones((1, 1), I16), q=quant(s_w, 0)), bias],
        [T((1, 1), I16, q=quant(s_out, 0))],
        {},
    )
    ours, ref = run_ours(model, [x])[0], run_litert(model, [x])[0]
    assert int(ref[0, 0]) == -7862
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("real", [200.0, 3000.0, 16000.0], ids=["shift-8", "shift-12", "shift-14"])
def test_fully_connected_int16x16_large_multiplier(real):
    """Output multipliers >= 2^7 (shift 8..14) in the int64 MultiplyByQuantizedMultiplier."""
    rng = np.random.default_rng(int(real))
    x = rng.integers(-3, 4, (2, 5)).astype(I16)
    w = rng.integers(-3, 4, (4, 5)).astype(I16)
    model = single_op_model(
        "FULLY_CONNECTED",
        [T(x.shape, I16, q=quant(0.5, 0)), T.const(w, q=quant(0.25, 0)), None],
        [T((2, 4), I16, q=quant(0.125 / real, 0))],
        {},
    )
    check_both(model, [x])


EDGES = {
    # int32 accumulator wraps (C++ int32 overflow): biases at the ends of the int32 range
    "int32-wrap": dict(bias=[2**31 - 1, -(2**31), 2**31 - 1000, -5, 2**30], s_out=2.0**24, zo=-5),
    # round(acc * eff) outside int32: x86 cvttsd2si gives INT32_MIN, then + zo (wraps for zo < 0), then clamp
    "cast-overflow-zo-positive": dict(bias=None, s_out=1e-9, zo=9),
    "cast-overflow-zo-negative": dict(bias=None, s_out=1e-9, zo=-7),
    "cast-overflow-relu": dict(bias=None, s_out=1e-9, zo=9, act=1),
    "huge-bias-unit-scale": dict(bias=[2**31 - 1] * 5, s_out=1.0, zo=0),
    "tiny-scales": dict(bias=None, s_in=1e-30, s_w=1e-30, s_out=1e-45, zo=0),
    "output-scale-zero": dict(bias=None, s_out=0.0, zo=3),
}


@pytest.mark.parametrize("edge", list(EDGES), ids=[f"fc-int8-{k}" for k in EDGES])
def test_fully_connected_integer_edges(edge):
    e = EDGES[edge]
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (3, 16)).astype(I8)
    w = rng.integers(-128, 128, (5, 16)).astype(I8)
    bias = None if e["bias"] is None else np.array(e["bias"], I32)
    model = _int8_fc(x, w, bias, e.get("s_in", 1.0), e.get("s_w", 1.0), e["s_out"], zo=e["zo"], act=e.get("act", 0))
    check_both(model, [x])


def test_fully_connected_non_constant_weights():
    """Weights fed at run time (int8 per-tensor with a zero point, and hybrid on its first invoke)."""
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (3, 20)).astype(I8)
    w = rng.integers(-128, 128, (6, 20)).astype(I8)
    model = fc_model(
        x.shape,
        I8,
        quant(0.02, 4),
        w,
        I8,
        quant(0.01, -2),
        None,
        None,
        (3, 6),
        I8,
        quant(0.3, -1),
        {},
        const_weights=False,
    )
    check_both(model, [x, w])
    xf = rng.standard_normal((3, 20)).astype(F32)
    model = fc_model(
        xf.shape,
        F32,
        None,
        w,
        I8,
        quant(0.01, 0),
        None,
        None,
        (3, 6),
        F32,
        None,
        {"asymmetric_quantize_inputs": True},
        const_weights=False,
    )
    check_both(model, [xf, w])


# -- error paths ----------------------------------------------------------------------------------------------


def _bad(
    x_dtype=I8,
    w=None,
    w_dtype=I8,
    w_q=None,
    bias=None,
    b_q=None,
    out_dtype=I8,
    options=None,
    x_shape=(2, 8),
    out_shape=(2, 3),
    x_q=None,
):
    """(model, input) of a small FULLY_CONNECTED with one thing wrong."""
    w = np.ones((3, 8), _np(w_dtype)) if w is None else w
    model = fc_model(
        x_shape,
        x_dtype,
        x_q or quant(0.1, 0),
        w,
        w_dtype,
        w_q or quant(0.1, 0),
        bias,
        b_q or quant(0.01, 0),
        out_shape,
        out_dtype,
        quant(0.5, 0),
        options or {},
    )
    return model, np.zeros(x_shape, x_dtype)


#: models LiteRT rejects at prepare too
REJECTED_BY_BOTH = {
    "fc-int8-float-bias": lambda: _bad(bias=np.ones(3, F32)),
    "fc-int8-bias-scale-mismatch": lambda: _bad(bias=np.ones(3, I32), b_q=quant(0.5, 0)),
    "fc-int8-bias-length": lambda: _bad(bias=np.ones(4, I32)),
    "fc-int8-tanh": lambda: _bad(options={"fused_activation_function": 4}),
    "fc-float-sign-bit": lambda: (
        fc_model(
            (2, 8),
            F32,
            None,
            np.ones((3, 8), F32),
            F32,
            None,
            None,
            None,
            (2, 3),
            F32,
            None,
            {"fused_activation_function": 5},
        ),
        np.zeros((2, 8), F32),
    ),
    "fc-int8-keep-num-dims-depth": lambda: _bad(x_shape=(4, 4), out_shape=(4, 3), options={"keep_num_dims": True}),
    "fc-per-channel-uint8-input": lambda: _bad(x_dtype=U8, w_dtype=U8, w_q=quant([0.1, 0.2, 0.3], 0), out_dtype=U8),
    "fc-per-channel-wrong-dimension": lambda: _bad(w_q=quant([0.1] * 8, [0] * 8, quantized_dimension=1)),
    "fc-int16-input-zero-point": lambda: _bad(x_dtype=I16, out_dtype=I16, x_q=quant(0.1, 3)),
    "fc-int16x8-bias-type-mismatch": lambda: _bad(
        x_dtype=I16, out_dtype=I16, bias=np.ones(3, I64), options={"quantized_bias_type": 2}
    ),
    "fc-float-int8-output": lambda: (
        fc_model((2, 8), F32, None, np.ones((3, 8), F32), F32, None, None, None, (2, 3), I8, quant(0.1, 0), {}),
        np.zeros((2, 8), F32),
    ),
    "fc-int4-weights-zero-point": lambda: _bad(w_dtype=INT4, w_q=quant(0.1, 1)),
}

#: models LiteRT accepts but then reads garbage from (a bias read as the wrong width, a null bias
#: dereference, an input/output type mix the kernels reinterpret): litert_py refuses them at prepare.
REJECTED_BY_US = {
    "fc-int8-int64-bias": lambda: _bad(bias=np.ones(3, I64)),
    "fc-int16x8-int32-bias-default-type": lambda: _bad(x_dtype=I16, out_dtype=I16, bias=np.ones(3, I32)),
    "fc-int16x16-int64-bias-default-type": lambda: _bad(x_dtype=I16, w_dtype=I16, out_dtype=I16, bias=np.ones(3, I64)),
    "fc-uint8-to-int16-without-bias": lambda: _bad(x_dtype=U8, w_dtype=U8, out_dtype=I16),
    "fc-int8-in-uint8-out": lambda: _bad(out_dtype=U8),
    "fc-int8-in-int16-out": lambda: _bad(out_dtype=I16),
}


@pytest.mark.parametrize("case", list(REJECTED_BY_BOTH))
def test_fully_connected_rejected(case):
    model, x = REJECTED_BY_BOTH[case]()
    with pytest.raises(PrepareError):
        run_ours(model, [x])
    with pytest.raises((RuntimeError, ValueError)):
        run_litert(model, [x])


@pytest.mark.parametrize("case", list(REJECTED_BY_US))
def test_fully_connected_rejected_where_litert_misreads(case):
    model, x = REJECTED_BY_US[case]()
    with pytest.raises(PrepareError):
        run_ours(model, [x])


def test_fully_connected_depth_mismatch():
    """An input whose size is not a multiple of the weights' depth (LiteRT divides and drops the remainder)."""
    model = single_op_model("FULLY_CONNECTED", [T((2, 7)), T.const(np.ones((3, 8), F32)), None], [T((2, 3))], {})
    with pytest.raises(PrepareError):
        run_ours(model, [np.zeros((2, 7), F32)])


# -- helpers ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_half_away_inplace(dtype):
    """The 3-pass rounding equals TfLiteRound (litert_py.quant.round_away) on ties, near-ties and extremes."""
    rng = np.random.default_rng(0)
    info = np.finfo(dtype)
    base = np.concatenate([np.arange(-40, 41) / 2, rng.standard_normal(2000) * 1e3, [0.5, -0.5, 2.5, -2.5]])
    near = np.concatenate([np.nextafter(base, np.inf), np.nextafter(base, -np.inf)])
    special = np.array(
        [
            0.0,
            -0.0,
            info.max,
            -info.max,
            info.tiny,
            2.0 ** (info.nmant),
            2.0 ** (info.nmant + 1) - 1,
            np.nextafter(dtype(0.5), dtype(0)),
            -np.nextafter(dtype(0.5), dtype(0)),
        ]
    )
    t = np.concatenate([base, near, special]).astype(dtype)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(round_half_away_inplace(t.copy()), round_away(t))


@pytest.mark.parametrize("depth, zx, gemm", [(16, -128, "float32"), (3000, 100, "float64"), (3000, -128, "float64")])
def test_fully_connected_folded_bias_and_zero_point(depth, zx, gemm):
    """The bias and input zero point folded into a ones column of the GEMM (FullyConnectedQuantizedFolded):
    float32 while |x| * sum|w| + |bias - zx * sum w| stays below 2^24, float64 beyond; negative and positive
    accumulators, several batches, ties of the float requantization near zero."""
    from litert_py import Interpreter

    rng = np.random.default_rng(depth)
    x = rng.integers(-128, 128, (5, depth)).astype(I8)
    x[0] = zx  # the zero point itself: acc = bias exactly
    w = rng.integers(-127, 128, (7, depth)).astype(I8)
    bias = rng.integers(-50000, 50000, 7).astype(I32)
    model = _int8_fc(x, w, bias, 0.05, 0.01, 0.05 * 0.01 * 16 * np.sqrt(depth) * 8, zx=zx, zo=-3)
    ours, ref = run_ours(model, [x])[0], run_litert(model, [x])[0]
    np.testing.assert_array_equal(ours, ref)
    assert len(np.unique(ref)) > 5
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "FullyConnectedQuantizedFoldedRoundedRows" and prepared.weights_t.dtype == gemm


@pytest.mark.parametrize("zo, act", [(-3, 0), (0, 0), (40, 1), (-128, 3)])
@pytest.mark.parametrize("gemm", ["float32", "float64"])
def test_fully_connected_folded_scalar(gemm, zo, act):
    """One output value (a streaming classifier's head): FullyConnectedQuantizedFoldedScalar requantizes on a
    Python float. Over many invokes of one interpreter: accumulators of both signs, outputs at both clamps
    (NONE, RELU, RELU6), zero and nonzero output zero points; float32: effective scale 1/16, so acc = 8 mod 16
    are exact ties of the float requantization (away from zero, not to even)."""
    from litert_py import Interpreter

    rng = np.random.default_rng(abs(zo) * 4 + act)
    if gemm == "float32":
        depth, scales = 64, (0.5, 0.125, 1.0)  # eff = 1/16
        w = rng.integers(-3, 4, (1, depth)).astype(I8)
        bias = rng.integers(-200, 200, 1).astype(I32)
        xs = rng.integers(-15, 2, (160, 1, depth)).astype(I8)  # x - zx in [-8, 8]
    else:
        depth = 3000
        scales = (0.05, 0.01, 0.05 * 0.01 * 16 * np.sqrt(depth) * 2)
        w = rng.integers(-127, 128, (1, depth)).astype(I8)
        bias = rng.integers(-5000, 5000, 1).astype(I32)
        xs = rng.integers(-2, 3, (160, 1, depth)).astype(I8)
    xs[0] = -7  # the zero point: acc = bias exactly
    xs[1:20] = rng.integers(-128, 128, (19, 1, depth))  # large accumulators: both clamps
    model = _int8_fc(xs[0], w, bias, *scales, zx=-7, zo=zo, act=act)
    LiteRT, resolver = oracle()
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    ours = Interpreter(model_content=model)
    got, want = [], []
    for it, res in ((ours, got), (theirs, want)):
        it.allocate_tensors()
        for x in xs:
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            res.append(it.get_tensor(it.get_output_details()[0]["index"]).copy())
    np.testing.assert_array_equal(np.array(got), np.array(want))
    assert len(np.unique(want)) > (3 if act == 3 else 5)  # RELU6 with scale 1: seven values at most
    if gemm == "float32":
        acc = (xs[:, 0].astype(np.int64) + 7) @ w[0].astype(np.int64) + int(bias[0])
        assert (acc % 16 == 8).sum() >= 3  # ties exercised
    (prepared,) = ours._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "FullyConnectedQuantizedFoldedScalar" and prepared.w.dtype == gemm


@pytest.mark.parametrize("path", ["float32", "int8", "hybrid"])
def test_zero_output_units(path):
    """Weights of shape [0, depth] (issue 11: 'cannot reshape array of size 0'): LiteRT returns a [2, 0] output."""
    if path == "float32":
        x_t, w, y_t = T((2, 3)), T.const(np.zeros((0, 3), np.float32)), T((2, 0))
        bias = T.const(np.zeros(0, np.float32))
    elif path == "int8":
        x_t, y_t = T((2, 3), np.int8, q=quant(0.5, 1)), T((2, 0), np.int8, q=quant(0.25, -2))
        w = T.const(np.zeros((0, 3), np.int8), q=quant(0.1, 0))
        bias = T.const(np.zeros(0, np.int32), q=quant(0.05, 0))
    else:
        x_t, y_t = T((2, 3)), T((2, 0))
        w = T.const(np.zeros((0, 3), np.int8), q=quant(0.1, 0))
        bias = T.const(np.zeros(0, np.float32))
    for b in (bias, None):
        model = single_op_model("FULLY_CONNECTED", [x_t, w, b], [y_t])
        x = np.ones((2, 3), x_t.dtype)
        ours, theirs = run_ours(model, [x]), run_litert(model, [x])
        assert ours[0].shape == theirs[0].shape == (2, 0)
        assert ours[0].dtype == theirs[0].dtype


@pytest.mark.parametrize(
    "depth, weights, asymmetric, gemm",
    [
        (1040, "127", False, "float32"),  # 127 * 127 * 1040 = 16,774,160 <= 2^24: the bound is tight here
        (1041, "127", False, "float64"),  # one more term passes 2^24
        (256, "-128", False, "float32"),  # the SSE -128 fix on every weight of the 16-wide blocks
        (512, "-128", False, "float64"),
        (128, "mixed", True, "float32"),  # asymmetric inputs: the zero point times the row sums
        (1024, "mixed", True, "float64"),
    ],
)
def test_hybrid_product_dtype_by_its_bound(depth, weights, asymmetric, gemm):
    """The hybrid product runs in float32 exactly while hybrid_fc.product_bound <= 2^24 (float64 beyond), with
    inputs that drive the partial sums to the bound (every q = +-127 on weights of one sign): the float32 output
    equals BUILTIN_REF's bit for bit."""
    rng = np.random.default_rng(depth)
    if weights == "127":
        w = np.full((4, depth), 127)
    elif weights == "-128":
        w = np.full((4, depth), -128)
    else:
        w = rng.choice([-128, 127, -1, 64], (4, depth))
    w = w.astype(np.int8)
    x = np.where(rng.random((3, depth)) < 0.5, -2.0, 2.0).astype(np.float32)
    x[0] = 2.0  # q = 127 everywhere
    x[1] = -2.0
    opts = {"fused_activation_function": 0, "keep_num_dims": False, "asymmetric_quantize_inputs": asymmetric}
    model = fc_model((3, depth), F32, None, w, I8, quant(0.01, 0), None, None, (3, 4), F32, None, opts)
    check_both(model, [x], rtol=0.0)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    if asymmetric:  # FullyConnectedHybridRows; its general path (the fallback) on the same rows, too
        assert type(prepared).__name__ == "FullyConnectedHybridRows"
        prepared = prepared.general
        ours = np.empty((3, 4), F32)
        prepared([x, None], [ours])
        (theirs,) = run_litert(model, [x])
        assert np.array_equal(ours.view(np.int32), theirs.view(np.int32))
    assert type(prepared).__name__ == "FullyConnectedHybrid" and prepared.weights_t.dtype == gemm
