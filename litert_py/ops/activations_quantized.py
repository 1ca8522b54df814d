"""Quantized paths of the activations in activations.py (RELU family, LOGISTIC, TANH, LEAKY_RELU, HARD_SWISH,
PRELU; SOFTMAX's quantized kernels are in softmax.py) and the LUT helper ELU / GELU share (elu_gelu.py).

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


Sources matched: tflite/kernels/activations.cc; tflite/kernels/internal/reference/{logistic,tanh,hard_swish,
leaky_relu,prelu}.h; reference/integer_ops/{logistic,tanh}.h; tflite/kernels/internal/common.h (LUTPopulate,
LUTLookup, sigmoid_table_uint16); quantization_util.cc (CalculateInputRadius, CheckedLog2); gemmlowp
fixedpoint/fixedpoint.h; reference/reference_ops.h (ReluX, Relu1, Relu6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..libm import libm_float
from ..quant import (
    LUT_PAIRS_MIN_VALUES,
    downscale_int32_to_int16_multiplier,
    dtype_range,
    lut_int8,
    lut_int16,
    lut_lookup_int16,
    lut_pairs,
    multiply_by_quantized_multiplier,
    round_away,
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
from .bound_plan import BoundCalls
from .common import (
    all_values,
    check_equal,
    check_same_type,
    qparams,
    quantized_multiplier,
)
from .quantize import TableLookupScalar
from .registry import OpContext, TensorInfo
from .softmax import prepare_softmax_quantized

INPUT, ALPHA, OUTPUT = 0, 1, 0

_U8, _I8, _I16 = TensorType.UINT8, TensorType.INT8, TensorType.INT16
_OP = BuiltinOperator
_ONE = np.float32(1)


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
class ActivationLut(BoundCalls):
    """A quantized activation whose output is a function of the input value alone: one table lookup.

    ``table`` holds the output for every input value, indexed by the input's bytes read as unsigned
    (``index``: uint8 or uint16), so int8 / int16 inputs need no offset. The table is LiteRT's own LUT where
    the kernel has one (8-bit LOGISTIC / TANH) and otherwise the kernel's fixed-point arithmetic evaluated at
    prepare over every input value (RELU family, LEAKY_RELU, HARD_SWISH, int16 LOGISTIC / TANH).
    """

    table: np.ndarray
    index: np.dtype

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The lookup's numpy call on these arrays."""
        return ((np.take, (self.table, x.view(self.index)), {"out": out, "mode": "clip"}),)


PAIRS_MIN_VALUES = LUT_PAIRS_MIN_VALUES  # ActivationLutPairs from this many input values on (quant/lut.py)


@dataclass(frozen=True, eq=False)
class ActivationLutPairs(ActivationLut):
    """An 8-bit ActivationLut over two input bytes per gather: ``pairs`` (quant.lut_pairs of ``table``) maps each
    uint16 of the input's bytes to the uint16 of the two output bytes, half as many indices as the byte gather
    (np.take widens every index to intp).

    Exactness bound: none needed, every output byte is ``table``'s own entry for its input byte (checked at
    prepare: ``of`` builds ``pairs`` from ``table`` and takes this path only for 8-bit tables and a static
    input of an even number of values). An input or output that is not C-contiguous, or a resized odd-sized
    one, takes ActivationLut's byte gather."""

    pairs: np.ndarray | None = None  # (65536,) uint16

    @staticmethod
    def of(prepared, x: TensorInfo):
        """``prepared`` as ActivationLutPairs when it is an 8-bit ActivationLut over a static input of an even
        number of values, at least PAIRS_MIN_VALUES; else ``prepared``."""
        if type(prepared) is not ActivationLut or prepared.index != np.dtype(np.uint8):
            return prepared
        if x.dynamic or x.size < PAIRS_MIN_VALUES or x.size % 2:
            return prepared
        return ActivationLutPairs(prepared.table, prepared.index, lut_pairs(prepared.table))

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The pair gather on these arrays (quant.lut_lookup_pairs's; ActivationLut's byte gather where that
        declines)."""
        if x.size % 2 or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return super().bound_calls(x, out)
        pairs = x.reshape(-1).view(np.uint16), out.reshape(-1).view(np.uint16)
        return ((np.take, (self.pairs, pairs[0]), {"out": pairs[1], "mode": "wrap"}),)


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
# fmt: off
SIGMOID_TABLE_UINT16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
    42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
    49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
    55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
    59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
    62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
    64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
    65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
    65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
    65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
    65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
], np.int64)
# fmt: on


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
    # a zero scale makes LiteRT's LUT divide by zero or multiply by it (NaN converted to int: undefined behaviour)
    ctx.check(
        s_in > 0 and s_out > 0,
        f"{ctx.op_name} needs a quantized input and output with a positive scale, got {s_in} and {s_out}",
    )
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


def prepare_prelu_quantized(ctx: OpContext, x: TensorInfo, alpha: TensorInfo, y: TensorInfo):
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


def _one_value(prepare):
    """``prepare``, whose ActivationLut becomes quantize.py's TableLookupScalar for a one-value input (a streaming
    classifier's LOGISTIC score): the same table entry, picked on the Python side by the value's unsigned bit
    pattern (the ActivationLut's uint8 / uint16 index) and stored with ``fill``, without np.take's fixed cost
    (about 0.3 us instead of 1.4 us); an 8-bit one over many values becomes ActivationLutPairs."""

    def prepare_one_value(ctx: OpContext, x: TensorInfo, y: TensorInfo):
        prepared = prepare(ctx, x, y)
        if type(prepared) is ActivationLut and x.size == 1 and not x.dynamic:
            return TableLookupScalar(prepared.table, int(np.iinfo(prepared.index).max))
        return ActivationLutPairs.of(prepared, x)

    return prepare_one_value


PREPARE_QUANTIZED = {
    _OP.RELU: _one_value(_prepare_relu_quantized),
    _OP.RELU6: _one_value(_prepare_relu_quantized),
    _OP.RELU_N1_TO_1: _one_value(_prepare_relu_quantized),
    _OP.RELU_0_TO_1: _one_value(_prepare_relu_quantized),
    _OP.LEAKY_RELU: _one_value(_prepare_leaky_relu_quantized),
    _OP.HARD_SWISH: _one_value(_prepare_hard_swish_quantized),
    _OP.LOGISTIC: _one_value(_prepare_logistic_tanh_quantized),
    _OP.TANH: _one_value(_prepare_logistic_tanh_quantized),
    _OP.SOFTMAX: prepare_softmax_quantized,
}


def lut_activation(ctx: OpContext, x: TensorInfo, y: TensorInfo, fn) -> ActivationLut:
    """LUTPopulate over the tensors' qparams: 256-entry table (8-bit) or the 513-entry interpolated int16 LUT
    evaluated over every int16 input."""
    s_in, zi = qparams(ctx, x)
    s_out, zo = qparams(ctx, y)
    if x.type == _I16:
        lut = lut_int16(fn, s_in, zi, s_out, zo)
        return _table(lut_lookup_int16(all_values(np.int16), lut).astype(np.int64), np.int16)
    return ActivationLutPairs.of(
        ActivationLut(lut_int8(fn, s_in, zi, s_out, zo, dtype=x.dtype), _index_type(x.dtype)), x
    )
