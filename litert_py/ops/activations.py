"""Activations: RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LOGISTIC, TANH, SOFTMAX, PRELU, LEAKY_RELU, HARD_SWISH,
ELU, GELU.

ELU / GELU (sections at the end of this module; LOG_SOFTMAX is in log_softmax.py):
- ELU float32: ``x < 0 ? expm1(x) : x``; int8: LUTPopulate of ``x < 0 ? expm1f(x) : x`` (activations.cc
  EluPrepare). LiteRT's BUILTIN_REF resolver does not register ELU (tests use BUILTIN_WITHOUT_DEFAULT_DELEGATES).
- GELU (gelu.cc, reference/gelu.h): float32 ``0.5 * x * erfc(-x / sqrt 2)`` or, ``approximate``, ``0.5 * x * (1 +
  tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``; int8 / uint8: LUTPopulate (256 entries) of the float32 transforms
  (glibc ``erfcf`` / ``tanhf``); int16: the 513-entry interpolated LUTPopulate<int16_t> (float32), tabulated over
  every input.

Float paths (ai-edge-litert 2.3.0, BUILTIN_REF):
- float32: every op. float16: LOGISTIC, TANH, SOFTMAX, computed in float32 and rounded to half once; SOFTMAX
  also rounds exp to half before dividing by the float32 sum, as LiteRT's half kernel does.
- RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 clamp; NaN passes through and -0.0 stays -0.0, as the C++
  comparisons leave them.
- LOGISTIC (reference/logistic.h): 1 above 16.619047 and ``exp(x)`` below -9 (not 1 / (1 + exp(-x)), which
  differs by up to 1.2e-4 relative there), ``1 / (1 + exp(-x))`` between, all in float32.
- TANH: ``std::tanh`` in float32.
- SOFTMAX (reference/softmax.h) over the last axis: ``exp((x - max) * beta) / sum`` in float32; beta is the
  option as given (0 when the options table is absent: a uniform output). Rank 0 is rejected.
- PRELU: ``x >= 0 ? x : x * alpha`` with alpha broadcast against x (the output must keep x's shape);
  alpha float32, constant or not. Broadcasting above rank 8 is rejected (LiteRT aborts).
- LEAKY_RELU: ``x > 0 ? x : x * alpha`` (so -0.0 * alpha for -0.0, and alpha may exceed 1 or be negative).
- HARD_SWISH: ``x * min(6, max(0, x + 3)) / 6`` in that order of float operations.

Quantized paths (bit-exact with BUILTIN_REF; docs/quantized-arithmetic.md sections 2, 3, 5.5, 5.7-5.10):
- Every op whose output depends on the input value alone runs as ONE table lookup (``ActivationLut``, indexed by
  the input bytes read as uint8 / uint16), the table built at prepare:
  - LOGISTIC / TANH uint8, int8: LiteRT's own 256-entry LUT (``LUTPopulate``, float32, glibc ``expf`` /
    ``tanhf`` through ctypes), with the tensors' qparams. LOGISTIC requires ``s_out == 1/256`` (TANH checks
    nothing).
  - LOGISTIC / TANH int16 (zero points 0, ``s_out ~ 2^-15``; LOGISTIC exactly 2^-15): reference/integer_ops
    int16 kernels (the interpolated ``sigmoid_table_uint16``), evaluated over all 65,536 inputs. An input scale
    of 2^-12 (TANH also 2^-11; ``CheckedLog2``, |frac| < 1e-3) selects the "POT" multiplier ``3 << shift``;
    otherwise ``M = int(s_in * 4096 * 3 * 2^k)``. (The default, optimized kernel uses gemmlowp in POT mode and
    differs by several LSB: docs section 8.1.)
  - RELU, RELU6 (uint8, int8, int16 with zero points 0), RELU_N1_TO_1, RELU_0_TO_1 (uint8, int8): ``QuantizedReluX``
    -> ``clamp(zo + MBQM(x - zi, QM(f32(s_in / s_out))), lo, hi)`` with ``lo/hi = zo + roundf(f32(bound / s_out))``.
  - LEAKY_RELU (uint8, int8, int16 with zero points 0): multipliers ``QM(f32(s_in * alpha / s_out))`` and
    ``QM(f32(s_in / s_out))``; a negative alpha multiplier ``M`` is applied as ``-MBQM(v, -M)``.
  - HARD_SWISH (uint8, int8): reference/hard_swish.h, 16-bit fixed point (f32 multipliers, downscaled to 16
    bits), including gemmlowp's int16 RoundingDivideByPOT quirk for exponents >= 16 (tiny scale ratios).
- SOFTMAX uint8 -> uint8 / int16, int8 -> int8 / int16 (``SoftmaxQuantized``): the reference gemmlowp fixed-point
  kernel (``PreprocessSoftmaxScaling`` in double, Q5.26 differences, ``exp_on_negative_values``,
  ``GetReciprocal``), the exp of each of the 256 possible differences tabulated at prepare. The output always
  starts at the type minimum (int8 requires zo = -128 and s_out ~ 1/256; LiteRT aborts when
  ``beta * s_in * 2^26 <= 1``, refused here at prepare). int16 -> int16 (``SoftmaxInt16``): the two 513-entry LUTs
  built in double, ``QM(f32(s_in * beta) / (10 / 65535))``.
- PRELU uint8 / int8 (``PreluQuantized``: a 65,536-entry table over (alpha, x) pairs), int16 input with int8
  alpha (``PreluInt16``): ``x >= zi ? MBQM(x - zi, QM(f32(s_in/s_out))) : MBQM((x - zi)(a - za),
  QM(f32(s_in * s_a / s_out)))``. LiteRT does not check alpha's type and reinterprets its bytes; other alpha
  types are refused here.

Sources matched: tflite/kernels/activations.cc; tflite/kernels/internal/reference/{logistic,tanh,softmax,
hard_swish,leaky_relu,prelu}.h; reference/integer_ops/{logistic,tanh}.h; tflite/kernels/internal/common.h
(LUTPopulate, LUTLookup, GetReciprocal, sigmoid_table_uint16); quantization_util.cc (PreprocessSoftmaxScaling,
CalculateInputRadius, CheckedLog2); gemmlowp fixedpoint/fixedpoint.h; reference/reference_ops.h (ReluX, Relu1,
Relu6); optimized_ops.h (Relu, LeakyRelu float, used by the reference resolver too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..libm import libm_float
from ..quant import (
    downscale_int32_to_int16_multiplier,
    dtype_range,
    lut_int8,
    lut_int16,
    lut_lookup_int16,
    multiply_by_quantized_multiplier,
    round_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    trunc_to_int32,
    wrap32,
)
from ..quant.gemmlowp import (
    checked_log2,
    rdbpot16,
    sat_shl16,
    sdhm16,
    srdhm16,
    wrap16,
)
from ..schema.dtypes import TensorType, type_name
from ..schema.model import BuiltinOperator
from .common import (
    Noop,
    Reduction,
    all_values,
    broadcast_shape,
    check_equal,
    check_same_type,
    clip_ufunc,
    qparams,
    quantized_multiplier,
)
from .registry import OpContext, PreparedOp, TensorInfo, register
from .softmax import SoftmaxFloat, prepare_softmax_quantized

INPUT, ALPHA, OUTPUT = 0, 1, 0

#: LiteRT's broadcast loop handles at most this rank (reference/broadcast_loop.h)
MAX_BROADCAST_RANK = 8

_F32, _F16 = TensorType.FLOAT32, TensorType.FLOAT16
_U8, _I8, _I16 = TensorType.UINT8, TensorType.INT8, TensorType.INT16
_OP = BuiltinOperator

#: float types each op computes in floating point
FLOAT_TYPES: dict[int, frozenset] = {
    _OP.RELU: frozenset({_F32}),
    _OP.RELU6: frozenset({_F32}),
    _OP.RELU_N1_TO_1: frozenset({_F32}),
    _OP.RELU_0_TO_1: frozenset({_F32}),
    _OP.LOGISTIC: frozenset({_F32, _F16}),
    _OP.TANH: frozenset({_F32, _F16}),
    _OP.SOFTMAX: frozenset({_F32, _F16}),
    _OP.PRELU: frozenset({_F32}),
    _OP.LEAKY_RELU: frozenset({_F32}),
    _OP.HARD_SWISH: frozenset({_F32}),
}

#: integer types each op accepts as quantized tensors (LiteRT 2.3.0)
QUANTIZED_TYPES: dict[int, frozenset] = {
    _OP.RELU: frozenset({_U8, _I8, _I16}),
    _OP.RELU6: frozenset({_U8, _I8, _I16}),
    _OP.RELU_N1_TO_1: frozenset({_U8, _I8}),
    _OP.RELU_0_TO_1: frozenset({_U8, _I8}),
    _OP.LOGISTIC: frozenset({_U8, _I8, _I16}),
    _OP.TANH: frozenset({_U8, _I8, _I16}),
    _OP.SOFTMAX: frozenset({_U8, _I8, _I16}),
    _OP.PRELU: frozenset({_U8, _I8, _I16}),
    _OP.LEAKY_RELU: frozenset({_U8, _I8, _I16}),
    _OP.HARD_SWISH: frozenset({_U8, _I8}),
}

#: reference/logistic.h cutoffs: above, the result is 1; below, exp(x)
LOGISTIC_UPPER = np.float32(16.619047164916992188)
LOGISTIC_LOWER = np.float32(-9.0)

_ONE = np.float32(1)


# -- prepared ops ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ReluFloat:
    """RELU [0, inf), RELU6 [0, 6], RELU_N1_TO_1 [-1, 1]: a clamp that keeps NaN and -0.0."""

    lo: np.float32
    hi: np.float32

    def __call__(self, inputs, outputs):
        clip_ufunc(inputs[INPUT], self.lo, self.hi, out=outputs[OUTPUT])


@dataclass(frozen=True, eq=False)
class TanhFloat:
    """std::tanh in float32 (float16 tensors: computed in float32, rounded back once)."""

    def __call__(self, inputs, outputs):
        np.tanh(inputs[INPUT], out=outputs[OUTPUT], dtype=np.float32)


@dataclass(frozen=True, eq=False)
class LogisticFloat:
    """reference/logistic.h in float32 (float16 tensors: computed in float32, rounded back once)."""

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        t = out if out.dtype == np.float32 else np.empty(out.shape, np.float32)
        np.maximum(x, LOGISTIC_LOWER, out=t, dtype=np.float32)  # keeps exp(-x) finite; x < -9 is redone below
        np.negative(t, out=t)
        np.exp(t, out=t)
        t += _ONE
        np.divide(_ONE, t, out=t)
        low = x < LOGISTIC_LOWER
        if low.any():
            np.exp(x, out=t, where=low, dtype=np.float32)
        np.copyto(t, _ONE, where=x > LOGISTIC_UPPER)
        if t is not out:
            np.copyto(out, t, casting="same_kind")


@dataclass(frozen=True, eq=False)
class PreluFloat:
    """``x >= 0 ? x : x * alpha``, alpha (inputs[1]) broadcast to x's shape.

    ``pick`` avoids the masked copy (ten times slower than a ufunc) when the constant alpha allows:
    with every alpha in (-inf, 1] but 0 the result is max(x * alpha, x), with every alpha > 1 it is
    min(x * alpha, x); ties (x = +-0.0) keep the second operand, x, as ``x >= 0`` does. None: the masked
    select, exact for any alpha (0, NaN, mixed, or not constant).
    """

    pick: np.ufunc | None = None

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.multiply(x, inputs[ALPHA], out=out)
        if self.pick is None:
            np.copyto(out, x, where=x >= 0)
        else:
            self.pick(out, x, out=out)


@dataclass(frozen=True, eq=False)
class LeakyReluFloat:
    """``x > 0 ? x : x * alpha``. ``pick``: max(x, x * alpha) for alpha <= 1, min(x, x * alpha) for alpha > 1
    (ties, x = +-0.0, keep the second operand, x * alpha, as ``x > 0`` does); None (alpha 0 or NaN, where
    0 * inf is NaN but the result must be inf): the masked select."""

    alpha: np.float32
    pick: np.ufunc | None = None

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.multiply(x, self.alpha, out=out)
        if self.pick is None:
            np.copyto(out, x, where=x > 0)
        else:
            self.pick(x, out, out=out)


def _pick_for(alpha) -> np.ufunc | None:
    """The ufunc that selects between x and x * alpha by the sign of x for every alpha, or None. Needs finite
    nonzero alphas (0 * inf and inf * 0 are NaN where the reference returns x)."""
    alpha = np.asarray(alpha)
    if not alpha.size or not np.all(np.isfinite(alpha) & (alpha != 0)):
        return None
    if np.all(alpha <= 1):
        return np.maximum
    if np.all(alpha > 1):
        return np.minimum
    return None


@dataclass(frozen=True, eq=False)
class PreluFloatSigned:
    """PRELU float with constant alphas mixing values <= 1 and > 1, all finite and nonzero: with s = -1 where
    alpha > 1 and +1 elsewhere, ``out = s * max(s*alpha * x, s * x)``, bit-identical to ``x >= 0 ? x : x *
    alpha`` (incl. +-0, +-inf, NaN and denormal x): for s = +1 it is PreluFloat's max(x * alpha, x), for s = -1
    min(x * alpha, x) with both operands negated (exact) and the result negated back; numpy's maximum keeps
    its second operand on ties, s * x, so +-0 inputs come back as x. 4 ufunc passes instead of a masked copy
    (843 -> ~200 us on a 96x96x32 layer)."""

    sign: np.ndarray  # float32 +-1, alpha's shape
    signed_alpha: np.ndarray  # float32 s * alpha (exact)
    scratch: np.ndarray  # float32, the input's shape

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.multiply(x, self.signed_alpha, out=out)
        np.multiply(x, self.sign, out=self.scratch)
        np.maximum(out, self.scratch, out=out)
        np.multiply(out, self.sign, out=out)


@dataclass(frozen=True, eq=False)
class HardSwishFloat:
    """``x * min(6, max(0, x + 3)) / 6`` with the reference kernel's order of float operations."""

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.add(x, np.float32(3), out=out)
        clip_ufunc(out, np.float32(0), np.float32(6), out=out)
        out *= x
        out /= np.float32(6)


