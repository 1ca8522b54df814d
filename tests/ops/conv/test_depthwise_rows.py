"""The int8 / uint8 DEPTHWISE_CONV_2D rows path (litert_py/ops/conv/depthwise_rows.py), bit-exact against the oracle
(ai-edge-litert BUILTIN_REF): the drawn cases with the path forced on every layer it can take (both tap-sum
layouts), and real-size layers where prepare must choose it, with the epilogue each must get: ReLU-like,
sign-corrected, near-dead channels (huge right shifts with zero point -128: folded with the base b = zp, added
after the truncation), a late zero point (requant_trunc.fold_truncating_proven; at most 512 outputs keep
requant.py's LateZeroPointEpilogue), uint8 with a
filter zero point and a depth multiplier, and the boundaries where it must not be chosen (small outputs, a
MixedEpilogue)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py.ops.conv import depthwise_quantized, depthwise_rows, requant_trunc
from litert_py.schema.builder import quant
from tests.ops.conv._quantized import I8, I32, U8, _prepared, check_against_oracle
from tests.ops.conv.test_conv_quantized import quantized_cases

SAME, VALID = 0, 1
RELU6, NONE = 3, 0


@pytest.mark.parametrize("window", ["window", "phase-planes", "scaled"])
@pytest.mark.parametrize("path", ["int8-per-channel", "int8-per-tensor", "int8-int4-filter", "uint8"])
@given(data=st.data())
def test_rows_path_drawn_cases(path, window, data):
    """quantized_cases (strides, dilations, depth multipliers, padding, every activation, zero points, tiny to
    huge scales and biases) with the rows path taken from one output value on: strided windows through the
    (KH, KW, N, OH, OW, C) window or the column phase planes; or ("scaled") every stride-1 layer through the
    float64 sums of the scaled weights (the small-output form)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(depthwise_rows, "ROWS_MIN_VALUES", 10**9 if window == "scaled" else 0)
        mp.setattr(depthwise_rows, "WINDOW_MIN_CHANNELS", 1 if window == "window" else 10**6)
        mp.setattr(depthwise_rows, "WINDOW_MAX_VALUES", 10**9 if window == "window" else 0)
        check_against_oracle(data.draw(quantized_cases("DEPTHWISE_CONV_2D", path)))


def _case(h, w, c, kh, kw, stride, padding, *, act=RELU6, out_zp=-128, dtype=I8, mult=1, dilation=1, seed=0,
          dead=0, bias_mag=3000, s_out=0.2):  # fmt: skip
    """A constant-filter depthwise layer; ``dead`` channels get filter scales of 2^-16 (multipliers of 2^-18:
    right shifts of 18) and biases of 2^19-2^20, so their outputs are a few units around the zero point."""
    rng = np.random.default_rng(seed)
    lo, hi = (-128, 127) if dtype == I8 else (0, 255)
    out_c = c * mult
    x = rng.integers(lo, hi + 1, (1, h, w, c)).astype(dtype)
    f = rng.integers(lo + (dtype == I8), hi + 1, (1, kh, kw, out_c)).astype(dtype)
    s_w = rng.uniform(0.002, 0.01, out_c)
    bias = rng.integers(-bias_mag, bias_mag, out_c).astype(I32)
    s_w[:dead] = 2.0**-16
    bias[:dead] = rng.integers(2**19, 2**20, dead) * rng.choice([-1, 1], dead)
    return {
        "op": "DEPTHWISE_CONV_2D",
        "x": x,
        "x_q": quant(0.05, -3 if dtype == I8 else 120),
        "f": f,
        "f_type": dtype,
        "f_q": quant(s_w, 0, 3) if dtype == I8 else quant(0.005, 131, 3),
        "bias": bias,
        "b_q": quant(1e-4),
        "out_q": quant(s_out, out_zp),
        "options": {
            "padding": padding,
            "stride_h": stride,
            "stride_w": stride,
            "depth_multiplier": mult,
            "dilation_h_factor": dilation,
            "dilation_w_factor": dilation,
            "fused_activation_function": act,
        },
        "const": (True, True),
    }


