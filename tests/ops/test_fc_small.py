"""FullyConnectedQuantizedFoldedRelu / FullyConnectedQuantizedFoldedSigned (ops/fully_connected_folded.py): the
folded int8 / uint8 FULLY_CONNECTED whose rounding and output zero point are integer stores (a truncating cast
into an unsigned (ReLU-like) or signed buffer of the output's width, then zo added in the output type, mod
2^bits). Compared exactly with BUILTIN_REF over many inputs of one interpreter: ties of the float
requantization (effective scale 1/16, acc = 8 mod 16, both signs), both clamps, zero points -128 / 0 / 10 / 128 /
131, inputs shaped (rows, depth), (b, r, depth) and keep_num_dims; the path prepare chose is asserted."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ops.test_small_rows import invokes
from tests.oracle import T, quant, single_op_model

NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3


def _model(dtype, x_shape, out_shape, zx, zo, act, w, bias, keep_num_dims=False):
    s_in, s_w, s_out = 0.5, 0.125, 1.0  # eff = 1/16
    return single_op_model(
        "FULLY_CONNECTED",
        [
            T(x_shape, dtype, q=quant(s_in, zx)),
            T.const(w, q=quant(s_w, 0 if dtype == np.int8 else 128)),
            T.const(bias, q=quant(s_in * s_w, 0)),
        ],
        [T(out_shape, dtype, q=quant(s_out, zo))],
        {"fused_activation_function": act, "keep_num_dims": keep_num_dims},
    )


@pytest.mark.parametrize(
    ("dtype", "zo", "act", "x_shape", "out_shape", "keep"),
    [
        (np.int8, -128, RELU, (1, 64), (1, 9), False),
        (np.int8, 10, RELU, (3, 64), (3, 9), False),
        (np.int8, -128, RELU6, (2, 4, 16), (2, 9), False),
        (np.int8, -20, RELU, (2, 3, 64), (2, 3, 9), True),
        (np.uint8, 131, RELU, (2, 64), (2, 9), False),
        (np.uint8, 0, RELU, (1, 64), (1, 9), False),
        (np.int8, 0, NONE, (1, 64), (1, 9), False),
        (np.int8, 0, NONE, (2, 2, 32), (2, 9), False),
        (np.uint8, 128, NONE, (3, 64), (3, 9), False),
        (np.int8, 50, RELU_N1_TO_1, (2, 64), (2, 9), False),
        (np.uint8, 3, RELU_N1_TO_1, (1, 64), (1, 9), False),
    ],
)
def test_folded_integer_stores(dtype, zo, act, x_shape, out_shape, keep):
    rng = np.random.default_rng(abs(zo) + act + len(x_shape))
    depth = x_shape[-1] if keep else 64
    signed = dtype == np.int8
    zx = -7 if signed else 121
    wz = rng.integers(-3, 4, (9, depth))
    w = (wz if signed else wz + 128).astype(dtype)
    bias = rng.integers(-200, 200, 9).astype(np.int32)
    model = _model(dtype, x_shape, out_shape, zx, zo, act, w, bias, keep)
    xs = (rng.integers(-8, 9, (120,) + x_shape) + zx).astype(dtype)  # x - zx in [-8, 8]: small accumulators
    info = np.iinfo(dtype)
    xs[:20] = rng.integers(info.min, info.max + 1, (20,) + x_shape)  # large accumulators
    for i in range(18):  # x - zx = +-100 sign(w[unit]): both clamps of every unit
        xs[i].reshape(-1, depth)[...] = zx + (1 - 2 * (i % 2)) * 100 * np.sign(wz[i // 2])
    ours, got, want = invokes(model, xs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    low, high = {NONE: (info.min, info.max), RELU: (zo, info.max), RELU6: (zo, zo + 6), RELU_N1_TO_1: (zo - 1, zo + 1)}[
        act
    ]
    assert want.min() == low and want.max() == high and len(np.unique(want)) >= min(6, high - low + 1)
    acc = (xs.reshape(len(xs), -1, depth).astype(np.int64) - zx) @ wz.T + bias
    assert ((acc % 16 == 8) & (acc > 0)).sum() >= 3  # ties of the requantization (away from zero) exercised
    if act in (NONE, RELU_N1_TO_1):
        assert ((acc % 16 == 8) & (acc < 0)).sum() >= 3
    (prepared,) = ours._subgraphs[0].prepared_ops.values()
    name = "FullyConnectedQuantizedFoldedRelu" if act in (RELU, RELU6) else "FullyConnectedQuantizedFoldedSigned"
    assert type(prepared).__name__ == name


@pytest.mark.parametrize(
    ("dtype", "zp", "cls"),
    [
        (np.int8, -128, "QuantizeFloatStore"),  # unsigned store (zp = qmin)
        (np.uint8, 0, "QuantizeFloatStore"),
        (np.int8, 0, "QuantizeFloatStore"),  # signed store
        (np.uint8, 128, "QuantizeFloatStore"),
        (np.int16, 0, "QuantizeFloatStore"),
        (np.int8, 3, "QuantizeFloatStore"),  # [qmin - zp, qmax - zp] fits no 8-bit type: the int16 store
        (np.int16, 3, "QuantizeFloat"),  # nor a 16-bit one: the float32 path
    ],
)
def test_quantize_float_integer_store(dtype, zp, cls):
    """QUANTIZE float32 -> int at a small model's input (quantize.QuantizeFloatStore): rounding in float32 with
    HALF_DOWN and a truncating cast into an integer buffer, zp added in the output type. Quotients one ulp
    around every half in [-200, 200] (both signs), the clamps, infinities, NaN and quotients beyond int32 (which
    LiteRT turns into clamp(INT32_MIN + zp)), over several invokes of one interpreter."""
    halves = np.arange(-200, 200, dtype=np.float32) + np.float32(0.5)
    near = np.concatenate([np.nextafter(halves, -np.inf), halves, np.nextafter(halves, np.inf)])
    special = np.float32([0.0, -0.0, 1e6, -1e6, 3e9, -3e9, np.inf, -np.inf, np.nan, 0.49999997, -0.49999997])
    values = np.concatenate([near, special, np.zeros(-(len(near) + len(special)) % 64, np.float32)])
    xs = values.reshape(-1, 1, 64)
    model = single_op_model("QUANTIZE", [T((1, 64), np.float32)], [T((1, 64), dtype, q=quant(1.0, zp))])
    ours, got, want = invokes(model, np.concatenate([xs, xs[::-1]]))  # also the rows after NaN / overflow
    np.testing.assert_array_equal(got, want)
    (prepared,) = ours._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == cls


def test_quantize_float_per_channel_store():
    """Per-channel QUANTIZE (zero points at qmin: the unsigned store) against BUILTIN_REF."""
    scales, zps = [0.5, 0.25, 1.0, 0.125], [-128, -128, -128, -128]
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 4)) * 40).astype(np.float32)
    x[0] = np.float32([0.25, 0.125, 0.5, 0.0625]) * 2 * np.arange(1, 5)  # halves of each channel's scale
    model = single_op_model("QUANTIZE", [T((6, 4), np.float32)], [T((6, 4), np.int8, q=quant(scales, zps, 1))])
    ours, got, want = invokes(model, [x])
    np.testing.assert_array_equal(got, want)
    (prepared,) = ours._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "QuantizeFloatStore"
