"""PAD / PADV2, float MAX_POOL_2D, tiled float AVERAGE_POOL_2D and the per-channel row ADD / MUL with a plan bound
to their arrays (``bind``, called by ops/fusion.bind_steps): inside an invoke they run the plan bound at prepare,
called on fresh copies a plan bound to those; both give the same bytes over two invokes with different inputs
(tests/ops/_bound.check_bound; the oracle comparisons of test_pad_filled.py, test_pooling.py,
test_pooling_tiled.py and test_elementwise.py cover the values)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops import elementwise, padding, pooling
from tests.ops._bound import check_bound
from tests.ops.test_pad_filled import _model as pad_model
from tests.ops.test_pooling import pool_model
from tests.oracle import T, single_op_model


@pytest.mark.parametrize(
    "shape, pads, dtype, constant, kind",
    [
        ((1, 16, 16, 24), [[0, 0], [0, 0], [0, 0], [0, 4]], np.float32, None, padding.Pad),  # BlazeFace's channel pad
        ((1, 30, 25, 48), [[0, 0], [1, 1], [1, 1], [0, 0]], np.float32, -2.0, padding.Pad),
        ((1, 8, 7, 16), [[0, 0], [1, 2], [2, 1], [0, 0]], np.float32, 3.5, padding.PadFilled),
        ((2, 3, 4, 5), [[1, 0], [2, 1], [0, 3], [1, 1]], np.int8, None, padding.PadFilled),
    ],
)
def test_pad_bound(shape, pads, dtype, constant, kind):
    x = np.random.default_rng(3).uniform(-100, 100, shape).astype(dtype)
    check_bound(pad_model(shape, pads, dtype, constant), x, kind)


@pytest.mark.parametrize("act", [0, 1])
@pytest.mark.parametrize("shape", [(1, 16, 16, 28), (2, 9, 8, 5)])
def test_max_pool_2x2_bound(shape, act):
    """2x2 stride 2, VALID (padding 1): the rows stage over tiles, two column taps."""
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    check_bound(pool_model("MAX_POOL_2D", shape, 2, 2, 2, 2, padding=1, act=act), x, pooling.MaxPoolFloat)


@pytest.mark.parametrize("act", [0, 1])
def test_average_pool_tiled_bound(act):
    x = np.random.default_rng(5).standard_normal((2, 8, 8, 16)).astype(np.float32)
    model = pool_model("AVERAGE_POOL_2D", (2, 8, 8, 16), 8, 8, 8, 8, padding=1, act=act)
    check_bound(model, x, pooling.AveragePoolFloatTiled)


@pytest.mark.parametrize("gate_first", [False, True])
@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_channel_row_bound(op, gate_first):
    rng = np.random.default_rng(6)
    shape, gate = (1, 64, 64, 16), (1, 1, 1, 16)
    x, g = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(gate).astype(np.float32)
    ins, feeds = ([T(gate), T(shape)], [g, x]) if gate_first else ([T(shape), T(gate)], [x, g])
    model = single_op_model(op, ins, [T(shape)], {"fused_activation_function": 3})
    check_bound(model, feeds, elementwise.ArithmeticChannelRow)


@pytest.mark.parametrize("act", [0, 1])
def test_max_pool_one_row_filter_bound(act):
    """A 1x2 stride-2 filter: no rows stage, the column taps alone."""
    x = np.random.default_rng(5).standard_normal((1, 8, 10, 6)).astype(np.float32)
    check_bound(pool_model("MAX_POOL_2D", (1, 8, 10, 6), 1, 2, 1, 2, padding=1, act=act), x, pooling.MaxPoolFloat)