#: id -> ((h, w, c, kh, kw, stride, padding), more case arguments, "group subscripts/epilogue/sign path": the
#: epilogue class prefix (PlainTrunc: requant_trunc.TruncEpilogue's ReLU-like form), and "sign" (its copysign
#: path), "relu" (none) or "-" (another class)
REAL = {
    "ds-cnn-25x5x64": ((25, 5, 64, 3, 3, 1, SAME), {}, "ijnrp/PlainTrunc/relu"),
    "vww-48x48x8": ((48, 48, 8, 3, 3, 1, SAME), {}, "ijnrp/PlainTrunc/relu"),
    "s2-phase-planes-48x48x16": ((48, 48, 16, 3, 3, 2, SAME), {}, "ijnrp/PlainTrunc/relu"),
    "s2-window-8x8x96": ((8, 8, 96, 3, 3, 2, SAME), {}, "ijnhwc/PlainTrunc/relu"),
    "s2-phase-planes-13x11x256": ((13, 11, 256, 3, 3, 2, VALID), {}, "ijnrp/PlainTrunc/relu"),
    "kx1-valid-49x1x32": ((49, 1, 32, 9, 1, 1, VALID), {}, "ijnrp/PlainTrunc/relu"),
    "dilated-16x16x24": ((16, 16, 24, 3, 3, 1, SAME), dict(dilation=2), "ijnrp/PlainTrunc/relu"),
    "sign-no-activation": ((12, 12, 16, 3, 3, 1, SAME), dict(act=NONE, out_zp=5), "ijnrp/Trunc/sign"),
    "near-dead-zp-128": ((12, 12, 32, 3, 3, 1, SAME), dict(dead=8), "ijnrp/PlainTrunc/relu"),
    # the near-dead channels fail the truncating bound: requant_trunc.fold_truncating_proven (base -128)
    "near-dead-late-zp": ((12, 12, 32, 3, 3, 1, SAME), dict(dead=8, out_zp=100, act=NONE), "ijnrp/Trunc/sign"),
    "uint8-multiplier-2": ((10, 9, 12, 3, 3, 1, SAME), dict(dtype=U8, mult=2, out_zp=7), "ijnrp/PlainTrunc/relu"),
    "uint8-s2-multiplier-2": ((16, 15, 12, 3, 3, 2, SAME), dict(dtype=U8, mult=2, out_zp=7), "ijnhwc/PlainTrunc/relu"),
}


@pytest.mark.parametrize("kind", list(REAL))
def test_rows_path_chosen_at_real_sizes(kind, monkeypatch):
    geometry, kwargs, expected = REAL[kind]
    subscripts, epilogue, sign = expected.split("/")
    case = _case(*geometry, **kwargs)
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 2  # not all clamped
    prepared = _prepared(case)
    assert type(prepared) is depthwise_rows.DepthwiseConvQuantizedRows
    assert prepared.groups[0][0].startswith(subscripts)
    assert type(prepared.epilogue).__name__ == epilogue + "Epilogue"
    if sign != "-":
        assert (prepared.epilogue.half is not None) == (sign == "sign")
        lo = -128 if case["x"].dtype == I8 else 0
        base = min(kwargs.get("out_zp", -128), lo) if lo < 0 else 0
        if lo < 0 and out.size >= requant_trunc.WRAP_MIN_VALUES:  # the wrapped base: no final uint8 add
            base = -256
        assert prepared.epilogue.base == base
        # the truncation through int16 from WIDE_MIN_VALUES outputs on (|v| < 2^15 on these layers)
        assert (prepared.epilogue.wide is not None) == (out.size >= requant_trunc.WIDE_MIN_VALUES)
    if kwargs.get("dead"):  # the near-dead channels' outputs are not constant (the shift is exercised)
        assert len(np.unique(out[..., : kwargs["dead"]])) > 2
        monkeypatch.setattr(depthwise_quantized, "ROWS_PATH", False)  # unshifted, their zero point is late
        assert type(_prepared(case).epilogue).__name__ == "LateZeroPointEpilogue"


