"""Float DEPTHWISE_CONV_2D as one einsum over the window view (depthwise_einsum.DepthwiseConvFloatEinsum): within the
float tolerance of LiteRT's reference kernel (BUILTIN_REF) and within the summation error bound of a float64
reference, over the geometries that choose it (stride_w 1 over the padded buffer, strided windows over column
phase planes, depth multipliers, dilations, batches, bias, activations) and the ones that do not."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.conv import depthwise_einsum
from tests.ops.conv.test_conv import TOLERANCE, _model_and_inputs
from tests.ops.conv.test_depthwise_phases import SAME, VALID, _case
from tests.oracle import assert_close, run_litert, run_ours

# (h, w, c, kh, kw, stride, dilation, padding, depth multiplier)
CASES = [
    (16, 16, 8, 3, 3, (1, 1), (1, 1), SAME, 1),  # BlazeFace's stride-1 layers
    (12, 10, 8, 5, 5, (1, 1), (1, 1), SAME, 1),  # 5x5 (selfie segmentation)
    (9, 11, 3, 3, 2, (1, 1), (2, 3), SAME, 1),  # dilations
    (10, 9, 3, 3, 3, (1, 1), (1, 1), VALID, 1),  # no padding: the input copied
    (8, 8, 3, 3, 3, (1, 1), (1, 1), SAME, 2),  # depth multiplier 2: channels repeated into the padded buffer
    (11, 9, 2, 3, 2, (2, 1), (1, 2), SAME, 3),  # stride_h 2, stride_w 1: rows strided in the window view
    (16, 16, 6, 3, 3, (2, 2), (1, 1), SAME, 1),  # BlazeFace's stride-2 layers: column phases
    (15, 17, 5, 5, 4, (2, 3), (1, 1), VALID, 1),  # uneven phases, input past the last window
    (10, 12, 4, 2, 3, (3, 2), (2, 3), SAME, 1),  # dilations not multiples of the strides
    (6, 6, 2, 3, 3, (2, 4), (1, 1), SAME, 1),  # stride wider than the filter: unused phases
    (2, 2, 16, 3, 3, (1, 1), (1, 1), SAME, 1),  # 2x2 (face landmark's smallest layers)
    (7, 5, 1, 3, 3, (1, 1), (1, 1), SAME, 1),  # one channel
]
IDS = [f"{c[0]}x{c[1]}x{c[2]}-k{c[3]}x{c[4]}-s{c[5]}-d{c[6]}-p{c[7]}-m{c[8]}" for c in CASES]


def _prepared(model):
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    return prepared


def _float64_reference(d, x, f, b):
    """The depthwise conv in float64 (taps outside the input skipped), clamped as RELU6 / not, and the sum of
    the magnitudes of its terms."""
    n, h, w, c = x.shape
    m = d["mult"]
    kh, kw, o = f.shape[1:]
    sh, sw = d["stride"]
    dh, dw = d["dilation"]
    if d["padding"] == SAME:
        oh, ow = -(-h // sh), -(-w // sw)
    else:
        oh, ow = (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1
    pt = max((oh - 1) * sh + (kh - 1) * dh + 1 - h, 0) // 2
    pl = max((ow - 1) * sw + (kw - 1) * dw + 1 - w, 0) // 2
    xr = np.repeat(x.astype(np.float64), m, axis=3)  # output channel c*m + j reads input channel c
    acc, mag = np.zeros((n, oh, ow, o)), np.zeros((n, oh, ow, o))
    for ky in range(kh):
        for kx in range(kw):
            ys, xs = np.arange(oh) * sh + ky * dh - pt, np.arange(ow) * sw + kx * dw - pl
            vy, vx = (ys >= 0) & (ys < h), (xs >= 0) & (xs < w)
            patch = np.zeros((n, oh, ow, o))
            iy, ix = np.ix_(vy, vx)
            patch[:, iy, ix] = xr[:, ys[vy]][:, :, xs[vx]]
            acc += patch * f[0, ky, kx].astype(np.float64)
            mag += np.abs(patch * f[0, ky, kx].astype(np.float64))
    if b is not None:
        acc += b
        mag += np.abs(b.astype(np.float64))
    return (np.clip(acc, 0, 6) if d["act"] == 3 else acc), mag


@pytest.mark.parametrize("act", [0, 3])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_depthwise_einsum(case, bias, act):
    d = _case(*case, act=act) | {"bias": bias}
    model, feeds, terms = _model_and_inputs("DEPTHWISE_CONV_2D", d)
    assert isinstance(_prepared(model), depthwise_einsum.DepthwiseConvFloatEinsum)
    ours = run_ours(model, feeds)
    assert_close(ours, run_litert(model, feeds), rtol=TOLERANCE["DEPTHWISE_CONV_2D"] * terms, atol=1e-6)
    rng = np.random.default_rng(d["seed"])  # the input, filter and bias as _model_and_inputs made them
    x = rng.standard_normal((d["batch"], d["h"], d["w"], d["c"])).astype(np.float32)
    f = rng.standard_normal((1, d["kh"], d["kw"], d["out_c"])).astype(np.float32)
    b = rng.standard_normal(d["out_c"]).astype(np.float32) if bias else None
    assert np.array_equal(x, feeds[0])
    ref, mag = _float64_reference(d, x, f, b)
    # each of the terms + 1 float32 roundings (products and sums, in any order) is at most 2^-24 of |partial|
    assert np.all(np.abs(ours[0] - ref) <= (terms + 1) * 2.0**-24 * mag)
    np.testing.assert_array_equal(run_ours(model, feeds)[0], ours[0])  # the borders stay zero across invokes


def test_depthwise_einsum_special_values():
    """+-inf clamp to +-FLT_MAX and NaN propagate as in the reference."""
    d = _case(8, 8, 4, 3, 3, (1, 1), (1, 1), SAME, 1)
    model, feeds, _ = _model_and_inputs("DEPTHWISE_CONV_2D", d)
    assert isinstance(_prepared(model), depthwise_einsum.DepthwiseConvFloatEinsum)
    x = feeds[0]
    x[0, 1, 7, 0], x[0, 4, 0, 1], x[1, 2, 2, 2] = np.inf, -np.inf, np.nan
    with np.errstate(invalid="ignore"):
        ours, theirs = run_ours(model, feeds)[0], run_litert(model, feeds)[0]
    assert np.isnan(theirs).any() and (np.abs(theirs) == np.finfo(np.float32).max).any()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(
        ours[np.abs(theirs) == np.finfo(np.float32).max], theirs[np.abs(theirs) == np.finfo(np.float32).max]
    )


@pytest.mark.parametrize(
    "geometry, const, chosen",
    [
        ((8, 8, 3, 3, 3, (2, 2), (1, 1), SAME, 2), True, False),  # strided with depth multiplier 2: no phase planes
        ((8, 8, 3, 3, 3, (1, 1), (1, 1), SAME, 1), False, False),  # filter and bias as inputs
        ((8, 8, 3, 3, 3, (1, 1), (1, 1), SAME, 1), True, True),
    ],
)
def test_depthwise_einsum_choice(geometry, const, chosen):
    model, feeds, terms = _model_and_inputs("DEPTHWISE_CONV_2D", _case(*geometry) | {"const": const})
    assert isinstance(_prepared(model), depthwise_einsum.DepthwiseConvFloatEinsum) == chosen
    assert_close(
        run_ours(model, feeds), run_litert(model, feeds), rtol=TOLERANCE["DEPTHWISE_CONV_2D"] * terms, atol=1e-6
    )
