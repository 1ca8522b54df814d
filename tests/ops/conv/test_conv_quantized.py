"""CONV_2D and DEPTHWISE_CONV_2D quantized (uint8, int8, int16x8) paths against the oracle
(ai-edge-litert BUILTIN_REF).

One table (PATHS) drives hypothesis-driven differential tests: shapes, strides, dilations, padding, groups /
depth multiplier, every fused activation, scales from tiny to huge (per-channel scales spanning orders of
magnitude), zero points at the ends of their range, biases up to the int32 limits. Integer outputs must be equal.
When LiteRT rejects a drawn model, litert_py must reject it at prepare. Further tests pin the epilogue's
exactness, the large accumulator paths (int32 wrap, int64 fallback), int4 filters, blocked layouts and the error
paths. The hybrid paths are in test_conv_hybrid.py, the folded requantization's boundaries in
test_conv_requant.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from litert_py.errors import InvalidModelError
from litert_py.ops.conv import conv2d_quantized, depthwise_quantized, im2col, taps
from litert_py.schema.builder import quant
from litert_py.schema.model import QuantizationParameters
from tests.ops.conv._quantized import (
    F32,
    I8,
    I16,
    I32,
    I64,
    TYPE_INT32,
    U8,
    _prepared,
    _prepared_op,
    case_model,
    check_against_oracle,
    geometry,
)
from tests.ops.conv.test_conv import conv_options
from tests.oracle import run_litert, run_ours
from tests.values import INT4, int_range, ints

#: id -> (input/output type, filter type, bias type, per-channel, options)
PATHS = {
    "int8-per-channel": (I8, I8, I32, True, {}),
    "int8-per-tensor": (I8, I8, I32, False, {}),
    "int8-int4-filter": (I8, INT4, I32, True, {}),
    "uint8": (U8, U8, I32, False, {}),
    "int16x8-int64-bias": (I16, I8, I64, True, {}),
    "int16x8-int32-bias": (I16, I8, I32, True, {"quantized_bias_type": TYPE_INT32}),
}
DEPTHWISE_PATHS = {k: v for k, v in PATHS.items() if k != "int16x8-int32-bias"}  # depthwise int16: int64 bias


def _zero_point(draw, dtype) -> int:
    lo, hi = int_range(dtype)
    return draw(st.sampled_from([lo, hi, 0, (lo + hi) // 2])) if draw(st.booleans()) else draw(st.integers(lo, hi))


def _values(rng, shape, dtype, wide: bool):
    lo, hi = int_range(dtype)
    if not wide:  # a narrow band: accumulators stay small, outputs rarely saturate
        lo, hi = max(lo, -20), min(hi, 20) if lo < 0 else min(hi, 40)
    return ints(rng, shape, I8 if dtype == INT4 else dtype, lo, hi)


@st.composite
def quantized_cases(draw, op: str, path: str):
    x_dtype, f_type, b_dtype, per_channel, extra = PATHS[path]
    d = draw(geometry(op))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out_c = d["out_c"]
    f_shape = (out_c, d["kh"], d["kw"], d["filter_c"]) if op == "CONV_2D" else (1, d["kh"], d["kw"], out_c)
    terms = d["kh"] * d["kw"] * (d["filter_c"] if op == "CONV_2D" else 1)
    x = _values(rng, (d["batch"], d["h"], d["w"], d["c"]), x_dtype, draw(st.booleans()))
    f = _values(rng, f_shape, f_type, draw(st.sampled_from([True, True, False])))
    x_zp = 0 if x_dtype == I16 else _zero_point(draw, x_dtype)
    out_zp = 0 if x_dtype == I16 else _zero_point(draw, x_dtype)
    # The uint8 filter has a zero point; int8 convs require 0 (depthwise ignores it: drawn sometimes).
    f_zp = (
        _zero_point(draw, U8)
        if f_type == U8
        else (int(draw(st.integers(-128, 127))) if op != "CONV_2D" and draw(st.integers(0, 4)) == 0 else 0)
    )
    s_in = 10.0 ** draw(st.floats(-5, 1))
    if per_channel:
        s_w = 10.0 ** (draw(st.floats(-4, -1)) + rng.uniform(-1, 1, out_c) * draw(st.sampled_from([0.0, 0.5, 3.0])))
    else:
        s_w = 10.0 ** draw(st.floats(-4, -1))
    # The scale that spreads the outputs over the type's range, times a factor from tiny to huge.
    typical = s_in * float(np.median(s_w)) * 60.0 * np.sqrt(terms) * (1 / 256 if x_dtype == I16 else 1)
    s_out = typical * 10.0 ** draw(st.sampled_from([0.0, 0.0, draw(st.floats(-2, 2)), draw(st.floats(-6, 6))]))
    magnitude = draw(st.sampled_from([0, 1e2, 1e4, 1e6, 2.0**31 - 1]))
    bias = np.clip(np.round(rng.standard_normal(out_c) * magnitude), -(2**31), 2**31 - 1).astype(b_dtype)
    if magnitude and draw(st.integers(0, 5)) == 0:  # the int32 limits themselves
        bias[rng.integers(0, out_c)] = rng.choice([-(2**31), 2**31 - 1])
    b_scale = np.float32(s_in) * np.float32(s_w).astype(np.float64)
    const = (draw(st.integers(0, 5)) > 0, draw(st.integers(0, 5)) > 0) if f_type != INT4 else (True, True)
    return {
        "op": op,
        "x": x,
        "x_q": quant(s_in, x_zp),
        "f": f,
        "f_type": f_type,
        "f_q": quant(s_w, f_zp, 0 if op == "CONV_2D" else 3),
        "bias": bias if op == "CONV_2D" or draw(st.integers(0, 4)) else None,
        "b_q": quant(b_scale, 0),
        "out_q": quant(s_out, out_zp),
        "options": conv_options(d, op, extra),
        "const": const,
    }


@pytest.mark.parametrize("path", list(PATHS))
@given(data=st.data())
def test_conv_2d_quantized(path, data):
    check_against_oracle(data.draw(quantized_cases("CONV_2D", path)))


@pytest.mark.parametrize("path", list(DEPTHWISE_PATHS))
@given(data=st.data())
def test_depthwise_conv_2d_quantized(path, data):
    check_against_oracle(data.draw(quantized_cases("DEPTHWISE_CONV_2D", path)))


@pytest.mark.parametrize("path", ["int8-per-channel", "int8-per-tensor", "uint8"])
@given(data=st.data())
def test_conv_2d_quantized_scaled(path, data):
    """The same cases with the float32 GEMM and scaled sums (conv2d_quantized.ConvQuantizedScaled, normally for
    large im2col matrices) wherever the requantization folds: FOLD_MAX_IM2COL_VALUES / FOLD_MAX_K_PER_OUTPUT
    set to 0."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conv2d_quantized, "FOLD_MAX_IM2COL_VALUES", 0)
        mp.setattr(conv2d_quantized, "FOLD_MAX_K_PER_OUTPUT", 0)
        check_against_oracle(data.draw(quantized_cases("CONV_2D", path)))


