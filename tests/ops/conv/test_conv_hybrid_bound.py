"""The one-batch hybrid conv bound plans (conv_hybrid_bound.ConvHybridBound / DepthwiseConvHybridBound, with
quant.hybrid.BatchRowQuantizer) byte for byte against the general ops they wrap (ConvHybrid /
DepthwiseConvHybrid, run on the same input) and against BUILTIN_REF (exactly: the same quantized inputs, integer
sums and float32 operation order).

Each case names the path its row takes: "signed" (BatchRowQuantizer.calls), "nonneg" (no element with its sign
bit set, or asymmetric min >= 0: nonneg_calls,
whose clamp never binds; -0.0 elements and exact zeros among them), "general" (rows the quantizer declines: all
zeros, a range just below the bound, inf, NaN). The bounds: a row whose min is 0.0 takes nonneg, one whose min is
-1e-30 the signed path; a symmetric range just above SYM_R_MIN is taken, just below it is not."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.conv.conv_hybrid_bound import ConvHybridBound, DepthwiseConvHybridBound
from litert_py.quant.hybrid import SYM_R_MIN
from litert_py.schema.builder import quant
from tests.ops.conv._quantized import F32, I8, case_model
from tests.oracle import run_litert

#: a float32 just below / just above SYM_R_MIN
SYM_BELOW, SYM_ABOVE = np.nextafter(F32(SYM_R_MIN), F32(0)), np.nextafter(F32(SYM_R_MIN), F32(1))


def row(kind: str, shape: tuple, asymmetric: bool, rng) -> np.ndarray:
    x = (rng.standard_normal(shape) * 3.0).astype(F32)
    flat = x.reshape(-1)
    if kind == "signed":
        return x
    if kind in ("ties", "nonneg-ties"):  # x * inv = x (inv 1: R = 127, or range 255) at n + 0.5 in the 8-wide part
        # and +-0.49999997 (the 8-wide rounding gives 1, the roundf tail 0)
        vals = [127.0, -128.0 if asymmetric else -127.0, 2.5, -3.5, 0.49999997, -0.49999997, 0.5, -0.5]
        if kind == "nonneg-ties":
            vals = [255.0 if asymmetric else 127.0, 0.0, 2.5, 3.5, 0.49999997, 1.5, 0.5, 0.0]
        flat[:] = np.resize(np.array(vals, F32), flat.size)
        flat[-2:] = 0.49999997
        return x
    if kind == "tiny-negative":  # regions of q = round(v) = -0.0 (v in (-0.5, 0)): -0.0 products, sums, outputs
        x[...] = -1e-6
        x[:, 0, 0] = 5.0
        x[:, -1, -1] = -4.0
        return x
    if kind == "min-just-negative":  # the signed path at the nonneg bound
        x = np.abs(x)
        x.reshape(-1)[1] = -1e-30
        return x
    if kind in ("nonneg", "nonneg-zeros"):
        x = np.abs(x)
        if kind == "nonneg-zeros":
            x.reshape(-1)[::3] = 0.0
            x.reshape(-1)[1::3] = -0.0
        return x
    if kind == "negative":  # all <= 0: zp at the other end
        return -np.abs(x)
    if kind == "signed-zeros":  # -0.0 and +0.0 elements (symmetric: -0.0 stays -0.0 in q)
        flat[::3] = -0.0
        flat[1::3] = 0.0
        return x
    if kind == "zeros":
        return np.zeros(shape, F32)
    if kind == "below":
        x[...] = 0.0
        x.reshape(-1)[0] = SYM_BELOW
        return x
    if kind == "above":
        x[...] = 0.0
        x.reshape(-1)[0] = SYM_ABOVE
        return x
    if kind == "inf":
        flat[2] = np.inf
        return x
    if kind == "nan":
        flat[0] = np.nan
        return x
    raise ValueError(kind)


def _case(
    op, hwc, kernel, kind, path, stride=1, padding=1, per_channel=True, bias=True, act=0, filt="normal", neg_zero=True
):
    """A CASES entry: (op, (h, w, c), (kh, kw, out_c or multiplier), stride, padding (0 SAME, 1 VALID),
    per_channel, bias, activation, row kind, expected path, filter kind, a -0.0 bias element (with a bias))."""
    return op, hwc, kernel, stride, padding, per_channel, bias, act, kind, path, filt, neg_zero


#: id -> _case(...)
CASES = {
    "conv-1x1-signed": _case("CONV_2D", (6, 6, 24), (1, 1, 40), "signed", "signed"),
    "conv-1x1-nonneg-relu6": _case("CONV_2D", (6, 6, 24), (1, 1, 40), "nonneg", "nonneg", act=3),
    "conv-1x1-nonneg-zeros": _case("CONV_2D", (5, 3, 8), (1, 1, 16), "nonneg-zeros", "nonneg", filt="neg"),
    "conv-min-just-negative": _case("CONV_2D", (4, 4, 8), (1, 1, 8), "min-just-negative", "signed", filt="neg"),
    "conv-negative": _case("CONV_2D", (4, 4, 8), (1, 1, 8), "negative", "signed", act=1),
    "conv-3x3-padded-ties-tail": _case("CONV_2D", (3, 5, 3), (3, 3, 5), "ties", "signed", stride=2, padding=0),
    "conv-per-tensor-signed-zeros": _case(
        "CONV_2D", (4, 4, 8), (3, 3, 6), "signed-zeros", "signed", padding=0, per_channel=False, filt="neg"
    ),
    "conv-per-tensor-ties-tail": _case("CONV_2D", (3, 3, 5), (1, 1, 7), "ties", "signed", per_channel=False),
    "conv-per-tensor-above": _case("CONV_2D", (2, 2, 4), (1, 1, 3), "above", "nonneg", per_channel=False),
    # symmetric rows without a sign bit (RowScalars' uint32 max is their max): nonneg_calls; a -0.0 among them keeps
    # its sign in q (the signed calls)
    "conv-per-tensor-nonneg-relu": _case("CONV_2D", (4, 4, 8), (3, 3, 6), "nonneg", "nonneg", per_channel=False),
    "conv-per-tensor-nonneg-ties-tail": _case(
        "CONV_2D", (3, 3, 5), (1, 1, 7), "nonneg-ties", "nonneg", per_channel=False, filt="neg"
    ),
    "conv-per-tensor-nonneg-zeros": _case(
        "CONV_2D", (4, 4, 8), (1, 1, 6), "nonneg-zeros", "signed", per_channel=False, filt="neg"
    ),
    "conv-per-tensor-below": _case("CONV_2D", (2, 2, 4), (1, 1, 3), "below", "general", per_channel=False),
    "conv-f64-gemm": _case("CONV_2D", (3, 3, 300), (1, 1, 4), "signed", "signed", filt="127"),
    "conv-zeros": _case("CONV_2D", (4, 4, 8), (1, 1, 8), "zeros", "general"),
    "conv-inf": _case("CONV_2D", (4, 4, 8), (1, 1, 8), "inf", "general"),
    "conv-nan": _case("CONV_2D", (4, 4, 8), (1, 1, 8), "nan", "general", per_channel=False),
    "dw-einsum-nonneg-relu6": _case("DEPTHWISE_CONV_2D", (6, 6, 48), (3, 3, 1), "nonneg", "nonneg", padding=0, act=3),
    "dw-einsum-stride2-signed": _case(
        "DEPTHWISE_CONV_2D", (7, 7, 64), (3, 3, 1), "signed", "signed", stride=2, padding=0
    ),
    "dw-taps-nonneg-zeros": _case(
        "DEPTHWISE_CONV_2D", (5, 5, 8), (3, 3, 1), "nonneg-zeros", "nonneg", padding=0, bias=False, filt="neg"
    ),
    "dw-taps-ties-tail": _case("DEPTHWISE_CONV_2D", (3, 3, 3), (2, 2, 1), "ties", "signed"),
    "dw-multiplier-2": _case("DEPTHWISE_CONV_2D", (4, 4, 4), (3, 3, 2), "signed", "signed", padding=0),
    "dw-min-just-negative": _case(
        "DEPTHWISE_CONV_2D", (4, 4, 8), (3, 3, 1), "min-just-negative", "signed", padding=0, filt="neg"
    ),
    "dw-f64-sums": _case("DEPTHWISE_CONV_2D", (6, 6, 8), (7, 7, 1), "signed", "signed", padding=0, filt="127"),
    # past DEPTHWISE_STACKED_ELEMENTS: the tap loop, whose first product is the sum's start
    "dw-taps-tiny-negative": _case(
        "DEPTHWISE_CONV_2D", (40, 40, 20), (3, 3, 1), "tiny-negative", "signed", padding=0, bias=False, filt="pos"
    ),
    "dw-taps-tiny-negative-per-tensor": _case(
        "DEPTHWISE_CONV_2D", (6, 6, 1), (3, 3, 1), "tiny-negative", "signed", padding=0, per_channel=False, filt="pos"
    ),
    "dw-taps-nonneg-ties-tail": _case("DEPTHWISE_CONV_2D", (3, 3, 3), (2, 2, 1), "nonneg-ties", "nonneg"),
    "conv-nonneg-ties-tail": _case("CONV_2D", (3, 3, 5), (1, 1, 4), "nonneg-ties", "nonneg"),
    "conv-tiny-negative": _case("CONV_2D", (4, 4, 3), (1, 1, 4), "tiny-negative", "signed", filt="pos"),
    # a bias without -0.0 (and +0.0 in it): the signed calls drop their + 0.0 (BatchRowQuantizer.plus_zero), q - zp
    # keeps -0.0 where round(v) is -0.0: -0.0 products and sums, which + bias turns into the reference's floats
    "conv-tiny-negative-bias": _case(
        "CONV_2D", (4, 4, 3), (1, 1, 4), "tiny-negative", "signed", filt="pos", neg_zero=False
    ),
    "conv-3x3-tiny-negative-bias": _case(
        "CONV_2D", (5, 5, 3), (3, 3, 4), "tiny-negative", "signed", padding=0, filt="pos", neg_zero=False
    ),
    "dw-taps-tiny-negative-bias": _case(
        "DEPTHWISE_CONV_2D", (40, 40, 20), (3, 3, 1), "tiny-negative", "signed", padding=0, filt="pos", neg_zero=False
    ),
    "dw-einsum-tiny-negative-bias-relu": _case(
        "DEPTHWISE_CONV_2D", (6, 6, 48), (3, 3, 1), "tiny-negative", "signed", padding=0, act=1, neg_zero=False
    ),
    # from SIGN_BITS_MIN (1024) input values BatchRowQuantizer's copysign is two bit operations (the depthwise plan
    # writes q into its padded buffer's interior view)
    "dw-same-ties-1536": _case("DEPTHWISE_CONV_2D", (8, 8, 24), (3, 3, 1), "ties", "signed", padding=0),
    "dw-same-signed-relu-1536": _case("DEPTHWISE_CONV_2D", (8, 8, 24), (3, 3, 1), "signed", "signed", padding=0, act=1),
    "dw-same-tiny-negative-1536": _case(
        "DEPTHWISE_CONV_2D", (8, 8, 24), (3, 3, 1), "tiny-negative", "signed", padding=0, filt="pos"
    ),
    "conv-ties-per-tensor-1125": _case("CONV_2D", (15, 15, 5), (1, 1, 7), "ties", "signed", per_channel=False),
    "conv-same-3x3-signed-1024": _case("CONV_2D", (8, 8, 16), (3, 3, 4), "signed", "signed", padding=0),
    "dw-zeros": _case("DEPTHWISE_CONV_2D", (4, 4, 8), (3, 3, 1), "zeros", "general", padding=0),
    "dw-inf": _case("DEPTHWISE_CONV_2D", (4, 4, 8), (3, 3, 1), "inf", "general", padding=0),
}


def case_of(name: str, rng) -> dict:
    op, (h, w, c), (kh, kw, o), stride, padding, per_channel, has_bias, act, kind, _, f_kind, neg_zero = CASES[name]
    depthwise = op == "DEPTHWISE_CONV_2D"
    out_c = c * o if depthwise else o
    f_shape = (1, kh, kw, out_c) if depthwise else (out_c, kh, kw, c)
    if f_kind == "127":  # sums past 2^24: the float64 GEMM / tap sums
        f = np.full(f_shape, 127, I8)
    else:
        f = rng.integers(-127, 128, f_shape).astype(I8)
        if f_kind == "pos":  # every weight of output channel 0 positive: -0.0 products of -0.0 inputs
            if depthwise:
                f[..., 0] = np.abs(f[..., 0]) + 1
            else:
                f[0] = np.abs(f[0]) + 1
        if f_kind == "neg":  # every weight of output channel 0 negative: -0.0 products of zero inputs
            if depthwise:
                f[..., 0] = -np.abs(f[..., 0]) - 1
            else:
                f[0] = -np.abs(f[0]) - 1
    s_w = 10.0 ** rng.uniform(-3, -1, out_c if per_channel else 1)
    options = {
        "padding": padding,
        "stride_h": stride,
        "stride_w": stride,
        "dilation_h_factor": 1,
        "dilation_w_factor": 1,
        "fused_activation_function": act,
    }
    if depthwise:
        options["depth_multiplier"] = o
    bias = (rng.standard_normal(out_c) * 0.1).astype(F32) if has_bias else None
    if bias is not None and neg_zero:
        bias[0] = -0.0  # + (-0.0): a -0.0 sum stays -0.0
    elif bias is not None:
        bias[0] = 0.0  # + 0.0: a -0.0 sum becomes +0.0
    return {
        "op": op,
        "x": row(kind, (1, h, w, c), per_channel or depthwise, rng),
        "x_q": None,
        "f": f,
        "f_type": I8,
        "f_q": quant(s_w, 0, 3 if depthwise else 0),
        "bias": bias,
        "b_q": None,
        "out_q": None,
        "options": options,
        "const": (True, True),
    }


@pytest.mark.parametrize("name", list(CASES))
def test_hybrid_conv_bound(name):
    rng = np.random.default_rng(sorted(CASES).index(name))
    case = case_of(name, rng)
    path = CASES[name][9]
    model = case_model(case)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op,) = it._subgraphs[0].prepared_ops.values()
    assert isinstance(op, DepthwiseConvHybridBound if case["op"] == "DEPTHWISE_CONV_2D" else ConvHybridBound)
    neg_zero = case["bias"] is None or bool(np.signbit(case["bias"][case["bias"] == 0]).any())
    assert op.quantizer.plus_zero == neg_zero
    x = case["x"]
    s = op.quantizer.scalars(x)
    assert {None: "general", True: "nonneg", False: "signed"}[None if s is None else s[2]] == path
    ours = []
    for _ in range(2):  # the bound plan (the second invoke reuses it)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        ours.append(it.get_tensor(it.get_output_details()[0]["index"]))
    assert op._bound is not None
    general = np.full_like(ours[0], np.nan)
    with np.errstate(all="ignore"):  # as an invoke runs it
        op.general([x.copy(), None, None], [general])
    assert ours[0].tobytes() == general.tobytes() == ours[1].tobytes()
    (theirs,) = run_litert(model, [x])
    np.testing.assert_array_equal(ours[0], theirs)
