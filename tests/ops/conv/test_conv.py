"""CONV_2D and DEPTHWISE_CONV_2D (float32) against the oracle (ai-edge-litert BUILTIN_REF).
The quantized and hybrid paths are tested in test_conv_quantized.py, test_conv_hybrid.py and test_conv_requant.py.

One hypothesis-driven test per op draws shapes, strides, dilations, padding, fused activation, bias and
whether the filter/bias are constants; a window LiteRT rejects must be rejected by litert_py at prepare.
The error table checks each shape/type/option LiteRT refuses.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.ops.common import FLT_MAX
from litert_py.ops.conv import conv2d as conv
from litert_py.ops.conv import im2col, taps
from tests.compare import assert_close
from tests.oracle import T, run_both, run_both_unless_rejected, run_litert, single_op_model

#: Float tolerance, relative to the largest output magnitude, per term of the accumulation (KH*KW*Cg).
TOLERANCE = {"CONV_2D": 1e-5, "DEPTHWISE_CONV_2D": 1e-5}
ACTIVATIONS = [0, 1, 2, 3, 4, 5]  # NONE RELU RELU_N1_TO_1 RELU6 TANH SIGN_BIT (LiteRT ignores the last two)


def conv_options(d: dict, op: str, extra: dict | None = None) -> dict:
    """The builtin options of a conv case's geometry ``d`` (padding, stride, dilation, act, mult), plus ``extra``."""
    o = {
        "padding": d["padding"],
        "stride_h": d["stride"][0],
        "stride_w": d["stride"][1],
        "dilation_h_factor": d["dilation"][0],
        "dilation_w_factor": d["dilation"][1],
        "fused_activation_function": d["act"],
        **(extra or {}),
    }
    if op == "DEPTHWISE_CONV_2D":
        o["depth_multiplier"] = d["mult"]
    return o


