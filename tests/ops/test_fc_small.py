"""FullyConnectedQuantizedFoldedRelu (ops/fully_connected_folded.py): the ReLU-like folded int8 / uint8
FULLY_CONNECTED whose floor and output zero point are integer stores (a truncating cast into an unsigned buffer,
then zo added in the output type, mod 2^bits for signed outputs). Compared exactly with BUILTIN_REF over many
inputs of one interpreter: ties of the float requantization (effective scale 1/16, acc = 8 mod 16), both
clamps, zero points -128 / 10 / 131 (uint8), inputs shaped (rows, depth), (b, r, depth) and keep_num_dims."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from tests.oracle import T, oracle, quant, single_op_model

RELU, RELU6 = 1, 3


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
    ],
)
def test_folded_relu_integer_stores(dtype, zo, act, x_shape, out_shape, keep):
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
    xs[:20] = rng.integers(info.min, info.max + 1, (20,) + x_shape)  # large accumulators: both clamps
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
    got, want = np.array(got), np.array(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert want.min() == zo + 0 and len(np.unique(want)) > 5  # the lower clamp and many values
    if act == RELU6:
        assert want.max() == zo + 6
    acc = (xs.reshape(len(xs), -1, depth).astype(np.int64) - zx) @ wz.T + bias
    assert ((acc % 16 == 8) & (acc > 0)).sum() >= 3  # ties of the requantization (away from zero) exercised
    (prepared,) = ours._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "FullyConnectedQuantizedFoldedRelu"
