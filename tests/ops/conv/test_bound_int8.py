"""The int8 / uint8 / int16x8 conv kernels' bound plans (``bind``, called by ops/fusion.bind_steps: the step's numpy
calls on its bound arrays, made once: conv2d_quantized.gemm_calls, requant.epilogue_calls, the depthwise's
accumulate_calls): ConvQuantizedScaled (Im2Col, RowBands, Im2ColT), ConvQuantizedFolded, ConvQuantizedFoldedRows,
DepthwiseConvQuantizedRows, DepthwiseConvQuantizedFolded (its three tap-sum forms), the int16x8
DepthwiseConvQuantizedConstant, DepthwiseIntoRows and DepthwiseRowsIntoRows, over their epilogues (ReLU-like and
sign paths, truncating, small, late zero point, mixed). Inside invokes each takes its bound plan and gives the bytes
of the op bound to fresh copies on inputs with both extremes and random values, and removing any call of a plan is
caught (tests/ops/_bound_int8.py). The values themselves are checked against the oracle by test_conv_scaled.py,
test_conv_quantized.py, test_depthwise_rows.py and test_depthwise_into_rows.py (and here for the standalone
depthwise kernels)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.conv import conv2d_quantized, depthwise_into_rows, depthwise_quantized, depthwise_rows, taps
from litert_py.schema.builder import quant
from tests.ops._bound_int8 import check_bound_int8, last_clip, sign_add
from tests.ops.conv._quantized import case_model, check_against_oracle
from tests.ops.conv.test_conv_scaled import _case as conv_case
from tests.ops.conv.test_depthwise_into_rows import _model as pair_model
from tests.ops.conv.test_depthwise_rows import _case as depthwise_case

I8, U8 = np.int8, np.uint8
SAME, VALID = 0, 1
NONE, RELU, RELU6 = 0, 1, 3

#: id -> (input shape, kernel, output channels, activation, output zp, stride, padding, type, near-dead share,
#: the prepared class, its GEMM operand class, its epilogue class)
CONVS = {
    "scaled-rowbands-relu-dead": ((1, 12, 12, 16), 3, 24, RELU, -128, 1, SAME, I8, 0.2, "ScaledEpilogue"),
    "scaled-rowbands-sign": ((1, 12, 12, 16), 3, 24, NONE, -6, 1, SAME, I8, 0.2, "ScaledEpilogue"),
    "scaled-im2col-pointwise": ((1, 6, 6, 128), 1, 64, RELU, -128, 1, SAME, I8, 0.2, "ScaledEpilogue"),
    "scaled-stem-transposed": ((1, 24, 24, 3), 3, 8, RELU6, -128, 2, SAME, I8, 0.0, "ScaledEpilogue"),
    "folded-stem-transposed": ((1, 20, 20, 1), 3, 8, RELU, -128, 2, SAME, I8, 0.0, "FoldedEpilogue"),
    "folded-im2col-sign-small": ((1, 6, 6, 8), 3, 8, NONE, 5, 1, SAME, I8, 0.0, "SmallFoldedEpilogue"),
    "folded-im2col-uint8-valid": ((1, 8, 8, 8), 3, 8, NONE, 3, 1, VALID, U8, 0.0, "SmallFoldedEpilogue"),
    "rows-relu-small": ((1, 4, 4, 16), 1, 16, RELU, -128, 1, SAME, I8, 0.0, "SmallFoldedEpilogue"),
    "rows-sign-small-dead": ((1, 4, 4, 16), 1, 16, NONE, 3, 1, SAME, I8, 0.25, "SmallFoldedEpilogue"),
    "rows-trunc": ((1, 8, 8, 16), 1, 32, RELU, -128, 1, SAME, I8, 0.25, "PlainTruncEpilogue"),
    "rows-late-zero-point": ((1, 4, 4, 32), 1, 16, NONE, -128, 1, SAME, I8, 0.5, "SmallLateZeroPointEpilogue"),
}


@pytest.mark.parametrize("name", list(CONVS))
def test_conv_bound(name):
    shape, k, out_c, act, zp, stride, padding, dtype, dead, epilogue = CONVS[name]
    case, _ = conv_case(np.random.default_rng(1), shape, k, out_c, act, zp, stride, 1, padding, dtype, dead)
    kind = {"scaled": conv2d_quantized.ConvQuantizedScaled, "folded": conv2d_quantized.ConvQuantizedFolded}.get(
        name.split("-")[0], conv2d_quantized.ConvQuantizedFoldedRows
    )
    model = case_model(case)
    check_bound_int8(model, kind, sign_add if "sign-small" in name else None)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    assert type(it._subgraphs[0].steps[0][0].epilogue).__name__ == epilogue  # the epilogue form the case covers


#: id -> ((h, w, c, kh, kw, stride, padding), more case arguments, the epilogue class)
DEPTHWISE = {
    "relu-trunc": ((12, 12, 32, 3, 3, 1, SAME), {}, "PlainTruncEpilogue"),
    "stride2-planes": ((17, 15, 16, 3, 3, 2, SAME), {}, "PlainTruncEpilogue"),
    "sign-trunc": ((12, 12, 16, 3, 3, 1, SAME), dict(act=NONE, out_zp=5), "TruncEpilogue"),
    "small-scaled-late-zero-point": ((4, 4, 32, 3, 3, 1, SAME), dict(dead=8, out_zp=100, act=NONE), None),
    "uint8-multiplier-2": ((10, 9, 12, 3, 3, 1, SAME), dict(dtype=U8, mult=2, out_zp=7), "PlainTruncEpilogue"),
}


@pytest.mark.parametrize("name", list(DEPTHWISE))
def test_depthwise_rows_bound(name):
    geometry, kwargs, epilogue = DEPTHWISE[name]
    model = case_model(depthwise_case(*geometry, **kwargs))
    check_bound_int8(model, depthwise_rows.DepthwiseConvQuantizedRows)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    name = type(it._subgraphs[0].steps[0][0].epilogue).__name__
    assert epilogue is None or name == epilogue


#: id -> ((h, w, c, kh, kw, stride, padding), more case arguments, the tap sums' form, the epilogue class, the rows
#: path off); small strided outputs keep DepthwiseConvQuantizedFolded by themselves
FOLDED = {
    "stacked-relu": ((8, 8, 16, 3, 3, 2, SAME), {}, "stacked", "SmallFoldedEpilogue", False),
    "stacked-sign": ((8, 8, 16, 3, 3, 2, SAME), dict(act=NONE, out_zp=5), "stacked", "SmallFoldedEpilogue", False),
    "tap-loop": ((12, 12, 16, 3, 3, 1, SAME), {}, "loop", "FoldedEpilogue", True),
    "einsum": ((8, 8, 48, 3, 3, 2, SAME), {}, "einsum", "FoldedEpilogue", False),
    "einsum-uint8-multiplier-2": (
        (9, 7, 24, 3, 3, 2, VALID),
        dict(dtype=U8, mult=2, out_zp=7),
        "einsum",
        "FoldedEpilogue",
        False,
    ),
    "late-zero-point": (
        (12, 12, 32, 3, 3, 1, SAME),
        dict(dead=8, out_zp=100, act=NONE),
        "stacked",
        "LateZeroPointEpilogue",
        True,
    ),
    "mixed": ((12, 12, 16, 3, 3, 1, SAME), dict(act=NONE, out_zp=0), "stacked", "MixedEpilogue", False),
}


@pytest.mark.parametrize("name", list(FOLDED))
def test_depthwise_folded_bound(name, monkeypatch):
    """The standalone DepthwiseConvQuantizedFolded: its plan (accumulate_calls, the epilogue's calls) in each tap-sum
    form (stacked multiply and reduction, the tap loop of large layers, EinsumTaps) and epilogue (a MixedEpilogue's
    Requantizer as one call), bit-exact with the oracle."""
    geometry, kwargs, form, epilogue, rows_off = FOLDED[name]
    if rows_off:
        monkeypatch.setattr(depthwise_quantized, "ROWS_PATH", False)
    if form == "loop":
        monkeypatch.setattr(taps, "DEPTHWISE_STACKED_ELEMENTS", 10)
    case = depthwise_case(*geometry, **kwargs)
    if epilogue == "MixedEpilogue":  # biases near 2^30 with multipliers of 2^-25: no exact fold on 4 channels
        case["bias"][:4] = np.array([2**30 - 7, -(2**30) + 3, 2**30 - 1000, -(2**30) + 99], np.int32)
        case["f_q"] = quant(np.r_[np.full(4, 2.0**-23), np.full(12, 0.005)], 0, 3)
    kind = depthwise_quantized.DepthwiseConvQuantizedFolded
    op = _check_standalone_depthwise(case, kind, form, sign_add if "sign" in name else None)
    assert type(op.epilogue).__name__ == epilogue


def _check_standalone_depthwise(case: dict, kind: type, form: str, exempt=None):
    """check_bound_int8 of the case's model, a standalone ``kind`` whose tap sums take ``form`` ("einsum":
    EinsumTaps, "stacked" or "loop"), bit-exact with the oracle; returns the prepared op."""
    model = case_model(case)
    check_bound_int8(model, kind, exempt)
    out = check_against_oracle(case)  # bit-exact with BUILTIN_REF
    assert len(np.unique(out)) > 2
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    op = it._subgraphs[0].steps[0][0]
    einsum = type(op.taps) is depthwise_quantized.EinsumTaps
    stacked = isinstance(op.weights, np.ndarray) and op.weights.ndim == 6
    assert form == ("einsum" if einsum else "stacked" if stacked else "loop")
    return op


#: id -> ((h, w, c, kh, kw, stride, padding), more case arguments, the tap sums' form)
INT16 = {
    "stacked": ((12, 12, 16, 3, 3, 1, SAME), {}, "stacked"),
    "einsum-multiplier-2": ((9, 7, 24, 3, 3, 2, VALID), dict(mult=2), "einsum"),
    "tap-loop": ((12, 12, 16, 3, 3, 1, SAME), {}, "loop"),
}


@pytest.mark.parametrize("name", list(INT16))
def test_depthwise_int16_bound(name, monkeypatch):
    """int16x8 DEPTHWISE_CONV_2D with constant filter and int64 bias (DepthwiseConvQuantizedConstant): its plan (the
    taps' exact sums in each form, the int64 offset, the Requantizer as one call), bit-exact with the oracle."""
    geometry, kwargs, form = INT16[name]
    if form == "loop":
        monkeypatch.setattr(taps, "DEPTHWISE_STACKED_ELEMENTS", 10)
    case = depthwise_case(*geometry, **kwargs)
    case["x"] = np.random.default_rng(5).integers(-3000, 3000, case["x"].shape).astype(np.int16)
    case["x_q"], case["out_q"] = quant(0.001, 0), quant(0.01, 0)
    case["bias"] = case["bias"].astype(np.int64)
    op = _check_standalone_depthwise(case, depthwise_quantized.DepthwiseConvQuantizedConstant, form)
    assert op.acc.dtype == np.int64


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_depthwise_8bit_constant_bound(dtype):
    """An 8-bit DEPTHWISE_CONV_2D whose requantization does not fold (biases near 2^31 on two of three channels:
    no exact float fold) runs DepthwiseConvQuantizedConstant's plan, bit-exact with the oracle."""
    case = depthwise_case(12, 12, 16, 3, 3, 1, SAME, dtype=dtype, out_zp=-128 if dtype == np.int8 else 0)
    rng = np.random.default_rng(3)
    bias = (rng.choice([-1, 1], 16) * (2**31 - 1 - rng.integers(0, 2**20, 16))).astype(np.int32)
    bias[::3] = rng.integers(-3000, 3000, 6)
    case["bias"] = bias
    _check_standalone_depthwise(case, depthwise_quantized.DepthwiseConvQuantizedConstant, "stacked")


#: id -> (_model arguments, the fused class)
PAIRS = {
    "inlined-relu6": (dict(h=15, w=13, c=48, units=8), depthwise_into_rows.DepthwiseRowsIntoRows),
    "inlined-small": (dict(h=4, w=4, c=16, units=16), depthwise_into_rows.DepthwiseRowsIntoRows),
    "stride2": (dict(h=16, w=14, c=48, stride=2, units=8), depthwise_into_rows.DepthwiseIntoRows),
    "sign-path": (dict(h=12, w=12, c=32, act=NONE, zp=5, units=24), depthwise_into_rows.DepthwiseIntoRows),
    # near-dead channels: base -128, folded into the conv's constant row (FOLD_ADDEND): inlined
    "folded-base": (dict(h=8, w=8, c=32, dead=8, units=24), depthwise_into_rows.DepthwiseRowsIntoRows),
    "uint8": (dict(h=10, w=10, c=16, dtype=U8, zp=0, units=16), depthwise_into_rows.DepthwiseRowsIntoRows),
    "folded-depthwise": (dict(h=8, w=8, c=16, stride=2, units=16), depthwise_into_rows.DepthwiseIntoRows),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_depthwise_into_rows_bound(name):
    kwargs, kind = PAIRS[name]
    model = pair_model(**kwargs)
    check_bound_int8(model, kind, lambda op, calls: (*last_clip(op, calls), *sign_add(op, calls)))
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    rows = type(it._subgraphs[0].steps[0][0].depthwise) is depthwise_rows.DepthwiseConvQuantizedRows
    assert rows == (name != "folded-depthwise")  # the folded depthwise: its accumulate_calls in the plan


def test_depthwise_into_rows_base_add_bound(monkeypatch):
    """The base -128 added after the floor (FOLD_ADDEND off): DepthwiseIntoRows with the add call in its plan."""
    monkeypatch.setattr(depthwise_into_rows, "FOLD_ADDEND", False)
    model = pair_model(h=8, w=8, c=32, dead=8, units=24)
    check_bound_int8(
        model, depthwise_into_rows.DepthwiseIntoRows, lambda op, calls: (*last_clip(op, calls), *sign_add(op, calls))
    )
