"""CONV_2D and DEPTHWISE_CONV_2D hybrid paths (float input, int8 / int4 filter) against the oracle: one table
(HYBRID) drives hypothesis-driven differential tests; float outputs within TOLERANCE (they are bit-exact in
practice: same quantized inputs, same integer dot products, same float32 operation order)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litert_py.ops.conv import depthwise_quantized
from litert_py.schema.builder import quant
from tests.ops.conv._quantized import F32, I8, check_against_oracle, geometry
from tests.ops.conv.test_conv import conv_options
from tests.values import INT4, int_range

#: Hybrid float outputs: tolerance relative to the largest reference magnitude (0 would pass today).
TOLERANCE = {"CONV_2D": 1e-6, "DEPTHWISE_CONV_2D": 1e-6}


# -- hybrid: float input, int8 filter ---------------------------------------------------------------------

#: id -> (per-channel scales, groups, filter type)
HYBRID = {
    "per-tensor": (False, 1, I8),  # EvalHybrid: symmetric per-batch input quantization
    "per-channel": (True, 1, I8),  # EvalHybridPerChannel: asymmetric per-batch input quantization
    "grouped": (True, 2, I8),
    "per-channel-int4-filter": (True, 1, INT4),
}


@st.composite
def hybrid_cases(draw, op: str, kind: str):
    per_channel, groups, f_type = HYBRID[kind]
    d = draw(geometry(op))
    if op == "CONV_2D":
        cg = draw(st.integers(1, 8 // groups))
        d.update(c=cg * groups, out_c=groups * draw(st.integers(1, 8 // groups)), filter_c=cg)
    elif not per_channel:  # one scale: LiteRT reads past it for a second channel (litert_py refuses that)
        d.update(c=1, out_c=1, mult=1)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out_c = d["out_c"]
    f_shape = (out_c, d["kh"], d["kw"], d["filter_c"]) if op == "CONV_2D" else (1, d["kh"], d["kw"], out_c)
    scale = 10.0 ** draw(st.floats(-3, 3))
    x = (rng.standard_normal((d["batch"], d["h"], d["w"], d["c"])) * scale).astype(F32)
    if draw(st.booleans()):  # one-signed batches: the asymmetric zero point sits at an end
        x = np.abs(x) * draw(st.sampled_from([1, -1]))
    if draw(st.integers(0, 5)) == 0:
        x[0] = 0  # an all-zero batch: scaling factor 1
    lo, hi = (-127, 127) if f_type == I8 else int_range(f_type)
    f = rng.integers(lo, hi, f_shape, endpoint=True).astype(I8)
    s_w = 10.0 ** (draw(st.floats(-4, -1)) + (rng.uniform(-2, 2, out_c) if per_channel else 0.0))
    # LiteRT wants one depthwise scale per element of the quantized dimension: a single scale sits on dimension 0.
    qd = 0 if op == "CONV_2D" or not per_channel else 3
    bias = (rng.standard_normal(out_c) * scale).astype(F32)
    return {
        "op": op,
        "x": x,
        "x_q": None,
        "f": f,
        "f_type": f_type,
        "f_q": quant(s_w, 0, qd),
        "bias": bias if op == "CONV_2D" or draw(st.booleans()) else None,
        "b_q": None,
        "out_q": None,
        "options": conv_options(d, op),
        "const": (True, draw(st.booleans())),
    }


@pytest.mark.parametrize("kind", list(HYBRID))
@given(data=st.data())
def test_conv_2d_hybrid(kind, data):
    check_against_oracle(data.draw(hybrid_cases("CONV_2D", kind)), rtol=TOLERANCE["CONV_2D"])


@pytest.mark.parametrize("kind", ["per-tensor", "per-channel"])
@given(data=st.data())
def test_depthwise_conv_2d_hybrid(kind, data):
    check_against_oracle(data.draw(hybrid_cases("DEPTHWISE_CONV_2D", kind)), rtol=TOLERANCE["DEPTHWISE_CONV_2D"])


@given(data=st.data())
def test_depthwise_conv_2d_hybrid_einsum(data):
    """Hybrid depthwise with the einsum tap sums (EinsumTaps) for every filter: the same integer sums."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(depthwise_quantized, "EINSUM_MIN_CHANNELS", 1)
        case = data.draw(hybrid_cases("DEPTHWISE_CONV_2D", "per-channel"))
        check_against_oracle(case, rtol=TOLERANCE["DEPTHWISE_CONV_2D"])


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
@settings(max_examples=15)
@given(data=st.data())
def test_hybrid_close_to_default_kernels(op, data):
    """LiteRT's default (optimized) hybrid kernels scale by f32(sf * s_w[c]) instead of the reference's
    order: the last ulp differs (never more than TOLERANCE). Their depthwise kernels crash without a bias."""
    case = data.draw(hybrid_cases(op, "per-channel"))
    if case["bias"] is None:
        case["bias"] = np.zeros(case["f"].shape[3], F32)
    check_against_oracle(case, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES", rtol=TOLERANCE[op])


@pytest.mark.parametrize(
    "k, c, out_c, per_channel, stride, dilation, pad, batches",
    [
        (1, 16, 2, False, 1, 1, 1, 1),  # the wheel's SSE dot product: the -128 channel's error reproduced
        (3, 5, 2, False, 1, 1, 1, 2),  # K = 45: the 16-wide blocks end at 32; padding; two batches
        (3, 17, 3, False, 2, 2, 0, 1),  # stride and dilation
        (1, 16, 4, False, 1, 1, 1, 1),  # 4 filter rows: the wheel's true products (no SSE dot)
        (2, 17, 3, True, 1, 1, 1, 2),  # per channel: the true products
    ],
)
def test_filter_value_minus_128(k, c, out_c, per_channel, stride, dilation, pad, batches):
    """A hybrid CONV_2D filter holding -128 (outside the converter's symmetric [-127, 127]): BUILTIN_REF's values
    bit for bit (ops/conv/hybrid_sse.HybridSseFix where the wheel runs its SSE dot product: per-tensor scale and a
    filter row count not a multiple of 4)."""
    from tests.ops.conv._quantized import conv_model
    from tests.oracle import run_litert, run_ours

    rng = np.random.default_rng(k * 100 + c + out_c)
    f = rng.integers(-127, 128, (out_c, k, k, c)).astype(I8)
    f[rng.random(f.shape) < 0.2] = -128
    f[0, 0, 0, 0] = -128
    opts = {
        "padding": pad,
        "stride_h": stride,
        "stride_w": stride,
        "dilation_h_factor": dilation,
        "dilation_w_factor": dilation,
        "fused_activation_function": 0,
    }
    x = (rng.standard_normal((batches, 7, 7, c)) + 0.2).astype(F32)
    scales = rng.uniform(0.005, 0.02, out_c) if per_channel else np.array([0.01])
    bias = rng.standard_normal(out_c).astype(F32)
    model = conv_model("CONV_2D", x, None, f, I8, quant(scales, 0, 0), bias, None, F32, None, opts)
    (ours,) = run_ours(model, [x])
    (theirs,) = run_litert(model, [x])
    assert ours.tobytes() == theirs.tobytes()
