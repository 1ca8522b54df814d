"""Float conv kernels with a plan bound to their arrays (``bind``, called by ops/fusion.bind_steps): inside an
invoke they run the plan bound at prepare, called on fresh copies (a delegate's fallback chain) a plan bound to
those; both must give the same bits, and the bound views must see every new input (tests/ops/_bound.check_bound; the
oracle comparisons of test_conv.py, test_depthwise_einsum.py and test_depthwise_phases.py cover the values
themselves)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.conv import conv2d, conv2d_planes, depthwise, depthwise_einsum, im2col
from tests.ops._bound import check_bound
from tests.ops.conv.test_conv import _conv_case, _model_and_inputs
from tests.ops.conv.test_depthwise_phases import SAME, VALID, _case
from tests.oracle import run_ours


@pytest.mark.parametrize("act", [0, 1])
@pytest.mark.parametrize(
    "geometry",
    [
        (16, 16, 8, 3, 3, (1, 1), (1, 1), SAME, 1),
        (8, 8, 3, 3, 3, (1, 1), (1, 1), SAME, 2),
        (10, 9, 3, 3, 3, (1, 1), (1, 1), VALID, 1),
        (16, 16, 6, 3, 3, (2, 2), (1, 1), SAME, 1),  # column phases: two planes
    ],
)
def test_depthwise_einsum_bound(geometry, act):
    model, feeds, _ = _model_and_inputs("DEPTHWISE_CONV_2D", _case(*geometry, act=act))
    check_bound(model, feeds[0], depthwise_einsum.DepthwiseConvFloatEinsum)


@pytest.mark.parametrize("act", [0, 1])
@pytest.mark.parametrize(
    "geometry, blocks",
    [
        ((8, 8, 3, 3, 3, (2, 2), (1, 1), SAME, 2), False),  # strided with a depth multiplier: the padded buffer
        ((15, 17, 5, 3, 3, (2, 2), (1, 1), SAME, 1), False),  # phase planes (einsum off)
        ((10, 9, 3, 3, 3, (1, 1), (1, 1), VALID, 1), False),  # the taps are views of the input (einsum off)
        ((13, 11, 5, 3, 3, (1, 1), (1, 1), SAME, 1), True),  # blocks of output rows (two batches)
        ((15, 17, 5, 3, 3, (2, 2), (1, 1), SAME, 1), True),  # phase planes, then blocks
    ],
)
def test_depthwise_taps_bound(geometry, blocks, act, monkeypatch):
    """DepthwiseConvFloatBlocked (constant filter and bias, without the einsum: the tap loop's calls listed once,
    taps.DepthwiseTaps.tap_calls), in one block and in several."""
    monkeypatch.setattr(depthwise, "build_einsum", lambda *args: None)
    if blocks:
        monkeypatch.setattr(depthwise, "DEPTHWISE_BLOCK_BYTES", geometry[1] * geometry[2] * 4 * 2)  # ~2 rows
    model, feeds, _ = _model_and_inputs("DEPTHWISE_CONV_2D", _case(*geometry, act=act))
    check_bound(model, feeds[0], depthwise.DepthwiseConvFloatBlocked)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    assert (len(it._subgraphs[0].steps[0][0].blocks) > 1) == blocks


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(
    "geometry",
    [
        (8, 8, 3, 3, 3, (2, 2), (1, 1), SAME, 2),  # the padded buffer
        (15, 17, 5, 3, 3, (2, 2), (1, 1), SAME, 1),  # phase planes
        (10, 9, 3, 3, 3, (1, 1), (1, 1), VALID, 1),  # the taps are views of the input
    ],
)
def test_depthwise_filter_input_bound(geometry, bias):
    """DepthwiseConvFloat (BoundCalls3) / DepthwiseConvFloatNoBias (BoundCalls2): the filter and bias given as inputs,
    read through views made at bind (a Fortran-ordered filter through a C-contiguous copy refreshed first)."""
    d = _case(*geometry, act=1) | {"const": False, "bias": bias}
    model, feeds, _ = _model_and_inputs("DEPTHWISE_CONV_2D", d)
    check_bound(model, feeds, depthwise.DepthwiseConvFloat if bias else depthwise.DepthwiseConvFloatNoBias)
    # new filter and bias values: the bound plan sees them (as a fresh interpreter's), also through a Fortran-ordered
    # filter rewritten in place between two calls
    new = [feeds[0], *(np.roll(a, 1) * 2 for a in feeds[1:])]
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    for values in (feeds, new):
        for detail, value in zip(it.get_input_details(), values):
            it.set_tensor(detail["index"], value)
        it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), run_ours(model, new)[0])
    (op, ins, outs), *_ = it._subgraphs[0].steps
    xs = [np.asfortranarray(a) for a in ins]
    got, expected = np.empty_like(outs[0]), np.empty_like(outs[0])
    for values in (feeds, new):
        for a, value in zip(xs, values):
            a[...] = value.reshape(a.shape)
        op(xs, [got])
    op([np.ascontiguousarray(a) for a in xs], [expected])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("act", [0, 1])
@pytest.mark.parametrize("hw, c, out_c", [((12, 10), 24, 28), ((4, 4), 96, 96)])
def test_pointwise_conv_bound(hw, c, out_c, act):
    d = _conv_case(h=hw[0], w=hw[1], c=c, filter_c=c, out_c=out_c, kh=1, kw=1, stride=(1, 1), dilation=(1, 1), act=act)
    model, feeds, _ = _model_and_inputs("CONV_2D", d | {"padding": VALID, "bias": True, "const": True})
    check_bound(model, feeds[0], conv2d.ConvFloat)


@pytest.mark.parametrize("act", [0, 1])
@pytest.mark.parametrize("hw, c, k, stride", [((128, 128), 3, 5, 2), ((64, 64), 4, 3, 1)])
def test_planes_conv_bound(hw, c, k, stride, act):
    d = _conv_case(
        batch=1, h=hw[0], w=hw[1], c=c, filter_c=c, out_c=8, kh=k, kw=k, stride=(stride,) * 2, dilation=(1, 1)
    )
    model, feeds, _ = _model_and_inputs("CONV_2D", d | {"padding": SAME, "act": act})
    check_bound(model, feeds[0], conv2d_planes.ConvFloatPlanes)


@pytest.mark.parametrize("act", [0, 1])
def test_pointwise_blocks_conv_bound(act):
    d = _conv_case(h=64, w=64, c=16, filter_c=16, out_c=16, kh=1, kw=1, stride=(1, 1), dilation=(1, 1), act=act)
    model, feeds, _ = _model_and_inputs("CONV_2D", d | {"padding": VALID})
    check_bound(model, feeds[0], conv2d.ConvFloatPointwise)


@pytest.mark.parametrize("blocks", [False, True], ids=["one-block", "blocked"])
@pytest.mark.parametrize("padding", [SAME, VALID])
def test_im2col_conv_bound(padding, blocks, monkeypatch):
    """A 3x3 conv through the im2col GEMM with the bias folded into it (ConvFloatBiasFolded), padded or not, in
    one block and in several (with groups 1 and a constant bias every non-1x1 im2col conv folds its bias)."""
    if blocks:
        monkeypatch.setattr(im2col, "IM2COL_BLOCK_BYTES", 2048)
    d = _conv_case(h=11, w=9, c=6, filter_c=6, out_c=5, kh=3, kw=3, stride=(1, 2), dilation=(1, 1), act=1)
    model, feeds, _ = _model_and_inputs("CONV_2D", d | {"padding": padding})
    check_bound(model, feeds[0], conv2d.ConvFloatBiasFolded)


@pytest.mark.parametrize("batch", [2, 3])
def test_whole_window_conv_bound(batch):
    """A filter covering the whole input (one output pixel per image: Im2Col's whole-window branch; with one
    image the conv is a row FULLY_CONNECTED)."""
    d = _conv_case(batch=batch, h=5, w=4, c=3, filter_c=3, out_c=7, kh=5, kw=4, stride=(1, 1), dilation=(1, 1))
    model, feeds, _ = _model_and_inputs("CONV_2D", d | {"padding": VALID, "act": 1})
    check_bound(model, feeds[0], conv2d.ConvFloatBiasFolded)