#: id -> ((h, w, c, kh, kw, stride, padding), more case arguments, "epilogue/sign path" as REAL's)
SCALED = {
    "relu-4x4x16": ((4, 4, 16, 3, 3, 1, SAME), {}, "PlainTrunc/relu"),
    "1024-values-8x8x16": ((8, 8, 16, 3, 3, 1, SAME), {}, "PlainTrunc/relu"),
    "kws-2x2x144": ((4, 4, 144, 3, 3, 1, VALID), {}, "PlainTrunc/relu"),
    "sign-no-activation": ((5, 5, 32, 3, 3, 1, SAME), dict(act=NONE, out_zp=5), "Trunc/sign"),
    "near-dead-zp-128": ((4, 4, 32, 3, 3, 1, SAME), dict(dead=8), "PlainTrunc/relu"),
    "near-dead-late-zp": ((4, 4, 32, 3, 3, 1, SAME), dict(dead=8, out_zp=100, act=NONE), "SmallLateZeroPoint/-"),
    "uint8-multiplier-2": ((6, 5, 12, 3, 3, 1, SAME), dict(dtype=U8, mult=2, out_zp=7), "PlainTrunc/relu"),
}


@pytest.mark.parametrize("kind", list(SCALED))
def test_small_stride1_outputs_take_scaled_sums(kind):
    """Stride-1 layers of at most ROWS_MIN_VALUES output values: the rows path with float64 sums of the weights
    already scaled (no multiply pass), bit-exact, with the epilogue each must get."""
    geometry, kwargs, expected = SCALED[kind]
    epilogue, sign = expected.split("/")
    case = _case(*geometry, **kwargs)
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 2
    prepared = _prepared(case)
    assert type(prepared) is depthwise_rows.DepthwiseConvQuantizedRows
    assert prepared.scale is None and prepared.sums is prepared.acc and prepared.acc.dtype == np.float64
    assert out.size <= depthwise_rows.ROWS_MIN_VALUES
    assert type(prepared.epilogue).__name__ == epilogue + "Epilogue"
    if sign != "-":
        assert (prepared.epilogue.half is not None) == (sign == "sign")
    if kwargs.get("dead"):
        assert len(np.unique(out[..., : kwargs["dead"]])) > 2


def test_rows_path_not_for_small_outputs():
    """At most ROWS_MIN_VALUES output values of strided windows keep the folded path (fewer numpy calls)."""
    case = _case(h=4, w=4, c=16, kh=3, kw=3, stride=2, padding=SAME)
    check_against_oracle(case)
    assert type(_prepared(case)).__name__ == "DepthwiseConvQuantizedFolded"


def test_rows_path_not_for_a_mixed_epilogue():
    """Channels whose fold is not exact even with a late zero point (biases near 2^30 with multipliers of 2^-25,
    a MixedEpilogue) keep the folded path, exact with its Requantizer."""
    case = _case(h=12, w=12, c=16, kh=3, kw=3, stride=1, padding=SAME, act=NONE, out_zp=0)
    case["bias"][:4] = np.array([2**30 - 7, -(2**30) + 3, 2**30 - 1000, -(2**30) + 99], I32)
    case["f_q"] = quant(np.r_[np.full(4, 2.0**-23), np.full(12, 0.005)], 0, 3)
    out = check_against_oracle(case)
    prepared = _prepared(case)
    assert type(prepared).__name__ == "DepthwiseConvQuantizedFolded"
    assert type(prepared.epilogue).__name__ == "MixedEpilogue"
    assert len(np.unique(out)) > 2


def test_rows_path_not_beyond_float32_sums():
    """A 25x25 uint8 filter far from its zero point: max|x| * sum|w - w_zp| = 255 * 625 * ~127 > 2^24, beyond the
    float32 tap sums' bound: the layer keeps the other paths (exact)."""
    case = _case(28, 28, 40, 25, 25, 1, VALID, dtype=U8, act=NONE, out_zp=128, s_out=1.0)
    case["f"] = np.random.default_rng(4).choice(np.array([0, 255], U8), case["f"].shape)
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 2
    assert type(_prepared(case)) is not depthwise_rows.DepthwiseConvQuantizedRows
