"""The 8-bit CONV_2D's float32 GEMM with the ScaledEpilogue (litert_py/ops/conv/requant_trunc.py, issue 16): the
monotone proof against the exact integer requantization over every accumulator of a range, and layers that
select ConvQuantizedScaled (RowBands or the im2col matrix) against the oracle (BUILTIN_REF, exact): near-dead
channels (right shifts >= 15 with zero point -128), no-activation layers with negative outputs, padding, strides,
dilations, batches, uint8; and first layers of 1-3 channels, whose folded GEMM takes the transposed im2col matrix
(Im2ColT)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from litert_py.ops.conv.requant_trunc import FULL_CONSTANTS_MAX_VALUES, _exact_by_bound, _fold, _proven, scaled_epilogue
from litert_py.quant import quantize_multiplier_array, requantize
from litert_py.schema.builder import quant
from tests.ops.conv._quantized import I8, I32, U8, _prepared, check_against_oracle
from tests.values import int_range

# -- the epilogue against the exact requantization, every accumulator of [-B, B] -----------------------------

#: (output zero point, clamp lo, clamp hi, output type): ReLU-like (lo >= zp), no activation (sign path), uint8.
CLAMPS = [(-128, -128, 127, I8), (-7, -128, 127, I8), (5, -128, 20, I8), (0, 0, 255, U8), (131, 0, 255, U8)]


@pytest.mark.parametrize("wide", [True, False])
@pytest.mark.parametrize("zp, lo, hi, dtype", CLAMPS)
def test_scaled_epilogue_equals_the_integer_requantization(zp, lo, hi, dtype, wide):
    """Multipliers from 2^-24 (near-dead channels: right shifts up to 23) to 3 (left shifts), every accumulator
    in [-B, B] (the ties of SRDHM and RoundingDivideByPOT included): the same outputs as requantize's int64 path
    (itself checked against the oracle in tests/quant). ``wide``: multipliers up to 1/2 only, so |v| < 2^15
    and the truncation goes through int16; else through the float64 clip."""
    real = np.array([2.0**-24 * 1.3, 2.0**-17, 2.0**-15 * 0.77, 1 / 3, 0.0625, 0.5, 1.0, 3.0, 2.0**-9 * 1.5])
    if wide:
        real = np.array([2.0**-24 * 1.3, 2.0**-17, 2.0**-15 * 0.77, 1 / 3, 0.0625, 0.5, 0.25, 0.3, 2.0**-9 * 1.5])
    m, shift = quantize_multiplier_array(real)
    bound = 40_000
    acc = np.broadcast_to(np.arange(-bound, bound + 1)[:, None], (2 * bound + 1, real.size))
    shape = (1, 1, 2 * bound + 1, real.size)
    epilogue = scaled_epilogue(m, shift, zp, lo, hi, np.full(real.size, bound), shape, dtype)
    assert epilogue is not None
    assert (epilogue.epilogue.wide is not None) == wide
    ls, rs = np.maximum(shift, 0), np.maximum(-shift, 0)
    base = epilogue.epilogue.base  # min(zp, lo) (requant_trunc's module docstring); int16 int8 forms: may wrap
    assert base == min(zp, lo) or (wide and dtype == I8 and base == -256 and epilogue.epilogue.add is None)
    by_bound = _exact_by_bound(np.asarray(m, np.int64), ls, rs, np.full(real.size, bound), abs(zp - base))
    assert not by_bound[0] and by_bound[3]  # the first channel needs the monotone proof, the fourth does not
    assert (epilogue.epilogue.half is None) == (lo >= zp) and epilogue.epilogue.base == base
    out = np.empty(shape, dtype)
    epilogue(acc.astype(np.float32).reshape(shape), out)
    want = requantize(acc, m, shift, zp, lo, hi, method="int64")
    assert np.array_equal(out.reshape(acc.shape), want)
    assert len(np.unique(want[:, 3])) > 50  # the outputs move


def test_the_proof_rejects_a_wrong_constant():
    """The monotone proof is a check that can fail: a constant off by 2^-30 of an output unit (ties missed) or by
    one unit is rejected; the exact one is accepted."""
    real = np.array([2.0**-17, 1 / 3, 2.0**-9 * 1.5])
    m, shift = quantize_multiplier_array(real)
    m, shift = np.asarray(m, np.int64), np.asarray(shift, np.int64)
    ls, rs = np.maximum(shift, 0), np.maximum(-shift, 0)
    bound = np.full(3, 30_000)
    folding = _fold(m, ls, rs, -128, -128, 127, np.zeros(3, np.int64), bound, -128)  # ReLU-like, zp = lo = b
    const = np.where(rs > 0, np.ldexp(1.0, -1 - rs), 0.0) + 0.5
    assert np.array_equal(folding.const, const)
    args = (m, shift, -128, -128, 127, bound, folding)
    every = np.ones(3, bool)
    assert _proven(*args, const, every)
    assert not _proven(*args, const - 2.0**-30, every)
    assert not _proven(*args, const + 1.0, every)


# -- layers against the oracle -------------------------------------------------------------------------------


def _case(rng, shape, k, out_c, act, out_zp, stride=1, dilation=1, padding=0, dtype=I8, dead=0.0):
    """A CONV_2D case whose outputs spread over the output range; ``k``, ``stride``: int or (h, w); ``dead``: the
    share of near-dead channels (weight scale 1000x smaller: right shifts of 15-18) whose bias moves their
    outputs by a few units."""
    n, h, w, c = shape
    kh, kw = (k, k) if isinstance(k, int) else k
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    lo, hi = (-128, 127) if dtype == I8 else (0, 255)
    x = rng.integers(lo, hi + 1, shape).astype(dtype)
    f = rng.integers(-127 if dtype == I8 else 0, 128 if dtype == I8 else 256, (out_c, kh, kw, c)).astype(dtype)
    s_w = rng.uniform(0.005, 0.02, out_c) if dtype == I8 else np.array([0.01])
    is_dead = np.zeros(out_c, bool)
    if dead:
        is_dead = np.arange(out_c) % round(1 / dead) == 1
        s_w[is_dead] *= 1e-3
    s_in = 0.05
    terms = kh * kw * c
    s_out = s_in * 0.012 * 73 * np.sqrt(terms)
    bias = rng.integers(-20_000, 20_000, out_c).astype(I32)
    bias[is_dead] = rng.integers(2**18 if act else -(2**20), 2**20, int(is_dead.sum()))  # a few output units
    case = {
        "op": "CONV_2D",
        "x": x,
        "x_q": quant(s_in, 3 if dtype == I8 else 131),
        "f": f,
        "f_type": dtype,
        "f_q": quant(s_w) if dtype == I8 else quant(0.01, 128),
        "bias": bias,
        "b_q": quant(np.float32(s_in) * np.float32(s_w).astype(np.float64)),
        "out_q": quant(s_out, out_zp),
        "options": {
            "padding": padding,
            "stride_h": sh,
            "stride_w": sw,
            "dilation_h_factor": dilation,
            "dilation_w_factor": dilation,
            "fused_activation_function": act,
        },
        "const": (True, True),
    }
    return case, is_dead


#: id -> (input shape, kernel, output channels, activation, output zp, stride, dilation, padding, type, the
#: expected GEMM operand, sign path)
LAYERS = {
    "3x3-relu-dead-same": ((1, 12, 12, 16), 3, 24, 1, -128, 1, 1, 0, I8, "RowBands", False),
    "3x3-none-dead-negative": ((1, 12, 12, 16), 3, 24, 0, -6, 1, 1, 0, I8, "RowBands", True),
    "3x3-relu6-stride2-batch2": ((2, 13, 11, 16), 3, 16, 3, -128, 2, 1, 0, I8, "RowBands", False),
    "3x3-none-dilation2-valid": ((1, 14, 14, 16), 3, 16, 0, 9, 1, 2, 1, I8, "RowBands", True),
    "5x5-relu-stride3": ((1, 17, 16, 8), 5, 16, 1, -128, 3, 1, 0, I8, "RowBands", False),
    "1x1-k128-relu-dead": ((1, 6, 6, 128), 1, 64, 1, -128, 1, 1, 0, I8, "Im2Col", False),
    "1x1-k128-none-dead": ((1, 5, 7, 128), 1, 32, 0, 4, 1, 1, 0, I8, "Im2Col", True),
    "2x2-k64-stride2": ((1, 12, 12, 16), 2, 16, 1, -128, 2, 1, 1, I8, "RowBands", False),
    "3x3-uint8-relu": ((1, 12, 12, 16), 3, 16, 1, 0, 1, 1, 0, U8, "RowBands", False),
    "3x3-uint8-none": ((1, 12, 12, 16), 3, 16, 0, 120, 1, 1, 0, U8, "RowBands", True),
    # first layers of 1-3 channels with K >= STEM_SCALED_MIN_K_PER_OUTPUT * O: the transposed im2col matrix
    "stem-rgb-3x3-stride2-relu6-dead": ((1, 24, 24, 3), 3, 8, 3, -128, 2, 1, 0, I8, "Im2ColT", False),
    "stem-rgb-3x3-none-dead": ((1, 15, 17, 3), 3, 8, 0, -3, 2, 1, 1, I8, "Im2ColT", True),
    "stem-1ch-10x8-stride2-uint8": ((1, 49, 40, 1), (10, 8), 8, 1, 0, 2, 1, 0, U8, "Im2ColT", False),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_scaled_layers_against_the_oracle(name):
    shape, k, out_c, act, zp, stride, dilation, padding, dtype, operand, sign = LAYERS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    dead = 0.0 if dtype == U8 else 0.2
    case, is_dead = _case(rng, shape, k, out_c, act, zp, stride, dilation, padding, dtype, dead)
    out = check_against_oracle(case)
    prepared = _prepared(case)
    assert type(prepared).__name__ == "ConvQuantizedScaled"
    assert type(prepared.im2col).__name__ == operand
    assert (prepared.epilogue.epilogue.half is not None) == sign
    assert len(np.unique(out)) > (8 if act == 3 else 20)  # RELU6 clamps at 6 / s_out
    if is_dead.any():  # the near-dead channels' outputs are not all at the zero point
        assert (out[..., is_dead] != zp).any()
        m, shift = quantize_multiplier_array(
            np.float64(0.05) * np.asarray(case["f_q"].scale, np.float64)[is_dead] / np.float64(case["out_q"].scale[0])
        )
        assert (np.asarray(shift) <= -15).all()
    if sign:  # negative outputs below the zero point
        assert (out < zp).any()


#: (input shape, kernel (h, w), stride, dilation, padding, activation, output zp, prepared class): first layers of
#: 1-3 channels, which take the transposed im2col matrix (Im2ColT): in the folded float64 GEMM, or in the float32
#: GEMM with the ScaledEpilogue where K >= STEM_SCALED_MIN_K_PER_OUTPUT * O (8 outputs here: K >= 24).
FIRST_LAYERS = [
    ((1, 20, 20, 1), (3, 3), 2, 1, 0, 1, -128, "ConvQuantizedFolded"),  # image classifier stem, SAME, K = 9
    ((2, 49, 10, 1), (10, 4), 2, 1, 0, 1, -128, "ConvQuantizedScaled"),  # DS-CNN stem, two batches, K = 40
    ((1, 17, 15, 3), (3, 3), 1, 2, 1, 0, 5, "ConvQuantizedScaled"),  # RGB, dilation 2, VALID, no activation
    ((1, 12, 12, 2), (5, 3), (2, 1), 1, 0, 3, -128, "ConvQuantizedScaled"),  # strides 2x1, RELU6
    ((1, 40, 40, 3), (3, 3), 2, 1, 0, 3, -128, "ConvQuantizedScaled"),  # VWW MobileNet stem, SAME, RELU6
    ((1, 49, 40, 1), (10, 8), 2, 1, 0, 1, -128, "ConvQuantizedScaled"),  # micro_speech stem, K = 80
]


@pytest.mark.parametrize("shape, kernel, stride, dilation, padding, act, zp, expected", FIRST_LAYERS)
def test_first_layers_transposed_im2col(shape, kernel, stride, dilation, padding, act, zp, expected):
    rng = np.random.default_rng(sum(shape) + sum(kernel))
    case, _ = _case(rng, shape, kernel, 8, act, zp, stride, dilation, padding)
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 8
    prepared = _prepared(case)
    assert type(prepared).__name__ == expected
    assert type(prepared.im2col).__name__ == "Im2ColT"


@pytest.mark.parametrize("real, wide", [(0.004, True), (0.6, False)])
def test_truncating_epilogue_int16_and_float64_clips(real, wide):
    """requant_trunc.TruncEpilogue truncates through int16 when |v| < 2^15 is proven at prepare (from the static
    bound max|x| * sum|w| * multiplier), else clips in float64 (a multiplier of about 0.6: a bound near 2^16):
    exact both ways, the saturated outputs included."""
    rng = np.random.default_rng(21)
    x = rng.integers(-128 if wide else -12, 128 if wide else 12, (1, 70, 66, 2)).astype(I8)
    s_w = np.array([0.25, 0.125, 0.2, 0.3])
    case = {
        "op": "CONV_2D",
        "x": x,
        "x_q": quant(0.5, -3),
        "f": rng.integers(-127, 128, (4, 2, 2, 2)).astype(I8),
        "f_type": I8,
        "f_q": quant(s_w),
        "bias": rng.integers(-300, 300, 4).astype(I32),
        "b_q": quant(np.float32(0.5) * np.float32(s_w).astype(np.float64)),
        "out_q": quant(0.5 * 0.25 / real, -128),
        "options": {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": 1},
        "const": (True, True),
    }
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 20 and (out == 127).any() and (out == -128).any()
    prepared = _prepared(case)
    assert type(prepared.epilogue).__name__ == "PlainTruncEpilogue"  # ReLU-like: requant_trunc.TruncEpilogue's
    assert (prepared.epilogue.wide is not None) == wide


@pytest.mark.parametrize("c, act, zp", [(8, 3, -128), (8, 0, 7), (16, 1, -128), (4, 1, -20)])
def test_pointwise_rows_layouts(c, act, zp):
    """1x1 layers over the input's rows (ConvQuantizedFoldedRows), two batches: up to 8 input channels [A, 1] is
    kept transposed (the input copied over channel planes), from 16 on row-major; exact against the oracle."""
    case, _ = _case(np.random.default_rng(c + act), (2, 9, 7, c), 1, 24, act, zp, padding=1)
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 8
    prepared = _prepared(case)
    assert type(prepared).__name__ == "ConvQuantizedFoldedRows"
    assert prepared.a.flags.f_contiguous == (c <= 8) and prepared.a.shape == (2 * 9 * 7, c + 1)


#: (input shape, kernel, output channels, activation, output zp, expected op, expected epilogue): outputs of more
#: than FULL_CONSTANTS_MAX_VALUES values, whose epilogues broadcast one (OW*O,) row of per-channel constants.
LARGE = [
    ((1, 66, 66, 128), 1, 16, 1, -128, "ConvQuantizedScaled", "ScaledEpilogue"),  # 1x1: K >= POINTWISE_SCALED_MIN_K
    ((1, 66, 66, 128), 1, 16, 0, 6, "ConvQuantizedScaled", "ScaledEpilogue"),
    ((1, 130, 129, 2), 2, 4, 0, -9, "ConvQuantizedFolded", "TruncEpilogue"),
    ((1, 130, 129, 2), 2, 4, 3, -128, "ConvQuantizedFolded", "TruncEpilogue"),  # (not Plain: row constants)
]


@pytest.mark.parametrize("shape, k, out_c, act, zp, op, epilogue", LARGE)
def test_large_outputs_row_constants(shape, k, out_c, act, zp, op, epilogue):
    case, _ = _case(np.random.default_rng(k + act), shape, k, out_c, act, zp, padding=1)
    out = check_against_oracle(case)
    assert out.size > FULL_CONSTANTS_MAX_VALUES and len(np.unique(out)) > 8
    prepared = _prepared(case)
    assert type(prepared).__name__ == op and type(prepared.epilogue).__name__ == epilogue
    row = ((shape[2] - k + 1) * out_c,)  # one row over the output width
    trunc = prepared.epilogue
    if epilogue == "ScaledEpilogue":
        assert prepared.epilogue.scale.shape == row
        trunc = prepared.epilogue.epilogue  # its requant_trunc.TruncEpilogue
    assert (trunc.half is None) == (act != 0)  # no activation (zp > lo): the sign path
    if trunc.half is not None:
        assert trunc.half.shape == row


@settings(max_examples=30)
@given(st.integers(0, 2**32 - 1))
def test_random_layers_against_the_oracle(seed):
    """Random int8 / uint8 layers of up to 30x30 inputs and 64 channels (sizes, strides, dilations, padding, every
    activation, zero points at the ends of the range, near-dead channels, scales from tiny to saturating, biases
    up to 2^20): every path the selection takes (ScaledEpilogue, RowBands, Im2ColT, the truncating and the
    older epilogues) against the oracle."""
    rng = np.random.default_rng(seed)
    dtype = U8 if rng.random() < 0.25 else I8
    shape = (int(rng.integers(1, 3)), int(rng.integers(4, 31)), int(rng.integers(4, 31)))
    shape += (int(rng.choice([1, 2, 3, 4, 8, 16, 32, 64, 80])),)
    k = (int(rng.choice([1, 1, 2, 3, 5])), int(rng.choice([1, 1, 2, 3, 4])))
    stride, dilation = (int(rng.choice([1, 1, 2, 3])), int(rng.choice([1, 1, 2]))), int(rng.choice([1, 1, 1, 2]))
    padding = int(rng.integers(0, 2))
    assume(padding == 0 or min(shape[1], shape[2]) > (max(k) - 1) * dilation)
    lo, hi = int_range(dtype)
    zp = int(rng.choice([lo, lo, int(rng.integers(lo, hi + 1)), (lo + hi) // 2]))
    act = int(rng.choice([0, 1, 2, 3]))
    case, _ = _case(rng, shape, k, int(rng.choice([4, 8, 16, 24, 48, 64])), act, zp, stride, dilation, padding, dtype,
                    dead=0.0 if dtype == U8 else float(rng.choice([0.0, 0.15])))  # fmt: skip
    case["out_q"] = quant(case["out_q"].scale[0] * 10 ** rng.uniform(-1.5, 1.0), zp)
    case["bias"] = (case["bias"] // int(rng.choice([1, 16, 256]))).astype(I32)
    check_against_oracle(case)
