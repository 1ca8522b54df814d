"""Float CONV_2D over few input channels from channel-first phase planes (conv2d_planes.ConvFloatPlanes): within
the float tolerance of LiteRT's reference kernel and within the summation error bound of a float64 reference,
over strides, dilations, padding, batches, bias and activations, and the geometries that do not choose it."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.conv import conv2d_planes
from tests.ops.conv.test_conv import TOLERANCE
from tests.oracle import T, assert_close, run_litert, run_ours, single_op_model

SAME, VALID = 0, 1
RELU6 = 3

# (input shape, filter (O, KH, KW, C), stride, dilation, padding)
CASES = [
    ((1, 24, 24, 3), (8, 5, 5, 3), (2, 2), (1, 1), SAME),  # BlazeFace's first layer, smaller
    ((2, 13, 11, 3), (6, 3, 3, 3), (2, 2), (1, 1), SAME),  # odd sizes: uneven phases, two batches
    ((1, 15, 17, 2), (5, 4, 5, 2), (2, 3), (1, 1), VALID),  # input past the last window
    ((1, 12, 14, 1), (4, 3, 2, 1), (3, 2), (2, 3), SAME),  # dilations not multiples of the strides
    ((1, 10, 10, 4), (7, 3, 3, 4), (1, 1), (1, 1), SAME),  # stride 1: one phase
    ((1, 9, 12, 2), (3, 3, 3, 2), (1, 1), (2, 2), VALID),  # dilation 2, stride 1
    ((1, 8, 8, 3), (4, 2, 2, 3), (3, 3), (1, 1), VALID),  # stride larger than the filter: unused phases
]
IDS = [f"{c[0][1]}x{c[0][2]}x{c[0][3]}-k{c[1][1]}x{c[1][2]}-s{c[2]}-d{c[3]}-p{c[4]}-n{c[0][0]}" for c in CASES]


def _model(x_shape, w, b, stride, dilation, padding, act):
    options = {
        "padding": padding,
        "stride_h": stride[0],
        "stride_w": stride[1],
        "dilation_h_factor": dilation[0],
        "dilation_w_factor": dilation[1],
        "fused_activation_function": act,
    }
    return single_op_model("CONV_2D", [T(x_shape), T.const(w), T.const(b)], [T((1, 1, 1, w.shape[0]))], options)


def _float64_reference(x, w, b, stride, dilation, out_shape, act):
    """The conv in float64 (taps outside the input skipped) and the sum of the products' magnitudes."""
    n, oh, ow, o = out_shape
    _, kh, kw, c = w.shape
    h, wd = x.shape[1:3]
    pt = max((oh - 1) * stride[0] + (kh - 1) * dilation[0] + 1 - h, 0) // 2
    pl = max((ow - 1) * stride[1] + (kw - 1) * dilation[1] + 1 - wd, 0) // 2
    acc, mag = np.zeros(out_shape), np.zeros(out_shape)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    for ky in range(kh):
        for kx in range(kw):
            ys = np.arange(oh) * stride[0] + ky * dilation[0] - pt
            xs = np.arange(ow) * stride[1] + kx * dilation[1] - pl
            vy, vx = (ys >= 0) & (ys < h), (xs >= 0) & (xs < wd)
            patch = np.zeros((n, oh, ow, c))
            patch[:, vy[:, None] & vx[None, :]] = x64[:, ys[vy]][:, :, xs[vx]].reshape(n, -1, c)
            prod = patch @ w64[:, ky, kx].T
            acc += prod
            mag += np.abs(patch) @ np.abs(w64[:, ky, kx]).T
    acc += b
    mag += np.abs(b.astype(np.float64))
    return (np.clip(acc, 0, 6) if act == RELU6 else acc), mag


@pytest.mark.parametrize("act", [0, RELU6])
@pytest.mark.parametrize("bias_scale", [50.0, 0.0], ids=["large-bias", "zero-bias"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_conv_planes(case, bias_scale, act, monkeypatch):
    x_shape, w_shape, stride, dilation, padding = case
    monkeypatch.setattr(conv2d_planes, "PLANES_MIN_PIXELS", 1)  # small layers take the path too
    rng = np.random.default_rng(sum(x_shape) + sum(w_shape))
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = (rng.standard_normal(w_shape[0]) * bias_scale).astype(np.float32)
    model = _model(x_shape, w, b, stride, dilation, padding, act)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert isinstance(prepared, conv2d_planes.ConvFloatPlanes)
    ours = run_ours(model, [x])
    terms = np.prod(w_shape[1:]) + 1
    assert_close(ours, run_litert(model, [x]), rtol=TOLERANCE["CONV_2D"] * terms, atol=1e-6)
    ref, mag = _float64_reference(x, w, b, stride, dilation, ours[0].shape, act)
    # the float32 sum of `terms` products in any order: |error| <= terms * 2^-24 * sum |products| (+ rounding
    # of each product, same order)
    assert np.all(np.abs(ours[0] - ref) <= (terms + 1) * 2.0**-24 * mag + 1e-30)
    np.testing.assert_array_equal(run_ours(model, [x])[0], ours[0])  # the planes' borders stay zero


def test_conv_planes_blazeface_first_layer():
    """The real geometry at the default thresholds: 128x128x3, 5x5 stride 2 SAME, 24 outputs."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 128, 128, 3)).astype(np.float32)
    w = rng.standard_normal((24, 5, 5, 3)).astype(np.float32)
    b = rng.standard_normal(24).astype(np.float32)
    model = _model(x.shape, w, b, (2, 2), (1, 1), SAME, 0)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert isinstance(prepared, conv2d_planes.ConvFloatPlanes)
    assert_close(run_ours(model, [x]), run_litert(model, [x]), rtol=TOLERANCE["CONV_2D"] * 76, atol=1e-6)


@pytest.mark.parametrize(
    "x_shape, w_shape, chosen",
    [
        ((1, 64, 64, 8), (16, 3, 3, 8), False),  # runs of 24 floats: the NHWC im2col
        ((1, 32, 32, 3), (16, 3, 3, 3), False),  # 1024 output pixels: too small
        ((1, 64, 64, 3), (16, 1, 1, 3), False),  # 1x1
        ((1, 64, 64, 4), (16, 3, 3, 4), True),
    ],
)
def test_conv_planes_choice(x_shape, w_shape, chosen):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    model = _model(x_shape, w, np.ones(w_shape[0], np.float32), (1, 1), (1, 1), SAME, 0)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert isinstance(prepared, conv2d_planes.ConvFloatPlanes) == chosen
    terms = np.prod(w_shape[1:]) + 1
    assert_close(run_ours(model, [x]), run_litert(model, [x]), rtol=TOLERANCE["CONV_2D"] * terms, atol=1e-6)
