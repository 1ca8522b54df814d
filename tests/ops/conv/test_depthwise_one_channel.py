"""An int8 DEPTHWISE_CONV_2D over one input channel runs as the CONV_2D it is (depthwise_quantized's
_one_channel_as_conv: conv2d_quantized's exact GEMM paths on the transposed filter), bit-exact against the oracle
(ai-edge-litert BUILTIN_REF): the drawn depthwise cases of test_conv_quantized cut to one input channel (every
stride, dilation, padding, activation, multiplier, zero point, scale and bias magnitude they draw), real-size first
layers (a fingerprint model's 5x5 stride-2 layer over 180x180x1), and the layers that keep the depthwise kernels
(uint8, a filter or bias fed at run time, several input channels)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py.schema.builder import quant
from tests.ops.conv._quantized import I8, I32, U8, _prepared, check_against_oracle
from tests.ops.conv.test_conv_quantized import quantized_cases

CONV_PATHS = ("ConvQuantizedScaled", "ConvQuantizedFolded", "ConvQuantizedFoldedRows")


def one_channel(case: dict) -> dict:
    """The case with its input cut to channel 0 (and its filter, bias and per-channel scales to the multiplier's
    output channels of that input channel)."""
    m = case["options"]["depth_multiplier"]
    f_q = case["f_q"]
    cut = dataclasses.replace(f_q, scale=f_q.scale[:m], zero_point=f_q.zero_point[:m]) if len(f_q.scale) > 1 else f_q
    b_q = case["b_q"]
    b_q = dataclasses.replace(b_q, scale=b_q.scale[:m], zero_point=b_q.zero_point[:m]) if len(b_q.scale) > 1 else b_q
    bias = case["bias"]
    return {
        **case,
        "x": np.ascontiguousarray(case["x"][..., :1]),
        "f": np.ascontiguousarray(case["f"][..., :m]),
        "f_q": cut,
        "bias": None if bias is None else bias[:m].copy(),
        "b_q": b_q,
    }


@pytest.mark.parametrize("path", ["int8-per-channel", "int8-per-tensor", "int8-int4-filter", "uint8"])
@given(data=st.data())
def test_one_channel_drawn_cases(path, data):
    check_against_oracle(one_channel(data.draw(quantized_cases("DEPTHWISE_CONV_2D", path))))


def _layer(h, w, kh, kw, stride, padding, mult, *, act=1, dtype=I8, bias=True, per_channel=True, seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = (-128, 127) if dtype == I8 else (0, 255)
    s_w = rng.uniform(0.002, 0.02, mult) if per_channel and dtype == I8 else 0.01  # uint8: per tensor
    s_in = 1.0 if dtype == I8 else 0.02
    return {
        "op": "DEPTHWISE_CONV_2D",
        "x": rng.integers(lo, hi + 1, (1, h, w, 1)).astype(dtype),
        "x_q": quant(s_in, 0 if dtype == I8 else 128),
        "f": rng.integers(lo + (dtype == I8), hi + 1, (1, kh, kw, mult)).astype(dtype),
        "f_type": dtype,
        "f_q": quant(s_w, 0 if dtype == I8 else 120, 3),
        "bias": rng.integers(-5000, 5000, mult).astype(I32) if bias else None,
        "b_q": quant(np.float32(s_w) * np.float32(s_in), 0),
        "out_q": quant(0.03 * kh * kw, -128 if act else 5),
        "options": {
            "padding": padding,
            "stride_h": stride,
            "stride_w": stride,
            "depth_multiplier": mult,
            "dilation_h_factor": 1,
            "dilation_w_factor": 1,
            "fused_activation_function": act,
        },
        "const": (True, True),
    }


#: id -> _layer arguments: first layers over one channel (the fingerprint generator's, a spectrogram stem)
REAL = {
    "fingerprint-5x5-s2-valid-m8": ((180, 180, 5, 5, 2, 1, 8), {}),
    "spectrogram-3x3-s1-same-m16": ((49, 40, 3, 3, 1, 0, 16), {"act": 0}),
    "one-filter-3x3-s2-same": ((32, 32, 3, 3, 2, 0, 1), {"bias": False}),
    "per-tensor-10x4-s2-same-m4": ((49, 10, 10, 4, 2, 0, 4), {"per_channel": False}),
}


@pytest.mark.parametrize("kind", list(REAL))
def test_one_channel_layers_run_as_convs(kind):
    args, more = REAL[kind]
    case = _layer(*args, **more)
    assert type(_prepared(case)).__name__ in CONV_PATHS
    check_against_oracle(case)


@pytest.mark.parametrize(
    "change",
    ["uint8", "filter fed at run time", "two input channels"],
)
def test_other_layers_keep_the_depthwise_kernels(change):
    case = _layer(24, 24, 3, 3, 1, 0, 4, dtype=U8 if change == "uint8" else I8)
    if change == "filter fed at run time":
        case["const"] = (False, True)
    if change == "two input channels":
        case["x"] = np.repeat(case["x"], 2, axis=3)
        case["f"] = np.repeat(case["f"], 2, axis=3)
        case["f_q"] = quant(np.repeat(np.asarray(case["f_q"].scale), 2), 0, 3)
        case["b_q"] = quant(np.repeat(np.asarray(case["b_q"].scale), 2), 0)
        case["bias"] = np.repeat(case["bias"], 2)
    assert type(_prepared(case)).__name__ not in CONV_PATHS
    check_against_oracle(case)
