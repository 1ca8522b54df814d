"""Float DEPTHWISE_CONV_2D on flat row-padded sources (depthwise_flat.DepthwiseConvFloatFlat): bit for bit
LiteRT's reference kernel (BUILTIN_REF) and the per-tap path (DepthwiseConvFloat, the flat path switched off),
over the geometries that choose it (stride 1 over the padded buffer, strided windows over phase planes, depth
multipliers, dilations, batches, one or several blocks, the stacked taps of small stride-1 layers) and the ones
that do not."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.conv import depthwise_flat
from tests.ops.conv.test_conv import _model_and_inputs
from tests.ops.conv.test_depthwise_phases import SAME, VALID, _case
from tests.oracle import run_litert, run_ours

# (h, w, c, kh, kw, stride, dilation, padding, depth multiplier)
CASES = [
    (16, 16, 8, 3, 3, (1, 1), (1, 1), SAME, 1),  # BlazeFace's stride-1 layers
    (12, 10, 8, 5, 5, (1, 1), (1, 1), SAME, 1),  # 5x5 (selfie segmentation)
    (9, 11, 3, 3, 2, (1, 1), (2, 3), SAME, 1),  # dilations: taps further apart in the run
    (10, 9, 3, 3, 3, (1, 1), (1, 1), VALID, 1),  # no padding: the input copied, the run ends at its end
    (8, 8, 3, 3, 3, (1, 1), (1, 1), SAME, 2),  # depth multiplier 2: channels repeated into the padded buffer
    (16, 16, 6, 3, 3, (2, 2), (1, 1), SAME, 1),  # BlazeFace's stride-2 layers: phase planes
    (15, 17, 5, 5, 4, (2, 3), (1, 1), VALID, 1),  # uneven phases, input past the last window
    (10, 12, 4, 2, 3, (3, 2), (2, 3), SAME, 1),  # dilations not multiples of the strides
    (8, 8, 3, 3, 3, (2, 1), (1, 1), SAME, 1),  # stride 1 in width: one column phase
    (2, 2, 16, 3, 3, (1, 1), (1, 1), SAME, 1),  # 2x2 (face landmark's smallest layers)
]
IDS = [f"{c[0]}x{c[1]}x{c[2]}-k{c[3]}x{c[4]}-s{c[5]}-d{c[6]}-p{c[7]}-m{c[8]}" for c in CASES]


def _prepared(model):
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    return prepared


@pytest.mark.parametrize("layout", ["stacked", "one-block", "row-tiles", "blocks"])
@pytest.mark.parametrize("act", [0, 3])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_depthwise_flat_bit_exact(case, bias, act, layout, monkeypatch):
    d = _case(*case, act=act) | {"bias": bias}
    model, feeds, _ = _model_and_inputs("DEPTHWISE_CONV_2D", d)
    if layout != "stacked":  # the tap loop (stacked taps off)
        monkeypatch.setattr(depthwise_flat, "DEPTHWISE_FLAT_STACK_BYTES", 0)
    if layout in ("row-tiles", "blocks"):  # weight tiles of one wide row, the run padded to whole rows
        monkeypatch.setattr(depthwise_flat, "DEPTHWISE_FLAT_TILE_ELEMENTS", 1)
    if layout == "blocks":  # blocks of one wide row: several blocks, the last one overlapping
        monkeypatch.setattr(depthwise_flat, "DEPTHWISE_FLAT_BLOCK_BYTES", 1)
    prepared = _prepared(model)
    if layout == "stacked" and case[5] == (1, 1):
        assert isinstance(prepared, depthwise_flat.DepthwiseConvFloatFlatStacked)
    else:
        assert isinstance(prepared, depthwise_flat.DepthwiseConvFloatFlat)
        assert (len(prepared.blocks) > 2) == (layout == "blocks")
        assert (prepared.blocks[0][0][0].shape[0] > 1) == (layout == "row-tiles")  # weights broadcast over rows
    ours = run_ours(model, feeds)
    np.testing.assert_array_equal(ours[0], run_litert(model, feeds)[0])
    np.testing.assert_array_equal(run_ours(model, feeds)[0], ours[0])  # the borders stay zero across invokes
    monkeypatch.setattr(depthwise_flat, "DEPTHWISE_FLAT_MAX_WASTE", 0)
    assert type(_prepared(model)).__name__ == "DepthwiseConvFloat"
    np.testing.assert_array_equal(run_ours(model, feeds)[0], ours[0])


def test_depthwise_flat_special_values():
    """+-inf clamp to +-FLT_MAX and NaN propagate as in the reference; the dropped wide columns next to them
    (inf - inf = NaN there) do not leak into the output."""
    d = _case(8, 8, 4, 3, 3, (1, 1), (1, 1), SAME, 1)
    model, feeds, _ = _model_and_inputs("DEPTHWISE_CONV_2D", d)
    assert isinstance(_prepared(model), depthwise_flat.DepthwiseConvFloatFlatStacked)
    x = feeds[0]
    x[0, 1, 7, 0], x[0, 4, 0, 1], x[1, 2, 2, 2] = np.inf, -np.inf, np.nan
    with np.errstate(invalid="ignore"):
        ours, theirs = run_ours(model, feeds)[0], run_litert(model, feeds)[0]
    assert np.isnan(theirs).any() and (np.abs(theirs) == np.finfo(np.float32).max).any()
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "geometry, flat",
    [
        ((4, 7, 2, 1, 7, (1, 1), (1, 1), VALID, 1), False),  # a 1-wide output out of 7-wide rows: too wasteful
        ((8, 8, 3, 3, 3, (2, 2), (1, 1), SAME, 2), False),  # strided with depth multiplier 2: no phase planes
        ((4, 16, 2, 1, 3, (1, 1), (1, 1), VALID, 1), True),  # 14 of 16 columns kept
    ],
)
def test_depthwise_flat_choice(geometry, flat):
    model, feeds, _ = _model_and_inputs("DEPTHWISE_CONV_2D", _case(*geometry))
    flat_ops = (depthwise_flat.DepthwiseConvFloatFlat, depthwise_flat.DepthwiseConvFloatFlatStacked)
    assert isinstance(_prepared(model), flat_ops) == flat
    np.testing.assert_array_equal(run_ours(model, feeds)[0], run_litert(model, feeds)[0])