# -- quantized arithmetic -------------------------------------------------------------------------
# gemmlowp fixed point (fixedpoint/fixedpoint.h) on int64 arrays holding int32 raw values; every add that
# the C++ does in int32 is wrapped. Used once per op at prepare to fill tables, and per row by SOFTMAX.
srdhm = saturating_rounding_doubling_high_mul
rdbpot = rounding_divide_by_pot


# the C library's float32 functions (what LiteRT's kernels call), used at prepare only; see litert_py/libm.py
_expf = libm_float("expf")
_expm1f = libm_float("expm1f")
_tanhf = libm_float("tanhf")


def _sigmoid_f32(v: np.ndarray) -> np.ndarray:
    """SigmoidPrepare's LUT transform ``1.0f / (1.0f + std::exp(-value))`` in float32."""
    return _ONE / (_ONE + _expf(-v))


def _index_type(dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


# -- quantized prepared ops ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ActivationLut:
    """A quantized activation whose output is a function of the input value alone: one table lookup.

    ``table`` holds the output for every input value, indexed by the input's bytes read as unsigned
    (``index``: uint8 or uint16), so int8 / int16 inputs need no offset. The table is LiteRT's own LUT where
    the kernel has one (8-bit LOGISTIC / TANH) and otherwise the kernel's fixed-point arithmetic evaluated at
    prepare over every input value (RELU family, LEAKY_RELU, HARD_SWISH, int16 LOGISTIC / TANH).
    """

    table: np.ndarray
    index: np.dtype

    def __call__(self, inputs, outputs):
        np.take(self.table, inputs[INPUT].view(self.index), out=outputs[OUTPUT], mode="clip")


@dataclass(frozen=True, eq=False)
class PreluQuantized:
    """reference/prelu.h, uint8 / int8: ``table[alpha_byte << 8 | x_byte]`` holds the result for every pair
    (65,536 entries built at prepare), so the op is one index computation and one lookup. ``alpha_index`` is the
    constant alpha's ``byte << 8`` (None: computed from the alpha input at each call)."""

    table: np.ndarray
    alpha_index: np.ndarray | None

    def __call__(self, inputs, outputs):
        a = self.alpha_index
        if a is None:
            a = np.left_shift(inputs[ALPHA].view(np.uint8), 8, dtype=np.uint16)
        idx = np.add(a, inputs[INPUT].view(np.uint8), dtype=np.uint16)
        np.take(self.table, idx, out=outputs[OUTPUT], mode="clip")


@dataclass(frozen=True, eq=False)
class PreluInt16:
    """reference/prelu.h with int16 input and int8 alpha: ``x >= zi ? MBQM(x - zi, M1, e1) :
    MBQM((x - zi) * (alpha - za), M2, e2)``, plus the output zero point, clamped to int16."""

    input_zero_point: int
    alpha_zero_point: int
    output_zero_point: int
    identity: tuple[int, int]
    alpha: tuple[int, int]

    def __call__(self, inputs, outputs):
        v = inputs[INPUT].astype(np.int64)
        v -= self.input_zero_point
        neg = multiply_by_quantized_multiplier(
            v * (inputs[ALPHA].astype(np.int64) - self.alpha_zero_point), *self.alpha
        )
        r = np.where(v >= 0, multiply_by_quantized_multiplier(v, *self.identity), neg)
        r += self.output_zero_point
        np.clip(r, -32768, 32767, out=outputs[OUTPUT], casting="unsafe")


# -- quantized prepare ---------------------------------------------------------------------------------
def _table(values: np.ndarray, dtype) -> ActivationLut:
    """An ActivationLut from int64 results (in _all_values order), cast to the output type (wrapping, as
    ``static_cast<T>`` does)."""
    return ActivationLut(np.ascontiguousarray(values.astype(dtype)), _index_type(dtype))


#: QuantizedReluX bounds of the standalone RELU ops (activations.cc): (act_min, act_max) in real units
RELU_BOUNDS = {
    _OP.RELU: (0.0, np.inf),
    _OP.RELU6: (0.0, 6.0),
    _OP.RELU_N1_TO_1: (-1.0, 1.0),
    _OP.RELU_0_TO_1: (0.0, 1.0),
}


def _relu_bound(value: float, scale: np.float32, zero_point: int) -> int:
    """``zero_point + static_cast<int32>(roundf(value / scale))`` (float32 division; x86 cast overflow)."""
    with np.errstate(all="ignore"):
        r = round_away(np.float32(value) / scale)
    return int(wrap32(zero_point + int(trunc_to_int32(r))))


def _prepare_relu_quantized(ctx: OpContext, x: TensorInfo, y: TensorInfo):
    """ReluPrepare + QuantizedReluX (activations.cc) with optimized_ops::ReluX (the kernel both resolvers run):
    ``min(hi, max(lo, zo + MBQM(x - zi, M, e)))``, ``(M, e) = QuantizeMultiplier(f32(s_in / s_out))``."""
    check_same_type(ctx, x, y)
    s_in, zi = qparams(ctx, x)
    s_out, zo = qparams(ctx, y)
    if x.type == _I16:
        check_equal(ctx, zi, 0, "input->params.zero_point")
        check_equal(ctx, zo, 0, "output->params.zero_point")
    with np.errstate(all="ignore"):
        m, shift = quantized_multiplier(ctx, np.float32(s_in / s_out), "input / output scale")
    tmin, tmax = dtype_range(x.dtype)
    act_min, act_max = RELU_BOUNDS[ctx.builtin_code]
    lo = max(tmin, _relu_bound(act_min, s_out, zo))
    hi = tmax if act_max == np.inf else min(tmax, _relu_bound(act_max, s_out, zo))
    v = all_values(x.dtype)
    r = wrap32(zo + multiply_by_quantized_multiplier(wrap32(v - zi), m, shift))
    return _table(np.minimum(np.maximum(r, lo), hi), x.dtype)


def _prepare_leaky_relu_quantized(ctx: OpContext, x: TensorInfo, y: TensorInfo):
    """LeakyReluPrepare + reference/leaky_relu.h: ``x >= zi`` uses ``QM(f32(s_in / s_out))``, ``x < zi`` uses
    ``QM(f32(s_in * alpha / s_out))``; a negative alpha multiplier is applied as ``-MBQM(v, -M)``."""
    check_same_type(ctx, x, y)
    s_in, zi = qparams(ctx, x)
    s_out, zo = qparams(ctx, y)
    with np.errstate(all="ignore"):
        ma, ea = quantized_multiplier(ctx, s_in * np.float32(ctx.options.alpha) / s_out, "alpha")
        mi, ei = quantized_multiplier(ctx, s_in / s_out, "identity")
    if x.type == _I16:
        check_equal(ctx, zi, 0, "input->params.zero_point")
        check_equal(ctx, zo, 0, "output->params.zero_point")
    v = wrap32(all_values(x.dtype) - zi)
    neg = multiply_by_quantized_multiplier(v, int(wrap32(-ma)) if ma < 0 else ma, ea)
    if ma < 0:
        neg = wrap32(-neg)
    r = wrap32(zo + np.where(v >= 0, multiply_by_quantized_multiplier(v, mi, ei), neg))
    return _table(np.clip(r, *dtype_range(x.dtype)), x.dtype)


def _prepare_hard_swish_quantized(ctx: OpContext, x: TensorInfo, y: TensorInfo):
    """HardSwishPrepare (float32 multipliers, 16-bit fixed point) + reference/hard_swish.h, evaluated over the 256
    input values."""
    check_same_type(ctx, x, y)
    s_in, zi = qparams(ctx, x)
    s_out, zo = qparams(ctx, y)
    f32 = np.float32
    with np.errstate(all="ignore"):
        hires = f32(f32(1.0 / 128.0) * s_in)
        m_out, e_out = quantized_multiplier(ctx, f32(hires / s_out), "output")
        m_relu, e_relu = quantized_multiplier(ctx, f32(hires / f32(3.0 / 32768.0)), "reluish")
    ctx.check(e_out <= 0, "params->output_multiplier_exponent <= 0 was not true.")
    m_out16 = int(downscale_int32_to_int16_multiplier(m_out))
    m_relu16 = int(downscale_int32_to_int16_multiplier(m_relu))

    hires_v = wrap16(wrap16(all_values(x.dtype) - zi) * 128)
    preshift_out = srdhm16(hires_v, m_out16)
    r = hires_v
    if e_relu > 0:
        r = sat_shl16(r, e_relu - 1)
    r = srdhm16(r, m_relu16)
    if e_relu > 0:
        r = sat_shl16(r, 1)
    elif e_relu < 0:
        r = rdbpot16(r, -e_relu)
    r = (r + (1 << 15)) >> 1  # [-1, 1] -> [0, 1]
    out = wrap16(rdbpot16(sdhm16(r, preshift_out), -e_out) + zo)  # int16 += zero point: wraps
    return _table(np.clip(out, *dtype_range(x.dtype)), x.dtype)


#: gemmlowp-free int16 LOGISTIC / TANH: sigmoid(i / 24) in Q0.16 (common.h sigmoid_table_uint16)
SIGMOID_TABLE_UINT16 = np.array(
    [
        32768,
        33451,
        34133,
        34813,
        35493,
        36169,
        36843,
        37513,
        38180,
        38841,
        39498,
        40149,
        40794,
        41432,
        42064,
        42688,
        43304,
        43912,
        44511,
        45102,
        45683,
        46255,
        46817,
        47369,
        47911,
        48443,
        48964,
        49475,
        49975,
        50464,
        50942,
        51409,
        51865,
        52311,
        52745,
        53169,
        53581,
        53983,
        54374,
        54755,
        55125,
        55485,
        55834,
        56174,
        56503,
        56823,
        57133,
        57433,
        57724,
        58007,
        58280,
        58544,
        58800,
        59048,
        59288,
        59519,
        59743,
        59959,
        60168,
        60370,
        60565,
        60753,
        60935,
        61110,
        61279,
        61441,
        61599,
        61750,
        61896,
        62036,
        62172,
        62302,
        62428,
        62549,
        62666,
        62778,
        62886,
        62990,
        63090,
        63186,
        63279,
        63368,
        63454,
        63536,
        63615,
        63691,
        63765,
        63835,
        63903,
        63968,
        64030,
        64090,
        64148,
        64204,
        64257,
        64308,
        64357,
        64405,
        64450,
        64494,
        64536,
        64576,
        64614,
        64652,
        64687,
        64721,
        64754,
        64786,
        64816,
        64845,
        64873,
        64900,
        64926,
        64950,
        64974,
        64997,
        65019,
        65039,
        65060,
        65079,
        65097,
        65115,
        65132,
        65149,
        65164,
        65179,
        65194,
        65208,
        65221,
        65234,
        65246,
        65258,
        65269,
        65280,
        65291,
        65301,
        65310,
        65319,
        65328,
        65337,
        65345,
        65352,
        65360,
        65367,
        65374,
        65381,
        65387,
        65393,
        65399,
        65404,
        65410,
        65415,
        65420,
        65425,
        65429,
        65433,
        65438,
        65442,
        65445,
        65449,
        65453,
        65456,
        65459,
        65462,
        65465,
        65468,
        65471,
        65474,
        65476,
        65479,
        65481,
        65483,
        65485,
        65488,
        65489,
        65491,
        65493,
        65495,
        65497,
        65498,
        65500,
        65501,
        65503,
        65504,
        65505,
        65507,
        65508,
        65509,
        65510,
        65511,
        65512,
        65513,
        65514,
        65515,
        65516,
        65517,
        65517,
        65518,
        65519,
        65520,
        65520,
        65521,
        65522,
        65522,
        65523,
        65523,
        65524,
        65524,
        65525,
        65525,
        65526,
        65526,
        65526,
        65527,
        65527,
        65528,
        65528,
        65528,
        65529,
        65529,
        65529,
        65529,
        65530,
        65530,
        65530,
        65530,
        65531,
        65531,
        65531,
        65531,
        65531,
        65532,
        65532,
        65532,
        65532,
        65532,
        65532,
        65533,
        65533,
        65533,
        65533,
        65533,
        65533,
        65533,
        65533,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65535,
    ],
    np.int64,
)


def _logistic_tanh_int16(x_values: np.ndarray, multiplier: int, left_shift: int, tanh: bool) -> np.ndarray:
    """reference/integer_ops/{logistic,tanh}.h int16: rescale to 1/(3*4096) (or 3/4096 per LSB in POT mode),
    then the interpolated sigmoid table (tanh(x) = 2 sigmoid(2x) - 1). int32 arithmetic, wrapping."""
    if multiplier == 0:  # power-of-two input scale
        multiplier, left_shift = int(wrap32(3 << left_shift)), 0
    rnd = 1 << (left_shift - 1) if left_shift > 0 else 0
    v = wrap32(wrap32(x_values * multiplier) + rnd) >> left_shift
    a = np.abs(v)  # abs(INT32_MIN) as uint32 is 2^31, as here
    frac_bits = 8 if tanh else 9
    uh = a >> frac_bits
    sat = uh >= 255
    u = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE_UINT16[u], SIGMOID_TABLE_UINT16[u + 1]
    r = np.where(
        sat, (0xFFFF << 8) if tanh else (0x7FFF << 10), (ua << frac_bits) + (a & ((1 << frac_bits) - 1)) * (ub - ua)
    )
    if tanh:
        r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
        return r >> 8
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return r >> 10


def _prepare_logistic_tanh_quantized(ctx: OpContext, x: TensorInfo, y: TensorInfo):
    """SigmoidPrepare / TanhPrepare (kReference): 8-bit LUTs of ``1/(1+expf(-v))`` / ``tanhf(v)`` with the actual
    qparams (LOGISTIC requires s_out == 1/256); int16 requires zero points 0 and s_out ~ 2^-15 and uses the
    interpolated sigmoid table, in POT mode when s_in is 2^-12 (TANH also 2^-11)."""
    check_same_type(ctx, x, y)
    s_in, zi = qparams(ctx, x)
    s_out, zo = qparams(ctx, y)
    tanh = ctx.builtin_code == _OP.TANH
    if x.type in (_U8, _I8):
        if not tanh:
            ctx.check(float(s_out) == 1.0 / 256, "output->params.scale == 1. / 256 was not true.")
        fn = _tanhf if tanh else _sigmoid_f32
        lut = lut_int8(fn, s_in, zi, s_out, zo, x.dtype)
        return ActivationLut(lut, _index_type(x.dtype))
    if not tanh:
        ctx.check(float(s_out) == 1.0 / 32768, "output->params.scale == 1. / 32768 was not true.")
        check_equal(ctx, zo, 0, "output->params.zero_point")
    check_equal(ctx, zi, 0, "input->params.zero_point")
    check_equal(ctx, zo, 0, "output->params.zero_point")
    pot, log2_in = checked_log2(s_in)
    left_shift = (15 - 3) + log2_in
    pot = pot and (left_shift in ((0, 1) if tanh else (0,)))
    multiplier = 0
    if not pot:  # rescale the input to 1/(3 * 4096) per LSB: +-2^17 then represents +-10.7
        m = float(s_in) * 4096.0 * 3.0
        left_shift = 0
        while m <= 32767.0 / 2.0 and left_shift <= 30:
            left_shift += 1
            m *= 2.0
        multiplier = int(trunc_to_int32(m))
    ok, log2_out = checked_log2(s_out)
    ctx.check(ok, "CheckedLog2(output->params.scale, &output_scale_log2_rounded) was not true.")
    check_equal(ctx, log2_out, -15, "output_scale_log2_rounded")
    out = _logistic_tanh_int16(all_values(np.int16), multiplier, left_shift, tanh)
    return _table(out, np.int16)


def _prepare_prelu_quantized(ctx: OpContext, x: TensorInfo, alpha: TensorInfo, y: TensorInfo):
    """PreluPrepare (float32 multipliers ``s_in/s_out`` and ``s_in*s_a/s_out``) + reference/prelu.h."""
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    want = _I8 if x.type == _I16 else x.type
    # LiteRT reads alpha as int8 (int16 input) or as the input's type without checking its type: any other alpha
    # type would be reinterpreted bytes, so it is refused here.
    ctx.check(alpha.type == want, f"alpha must be {type_name(want)} for {x.type_name} input, got {alpha.type_name}")
    s_in, zi = qparams(ctx, x)
    s_a, za = qparams(ctx, alpha)
    s_out, zo = qparams(ctx, y)
    with np.errstate(all="ignore"):
        identity = quantized_multiplier(ctx, s_in / s_out, "identity")
        alpha_m = quantized_multiplier(ctx, s_in * s_a / s_out, "alpha")
    if x.type == _I16:
        return PreluInt16(zi, za, zo, identity, alpha_m)
    v = wrap32(all_values(x.dtype) - zi)[None, :]
    av = wrap32(all_values(alpha.dtype) - za)[:, None]
    neg = multiply_by_quantized_multiplier(wrap32(v * av), *alpha_m)
    r = wrap32(np.where(v >= 0, multiply_by_quantized_multiplier(v, *identity), neg) + zo)
    table = np.clip(r, *dtype_range(x.dtype)).astype(x.dtype).reshape(-1)
    alpha_index = None
    if alpha.is_constant:
        alpha_index = np.left_shift(np.asarray(alpha.data).view(np.uint8), 8, dtype=np.uint16)
    return PreluQuantized(table, alpha_index)


_PREPARE_QUANTIZED = {
    _OP.RELU: _prepare_relu_quantized,
    _OP.RELU6: _prepare_relu_quantized,
    _OP.RELU_N1_TO_1: _prepare_relu_quantized,
    _OP.RELU_0_TO_1: _prepare_relu_quantized,
    _OP.LEAKY_RELU: _prepare_leaky_relu_quantized,
    _OP.HARD_SWISH: _prepare_hard_swish_quantized,
    _OP.LOGISTIC: _prepare_logistic_tanh_quantized,
    _OP.TANH: _prepare_logistic_tanh_quantized,
    _OP.SOFTMAX: prepare_softmax_quantized,
}


# -- prepare --------------------------------------------------------------------------------------
def _unsupported(ctx: OpContext, x: TensorInfo):
    """LiteRT's words: "Only float32, uint8, int8 and int16 are supported currently, got INT32." """
    names = sorted(type_name(t).lower() for t in FLOAT_TYPES[ctx.builtin_code] | QUANTIZED_TYPES[ctx.builtin_code])
    return ctx.fail(f"Only {', '.join(names[:-1])} and {names[-1]} are supported currently, got {x.type_name}.")


def _prepare(ctx: OpContext, make_float: Callable[[OpContext, TensorInfo], object]):
    """Checks shared by the one-input activations; the float path is ``make_float(ctx, x)``."""
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    if ctx.builtin_code == _OP.SOFTMAX:
        ctx.check(len(x.shape) >= 1, "NumDimensions(input) >= 1 was not true.")
    ctx.set_output_shape(OUTPUT, x.shape)
    if x.type in QUANTIZED_TYPES[ctx.builtin_code]:
        prepared = _PREPARE_QUANTIZED[ctx.builtin_code](ctx, x, y)
        return Noop() if x.size == 0 else prepared
    if x.type not in FLOAT_TYPES[ctx.builtin_code]:
        raise _unsupported(ctx, x)
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    if x.size == 0:
        return Noop()
    return make_float(ctx, x)


def _relu(lo: float, hi: float):
    return lambda ctx, x: ReluFloat(np.float32(lo), np.float32(hi))


_MAKE_FLOAT: dict[int, Callable[[OpContext, TensorInfo], object]] = {
    _OP.RELU: _relu(0, np.inf),
    _OP.RELU6: _relu(0, 6),
    _OP.RELU_N1_TO_1: _relu(-1, 1),
    _OP.RELU_0_TO_1: _relu(0, 1),
    _OP.TANH: lambda ctx, x: TanhFloat(),
    _OP.LOGISTIC: lambda ctx, x: LogisticFloat(),
    _OP.SOFTMAX: lambda ctx, x: SoftmaxFloat(
        np.float32(ctx.options.beta), Reduction.of(x.shape, (len(x.shape) - 1,)), half=x.type == _F16
    ),
    _OP.LEAKY_RELU: lambda ctx, x: LeakyReluFloat(
        np.float32(ctx.options.alpha), _pick_for(np.float32(ctx.options.alpha))
    ),
    _OP.HARD_SWISH: lambda ctx, x: HardSwishFloat(),
}


@register(BuiltinOperator.RELU)
@register(BuiltinOperator.RELU6)
@register(BuiltinOperator.RELU_N1_TO_1)
@register(BuiltinOperator.RELU_0_TO_1)
@register(BuiltinOperator.TANH)
@register(BuiltinOperator.LOGISTIC)
@register(BuiltinOperator.SOFTMAX)
@register(BuiltinOperator.LEAKY_RELU)
@register(BuiltinOperator.HARD_SWISH)
def prepare_activation(ctx: OpContext) -> PreparedOp:
    x = ctx.input(INPUT)
    if ctx.builtin_code == _OP.SOFTMAX and x is not None and x.type == TensorType.FLOAT32:
        ctx.check(
            not x.shape or x.shape[-1] > 0 or 0 in x.shape[:-1],
            f"SOFTMAX float32 over an empty last dimension {list(x.shape)} (LiteRT reads outside the input: "
            "it segfaults or returns garbage)",
        )
    return _prepare(ctx, _MAKE_FLOAT[ctx.builtin_code])


@register(BuiltinOperator.PRELU)
def prepare_prelu(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, alpha, y = ctx.input(INPUT), ctx.input(ALPHA), ctx.outputs[OUTPUT]
    shape = broadcast_shape(ctx, x.shape, alpha.shape)
    ctx.check(
        shape == x.shape,
        f"alpha of shape {list(alpha.shape)} would broadcast the input "
        f"{list(x.shape)} to {list(shape)}: HaveSameShapes(input, output) was not true.",
    )
    ctx.check(
        x.shape == alpha.shape or len(shape) <= MAX_BROADCAST_RANK,
        f"broadcasting is supported up to rank {MAX_BROADCAST_RANK}, got rank {len(shape)}",
    )
    ctx.set_output_shape(OUTPUT, shape)
    if x.type in QUANTIZED_TYPES[_OP.PRELU]:
        prepared = _prepare_prelu_quantized(ctx, x, alpha, y)
        return Noop() if x.size == 0 else prepared
    if x.type not in FLOAT_TYPES[_OP.PRELU]:
        raise _unsupported(ctx, x)
    ctx.check(alpha.type == x.type, f"alpha must be {x.type_name} like the input, got {alpha.type_name}")
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    if alpha.is_constant:
        pick = _pick_for(alpha.data)
        a = np.asarray(alpha.data, np.float32)
        if pick is None and a.size and np.all(np.isfinite(a) & (a != 0)):
            sign = np.where(a > 1, np.float32(-1), np.float32(1)).astype(np.float32)
            return PreluFloatSigned(sign, sign * a, np.empty(shape, np.float32))
        return PreluFloat(pick)
    return PreluFloat(None)


# -- ELU, GELU ------------------------------------------------------------------------------------
_SQRT1_2 = np.float32(0.70710678118654752440)
_SQRT_2_OVER_PI = np.float32(1.12837916709551257390 * 0.70710678118654752440)
_GELU_C = np.float32(0.044715)
_HALF = np.float32(0.5)
_ERFC_COEFFS = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
)


def _erfc_f64(x: np.ndarray) -> np.ndarray:
    """erfc in float64 with a relative error below 1.2e-7 everywhere (Chebyshev fit, Numerical Recipes
    ``erfcc``): NumPy has no erfc; enough for the float32 GELU path (rounded to float32 afterwards)."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.zeros_like(t)
    for c in _ERFC_COEFFS[:-1]:
        poly = (poly + c) * t
    ans = t * np.exp(poly - z * z + _ERFC_COEFFS[-1])
    return np.where(x >= 0, ans, 2.0 - ans)


_erfcf = libm_float("erfcf", _erfc_f64)


def _gelu_exact_f32(v: np.ndarray) -> np.ndarray:
    """reference/gelu.h GeluTransform: ``0.5f * x * erfcf(x * -f32(M_SQRT1_2))`` (glibc erfcf at prepare)."""
    return _HALF * v * _erfcf(v * -_SQRT1_2)


def _gelu_tanh_f32(v: np.ndarray) -> np.ndarray:
    """reference/gelu.h GeluTransformApproximate: ``0.5f*x*(1 + tanhf(sqrt(2/pi) * (x + 0.044715f*x*x*x)))``."""
    return _HALF * v * (_ONE + _tanhf(_SQRT_2_OVER_PI * (v + _GELU_C * v * v * v)))


def _elu_f32(v: np.ndarray) -> np.ndarray:
    """EluPrepare's int8 LUT transform ``value < 0 ? std::expm1(value) : value`` in float32 (expm1f, not
    expf - 1: they differ by an ulp near 0, enough to move an entry)."""
    return np.where(v < 0, _expm1f(v), v)


@dataclass(frozen=True, eq=False)
class EluFloat:
    """``x < 0 ? expm1(x) : x`` in float32 (reference_ops / optimized_ops Elu)."""

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.expm1(x, out=out)
        np.copyto(out, x, where=~(x < 0))


@dataclass(frozen=True, eq=False)
class GeluFloat:
    """reference/gelu.h Gelu float32: ``0.5 * x * erfc(-x / sqrt 2)`` (erfc in float64, see ``_erfc_f64``) or,
    approximate, ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`` in float32."""

    approximate: bool

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        if self.approximate:
            np.multiply(x, x, out=out)
            out *= x
            out *= _GELU_C
            out += x
            out *= _SQRT_2_OVER_PI
            np.tanh(out, out=out)
            out += _ONE
            out *= _HALF  # (0.5 * x) * (1 + t): halving first is exact and keeps x * 2 from overflowing
            out *= x
        else:  # (0.5f * x) * erfc(-x / sqrt 2)
            np.multiply(x, _HALF, out=out)
            out *= _erfc_f64(x.astype(np.float64) * -0.70710678118654752440).astype(np.float32)


def _lut_activation(ctx: OpContext, x: TensorInfo, y: TensorInfo, fn) -> ActivationLut:
    """LUTPopulate over the tensors' qparams: 256-entry table (8-bit) or the 513-entry interpolated int16 LUT
    evaluated over every int16 input."""
    s_in, zi = qparams(ctx, x)
    s_out, zo = qparams(ctx, y)
    if x.type == _I16:
        lut = lut_int16(fn, s_in, zi, s_out, zo)
        return _table(lut_lookup_int16(all_values(np.int16), lut).astype(np.int64), np.int16)
    return ActivationLut(lut_int8(fn, s_in, zi, s_out, zo, dtype=x.dtype), _index_type(x.dtype))


@register(BuiltinOperator.ELU)
def prepare_elu(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(x.type in (_F32, _I8), f"Only float32 and int8 is supported currently, got {x.type_name}.")
    check_same_type(ctx, x, y)
    ctx.set_output_shape(OUTPUT, x.shape)
    prepared = EluFloat() if x.type == _F32 else _lut_activation(ctx, x, y, _elu_f32)
    return Noop() if x.size == 0 else prepared


@register(BuiltinOperator.GELU)
def prepare_gelu(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(
        x.type in (_F32, _I8, _U8, _I16), f"Only float32, int8, int16 and uint8 supported currently, got {x.type_name}."
    )
    check_same_type(ctx, x, y)
    ctx.set_output_shape(OUTPUT, x.shape)
    approximate = bool(ctx.options.approximate) if ctx.options else False
    if x.type == _F32:
        prepared = GeluFloat(approximate)
    else:
        prepared = _lut_activation(ctx, x, y, _gelu_tanh_f32 if approximate else _gelu_exact_f32)
    return Noop() if x.size == 0 else prepared
