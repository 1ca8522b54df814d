"""TRANSPOSE_CONV against the oracle (ai-edge-litert BUILTIN_REF): float32, hybrid (bit-exact), uint8, int8
per-channel, int16x8 (int64 bias, or int32 bias with quantized_bias_type INT32).

One hypothesis-driven case table draws shapes, strides, padding, activation, bias, constness and the dtype
path; the error table checks combinations LiteRT rejects.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from tests.compare import assert_close
from tests.oracle import T, quant, run_both_unless_rejected, run_litert, run_ours, single_op_model

#: Float tolerance, relative, per term of the accumulation (KH*KW*C); the hybrid path follows the reference's
#: float summation order and the integer paths are exact (compared with rtol 0).
TOLERANCE = {"TRANSPOSE_CONV": 1e-5, "TRANSPOSE_CONV-hybrid": 0.0}
ACTIVATIONS = [0, 1, 2, 3]


@st.composite
def cases(draw):
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    padding = draw(st.sampled_from([0, 1]))
    # The forward conv's geometry: the output size that maps back onto the input size.
    if padding == 1:  # VALID: out = (h - 1) * s + k, plus up to s - 1 extra rows
        oh = (h - 1) * sh + kh + draw(st.integers(0, sh - 1))
        ow = (w - 1) * sw + kw + draw(st.integers(0, sw - 1))
    else:  # SAME: ceil(out / s) == h
        oh = (h - 1) * sh + draw(st.integers(1, sh))
        ow = (w - 1) * sw + draw(st.integers(1, sw))
    if draw(st.integers(0, 4)) == 0:  # any output size: LiteRT rejects those not mapping back onto the input
        oh, ow = draw(st.integers(0, 12)), draw(st.integers(0, 12))
    return {
        "path": draw(st.sampled_from(["float32", "hybrid", "uint8", "int8", "int16", "int16-b32"])),
        "n": draw(st.integers(1, 2)),
        "h": h,
        "w": w,
        "c": draw(st.integers(1, 5)),
        "o": draw(st.integers(1, 5)),
        "kh": kh,
        "kw": kw,
        "sh": sh,
        "sw": sw,
        "oh": oh,
        "ow": ow,
        "padding": padding,
        "act": draw(st.sampled_from(ACTIVATIONS)),
        "bias": draw(st.booleans()),
        "const": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


def _model(d):
    rng = np.random.default_rng(d["seed"])
    xs, fs, oshape = (
        (d["n"], d["h"], d["w"], d["c"]),
        (d["o"], d["kh"], d["kw"], d["c"]),
        (d["n"], d["oh"], d["ow"], d["o"]),
    )
    opts = {"padding": d["padding"], "stride_h": d["sh"], "stride_w": d["sw"], "fused_activation_function": d["act"]}
    shape_t = T.const(np.array(oshape, np.int32))
    if d["path"] == "float32":
        x = rng.standard_normal(xs).astype(np.float32)
        f = rng.standard_normal(fs).astype(np.float32)
        b = rng.standard_normal(d["o"]).astype(np.float32)
        if d["const"]:
            ins, feeds = [shape_t, T.const(f), T(xs)] + ([T.const(b)] if d["bias"] else []), [x]
        else:
            ins = [shape_t, T(fs), T(xs)] + ([T(b.shape)] if d["bias"] else [])
            feeds = [f, x] + ([b] if d["bias"] else [])
        return single_op_model("TRANSPOSE_CONV", ins, [T(oshape)], opts, version=4), feeds
    if d["path"] == "hybrid":  # float input, constant int8 weights (per-tensor or per-channel), float bias
        x = (rng.standard_normal(xs) * 2 + float(rng.uniform(-1, 1))).astype(np.float32)
        f = rng.integers(-127, 128, fs).astype(np.int8)
        s_w = rng.uniform(0.005, 0.02, d["o"] if d["seed"] % 2 else 1)
        b = rng.standard_normal(d["o"]).astype(np.float32)
        ins = [shape_t, T.const(f, q=quant(s_w, 0, 0)), T(xs)]
        if d["bias"]:
            ins.append(T.const(b) if d["const"] else T(b.shape))
        feeds = [x] + ([b] if d["bias"] and not d["const"] else [])
        return single_op_model("TRANSPOSE_CONV", ins, [T(oshape)], opts, version=4), feeds
    int16, uint8 = d["path"].startswith("int16"), d["path"] == "uint8"
    xdt, bdt = {
        "int16": (np.int16, np.int64),
        "int16-b32": (np.int16, np.int32),
        "int8": (np.int8, np.int32),
        "uint8": (np.uint8, np.int32),
    }[d["path"]]
    if d["path"] == "int16-b32":  # quantized_bias_type INT32: int32 bias and accumulator
        opts["quantized_bias_type"] = 2
    lo, hi = np.iinfo(xdt).min, np.iinfo(xdt).max
    x = rng.integers(lo, hi + 1, xs).astype(xdt)
    x_zp = 0 if int16 else int(rng.integers(-20, 20)) + (128 if uint8 else 0)
    s_in = float(rng.uniform(0.01, 0.05)) / (256 if int16 else 1)
    s_w = rng.uniform(0.005, 0.02, 1 if uint8 else d["o"])
    f = rng.integers(0, 256, fs).astype(np.uint8) if uint8 else rng.integers(-127, 128, fs).astype(np.int8)
    f_zp = int(rng.integers(100, 156)) if uint8 else 0
    b = rng.integers(-3000, 3000, d["o"]).astype(bdt)
    s_out = s_in * 0.02 * np.sqrt(d["kh"] * d["kw"] * d["c"]) * 40 * float(rng.uniform(0.5, 2))
    out_zp = 0 if int16 else int(rng.integers(-10, 10)) + (128 if uint8 else 0)
    s_w = np.float32(s_w)
    fq, bq = quant(s_w, f_zp, 0), quant(np.float32(s_in) * s_w, 0)
    ins = [shape_t, T.const(f, q=fq) if d["const"] else T(fs, f.dtype, q=fq), T(xs, xdt, q=quant(s_in, x_zp))]
    feeds = [x] if d["const"] else [f, x]
    if d["bias"]:
        ins.append(T.const(b, q=bq) if d["const"] else T(b.shape, bdt, q=bq))
        feeds += [] if d["const"] else [b]
    return single_op_model("TRANSPOSE_CONV", ins, [T(oshape, xdt, q=quant(s_out, out_zp))], opts, version=4), feeds


@given(d=cases())
def test_transpose_conv(d):
    model, feeds = _model(d)
    both = run_both_unless_rejected(model, feeds)  # e.g. computed_input_height != SizeOfDimension(input, 1)
    if both is None:
        return
    ours, theirs = both
    if d["path"] == "float32":
        assert_close(ours, theirs, rtol=TOLERANCE["TRANSPOSE_CONV"] * d["kh"] * d["kw"] * d["c"], atol=1e-5)
    elif d["path"] == "hybrid":
        assert_close(ours, theirs, rtol=TOLERANCE["TRANSPOSE_CONV-hybrid"], atol=0)
    else:
        assert_close(ours, theirs)


@pytest.mark.parametrize(
    ("k", "n", "hw", "co", "bias", "act", "tiles"),
    [
        ((2, 2), 1, (5, 4), (16, 1), True, 0, True),  # MediaPipe's segmentation head, smaller
        ((3, 2), 2, (2, 3), (3, 4), False, 3, True),
        ((1, 1), 1, (3, 3), (2, 2), True, 1, True),
        ((2, 2), 1, (3, 3), (2, 2), "-0", 0, False),  # a -0 bias keeps the scatter's 0 + (-0) = +0 apart
    ],
)
def test_transpose_conv_float_tiles(k, n, hw, co, bias, act, tiles):
    """Stride = filter size, VALID, output = the scatter: TransposeConvFloatTiles, equal to LiteRT within the
    float tolerance, and bit-identical to the overlap-add kernel (-0 sums, infinities)."""
    from litert_py import Interpreter
    from litert_py.ops.conv import col2im

    d = {"path": "float32", "n": n, "h": hw[0], "w": hw[1], "c": co[0], "o": co[1], "kh": k[0], "kw": k[1]}
    d |= {"sh": k[0], "sw": k[1], "oh": hw[0] * k[0], "ow": hw[1] * k[1], "padding": 1, "act": act}
    d |= {"bias": bool(bias), "const": True, "seed": 3}
    model, feeds = _model(d)
    if bias == "-0":  # rebuild with a -0 bias entry
        b = np.array([-0.0, 1.5], np.float32)
        f = np.random.default_rng(3).standard_normal((2, 2, 2, 2)).astype(np.float32)
        ins = [T.const(np.array([1, 6, 6, 2], np.int32)), T.const(f), T((1, 3, 3, 2)), T.const(b)]
        opts = {"padding": 1, "stride_h": 2, "stride_w": 2}
        model = single_op_model("TRANSPOSE_CONV", ins, [T((1, 6, 6, 2))], opts, version=4)
    x = feeds[0]
    x.reshape(-1)[:3] = [0.0, -0.0, np.inf]
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert isinstance(prepared, col2im.TransposeConvFloatTiles) == tiles
    theirs, ours = run_litert(model, feeds), run_ours(model, feeds)
    assert_close(ours, theirs, rtol=TOLERANCE["TRANSPOSE_CONV"] * k[0] * k[1] * co[0], atol=1e-5)
    if tiles:  # the general kernel on the same GEMM: every bit equal
        g, op = prepared.geo, prepared
        general = col2im.TransposeConvFloat(
            g, 1, op.weights, None if bias is False else op.bias, False, -np.inf, np.inf, k, None, None
        )
        want = np.empty(g.out_shape, np.float32)
        with np.errstate(invalid="ignore"):
            general([None, None, x, None], [want])
            if op.clamp is not None:
                np.clip(want, *op.clamp, out=want)
        np.testing.assert_array_equal(ours[0].view(np.int32), want.view(np.int32))


def test_transpose_conv_dynamic_output_shape():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 4, 2)).astype(np.float32)
    f = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    model = single_op_model(
        "TRANSPOSE_CONV",
        [T((4,), np.int32), T.const(f), T(x.shape)],
        [T((1, 6, 8, 3))],
        {"padding": 0, "stride_h": 2, "stride_w": 2},
        version=4,
    )
    for shape in ((1, 6, 8, 3), (1, 5, 7, 3)):
        feeds = [np.array(shape, np.int32), x]
        ours, theirs = run_ours(model, feeds), run_litert(model, feeds)
        assert ours[0].shape == shape
        assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


ERRORS = {
    "int32-input": (
        [
            T.const(np.array([1, 4, 4, 1], np.int32)),
            T.const(np.ones((1, 2, 2, 1), np.int32)),
            T((1, 2, 2, 1), np.int32),
        ],
        T((1, 4, 4, 1), np.int32),
    ),
    "channel-mismatch": (
        [T.const(np.array([1, 4, 4, 1], np.int32)), T.const(np.ones((1, 2, 2, 3), np.float32)), T((1, 2, 2, 2))],
        T((1, 4, 4, 1)),
    ),
    "shape-not-int32": (
        [T.const(np.array([1, 4, 4, 1], np.int64)), T.const(np.ones((1, 2, 2, 1), np.float32)), T((1, 2, 2, 1))],
        T((1, 4, 4, 1)),
    ),
    "shape-3-elements": (
        [T.const(np.array([4, 4, 1], np.int32)), T.const(np.ones((1, 2, 2, 1), np.float32)), T((1, 2, 2, 1))],
        T((1, 4, 4, 1)),
    ),
    "input-3d": (
        [T.const(np.array([1, 4, 4, 1], np.int32)), T.const(np.ones((1, 2, 2, 1), np.float32)), T((2, 2, 1))],
        T((1, 4, 4, 1)),
    ),
    "bias-length": (
        [
            T.const(np.array([1, 4, 4, 1], np.int32)),
            T.const(np.ones((1, 2, 2, 1), np.float32)),
            T((1, 2, 2, 1)),
            T.const(np.ones(2, np.float32)),
        ],
        T((1, 4, 4, 1)),
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_transpose_conv_errors(name):
    ins, out = ERRORS[name]
    model = single_op_model("TRANSPOSE_CONV", ins, [out], {"padding": 0, "stride_h": 2, "stride_w": 2}, version=4)
    feeds = [np.zeros(t.shape, t.dtype) for t in ins if t.data is None]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)
