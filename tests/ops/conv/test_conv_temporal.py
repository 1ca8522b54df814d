"""Small 8-bit CONV_2D layers of a keyword spotter's 1-D temporal stack (TC-ResNet: (1, 1, W, C) tensors, (1, KW)
filters) against the oracle (BUILTIN_REF, exact): the float32 GEMM with the ScaledEpilogue from
conv2d_quantized.SCALED_MIN_MACS multiply-adds on (a layer just inside and one just outside that threshold), and
requant.FoldedEpilogue's floor in place plus assignment up to requant.FLOOR_ASSIGN_MAX_VALUES outputs (the
casting floor above), ReLU-like and on the sign path, and requant_trunc's one-call forms up to
requant_trunc.ONE_PASS_MAX_VALUES outputs (against the exact integer requantization and the oracle)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops.bound_plan import bound_plan
from litert_py.ops.conv.conv2d_quantized import FOLD_MAX_IM2COL_VALUES, FOLD_MAX_K_PER_OUTPUT, SCALED_MIN_MACS
from litert_py.ops.conv.requant import FLOOR_ASSIGN_MAX_VALUES, FoldedEpilogue
from litert_py.ops.conv.requant_trunc import ONE_PASS_MAX_VALUES, scaled_epilogue
from litert_py.quant import quantize_multiplier_array, requantize
from litert_py.schema.builder import quant
from tests.ops.conv._quantized import I8, I32, U8, _prepared, check_against_oracle


def _case(rng, width: int, c: int, kw: int, out_c: int, act: int, out_zp: int, stride: int = 1) -> dict:
    """A (1, 1, width, c) -> out_c CONV_2D with a (1, kw) filter, SAME padding (per-channel int8 weights), whose
    outputs spread over the int8 range."""
    s_w = rng.uniform(0.005, 0.02, out_c)
    s_in = 0.05
    return {
        "op": "CONV_2D",
        "x": rng.integers(-128, 128, (1, 1, width, c)).astype(I8),
        "x_q": quant(s_in, 3),
        "f": rng.integers(-127, 128, (out_c, 1, kw, c)).astype(I8),
        "f_type": I8,
        "f_q": quant(s_w),
        "bias": rng.integers(-20_000, 20_000, out_c).astype(I32),
        "b_q": quant(np.float32(s_in) * np.float32(s_w).astype(np.float64)),
        "out_q": quant(s_in * 0.012 * 73 * np.sqrt(kw * c), out_zp),
        "options": {"padding": 0, "stride_h": 1, "stride_w": stride, "fused_activation_function": act},
        "const": (True, True),
    }


#: id -> (width, channels, KW, output channels, activation, output zp, stride, expected class); rows * K * O of
#: the first two: 8 * 256 * 32 = SCALED_MIN_MACS (just inside) and 8 * 256 * 31 (just outside).
TEMPORAL = {
    "macs-at-threshold-none": (8, 32, 8, 32, 0, -6, 1, "ConvQuantizedScaled"),
    "macs-below-threshold-none": (8, 32, 8, 31, 0, -6, 1, "ConvQuantizedFolded"),
    "tc-resnet-7x48-k432-none": (7, 48, 9, 48, 0, 4, 1, "ConvQuantizedScaled"),
    "tc-resnet-25-to-13-stride2-relu": (25, 24, 9, 32, 1, -128, 2, "ConvQuantizedScaled"),
}


@pytest.mark.parametrize("name", list(TEMPORAL))
def test_temporal_layers_gemm_choice_against_the_oracle(name):
    width, c, kw, out_c, act, zp, stride, expected = TEMPORAL[name]
    case = _case(np.random.default_rng(sum(map(ord, name))), width, c, kw, out_c, act, zp, stride)
    rows, k = -(-width // stride), kw * c
    assert k >= FOLD_MAX_K_PER_OUTPUT * out_c and rows * k < FOLD_MAX_IM2COL_VALUES  # only the MACs rule decides
    assert (rows * k * out_c >= SCALED_MIN_MACS) == (expected == "ConvQuantizedScaled")
    out = check_against_oracle(case)
    assert type(_prepared(case)).__name__ == expected
    assert len(np.unique(out)) > 20
    if act == 0:
        assert (out < zp).any()  # the sign path's negative outputs


#: (width, activation, output zp): 16 output channels, K = 3 * 10 = 30 (< SCALED_MIN_K: the folded GEMM), output
#: values width * 16: 784 (TC-ResNet's first layer), 2048 (= FLOOR_ASSIGN_MAX_VALUES) and 2064 (just above).
FLOORS = [(49, 0, -6), (49, 1, -128), (128, 0, 5), (129, 0, 5), (129, 1, -128)]


@pytest.mark.parametrize("width, act, zp", FLOORS)
def test_folded_epilogue_floor_assign_and_casting_floor(width, act, zp):
    case = _case(np.random.default_rng(width + act), width, 10, 3, 16, act, zp)
    out = check_against_oracle(case)
    prepared = _prepared(case)
    inner = getattr(prepared, "op", prepared)  # an op storing into a reshape keeps its own
    assert type(inner.epilogue) is FoldedEpilogue
    assert (inner.epilogue.half is None) == (act == 1)
    plan = [getattr(c.func, "__name__", "") for c in prepared._bound[-1]]
    if width * 16 <= FLOOR_ASSIGN_MAX_VALUES:
        assert plan[-2:] == ["floor", "setitem"]
    else:
        assert plan[-1] == "floor" and prepared._bound[-1][-1].keywords == {"casting": "unsafe"}
    assert len(np.unique(out)) > 20
    if act == 0:
        assert (out < zp).any()


#: (zero point, lo, hi, type): ReLU-like and the sign path (no activation), int8 and uint8.
CLAMPS = [(-128, -128, 127, I8), (-7, -128, 127, I8), (0, 0, 255, U8), (131, 0, 255, U8)]


@pytest.mark.parametrize("zp, lo, hi, dtype", CLAMPS)
def test_one_pass_scaled_epilogue_equals_the_integer_requantization(zp, lo, hi, dtype):
    """requant_trunc.ScaledEpilogue over ONE_PASS_MAX_VALUES outputs (its one mixed-type product, the sign path's
    np.copysign), run on every accumulator of [-B, B] in chunks of its size (the ties of SRDHM and
    RoundingDivideByPOT included): the same outputs as requantize's int64 path (checked against the oracle in
    tests/quant)."""
    real = np.array([2.0**-17, 2.0**-15 * 0.77, 1 / 3, 0.0625, 0.5, 0.3, 2.0**-9 * 1.5, 0.01])
    m, shift = quantize_multiplier_array(real)
    bound, width = 12_000, ONE_PASS_MAX_VALUES // real.size
    shape = (1, 1, width, real.size)
    epilogue = scaled_epilogue(m, shift, zp, lo, hi, np.full(real.size, bound), shape, dtype)
    assert epilogue is not None and (epilogue.epilogue.half is None) == (lo >= zp)
    acc = np.arange(-bound, bound + 1)
    acc = np.concatenate([acc, np.full(-acc.size % width, bound)])  # whole chunks
    out, chunk, planned = np.empty(shape, dtype), np.empty(shape, np.float32), np.empty(shape, dtype)
    plan = bound_plan(epilogue.calls(chunk, planned))  # a bound plan's calls (as the conv's) on these buffers
    got, got_plan = [], []
    for start in range(0, acc.size, width):
        chunk[...] = acc[start : start + width, None]
        epilogue(chunk, out)
        got.append(out.reshape(width, real.size).copy())
        for call in plan:
            call()
        got_plan.append(planned.reshape(width, real.size).copy())
    want = requantize(np.broadcast_to(acc[:, None], (acc.size, real.size)), m, shift, zp, lo, hi, method="int64")
    assert np.array_equal(np.concatenate(got), want)
    assert np.array_equal(np.concatenate(got_plan), want)
    assert len(np.unique(want[:, 2])) > 50  # the outputs move


#: (width, output zp): 16 -> 32 channels (K = 9 * 16 = 144), no activation: width * 32 values, 1024 (=
#: ONE_PASS_MAX_VALUES: one mixed-type product, np.copysign) and 1056 (just above: the copy, the bit passes).
@pytest.mark.parametrize("width, zp", [(32, -6), (33, 7)])
def test_scaled_layers_one_pass_and_two_passes(width, zp):
    case = _case(np.random.default_rng(width), width, 16, 9, 32, 0, zp)
    out = check_against_oracle(case)
    prepared = _prepared(case)
    inner = getattr(prepared, "op", prepared)
    assert type(inner).__name__ == "ConvQuantizedScaled" and inner.epilogue.epilogue.half is not None
    plan = [getattr(c.func, "__name__", "") for c in prepared._bound[-1]]
    gemm = plan.index("matmul")
    if width * 32 <= ONE_PASS_MAX_VALUES:
        assert plan[gemm + 1 : gemm + 4] == ["multiply", "copysign", "add"]
    else:
        assert plan[gemm + 1 : gemm + 5] == ["copyto", "multiply", "bitwise_and", "bitwise_or"]
    assert len(np.unique(out)) > 20 and (out < zp).any()


def test_one_pass_product_runs_in_float64():
    """ScaledEpilogue's one mixed-type product (float32 accumulators times the float64 scale) must run in float64:
    over every accumulator of [-2^20, 2^20] with small scales, a float32 product gives other outputs on a few
    (e.g. -329037, found by the tiny8 review), the float64 one the integer requantization's."""
    rng = np.random.default_rng(1)
    real = rng.uniform(2e-5, 2e-3, 8)
    m, shift = quantize_multiplier_array(real)
    bound, width = 1 << 20, ONE_PASS_MAX_VALUES // real.size
    shape = (1, 1, width, real.size)
    epilogue = scaled_epilogue(m, shift, -7, -128, 127, np.full(real.size, bound), shape, np.int8)
    assert epilogue is not None and epilogue.v.size <= ONE_PASS_MAX_VALUES
    acc = np.arange(-bound, bound + 1)
    acc = np.concatenate([acc, np.full(-acc.size % width, bound)])
    out, chunk = np.empty(shape, np.int8), np.empty(shape, np.float32)
    got = np.empty((acc.size, real.size), np.int8)
    for start in range(0, acc.size, width):
        chunk[...] = acc[start : start + width, None]
        epilogue(chunk, out)
        got[start : start + width] = out.reshape(width, real.size)
    want = requantize(np.broadcast_to(acc[:, None], (acc.size, real.size)), m, shift, -7, -128, 127, method="int64")
    np.testing.assert_array_equal(got, want)
