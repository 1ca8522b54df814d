"""Float DEPTHWISE_CONV_2D fast paths, against the oracle (ai-edge-litert BUILTIN_REF) within the float
tolerance and bit for bit against the plain path, with the boundaries of each choice:
- stride_w > 1, depth multiplier 1: taps read from phase planes (taps.DepthwisePhaseTaps) instead of
  the padded buffer (DepthwiseTaps), over strides, dilations, padding and sizes where some phases are empty;
- large outputs: blocks of output rows (depthwise.DepthwiseConvFloatBlocked, one block for smaller outputs).
These are the paths for a filter or bias given as an input (DepthwiseConvFloat) and strided windows with a depth
multiplier (DepthwiseConvFloatBlocked); the
einsum path takes the others (tests/ops/conv/test_depthwise_einsum.py): the tests here switch it off.
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.conv import depthwise as depthwise_conv
from litert_py.ops.conv.taps import DepthwisePhaseTaps, DepthwiseTaps
from tests.compare import assert_close
from tests.ops.conv.test_conv import TOLERANCE, _conv_case, _model_and_inputs
from tests.oracle import run_litert, run_ours

SAME, VALID = 0, 1

# (h, w, c, kh, kw, stride, dilation, padding, depth multiplier)
CASES = [
    (64, 64, 28, 3, 3, (2, 2), (1, 1), SAME, 1),  # BlazeFace's stride-2 layer
    (15, 17, 5, 3, 3, (2, 2), (1, 1), SAME, 1),  # odd sizes: uneven phases
    (15, 17, 5, 5, 4, (2, 3), (1, 1), VALID, 1),  # VALID, input past the last window
    (9, 11, 3, 3, 3, (1, 2), (2, 1), SAME, 1),  # stride 1 in height: one row phase
    (10, 12, 4, 2, 3, (3, 2), (2, 3), SAME, 1),  # dilations not multiples of the strides
    (7, 1, 3, 3, 1, (2, 2), (1, 1), SAME, 1),  # one input column: phase px = 1 holds nothing
    (6, 6, 2, 3, 3, (2, 4), (1, 1), SAME, 1),  # stride wider than the filter: unused phases
    (8, 8, 3, 3, 3, (2, 2), (1, 1), SAME, 2),  # depth multiplier 2: the padded buffer
    (8, 8, 3, 3, 3, (2, 1), (1, 1), SAME, 1),  # stride_w 1: rows are already contiguous
]


def _case(h, w, c, kh, kw, stride, dilation, padding, mult, act=0):
    return _conv_case(
        "DEPTHWISE_CONV_2D",
        batch=2,
        h=h,
        w=w,
        c=c,
        out_c=c * mult,
        mult=mult,
        kh=kh,
        kw=kw,
        stride=stride,
        dilation=dilation,
        padding=padding,
        act=act,
        seed=h * w + c,
    )


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}-k{c[3]}x{c[4]}-s{c[5]}-d{c[6]}-m{c[8]}" for c in CASES]
)
@pytest.mark.parametrize("act", [0, 1])
def test_depthwise_phase_planes(case, act, monkeypatch):
    monkeypatch.setattr(depthwise_conv, "build_einsum", lambda *args: None)
    model, feeds, terms = _model_and_inputs("DEPTHWISE_CONV_2D", _case(*case, act=act))
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    phases = case[5][1] > 1 and case[8] == 1
    assert isinstance(prepared.taps, DepthwisePhaseTaps if phases else DepthwiseTaps)
    ours = run_ours(model, feeds)
    assert_close(ours, run_litert(model, feeds), rtol=TOLERANCE["DEPTHWISE_CONV_2D"] * terms, atol=1e-6)
    ours_twice = run_ours(model, feeds)  # the planes' borders stay zero across invokes
    np.testing.assert_array_equal(ours_twice[0], ours[0])
    monkeypatch.setattr(
        depthwise_conv.DepthwisePhaseTaps, "build", staticmethod(lambda geo, dtype: DepthwiseTaps.build(geo, 1, dtype))
    )
    np.testing.assert_array_equal(run_ours(model, feeds)[0], ours[0])  # the same taps in the same order


# -- blocks of output rows (DepthwiseConvFloatBlocked) ------------------------------------------------------

# (h, w, c, kh, kw, stride, dilation, padding, depth multiplier, bias)
BLOCKED = [
    (13, 11, 5, 3, 3, (1, 1), (1, 1), SAME, 1, True),
    (15, 17, 5, 3, 3, (2, 2), (1, 1), SAME, 1, True),  # phase planes, then blocks
    (12, 9, 3, 3, 2, (1, 1), (2, 1), VALID, 2, False),  # depth multiplier 2, no bias
    (9, 7, 4, 5, 5, (1, 1), (1, 1), SAME, 1, True),
]


@pytest.mark.parametrize(
    "case", BLOCKED, ids=[f"{c[0]}x{c[1]}x{c[2]}-k{c[3]}x{c[4]}-s{c[5]}-m{c[8]}-b{c[9]}" for c in BLOCKED]
)
@pytest.mark.parametrize("act", [0, 3])
def test_depthwise_row_blocks(case, act, monkeypatch):
    """Blocks of output rows (the block size lowered so that small layers, two batches, take the path, some
    blocks shorter than the others): within tolerance of the oracle and bit for bit the unblocked result."""
    *geometry, bias = case
    d = _case(*geometry, act=act) | {"bias": bias}
    model, feeds, terms = _model_and_inputs("DEPTHWISE_CONV_2D", d)
    monkeypatch.setattr(depthwise_conv, "build_einsum", lambda *args: None)
    monkeypatch.setattr(depthwise_conv, "DEPTHWISE_BLOCK_BYTES", d["w"] * d["out_c"] * 4 * 2)  # ~2 rows
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "DepthwiseConvFloatBlocked" and len(prepared.blocks) > 4
    ours = run_ours(model, feeds)
    assert_close(ours, run_litert(model, feeds), rtol=TOLERANCE["DEPTHWISE_CONV_2D"] * terms, atol=1e-6)
    monkeypatch.setattr(depthwise_conv, "DEPTHWISE_BLOCK_BYTES", 1 << 30)
    np.testing.assert_array_equal(run_ours(model, feeds)[0], ours[0])


def test_depthwise_row_blocks_default_threshold(monkeypatch):
    """Without the einsum path, a 1 MB output (MediaPipe selfie segmentation's last depthwise layer) takes the
    blocks by default; a 256 KB one is one block."""
    monkeypatch.setattr(depthwise_conv, "build_einsum", lambda *args: None)
    for (h, w, c), blocked in (((128, 128, 16), True), ((64, 64, 16), False)):
        model, feeds, terms = _model_and_inputs("DEPTHWISE_CONV_2D", _case(h, w, c, 3, 3, (1, 1), (1, 1), SAME, 1))
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (prepared,) = it._subgraphs[0].prepared_ops.values()
        assert type(prepared).__name__ == "DepthwiseConvFloatBlocked" and (len(prepared.blocks) > 1) == blocked
        assert_close(run_ours(model, feeds), run_litert(model, feeds), rtol=1e-5 * terms, atol=1e-6)