@pytest.mark.parametrize("path", list(DEPTHWISE_PATHS))
@given(data=st.data())
def test_depthwise_conv_2d_quantized_einsum(path, data):
    """The same cases with the einsum tap sums (depthwise_quantized.EinsumTaps, normally from
    EINSUM_MIN_CHANNELS output channels on) for every constant filter: exact whatever einsum's order (the rows
    path, depthwise_rows, off)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(depthwise_quantized, "EINSUM_MIN_CHANNELS", 1)
        mp.setattr(depthwise_quantized, "ROWS_PATH", False)
        check_against_oracle(data.draw(quantized_cases("DEPTHWISE_CONV_2D", path)))


@pytest.mark.parametrize("kind", ["folded", "unfolded", "uint8-multiplier-2"])
def test_depthwise_einsum_taps_at_real_sizes(kind, monkeypatch):
    """EinsumTaps chosen at prepare for 64 output channels (folded and unfolded epilogues, uint8 with a filter
    zero point and depth multiplier 2, stride 2 and SAME padding; the rows path off), exact against the oracle."""
    monkeypatch.setattr(depthwise_quantized, "ROWS_PATH", False)
    rng = np.random.default_rng(11)
    dtype = U8 if kind.startswith("uint8") else I8
    c, m = (32, 2) if kind.startswith("uint8") else (64, 1)
    lo, hi = int_range(dtype)
    x = rng.integers(lo, hi, (1, 9, 7, c), endpoint=True).astype(dtype)
    f = rng.integers(lo, hi, (1, 3, 3, c * m), endpoint=True).astype(dtype)
    s_out, zp = {"folded": (1.0, 5), "unfolded": (2.0**25, -128), "uint8-multiplier-2": (256.0, 5)}[kind]
    case = {
        "op": "DEPTHWISE_CONV_2D",
        "x": x,
        "x_q": quant(0.5, lo + 9),
        "f": f,
        "f_type": dtype,
        "f_q": quant(0.25, 3 if dtype == U8 else 0, 3) if dtype == U8 else quant(rng.uniform(0.1, 0.3, c * m), 0, 3),
        "bias": rng.integers(-(2**30), 2**30, c * m).astype(I32)
        if kind == "unfolded"  # right shifts ~28: no channel folds, even with the zero point after the floor
        else rng.integers(-3000, 3000, c * m).astype(I32),
        "b_q": quant(0.125),
        "out_q": quant(s_out, zp),
        "options": {"padding": 0, "stride_h": 2, "stride_w": 2, "depth_multiplier": m, "fused_activation_function": 1},
        "const": (True, True),
    }
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 2
    prepared = _prepared_op(case)
    assert type(prepared.taps).__name__ == "EinsumTaps"
    assert hasattr(prepared, "epilogue") == (kind != "unfolded")


# -- the epilogue, the big-accumulator paths and the layouts ----------------------------------------------


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_tie_probe(op):
    """Multiplier exactly 1/16 (s_in 0.5, s_w 0.125, s_out 1): x = 8 (mod 16) are exact ties, which
    MultiplyByQuantizedMultiplier's double rounding sends away from zero (x = -8 -> -1). LiteRT's default
    kernels differ here: the optimized CONV_2D gives 0 for x = -8 and -6 for x = -105 (-6.5625, REF -7);
    XNNPACK rounds the ties to even (x = 8 -> 0)."""
    x = np.arange(-128, 128, dtype=I8).reshape(1, 1, 256, 1)
    out = check_against_oracle(
        {
            "op": op,
            "x": x,
            "x_q": quant(0.5),
            "f": np.ones((1, 1, 1, 1), I8),
            "f_type": I8,
            "f_q": quant([0.125], 0, 0 if op == "CONV_2D" else 3),
            "bias": np.zeros(1, I32),
            "b_q": quant(0.0625),
            "out_q": quant(1.0),
            "options": {"padding": 0, "stride_h": 1, "stride_w": 1},
            "const": (True, True),
        }
    )
    assert out[0, 0, 128 - 8, 0] == -1 and out[0, 0, 128 + 8, 0] == 1


def _full_scale_case(op, x_dtype, value, terms_c, bias_dtype=I32, options=None):
    """A conv whose accumulators are all terms * value * 127: large enough to leave the fused epilogue."""
    x = np.full((1, 2, 2, terms_c), value, x_dtype)
    if op == "CONV_2D":
        f = np.full((3, 1, 1, terms_c), 127, I8)
        f_q = quant([0.01, 0.02, 0.03], 0, 0)
        out_c = 3
    else:
        f = np.full((1, 1, 1, terms_c), 127, I8)
        f_q = quant(0.01, 0, 3)
        out_c = terms_c
    return {
        "op": op,
        "x": x,
        "x_q": quant(0.5, 0),
        "f": f,
        "f_type": I8,
        "f_q": f_q,
        "bias": np.arange(out_c).astype(bias_dtype),
        "b_q": quant(0.005, 0),
        "out_q": quant(2000.0 if x_dtype == I16 else 500.0, 0),
        "options": {"padding": 0, "stride_h": 1, "stride_w": 1, **(options or {})},
        "const": (True, True),
    }


def test_int8_accumulators_beyond_the_fused_bound_take_the_int64_path(monkeypatch):
    """|acc| = 700 * 127 * 127 > the fused form's bound (about 2**22 here): checked at eval, int64 path (the
    unfolded kernel's: ConvQuantizedScaled's float32 GEMM, which small outputs try first, is turned off)."""
    monkeypatch.setattr(conv2d_quantized, "WIDE_MIN_K", 1 << 30)
    case = _full_scale_case("CONV_2D", I8, 127, 700)
    out = check_against_oracle(case)
    assert (out != 0).any()
    op = _prepared(case)
    assert op.requant.kind == "fused" and op.requant.check and op.requant.exact_bound < 700 * 127 * 127


def test_int16_int32_accumulator_wraps_like_litert():
    """int16x8 with an int32 bias accumulates in int32: 600 * 32767 * 127 overflows and wraps in LiteRT."""
    case = _full_scale_case("CONV_2D", I16, 32767, 600, I32, {"quantized_bias_type": TYPE_INT32})
    check_against_oracle(case)
    op = _prepared(case)
    assert op.requant.kind == "wrap32"


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_int16_int64_accumulators(op):
    case = _full_scale_case(op, I16, -32768, 300, I64)
    check_against_oracle(case)


@pytest.mark.parametrize("small", [False, True], ids=["one-block", "blocked"])
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_quantized_layouts(op, small, monkeypatch):
    """The im2col matrix in blocks of output rows; the depthwise tap loop instead of the stacked product."""
    if small:
        monkeypatch.setattr(im2col, "IM2COL_BLOCK_BYTES", 300)
        monkeypatch.setattr(taps, "DEPTHWISE_STACKED_ELEMENTS", 10)
        monkeypatch.setattr(taps, "DEPTHWISE_TILE_BYTES", 16)
        monkeypatch.setattr(depthwise_quantized, "ROWS_PATH", False)
    rng = np.random.default_rng(3)
    for padding in (0, 1):
        x = rng.integers(-128, 128, (2, 9, 7, 4)).astype(I8)
        if op == "CONV_2D":
            f, f_q, out_c = rng.integers(-127, 128, (6, 3, 2, 2)).astype(I8), quant(rng.uniform(0.01, 0.02, 6)), 6
            opts = {"padding": padding, "stride_h": 2, "stride_w": 1, "dilation_w_factor": 2}
        else:
            f, f_q, out_c = rng.integers(-127, 128, (1, 3, 2, 8)).astype(I8), quant(0.01, 0, 3), 8
            opts = {"padding": padding, "stride_h": 1, "stride_w": 2}
        check_against_oracle(
            {
                "op": op,
                "x": x,
                "x_q": quant(0.1, -7),
                "f": f,
                "f_type": I8,
                "f_q": f_q,
                "bias": rng.integers(-500, 500, out_c).astype(I32),
                "b_q": quant(0.001),
                "out_q": quant(0.5, 3),
                "options": opts,
                "const": (True, True),
            }
        )


def test_quantized_empty_output():
    """A VALID filter one past the input height gives an output of height 0 (LiteRT too)."""
    case = _full_scale_case("CONV_2D", I8, 3, 4)
    case["x"] = np.ones((1, 1, 3, 4), I8)
    case["f"] = np.ones((3, 2, 1, 4), I8)
    case["options"] = {"padding": 1, "stride_h": 1, "stride_w": 1}
    assert check_against_oracle(case).shape == (1, 0, 3, 3)


# -- error paths: LiteRT rejects each (at prepare, or at invoke), litert_py at allocate_tensors --------------

_NOQ = QuantizationParameters()


_Q_IN, _Q_BIAS, _Q_OUT = quant(0.5, 1), quant(0.005), quant(0.7, -2)


def _error_case(
    op="CONV_2D", x_dtype=I8, f_dtype=I8, b_dtype=I32, x_q=_Q_IN, f_q=None, b_q=_Q_BIAS, out_q=_Q_OUT, options=None
):
    out_c = 3 if op == "CONV_2D" else 4
    f_shape = (3, 2, 2, 4) if op == "CONV_2D" else (1, 2, 2, 4)
    x = (np.arange(32).reshape(1, 2, 4, 4) % 7).astype(x_dtype)
    return {
        "op": op,
        "x": x,
        "x_q": x_q,
        "f": np.ones(f_shape, f_dtype),
        "f_type": f_dtype,
        "f_q": quant(0.01, 0, 0 if op == "CONV_2D" else 3) if f_q is None else f_q,
        "bias": np.ones(out_c, b_dtype),
        "b_q": b_q,
        "out_q": out_q,
        "options": {"padding": 0, "stride_h": 1, "stride_w": 1, **(options or {})},
        "const": (True, True),
    }


ERRORS = [
    ("conv_2d-int8-input-uint8-filter", _error_case(f_dtype=U8)),  # LiteRT: at invoke
    ("conv_2d-int8-bias-int64", _error_case(b_dtype=I64)),
    ("conv_2d-int8-bias-int8", _error_case(b_dtype=I8)),
    ("conv_2d-int8-bias-zero-point", _error_case(b_q=quant(0.005, 3))),
    ("conv_2d-input-not-quantized", _error_case(x_q=_NOQ)),
    ("conv_2d-filter-not-quantized", _error_case(f_q=_NOQ)),
    ("conv_2d-filter-zero-point", _error_case(f_q=quant(0.01, 1))),
    (
        "conv_2d-uint8-per-channel",
        _error_case(x_dtype=U8, f_dtype=U8, f_q=quant([0.1, 0.2, 0.3], 0), x_q=quant(0.5, 128), out_q=quant(0.7, 128)),
    ),
    (
        "conv_2d-uint8-bias-scale-off",
        _error_case(x_dtype=U8, f_dtype=U8, x_q=quant(0.5, 128), b_q=quant(0.5), out_q=quant(0.7, 128)),
    ),
    ("conv_2d-int16-input-zero-point", _error_case(x_dtype=I16, b_dtype=I64, x_q=quant(0.5, 3), out_q=quant(0.7))),
    ("conv_2d-int16-output-zero-point", _error_case(x_dtype=I16, b_dtype=I64, x_q=quant(0.5), out_q=quant(0.7, 3))),
    (
        "conv_2d-int16-bias-type-mismatch",
        _error_case(
            x_dtype=I16, b_dtype=I64, x_q=quant(0.5), out_q=quant(0.7), options={"quantized_bias_type": TYPE_INT32}
        ),
    ),
    # Without quantized_bias_type LiteRT reads an int32 bias as int64 (garbage): litert_py refuses it.
    ("conv_2d-relu-output-scale-overflow", _error_case(out_q=quant(1e-12), options={"fused_activation_function": 3})),
    ("depthwise_conv_2d-int8-input-uint8-filter", _error_case("DEPTHWISE_CONV_2D", f_dtype=U8)),
    (
        "depthwise_conv_2d-int16-bias-int32",
        _error_case("DEPTHWISE_CONV_2D", x_dtype=I16, x_q=quant(0.5), out_q=quant(0.7)),
    ),
    ("depthwise_conv_2d-int8-bias-int64", _error_case("DEPTHWISE_CONV_2D", b_dtype=I64)),
    ("depthwise_conv_2d-filter-not-quantized", _error_case("DEPTHWISE_CONV_2D", f_q=_NOQ)),
    ("depthwise_conv_2d-input-not-quantized", _error_case("DEPTHWISE_CONV_2D", x_q=_NOQ)),
    ("depthwise_conv_2d-per-channel-count", _error_case("DEPTHWISE_CONV_2D", f_q=quant([0.1, 0.2], 0, 3))),
    (
        "conv_2d-hybrid-grouped-one-scale",
        {
            **_error_case(x_dtype=F32, b_dtype=F32, x_q=None, out_q=None),
            "f": np.ones((4, 2, 2, 2), I8),
            "bias": np.ones(4, F32),
        },
    ),
    (
        "conv_2d-hybrid-per-channel-dimension-3",
        {
            **_error_case(x_dtype=F32, b_dtype=F32, x_q=None, out_q=None),
            "f": np.ones((4, 2, 2, 4), I8),
            "bias": np.ones(4, F32),
            "f_q": quant([0.1, 0.2, 0.3, 0.4], 0, 3),
        },
    ),
    (
        "depthwise_conv_2d-hybrid-one-scale-dimension-3",
        {**_error_case("DEPTHWISE_CONV_2D", x_dtype=F32, b_dtype=F32, x_q=None, out_q=None), "f_q": quant(0.1, 0, 3)},
    ),
]


@pytest.mark.parametrize("case", [e[1] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_rejected_like_litert(case):
    model = case_model(case)
    # LiteRT fails at load (invalid quantization: ValueError), prepare, or invoke for the filter types it does
    # not run; litert_py at load or prepare.
    with pytest.raises((RuntimeError, ValueError)):
        run_litert(model, [case["x"]])
    with pytest.raises((PrepareError, InvalidModelError)):
        run_ours(model, [case["x"]])


# LiteRT runs these, reading a tensor's bytes as another type (garbage); litert_py refuses them.
REFUSED = [
    # The int16 CONV_2D reads the bias as int64 unless quantized_bias_type says INT32.
    (
        "conv_2d-int16-int32-bias-without-quantized_bias_type",
        _error_case(x_dtype=I16, b_dtype=I32, x_q=quant(0.5), out_q=quant(0.7)),
        "quantized_bias_type",
    ),
    (
        "conv_2d-uint8-input-int8-filter",
        _error_case(x_dtype=U8, x_q=quant(0.5, 128), out_q=quant(0.7, 128)),
        "UINT8 filter",
    ),
    (
        "conv_2d-int16-input-int16-filter",
        _error_case(x_dtype=I16, f_dtype=I16, b_dtype=I64, x_q=quant(0.5), out_q=quant(0.7)),
        "INT8 or INT4 filter",
    ),
    (
        "depthwise_conv_2d-int16-input-int16-filter",
        _error_case("DEPTHWISE_CONV_2D", x_dtype=I16, f_dtype=I16, b_dtype=I64, x_q=quant(0.5), out_q=quant(0.7)),
        "INT8 filter",
    ),
]


@pytest.mark.parametrize("case, match", [e[1:] for e in REFUSED], ids=[e[0] for e in REFUSED])
def test_refused_although_litert_runs_it(case, match):
    model = case_model(case)
    run_litert(model, [case["x"]])
    with pytest.raises(PrepareError, match=match):
        run_ours(model, [case["x"]])