@st.composite
def conv_cases(draw, op: str):
    """A case: model input/filter/bias arrays and options, drawn in modest ranges."""
    d = {
        "batch": draw(st.integers(1, 2)),
        "h": draw(st.integers(1, 12)),
        "w": draw(st.integers(1, 12)),
        "kh": draw(st.integers(1, 4)),
        "kw": draw(st.integers(1, 4)),
        "stride": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "dilation": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "padding": draw(st.sampled_from([0, 1])),
        "act": draw(st.sampled_from(ACTIVATIONS)),
        "const": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }
    if op == "CONV_2D":
        groups = draw(st.sampled_from([1, 1, 2]))
        cg = draw(st.integers(1, 8 // groups))
        d.update(c=cg * groups, out_c=groups * draw(st.integers(1, 8 // groups)), filter_c=cg, bias=True)
    else:
        c, m = draw(st.integers(1, 8)), draw(st.integers(1, 3))
        d.update(c=c, mult=m, out_c=c * m, bias=draw(st.booleans()))
    return d


def _model_and_inputs(op: str, d: dict):
    rng = np.random.default_rng(d["seed"])
    x = rng.standard_normal((d["batch"], d["h"], d["w"], d["c"])).astype(np.float32)
    if op == "CONV_2D":
        f = rng.standard_normal((d["out_c"], d["kh"], d["kw"], d["filter_c"])).astype(np.float32)
    else:
        f = rng.standard_normal((1, d["kh"], d["kw"], d["out_c"])).astype(np.float32)
    b = rng.standard_normal(d["out_c"]).astype(np.float32)
    consts = [f] + ([b] if d["bias"] else [])
    if d["const"]:
        tensors, feeds = [T.const(a) for a in consts], [x]
    else:
        tensors, feeds = [T(a.shape) for a in consts], [x, *consts]
    model = single_op_model(op, [T(x.shape), *tensors], [T((1, 1, 1, d["out_c"]))], conv_options(d, op))
    return model, feeds, f.shape[1] * f.shape[2] * (f.shape[3] if op == "CONV_2D" else 1)


def _check_against_oracle(op: str, d: dict):
    model, feeds, terms = _model_and_inputs(op, d)
    both = run_both_unless_rejected(model, feeds)  # e.g. VALID with a filter larger than the input: rejected
    if both is None:
        return
    ours, theirs = both
    assert_close(ours, theirs, rtol=TOLERANCE[op] * terms, atol=1e-6)


@given(d=conv_cases("CONV_2D"))
def test_conv_2d_float32(d):
    _check_against_oracle("CONV_2D", d)


@given(d=conv_cases("DEPTHWISE_CONV_2D"))
def test_depthwise_conv_2d_float32(d):
    _check_against_oracle("DEPTHWISE_CONV_2D", d)


def _conv_case(op="CONV_2D", **kw):
    d = {
        "batch": 2,
        "h": 9,
        "w": 7,
        "c": 4,
        "out_c": 6,
        "filter_c": 4,
        "kh": 3,
        "kw": 2,
        "stride": (2, 1),
        "dilation": (1, 2),
        "padding": 0,
        "act": 0,
        "const": True,
        "bias": True,
        "mult": 1,
        "seed": 7,
    }
    if op == "DEPTHWISE_CONV_2D":
        d.update(out_c=8, mult=2)
    d.update(kw)
    return d


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
@pytest.mark.parametrize("small_buffers", [False, True], ids=["one-block", "blocked"])
def test_float32_blocked_layouts(op, small_buffers, monkeypatch):
    """The im2col matrix built in blocks of output rows, depthwise weights not tiled: same numbers."""
    if small_buffers:
        monkeypatch.setattr(im2col, "IM2COL_BLOCK_BYTES", 200)
        monkeypatch.setattr(taps, "DEPTHWISE_TILE_BYTES", 16)
    for padding in (0, 1):
        _check_against_oracle(op, _conv_case(op, padding=padding))
        _check_against_oracle(op, _conv_case(op, padding=padding, batch=1, h=12, w=12, stride=(1, 1)))


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_float32_special_values(op):
    """+-inf are clamped to +-FLT_MAX even without an activation (and with TANH, which LiteRT ignores); NaN passes."""
    for act in (0, 4):
        model, feeds, _ = _model_and_inputs(op, _conv_case(op, act=act, padding=1, stride=(1, 1), dilation=(1, 1)))
        x = feeds[0]
        x[0, 1, 1, 0], x[0, 4, 3, 1], x[1, 2, 2, 2] = np.inf, -np.inf, np.nan
        with np.errstate(invalid="ignore"):  # inf - inf in the GEMM
            (ours,), (theirs,) = run_both(model, feeds)
        assert not np.isinf(theirs).any() and (np.abs(theirs) == FLT_MAX).any() and np.isnan(theirs).any()
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        np.testing.assert_array_equal(ours[np.abs(theirs) == FLT_MAX], theirs[np.abs(theirs) == FLT_MAX])
        normal = np.abs(theirs) < FLT_MAX
        assert_close([ours[normal]], [theirs[normal]], rtol=1e-4, atol=1e-6)


def test_conv_2d_bias_of_shape_1xO_and_empty_output():
    """LiteRT only counts the bias elements; a VALID filter one past the input gives an empty output."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 5, 5, 4)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    model = single_op_model(
        "CONV_2D",
        [T(x.shape), T.const(w), T.const(np.ones((1, 3), np.float32))],
        [T((1, 5, 5, 3))],
        {"padding": 0, "stride_h": 1, "stride_w": 1},
    )
    assert_close(*run_both(model, [x]), rtol=1e-4, atol=1e-6)
    w6 = rng.standard_normal((3, 6, 6, 4)).astype(np.float32)
    model = single_op_model(
        "CONV_2D",
        [T(x.shape), T.const(w6), T.const(np.ones(3, np.float32))],
        [T((1, 1, 1, 3))],
        {"padding": 1, "stride_h": 1, "stride_w": 1},
    )
    ours, theirs = run_both(model, [x])
    assert ours[0].shape == theirs[0].shape == (1, 0, 0, 3)


def test_prepared_conv_is_one_gemm_on_the_input_for_1x1():
    """A 1x1 stride-1 conv multiplies the input itself: no im2col buffer; a 3x3 one allocates it at prepare,
    with a ones column that multiplies the bias row of the weights (ConvFloatBiasFolded)."""
    x = np.zeros((1, 4, 4, 8), np.float32)
    for k, direct in ((1, True), (3, False)):
        w = np.ones((2, k, k, 8), np.float32)
        model = single_op_model(
            "CONV_2D",
            [T(x.shape), T.const(w), T.const(np.zeros(2, np.float32))],
            [T((1, 4, 4, 2))],
            {"padding": 0, "stride_h": 1, "stride_w": 1},
        )
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (op,) = [o for o in it._subgraphs[0].prepared_ops.values()]
        assert isinstance(op, conv.ConvFloat if direct else conv.ConvFloatBiasFolded)
        assert (op.im2col.blocks[0][4] is None) == direct
        assert op.weights.shape == (1, k * k * 8 + (not direct), 2) and op.weights.flags.c_contiguous


# (id, input shape, filter shape, options, constant bias, the prepared op)
BIAS_FOLDING = [
    (
        "3x3-same-relu6",
        (2, 9, 7, 5),
        (6, 3, 3, 5),
        {"padding": 0, "fused_activation_function": 3},
        True,
        "ConvFloatBiasFolded",
    ),
    (
        "5x5-stride-2",
        (1, 16, 16, 3),
        (8, 5, 5, 3),
        {"padding": 0, "stride_h": 2, "stride_w": 2},
        True,
        "ConvFloatBiasFolded",
    ),
    (
        "1x1-stride-2",
        (1, 8, 8, 6),
        (8, 1, 1, 6),
        {"padding": 1, "stride_h": 2, "stride_w": 2},
        True,
        "ConvFloatBiasFolded",
    ),  # a strided 1x1 copies its rows: folded too
    ("1x1-stride-1", (1, 8, 8, 6), (8, 1, 1, 6), {"padding": 1}, True, "ConvFloat"),  # the input is the matrix
    ("runtime-bias", (1, 9, 7, 5), (6, 3, 3, 5), {"padding": 0}, False, "ConvFloat"),
    ("grouped", (1, 9, 7, 6), (6, 3, 3, 3), {"padding": 0}, True, "ConvFloat"),
]


@pytest.mark.parametrize("case", BIAS_FOLDING, ids=[c[0] for c in BIAS_FOLDING])
def test_conv_2d_bias_folded_into_the_gemm(case):
    """The bias as one more GEMM row (a ones column of the im2col matrix): biases much larger than the dot
    products and of both signs, clamped by the activation; within the float tolerance of the reference."""
    _, x_shape, w_shape, options, const_bias, expected = case
    rng = np.random.default_rng(len(x_shape) + w_shape[0])
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = (rng.standard_normal(w_shape[0]) * 50).astype(np.float32)
    options = {"stride_h": 1, "stride_w": 1, **options}
    bias = T.const(b) if const_bias else T(b.shape)
    model = single_op_model("CONV_2D", [T(x.shape), T.const(w), bias], [T((1, 1, 1, w_shape[0]))], options)
    feeds = [x] if const_bias else [x, b]
    ours, theirs = run_both(model, feeds)
    assert_close(ours, theirs, rtol=TOLERANCE["CONV_2D"] * (np.prod(w_shape[1:]) + 1), atol=1e-6)
    if options.get("fused_activation_function") == 3:
        assert (theirs[0] == 6).any() and (theirs[0] == 0).any() and ((theirs[0] > 0) & (theirs[0] < 6)).any()
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == expected


# -- error paths: (id, op, inputs, options); LiteRT rejects each (at prepare), litert_py at allocate_tensors --
_X = T((1, 5, 5, 4))
_W = np.ones((3, 3, 3, 4), np.float32)
_B = np.ones(3, np.float32)
_DW = np.ones((1, 3, 3, 8), np.float32)
_DB = np.ones(8, np.float32)
_CONV = {"padding": 0, "stride_h": 1, "stride_w": 1}
_DEPTH = {"padding": 0, "stride_h": 1, "stride_w": 1, "depth_multiplier": 2}
ERRORS = [
    ("conv_2d-filter-rank-3", "CONV_2D", [_X, T.const(_W[0]), T.const(_B)], _CONV),
    ("conv_2d-input-rank-3", "CONV_2D", [T((5, 5, 4)), T.const(_W), T.const(_B)], _CONV),
    ("conv_2d-bias-wrong-length", "CONV_2D", [_X, T.const(_W), T.const(np.ones(4, np.float32))], _CONV),
    ("conv_2d-no-bias", "CONV_2D", [_X, T.const(_W)], _CONV),
    ("conv_2d-bias-omitted", "CONV_2D", [_X, T.const(_W), None], _CONV),
    ("conv_2d-bias-int32", "CONV_2D", [_X, T.const(_W), T.const(np.ones(3, np.int32))], _CONV),
    ("conv_2d-stride-0", "CONV_2D", [_X, T.const(_W), T.const(_B)], {**_CONV, "stride_w": 0}),
    ("conv_2d-dilation-0", "CONV_2D", [_X, T.const(_W), T.const(_B)], {**_CONV, "dilation_h_factor": 0}),
    ("conv_2d-channels-not-multiple", "CONV_2D", [_X, T.const(np.ones((3, 3, 3, 3), np.float32)), T.const(_B)], _CONV),
    (
        "conv_2d-outputs-not-multiple-of-groups",
        "CONV_2D",
        [_X, T.const(np.ones((3, 3, 3, 2), np.float32)), T.const(_B)],
        _CONV,
    ),
    (
        "conv_2d-valid-filter-too-big",
        "CONV_2D",
        [_X, T.const(np.ones((3, 7, 7, 4), np.float32)), T.const(_B)],
        {**_CONV, "padding": 1},
    ),
    (
        "depthwise_conv_2d-filter-dim0-not-1",
        "DEPTHWISE_CONV_2D",
        [_X, T.const(np.ones((2, 3, 3, 8), np.float32)), T.const(_DB)],
        _DEPTH,
    ),
    (
        "depthwise_conv_2d-outputs-not-multiple",
        "DEPTHWISE_CONV_2D",
        [_X, T.const(np.ones((1, 3, 3, 6), np.float32)), T.const(_DB[:6])],
        _DEPTH,
    ),
    ("depthwise_conv_2d-bias-2d", "DEPTHWISE_CONV_2D", [_X, T.const(_DW), T.const(_DB[None])], _DEPTH),
    ("depthwise_conv_2d-bias-wrong-length", "DEPTHWISE_CONV_2D", [_X, T.const(_DW), T.const(_DB[:4])], _DEPTH),
    ("depthwise_conv_2d-bias-omitted", "DEPTHWISE_CONV_2D", [_X, T.const(_DW), None], _DEPTH),
    ("depthwise_conv_2d-filter-rank-3", "DEPTHWISE_CONV_2D", [_X, T.const(_DW[0]), T.const(_DB)], _DEPTH),
    (
        "depthwise_conv_2d-stride-over-int16",
        "DEPTHWISE_CONV_2D",
        [_X, T.const(_DW), T.const(_DB)],
        {**_DEPTH, "stride_h": 40000},
    ),
    (
        "depthwise_conv_2d-valid-filter-too-big",
        "DEPTHWISE_CONV_2D",
        [_X, T.const(np.ones((1, 7, 7, 8), np.float32)), T.const(_DB)],
        {**_DEPTH, "padding": 1},
    ),
    (
        "depthwise_conv_2d-filter-float16",
        "DEPTHWISE_CONV_2D",
        [_X, T.const(_DW.astype(np.float16)), T.const(_DB)],
        _DEPTH,
    ),
]


@pytest.mark.parametrize("op, inputs, options", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_rejected_like_litert(op, inputs, options):
    model = single_op_model(op, inputs, [T((1, 5, 5, 3))], options)
    feeds = [np.ones(t.shape, np.float32) for t in inputs if t is not None and t.data is None]
    with pytest.raises(RuntimeError):  # the oracle refuses it too (every case fails LiteRT's prepare)
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()


def test_conv_2d_float16_filter_rejected():
    """LiteRT's CONV_2D accepts a float16 filter with a float32 input and reads its bytes as float32 (garbage
    numbers, reading past the buffer); litert_py refuses it (DEQUANTIZE float16 weights first, as converters do)."""
    model = single_op_model("CONV_2D", [_X, T.const(_W.astype(np.float16)), T.const(_B)], [T((1, 5, 5, 3))], _CONV)
    with pytest.raises(PrepareError, match="FLOAT16 filter"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize(
    "geometry",
    [
        {"padding": 0, "stride_h": 1, "stride_w": 1},  # SAME
        {"padding": 0, "stride_h": 2, "stride_w": 1, "dilation_w_factor": 2},
        {"padding": 1, "stride_h": 1, "stride_w": 2},  # VALID
    ],
)
@pytest.mark.parametrize("out_c", [1, 3])
def test_conv_2d_few_output_channels_per_tap(geometry, out_c, monkeypatch):
    """Few output channels: one matmul per tap (ConvFloatPerTap) instead of an im2col GEMM, with a bias and a
    clamp; the threshold lowered so that a small layer takes the path."""
    monkeypatch.setattr(conv, "PER_TAP_MIN_BYTES", 1000)
    rng = np.random.default_rng(out_c)
    x = rng.standard_normal((2, 17, 13, 8)).astype(np.float32)
    w = rng.standard_normal((out_c, 3, 3, 8)).astype(np.float32)
    b = rng.standard_normal(out_c).astype(np.float32)
    model = single_op_model(
        "CONV_2D",
        [T(x.shape), T.const(w), T.const(b)],
        [T((1, 1, 1, out_c))],
        {**geometry, "fused_activation_function": 3},
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs, rtol=TOLERANCE["CONV_2D"] * 72, atol=1e-6)
    assert (theirs[0] == 6).any() and (theirs[0] == 0).any() and ((theirs[0] > 0) & (theirs[0] < 6)).any()
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert isinstance(prepared, conv.ConvFloatPerTap)


def test_conv_2d_window_covering_the_whole_input():
    """One output pixel whose window is the whole unpadded input: the im2col rows are the input's rows."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 3, 6)).astype(np.float32)
    w = rng.standard_normal((7, 5, 3, 6)).astype(np.float32)
    model = single_op_model(
        "CONV_2D",
        [T(x.shape), T.const(w), T.const(np.ones(7, np.float32))],
        [T((1, 1, 1, 7))],
        {"padding": 1, "stride_h": 2, "stride_w": 1},
    )
    ours, theirs = run_both(model, [x])
    assert ours[0].shape == (2, 1, 1, 7)
    assert_close(ours, theirs, rtol=TOLERANCE["CONV_2D"] * 90, atol=1e-6)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert prepared.im2col.pointwise


@pytest.mark.parametrize("resolver", ["BUILTIN_REF", "AUTO"])
@pytest.mark.parametrize("act", [0, 1, 3])  # NONE, RELU, RELU6
def test_conv_2d_pointwise_blocked(act, resolver, monkeypatch):
    """A large 1x1 stride-1 conv runs GEMM, bias and clamp per block of output rows (ConvFloatPointwise); the
    block size lowered so that a small layer takes the path, with an uneven last block and two batches. Within
    the float tolerance of LiteRT's reference and default kernels; an infinite input gives +-FLT_MAX as in the
    reference (XNNPACK, the default kernels, keeps +-inf under NONE: AUTO gets finite inputs)."""
    monkeypatch.setattr(conv, "POINTWISE_BLOCK_BYTES", 7 * 4 * 16)  # 7 rows of 16 channels
    rng = np.random.default_rng(act)
    x = rng.standard_normal((2, 5, 9, 12)).astype(np.float32)
    if resolver == "BUILTIN_REF":
        x[0, 0, 0, 0] = np.inf
    w = rng.standard_normal((16, 1, 1, 12)).astype(np.float32)
    b = (rng.standard_normal(16) * 3).astype(np.float32)
    model = single_op_model(
        "CONV_2D",
        [T(x.shape), T.const(w), T.const(b)],
        [T((1, 1, 1, 16))],
        {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": act},
    )
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert isinstance(prepared, conv.ConvFloatPointwise)
    assert len(prepared.blocks) == 13 and prepared.blocks[-1][1].shape == (90 % 7, 16)
    ours, theirs = run_both(model, [x], resolver)
    finite = np.isfinite(theirs[0])
    np.testing.assert_array_equal(ours[0][~finite], theirs[0][~finite])  # NaN where inf meets weights of both signs
    assert_close([ours[0][finite]], [theirs[0][finite]], rtol=TOLERANCE["CONV_2D"] * 13, atol=1e-6)
    assert (theirs[0] == 0).any() == (act != 0)
    assert (theirs[0] == 6).any() == (act == 3)
    if resolver == "BUILTIN_REF" and act != 3:
        assert (ours[0][0, 0, 0] == FLT_MAX).any()


def test_conv_2d_pointwise_choice():
    """The blocked 1x1 path needs two blocks and at most POINTWISE_MAX_CHANNELS channels."""
    for shape, out_c, chosen in (((1, 64, 64, 8), 16, True), ((1, 16, 16, 8), 16, False), ((1, 64, 64, 8), 24, False)):
        model = single_op_model(
            "CONV_2D",
            [T(shape), T.const(np.ones((out_c, 1, 1, 8), np.float32)), T.const(np.ones(out_c, np.float32))],
            [T((1, 1, 1, out_c))],
            {"padding": 1, "stride_h": 1, "stride_w": 1},
        )
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (prepared,) = it._subgraphs[0].prepared_ops.values()
        assert isinstance(prepared, conv.ConvFloatPointwise) == chosen
