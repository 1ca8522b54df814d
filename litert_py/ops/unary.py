"""Unary math: LOG, SQRT, RSQRT, EXP, ABS, NEG, SQUARE, SIN, COS, FLOOR, CEIL, ROUND, SIGN, LOGICAL_NOT,
ZEROS_LIKE, and the complex parts REAL, IMAG, COMPLEX_ABS.

Paths without quantization (what ai-edge-litert 2.3.0 accepts):
- float32: every op but LOGICAL_NOT. float16: NEG, SIN, COS, FLOOR, ROUND, computed in float32 and rounded
  back to float16 as LiteRT does (NumPy's own float16 sin/cos loops round differently, so they are not used).
- ABS: int32, and int16 without quantization parameters (|INT_MIN| wraps to INT_MIN, as std::abs does).
- NEG: int8, int16, int32, int64, raw negation whatever the quantization (-(-128) wraps to -128).
- ROUND: float32, float16 (half to even as RoundToNearest: floor, then up when the fraction is > 0.5 or == 0.5
  with an odd floor; so -0.4 and -0.5 give +0.0). SIGN: float32, float64, int32 (NaN stays NaN, -0.0 gives
  +0.0). LOGICAL_NOT: bool. ZEROS_LIKE: float32, int32, int64.
- REAL, IMAG, COMPLEX_ABS: complex64 -> float32, complex128 -> float64 (``std::abs`` is ``hypot``).
- Quantized int8 (always: LiteRT requires affine quantization) and int16 (with quantization, zero points 0)
  paths of ABS, SQRT, RSQRT, LOG, EXP: each is a table over every stored input value, built in prepare
  from LiteRT's own arithmetic, so eval is one table lookup:
  ABS ``clamp(MBQM(|x - zi|, QM(f32(s_in / s_out))) + zo)`` (no multiplier when the scales are equal);
  SQRT float: ``int(f32(sqrtf(f32(s_in * (x - zi))) / s_out)) + zo`` truncated, clamped; RSQRT int8 the
  fixed-point Newton iteration GetInvSqrtQuantizedMultiplierExp (``x == zi`` gives 127), RSQRT int16 a
  LUTPopulate<int16_t> of ``1/sqrtf(v)`` (``v <= 0``: ``32767 * s_out``); LOG a LUTPopulate (int8, int16) of
  ``logf`` (``v <= 0``: the output minimum); EXP a LUTPopulate of ``expf``. SQRT and RSQRT of an input below
  its zero point fail at invoke, as in LiteRT ("... is only defined for non-negative/positive values").
LiteRT crashes or fails on unquantized int16 LOG / SQRT / RSQRT, and so do we (at prepare).

Float semantics are the C library's: LOG(0) = -inf, LOG(x<0) = NaN, SQRT(-0.0) = -0.0, SQRT(x<0) = NaN,
RSQRT is ``1.f / std::sqrt(x)`` (two correctly rounded steps: RSQRT(0) = inf, RSQRT(-0.0) = -inf),
SQUARE is ``x * x``; NaN and inf propagate as IEEE 754 says. Transcendentals (LOG, EXP, SIN, COS) stay in
float32 like LiteRT's ``std::log(float)``; NumPy's float32 loops and glibc's differ by an ulp or two.

Sources matched: tflite/kernels/elementwise.cc (LOG, SQRT, RSQRT, ABS, SIN, COS, SQUARE, LOGICAL_NOT), exp.cc,
neg.cc, floor.cc, ceil.cc, round.cc, sign.cc, zeros_like.cc, complex_support.cc;
tflite/kernels/internal/reference/{exp,neg,floor,ceil,round}.h; tflite/kernels/internal/common.h
(GetInvSqrtQuantizedMultiplierExp, LUTPopulate).
CEIL and ROUND are not registered by BUILTIN_REF; their builtin kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES) are
the ones matched (CEIL float32 only; the XNNPACK delegate of the default resolver also takes float16).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import InvokeError
from ..libm import libm_float
from ..quant import (
    lut_int8,
    lut_int16,
    lut_lookup_int8,
    lut_lookup_int16,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    trunc_to_int32,
    wrap32,
)
from ..quant.gemmlowp import get_inv_sqrt_quantized_multiplier_exp
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT, OUTPUT = 0, 0

_F32, _F16 = TensorType.FLOAT32, TensorType.FLOAT16
_I8, _I16, _I32, _I64 = TensorType.INT8, TensorType.INT16, TensorType.INT32, TensorType.INT64
_F64, _BOOL = TensorType.FLOAT64, TensorType.BOOL


def rsqrt(x, out=None):
    """``1.f / std::sqrt(x)``: the square root rounded, then the reciprocal rounded."""
    r = np.sqrt(x, out=out)
    return np.divide(r.dtype.type(1), r, out=out)


def round_half_even(x, out=None):
    """RoundToNearest (reference/round.h): ``floor(x)``, plus 1 when the fraction is above 0.5 or exactly 0.5
    with an odd floor. That is ``rint`` (half to even) except for the sign of zero: the ``+ 1`` turns
    [-0.5, 0) into +0.0 while -0.0 stays -0.0. NaN and inf pass through."""
    r = np.rint(x, out=out)
    return np.add(r, r.dtype.type(0), out=r, where=x != 0)  # -0.0 + 0 = +0.0; x == -0.0 keeps its sign


def sign(x, out=None):
    """``x > 0 ? 1 : x < 0 ? -1 : 0`` with NaN passed through (sign.cc): ``+ 0`` turns -0.0 into +0.0."""
    r = np.sign(x, out=out)
    return np.add(r, r.dtype.type(0), out=r)


def zeros_like(x, out=None):
    if out is None:
        return np.zeros_like(x)
    out[...] = 0
    return out


#: op -> f(x, out=None) giving the result of the plain (unquantized) paths. The quantized LUTs sample glibc's
#: expf / logf instead (see ``_lut_transform``).
FLOAT_FUNCTIONS: dict[int, Callable] = {
    BuiltinOperator.LOG: np.log,
    BuiltinOperator.SQRT: np.sqrt,
    BuiltinOperator.RSQRT: rsqrt,
    BuiltinOperator.EXP: np.exp,
    BuiltinOperator.ABS: np.abs,
    BuiltinOperator.NEG: np.negative,
    BuiltinOperator.SQUARE: np.square,
    BuiltinOperator.SIN: np.sin,
    BuiltinOperator.COS: np.cos,
    BuiltinOperator.FLOOR: np.floor,
    BuiltinOperator.CEIL: np.ceil,
    BuiltinOperator.ROUND: round_half_even,
    BuiltinOperator.SIGN: sign,
    BuiltinOperator.LOGICAL_NOT: np.logical_not,
    BuiltinOperator.ZEROS_LIKE: zeros_like,
}

#: Types each op runs as a plain function of the stored values (int16 ABS: only without quantization).
PLAIN_TYPES: dict[int, frozenset] = {
    BuiltinOperator.LOG: frozenset({_F32}),
    BuiltinOperator.SQRT: frozenset({_F32}),
    BuiltinOperator.RSQRT: frozenset({_F32}),
    BuiltinOperator.EXP: frozenset({_F32}),
    BuiltinOperator.ABS: frozenset({_F32, _I32, _I16}),
    BuiltinOperator.NEG: frozenset({_F32, _F16, _I8, _I16, _I32, _I64}),
    BuiltinOperator.SQUARE: frozenset({_F32}),
    BuiltinOperator.SIN: frozenset({_F32, _F16}),
    BuiltinOperator.COS: frozenset({_F32, _F16}),
    BuiltinOperator.FLOOR: frozenset({_F32, _F16}),
    BuiltinOperator.CEIL: frozenset({_F32}),
    BuiltinOperator.ROUND: frozenset({_F32, _F16}),
    BuiltinOperator.SIGN: frozenset({_F32, _F64, _I32}),
    BuiltinOperator.LOGICAL_NOT: frozenset({_BOOL}),
    BuiltinOperator.ZEROS_LIKE: frozenset({_F32, _I32, _I64}),
}

#: Types with a quantized path in LiteRT (int16: only with quantization parameters).
QUANTIZED_TYPES: dict[int, frozenset] = {
    BuiltinOperator.LOG: frozenset({_I8, _I16}),
    BuiltinOperator.SQRT: frozenset({_I8, _I16}),
    BuiltinOperator.RSQRT: frozenset({_I8, _I16}),
    BuiltinOperator.EXP: frozenset({_I8, _I16}),
    BuiltinOperator.ABS: frozenset({_I8, _I16}),
}

#: LiteRT's spelling of the op in its messages ("Type INT16 is unsupported by op Rsqrt.")
_NAMES = {
    BuiltinOperator.RSQRT: "Rsqrt",
    BuiltinOperator.SQUARE: "Square",
    BuiltinOperator.ZEROS_LIKE: "ZerosLike",
    BuiltinOperator.LOGICAL_NOT: "LogicalNot",
}


@dataclass(frozen=True, eq=False)
class UnaryPlain:
    """``fn(x, out=y)``: one NumPy ufunc (RSQRT: two) over the stored values."""

    fn: Callable

    def __call__(self, inputs, outputs):
        self.fn(inputs[INPUT], out=outputs[OUTPUT])


_UNSIGNED = {np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16}
_F = np.float32


@dataclass(frozen=True, eq=False)
class UnaryTable:
    """``y = table[x viewed as unsigned]``: every stored input value mapped in prepare. ``min_valid``: inputs
    below it make LiteRT fail at invoke (SQRT, RSQRT of negative values), and so do we. (Indexing then
    assigning is faster than ``np.take(..., out=)`` on small tensors.)"""

    table: np.ndarray
    index_dtype: type
    min_valid: int | None = None
    message: str = ""

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if self.min_valid is not None and x.size and np.minimum.reduce(x, axis=None) < self.min_valid:
            raise InvokeError(self.message)
        outputs[OUTPUT][...] = self.table[x.view(self.index_dtype)]


def _rsqrt_int8(ctx: OpContext, raw: np.ndarray, zi: int, zo: int, s_in: float, s_out: float) -> np.ndarray:
    m, shift = quantize_multiplier(1.0 / float(np.sqrt(_F(s_in)) * _F(s_out)))  # f32 product, double reciprocal
    ctx.check(-31 <= shift - 20 <= 31, "RSQRT output multiplier out of range")
    out = np.full(raw.shape, 127, np.int64)  # x == zi: the maximum, whatever the output zero point
    for k, v in enumerate((raw - zi).tolist()):
        if v > 0:
            inv, inv_shift = get_inv_sqrt_quantized_multiplier_exp(v)
            data = multiply_by_quantized_multiplier(1, inv, inv_shift + 20)
            out[k] = np.clip(int(multiply_by_quantized_multiplier(data, m, shift - 20)) + zo, -128, 127)
    return out


# glibc's expf/logf as LiteRT's LUT builders call them (numpy's float32 loops differ by an ulp now and then, enough
# to move an int16 LUT entry by 1); prepare only. See litert_py/libm.py for the fallback without a C library.
_EXPF = libm_float("expf")
_LOGF = libm_float("logf")


def _lut_transform(op: int, x: TensorInfo, s_out: float, zo: int):
    """The float32 function LUTPopulate samples for LOG, EXP and RSQRT (int16)."""
    if op == BuiltinOperator.EXP:
        return _EXPF
    if op == BuiltinOperator.LOG:
        out_min = _F(np.iinfo(x.dtype).min - zo) * _F(s_out)
        return lambda v: np.where(v <= 0, out_min, _LOGF(np.where(v <= 0, _F(1), v)))
    big = _F(32767) * _F(s_out)
    return lambda v: np.where(v <= 0, big, _F(1) / np.sqrt(np.where(v <= 0, _F(1), v)))


def prepare_unary_quantized(ctx: OpContext, x: TensorInfo):
    """The int8 / int16 quantized paths: one output value per stored input value, computed here."""
    y = ctx.outputs[OUTPUT]
    op = ctx.builtin_code
    ctx.check(
        x.quantization.is_quantized and y.quantization.is_quantized,
        f"{ctx.op_name} on {x.type_name} needs quantization parameters on its input and output",
    )
    s_in, zi, s_out, zo = _F(x.scale), x.zero_point, _F(y.scale), y.zero_point
    ctx.check(s_in > 0 and s_out > 0, f"{ctx.op_name}: scales must be positive")
    if x.type == _I16:
        ctx.check(zi == 0 and zo == 0, f"{ctx.op_name} int16 needs zero points 0, got {zi} and {zo}")
    info = np.iinfo(x.dtype)
    raw = np.arange(info.min, info.max + 1, dtype=np.int64)
    min_valid, message = None, ""
    if op == BuiltinOperator.ABS:
        v = np.abs(raw - zi)
        if s_in != s_out:
            m, shift = quantize_multiplier(float(s_in / s_out))  # float32 division
            v = multiply_by_quantized_multiplier(v, m, shift)
        out = v + zo
    elif op == BuiltinOperator.SQRT:
        with np.errstate(invalid="ignore"):
            deq = s_in * (raw - zi).astype(_F)
            out = wrap32(trunc_to_int32(np.sqrt(deq) / s_out) + zo)  # truncation, not rounding
        min_valid, message = zi, "Sqrt is only defined for non-negative values"
    elif op == BuiltinOperator.RSQRT and x.type == _I8:
        out = _rsqrt_int8(ctx, raw, zi, zo, float(s_in), float(s_out))
        min_valid, message = zi, "Rsqrt is only defined for positive values"
    else:  # LOG, EXP, RSQRT int16: LUTPopulate in float32
        fn = _lut_transform(op, x, float(s_out), zo)
        if x.type == _I8:  # an overflowing entry saturates (EXP of a large input gives 127), as lut_int8 does
            out = lut_lookup_int8(raw, lut_int8(fn, float(s_in), zi, float(s_out), zo))
        else:  # int16 overflow (inf - inf = NaN entries -> 0) already matches LiteRT as lut_int16 models it
            out = lut_lookup_int16(raw, lut_int16(fn, float(s_in), zi, float(s_out), zo))
        if op == BuiltinOperator.RSQRT:
            min_valid, message = zi, "Rsqrt is only defined for positive values"
    table = np.empty(raw.size, x.dtype)
    index = _UNSIGNED[x.dtype]
    table[raw.astype(x.dtype).view(index)] = np.clip(out, info.min, info.max)
    return UnaryTable(table, index, min_valid, message)


@register(BuiltinOperator.LOG)
@register(BuiltinOperator.SQRT)
@register(BuiltinOperator.RSQRT)
@register(BuiltinOperator.EXP)
@register(BuiltinOperator.ABS)
@register(BuiltinOperator.NEG)
@register(BuiltinOperator.SQUARE)
@register(BuiltinOperator.SIN)
@register(BuiltinOperator.COS)
@register(BuiltinOperator.FLOOR)
@register(BuiltinOperator.CEIL)
@register(BuiltinOperator.ROUND)
@register(BuiltinOperator.SIGN)
@register(BuiltinOperator.LOGICAL_NOT)
@register(BuiltinOperator.ZEROS_LIKE)
def prepare_unary(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x = ctx.input(INPUT)
    y = ctx.outputs[OUTPUT]
    op = ctx.builtin_code
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    ctx.set_output_shape(OUTPUT, x.shape)
    quantized = x.quantization.is_quantized or y.quantization.is_quantized
    if x.type in QUANTIZED_TYPES.get(op, ()) and (quantized or x.type == _I8):
        return prepare_unary_quantized(ctx, x)
    if x.type not in PLAIN_TYPES[op]:
        raise ctx.fail(f"Type {x.type_name} is unsupported by op {_NAMES.get(op, ctx.op_name.capitalize())}.")
    fn = FLOAT_FUNCTIONS[op]
    if x.type == _F16 and op != BuiltinOperator.ROUND:  # rint of a float16 is exact
        fn = partial(fn, dtype=np.float32)  # static_cast<half>(std::sin(static_cast<float>(h)))
    return UnaryPlain(fn)


#: complex part ops: op -> NumPy function (complex64 -> float32, complex128 -> float64)
COMPLEX_FUNCTIONS: dict[int, Callable] = {
    BuiltinOperator.REAL: np.real,
    BuiltinOperator.IMAG: np.imag,
    BuiltinOperator.COMPLEX_ABS: np.abs,
}


@dataclass(frozen=True, eq=False)
class ComplexPart:
    fn: Callable

    def __call__(self, inputs, outputs):
        outputs[OUTPUT][...] = self.fn(inputs[INPUT])


@dataclass(frozen=True, eq=False)
class ComplexAbs:
    def __call__(self, inputs, outputs):
        np.abs(inputs[INPUT], out=outputs[OUTPUT])


@register(BuiltinOperator.REAL)
@register(BuiltinOperator.IMAG)
@register(BuiltinOperator.COMPLEX_ABS)
def prepare_complex_part(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    want = {TensorType.COMPLEX64: _F32, TensorType.COMPLEX128: _F64}.get(x.type)
    ctx.check(want is not None, f"{ctx.op_name} takes a COMPLEX64 or COMPLEX128 input, got {x.type_name}")
    ctx.check(
        y.type == want,
        f"{ctx.op_name} of {x.type_name} gives {'FLOAT32' if want == _F32 else 'FLOAT64'}, not {y.type_name}",
    )
    ctx.set_output_shape(OUTPUT, x.shape)
    if ctx.builtin_code == BuiltinOperator.COMPLEX_ABS:
        return ComplexAbs()
    return ComplexPart(COMPLEX_FUNCTIONS[ctx.builtin_code])
