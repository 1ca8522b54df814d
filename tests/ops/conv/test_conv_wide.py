"""Few-row 8-bit CONV_2D layers with large weights (late 1x1 layers, squeeze-excite gates, classifier convs): they
take ConvQuantizedScaled's float32 GEMM (conv2d_quantized.WIDE_MAX_ROWS / WIDE_MIN_WEIGHTS / WIDE_MIN_K) where its
2^24 bound holds per output channel (max|x| * sum|w - w_zp| + |offset|), against the oracle (BUILTIN_REF, exact),
and a channel just inside and just outside that bound."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops.conv.conv2d_quantized import WIDE_MAX_ROWS, WIDE_MIN_K, WIDE_MIN_WEIGHTS
from litert_py.schema.builder import quant
from tests.ops.conv._quantized import I8, I32, _prepared, check_against_oracle


def _case(x, f, bias, act=0, out_zp=-5, s_in=0.05, s_w=None, s_out=None):
    """A 1x1 CONV_2D (per-channel int8 weights, input zero point 0) whose outputs spread over the int8 range."""
    out_c, k = f.shape[0], f.shape[-1]
    s_w = np.linspace(0.004, 0.02, out_c) if s_w is None else s_w
    return {
        "op": "CONV_2D",
        "x": x,
        "x_q": quant(s_in, 0),
        "f": f,
        "f_type": I8,
        "f_q": quant(s_w),
        "bias": bias.astype(I32),
        "b_q": quant(np.float32(s_in) * np.float32(s_w).astype(np.float64)),
        "out_q": quant(s_out or s_in * 0.012 * 73 * np.sqrt(k), out_zp),
        "options": {"padding": 0, "stride_h": 1, "stride_w": 1, "fused_activation_function": act},
        "const": (True, True),
    }


#: (input shape, output channels, activation, output zp): 1, 4, 9 and 16 output pixels, (K + 1) * O >= 32K weights.
LAYERS = {
    "se-expand-1px-48-to-1152": ((1, 1, 1, 48), 1152, 0, -5),
    "se-reduce-1px-1152-to-48": ((1, 1, 1, 1152), 48, 1, -128),
    "late-2x2-320-to-1280-relu6": ((1, 2, 2, 320), 1280, 3, -128),
    "late-3x3-112-to-576": ((1, 3, 3, 112), 576, 0, 7),
    "late-4x4-112-to-672-batch": ((2, 2, 4, 112), 672, 1, -128),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_few_rows_large_weights_take_the_float32_gemm(name):
    shape, out_c, act, zp = LAYERS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    k = shape[-1]
    rows = int(np.prod(shape[:-1]))
    assert rows <= WIDE_MAX_ROWS and (k + 1) * out_c >= WIDE_MIN_WEIGHTS
    x = rng.integers(-128, 128, shape).astype(I8)
    f = rng.integers(-127, 128, (out_c, 1, 1, k)).astype(I8)
    case = _case(x, f, rng.integers(-20_000, 20_000, out_c), act, zp)
    out = check_against_oracle(case)
    prepared = _prepared(case)
    assert type(prepared).__name__ == "ConvQuantizedScaled"
    assert prepared.weights.dtype == np.float32
    assert len(np.unique(out)) > (8 if act == 3 else 20)


def test_small_output_whose_fold_fails_takes_the_float32_gemm():
    """One pixel, K = 1200 -> 8 outputs (fewer weights than WIDE_MIN_WEIGHTS): the folded bound fails
    (M * max|x| * sum|w| > 2^53 units), so before the unfolded ConvQuantized the float32 GEMM is tried (K >=
    WIDE_MIN_K) and holds."""
    rng = np.random.default_rng(5)
    k, out_c = 1200, 8
    assert k >= WIDE_MIN_K and (k + 1) * out_c < WIDE_MIN_WEIGHTS
    x = rng.integers(-128, 128, (3, 1, 1, k)).astype(I8)
    f = rng.integers(-127, 128, (out_c, 1, 1, k)).astype(I8)
    case = _case(x, f, rng.integers(-20_000, 20_000, out_c), 0, 3)
    out = check_against_oracle(case)
    assert type(_prepared(case)).__name__ == "ConvQuantizedScaled"
    assert len(np.unique(out)) > 10


#: Channel 0's weight scale in the bound test: with an input scale of 1/2 and an output scale of 2^14 its
#: requantization maps the accumulator -(2^24 + 3) to 0 and -(2^24 + 4) (its float32 rounding) to -1.
EDGE_SCALE = float(np.float32(2.0**-10 * (1 - 2.0**-22)))


@pytest.mark.parametrize("excess", [0, 3])
def test_the_float32_bound_just_inside_and_just_outside(excess):
    """Channel 0: 1024 weights of +127 and a bias of -(2^24 - 128 * 127 * 1024) - excess, an input pixel of -128:
    its accumulator is -(2^24 + excess), its bound max|x| * sum|w| + |bias| the same. At 2^24 (exact in float32)
    the layer takes the float32 GEMM; at 2^24 + 3 (float32 rounds it to 2^24 + 4, which requantizes to another
    output: EDGE_SCALE) it does not, and stays exact."""
    rng = np.random.default_rng(11 + excess)
    k, out_c = 1024, 32  # (K + 1) * O >= WIDE_MIN_WEIGHTS
    x = rng.integers(-128, 128, (1, 2, 2, k)).astype(I8)
    x[0, 0, 0] = -128
    f = rng.integers(-127, 128, (out_c, 1, 1, k)).astype(I8)
    f[0] = 127
    bias = rng.integers(-20_000, 20_000, out_c)
    bias[0] = -((1 << 24) - 128 * 127 * k) - excess
    s_w = np.concatenate([[EDGE_SCALE], np.linspace(4.0, 16.0, out_c - 1)])
    case = _case(x, f, bias, 0, 0, s_in=0.5, s_w=s_w, s_out=2.0**14)
    out = check_against_oracle(case)
    prepared = _prepared(case)
    assert (type(prepared).__name__ == "ConvQuantizedScaled") == (excess == 0)
    assert out[0, 0, 0, 0] == 0  # -1 from the float32 sum -(2^24 + 4)
    assert len(np.unique(out[..., 1:])) > 20
