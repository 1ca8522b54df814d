"""Float CONV_2D with one output pixel whose window is the whole unpadded input (an SE block's 1x1 convs over a
pooled pixel, a classifier head) as the row FC of ops/fully_connected_row.py, against the oracle.

The bias is added inside the BLAS sum there (as ConvFloatBiasFolded does), so outputs are compared within the float
conv tolerance against BUILTIN_REF; inf / NaN positions exactly (NONE clamps an overflow to FLT_MAX). Each test
asserts the prepared step, so a broken selection fails.
"""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.ops.common import FLT_MAX
from litert_py.ops.conv import conv2d
from litert_py.ops.fully_connected_row import FullyConnectedFloatRow, FullyConnectedFloatRowChain
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import T, run_both, run_litert, single_op_model

F32 = np.float32
RTOL_PER_TERM = 1e-5  # tests/ops/conv/test_conv.py's CONV_2D tolerance
SAME, VALID = 0, 1
S1 = {"stride_h": 1, "stride_w": 1}


def _prepared(model: bytes) -> list:
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    return [op for _, op in it._subgraphs[0].steps_nodes]


# (input shape, filter (O, KH, KW, C), padding, activation)
CASES = [
    ((1, 1, 1, 16), (8, 1, 1, 16), SAME, 1),  # the SE squeeze, RELU
    ((1, 1, 1, 24), (96, 1, 1, 24), VALID, 0),  # the SE excite, no activation
    ((1, 3, 2, 5), (7, 3, 2, 5), VALID, 3),  # a window over a whole 3x2 input, RELU6
    ((1, 1, 1, 1), (1, 1, 1, 1), SAME, 2),  # one value, RELU_N1_TO_1
]


@pytest.mark.parametrize("x_shape, w_shape, padding, act", CASES)
def test_one_window_conv_is_a_row_fc(x_shape, w_shape, padding, act):
    rng = np.random.default_rng(sum(x_shape) + w_shape[0])
    x = rng.standard_normal(x_shape).astype(F32)
    w = rng.standard_normal(w_shape).astype(F32)
    b = (rng.standard_normal(w_shape[0]) * 2).astype(F32)
    model = single_op_model(
        "CONV_2D",
        [T(x_shape), T.const(w), T.const(b)],
        [T((1, 1, 1, w_shape[0]))],
        {"padding": padding, "stride_h": 1, "stride_w": 1, "fused_activation_function": act},
    )
    (op,) = _prepared(model)
    assert isinstance(op, FullyConnectedFloatRow)
    ours, theirs = run_both(model, [x])
    assert ours[0].shape == theirs[0].shape == (1, 1, 1, w_shape[0])
    assert_close(ours, theirs, rtol=RTOL_PER_TERM * (np.prod(w_shape[1:]) + 1), atol=1e-6)


def test_special_values_like_the_reference():
    """+-inf inputs give +-FLT_MAX or NaN where the reference does; NaN passes."""
    w = np.array([[[[1.0, 0.0]]], [[[-1.0, 0.0]]], [[[1.0, 1.0]]], [[[0.0, 2.0]]]], F32)
    model = single_op_model(
        "CONV_2D", [T((1, 1, 1, 2)), T.const(w), T.const(np.zeros(4, F32))], [T((1, 1, 1, 4))], {"padding": VALID, **S1}
    )
    assert isinstance(_prepared(model)[0], FullyConnectedFloatRow)
    for x in (np.array([np.inf, 1.0], F32), np.array([-np.inf, np.nan], F32), np.array([3e38, 3e38], F32)):
        with np.errstate(invalid="ignore", over="ignore"):
            (ours,), (theirs,) = run_both(model, [x.reshape(1, 1, 1, 2)])
        np.testing.assert_array_equal(ours, theirs)
        assert not np.isinf(ours).any()
    assert (theirs == FLT_MAX).any()


def test_not_taken_where_the_window_is_not_the_input():
    """Two batches, padding, or a window smaller than the input keep the GEMM paths."""
    for x_shape, w_shape, padding in (
        ((2, 1, 1, 4), (3, 1, 1, 4), VALID),
        ((1, 3, 3, 4), (3, 3, 3, 4), SAME),  # 3x3 SAME over 3x3: nine padded windows
        ((1, 2, 1, 4), (3, 1, 1, 4), VALID),
    ):
        model = single_op_model(
            "CONV_2D",
            [T(x_shape), T.const(np.ones(w_shape, F32)), T.const(np.ones(3, F32))],
            [T((1, 1, 1, 3))],
            {"padding": padding, **S1},
        )
        (op,) = _prepared(model)
        assert not isinstance(op, FullyConnectedFloatRow), (x_shape, padding)
    assert not conv2d.one_window_row(conv2d.Geometry(1, 1, 1, 4, 1, 1, 4, 1, 1), 2)  # grouped


def test_se_gate_convs_chain_into_one_step():
    """AVERAGE_POOL (global) -> CONV 1x1 (RELU) -> CONV 1x1 -> LOGISTIC -> MUL, the SE block of MediaPipe's
    selfie segmentation: the two convs become one FullyConnectedFloatRowChain; the output close to LiteRT's."""
    rng = np.random.default_rng(7)
    c, mid, h = 16, 8, 6
    b = ModelBuilder()
    x = b.input("x", (1, h, h, c), F32)
    pooled = b.tensor("pooled", (1, 1, 1, c), F32)
    b.op("AVERAGE_POOL_2D", [x], [pooled], {"padding": VALID, "filter_height": h, "filter_width": h, **S1})
    w1 = b.tensor("w1", (mid, 1, 1, c), F32, data=rng.standard_normal((mid, 1, 1, c)).astype(F32))
    b1 = b.tensor("b1", (mid,), F32, data=rng.standard_normal(mid).astype(F32))
    squeezed = b.tensor("squeezed", (1, 1, 1, mid), F32)
    b.op("CONV_2D", [pooled, w1, b1], [squeezed], {"padding": SAME, "fused_activation_function": 1, **S1})
    w2 = b.tensor("w2", (c, 1, 1, mid), F32, data=rng.standard_normal((c, 1, 1, mid)).astype(F32))
    b2 = b.tensor("b2", (c,), F32, data=rng.standard_normal(c).astype(F32))
    excited = b.tensor("excited", (1, 1, 1, c), F32)
    b.op("CONV_2D", [squeezed, w2, b2], [excited], {"padding": SAME, **S1})
    gate = b.tensor("gate", (1, 1, 1, c), F32)
    b.op("LOGISTIC", [excited], [gate])
    y = b.tensor("y", (1, h, h, c), F32)
    b.op("MUL", [x, gate], [y])
    b.output(y)
    model = b.build()
    names = [type(op).__name__ for op in _prepared(model)]
    assert names.count("FullyConnectedFloatRowChain") == 1 and "ConvFloat" not in names, names
    assert FullyConnectedFloatRowChain.__name__ in names
    xv = rng.standard_normal((1, h, h, c)).astype(F32)
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], xv)
    it.invoke()
    ours = it.get_tensor(it.get_output_details()[0]["index"])
    assert_close([ours], run_litert(model, [xv]), rtol=RTOL_PER_TERM * (c + mid + 2), atol=1e-6)
