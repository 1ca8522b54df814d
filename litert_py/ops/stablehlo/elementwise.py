"""StableHLO elementwise ops.

Registered by ai-edge-litert 2.3.0 (matched against it):
- STABLEHLO_ADD, STABLEHLO_MULTIPLY, STABLEHLO_MAXIMUM, STABLEHLO_MINIMUM (float16/32/64, every int, bool) and
  STABLEHLO_AND (ints, bool): same-shape, same-type elementwise ops, integers wrapping like C++
  (stablehlo_elementwise.h/.cc). bool add is logical or, bool multiply logical and.
- STABLEHLO_SHIFT_LEFT (int8, int16, int32): ``x << s`` computed in C++'s promoted 32-bit int and truncated
  (stablehlo_shift_left.cc). Shift counts outside [0, bits) are undefined behaviour in C++; here they give
  what ai-edge-litert's compiled loop gives on x86-64 (see ``ShiftLeft``), not the spec's 0.

Not registered by ai-edge-litert 2.3.0 (no oracle: semantics from the StableHLO specification,
https://github.com/openxla/stablehlo/blob/main/docs/spec.md):

- Float unary (float16/32/64): STABLEHLO_LOGISTIC, COSINE, EXPONENTIAL, LOG, RSQRT, TANH, CBRT, FLOOR;
  float16 is computed in float32 and rounded once.
- STABLEHLO_ABS, STABLEHLO_NEGATE: floats and signed ints (two's complement wraps: abs(INT_MIN) = INT_MIN).
- Binary, same shape and type: STABLEHLO_SUBTRACT (numeric; ints wrap), STABLEHLO_OR (ints: bitwise, bool:
  logical), STABLEHLO_DIVIDE (floats IEEE; ints truncate toward zero), STABLEHLO_REMAINDER (floats fmod;
  ints: the dividend's sign), STABLEHLO_POWER (floats pow; ints by repeated squaring, wrapping). Integer
  corner cases the spec leaves to the implementation follow XLA: x / 0 = -1, INT_MIN / -1 = INT_MIN,
  x % 0 = x, INT_MIN % -1 = 0, x ** negative = 1 for x = 1, +-1 for x = -1, else 0.
- STABLEHLO_COMPARE: comparison_direction EQ/NE/GE/GT/LE/LT, compare_type FLOAT (IEEE: NaN unordered),
  FLOAT_TOTAL_ORDER (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN), SIGNED, UNSIGNED (ints reinterpreted),
  NOTYPE (by the element type); output bool.
- STABLEHLO_SELECT (pred bool scalar or same shape), STABLEHLO_CLAMP (min/max scalar or same shape;
  minimum(maximum(operand, min), max) with NaN propagating).
- Quantized tensors: COMPARE and CLAMP on shared quantization (raw integers order like the reals), SELECT;
  the arithmetic ops and CONVERT reject quantized tensors (their spec semantics dequantize first).
- STABLEHLO_CONVERT: any numeric/bool to any numeric/bool: float -> int rounds toward zero (NaN -> 0,
  out of range saturates, an implementation choice), int -> float rounds to nearest even, to bool is x != 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.model import BuiltinOperator
from ..registry import OpContext, PreparedOp, register
from .common import hlo_add, hlo_maximum, hlo_minimum, hlo_multiply

B = BuiltinOperator
_FLOATS = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))
_SIGNED = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
_UNSIGNED = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_INTS = _SIGNED + _UNSIGNED
_BOOL = (np.dtype(np.bool_),)


# ----------------------------------------------------------------------------------------------------------
# Registered by LiteRT: binary ops and SHIFT_LEFT
# ----------------------------------------------------------------------------------------------------------


def _and(a, b, out):
    np.bitwise_and(a, b, out=out)


def _int_max(a, b, out):
    np.maximum(a, b, out=out)


def _int_min(a, b, out):
    np.minimum(a, b, out=out)


_INT_FAST = {hlo_maximum: _int_max, hlo_minimum: _int_min}
_BINARY = {
    B.STABLEHLO_ADD: (hlo_add, _FLOATS + _INTS + _BOOL),
    B.STABLEHLO_MULTIPLY: (hlo_multiply, _FLOATS + _INTS + _BOOL),
    B.STABLEHLO_MAXIMUM: (hlo_maximum, _FLOATS + _INTS + _BOOL),
    B.STABLEHLO_MINIMUM: (hlo_minimum, _FLOATS + _INTS + _BOOL),
    B.STABLEHLO_AND: (_and, _INTS + _BOOL),
}


@dataclass(frozen=True, eq=False)
class StablehloBinary:
    fn: object

    def __call__(self, inputs, outputs):
        with np.errstate(all="ignore"):
            self.fn(inputs[0], inputs[1], outputs[0])


def _prepare_binary(ctx: OpContext, allowed) -> None:
    ctx.check_num(2)
    a, b = ctx.input(0), ctx.input(1)
    ctx.check(a.type == b.type, f"input types differ: {a.dtype} vs {b.dtype}")
    ctx.check(a.shape == b.shape, f"input shapes differ: {a.shape} vs {b.shape}")
    ctx.check(a.dtype in [np.dtype(t) for t in allowed], f"(Data Type: {a.dtype}) currently not supported.")
    ctx.set_output_shape(0, a.shape)


def _litert_binary(op):
    fn, allowed = _BINARY[op]

    def prepare(ctx: OpContext):
        _prepare_binary(ctx, allowed)
        if fn in _INT_FAST and ctx.input(0).dtype.kind != "f":
            return StablehloBinary(_INT_FAST[fn])  # no NaN or signed zero: the plain ufunc is the same
        return StablehloBinary(fn)

    register(op)(prepare)


for _op in _BINARY:
    _litert_binary(_op)


#: smallest element count for which LiteRT's shift loop takes its vector path (measured on ai-edge-litert 2.3.0)
_SHIFT_VECTOR_MIN = {np.dtype(np.int8): 8, np.dtype(np.int16): 16, np.dtype(np.int32): 12}


@dataclass(frozen=True, eq=False)
class ShiftLeft:
    vector_min: int  # smallest element count for which LiteRT's loop takes its vector path
    bits: int

    def __call__(self, inputs, outputs):
        x, s, out = inputs[0], inputs[1], outputs[0]
        # LiteRT's compiled loop (``x << s`` in C++'s 32-bit int, truncated) runs as the scalar SHL, whose
        # count is s & 31, for small tensors and the last n % 8 elements; the rest is vectorized 8 elements at
        # a time as x * 2**s, with 2**s built from float bits: (s + 127) << 23 reinterpreted as float32 and
        # converted with truncation (out of int32 range: INT_MIN). Both agree for counts in [0, bits);
        # outside, C++ leaves the result undefined and these are the values ai-edge-litert 2.3.0 (x86-64)
        # computes.
        n = x.size
        if n < self.vector_min or (0 <= s.min() and s.max() < self.bits):
            np.copyto(out, np.left_shift(x.astype(np.int64), (s & 31).astype(np.int64)), casting="unsafe")
            return
        x, s, out = x.reshape(-1), s.reshape(-1).astype(np.int32), out.reshape(-1)
        body = n - n % 8
        with np.errstate(all="ignore"):
            bits = ((s[:body] + np.int32(127)) << np.int32(23)).view(np.float32)
            pow2 = np.where(np.abs(bits) < 2.0**31, np.trunc(np.nan_to_num(bits, nan=2.0**31)), -(2.0**31))
            np.copyto(out[:body], x[:body].astype(np.int64) * pow2.astype(np.int64), casting="unsafe")
            tail = np.left_shift(x[body:].astype(np.int64), (s[body:] & 31).astype(np.int64))
            np.copyto(out[body:], tail, casting="unsafe")


@register(B.STABLEHLO_SHIFT_LEFT)
def prepare_shift_left(ctx: OpContext) -> PreparedOp:
    _prepare_binary(ctx, (np.int8, np.int16, np.int32))
    dt = ctx.input(0).dtype
    return ShiftLeft(_SHIFT_VECTOR_MIN[dt], 8 * dt.itemsize)


def _not_quantized(ctx: OpContext, *tensors) -> None:
    """Quantized StableHLO arithmetic dequantizes, computes and requantizes; only plain values are handled."""
    for t in tensors:
        ctx.check(not t.quantization.scale, f"quantized {t.dtype} inputs are not supported")


def _in32(fn):
    """Apply ``fn`` in float32 for float16 inputs (one rounding at the end), natively otherwise."""

    def apply(x, out):
        if x.dtype == np.float16:
            np.copyto(out, fn(x.astype(np.float32)), casting="unsafe")
        else:
            np.copyto(out, fn(x), casting="unsafe")

    return apply


def _logistic(x):
    return 1 / (1 + np.exp(-x))


#: float unary op -> NumPy function
UNARY_FLOAT = {
    B.STABLEHLO_LOGISTIC: _logistic,
    B.STABLEHLO_COSINE: np.cos,
    B.STABLEHLO_EXPONENTIAL: np.exp,
    B.STABLEHLO_LOG: np.log,
    B.STABLEHLO_RSQRT: lambda x: 1 / np.sqrt(x),
    B.STABLEHLO_TANH: np.tanh,
    B.STABLEHLO_CBRT: np.cbrt,
    B.STABLEHLO_FLOOR: np.floor,
}
UNARY_SIGNED = {B.STABLEHLO_ABS: np.abs, B.STABLEHLO_NEGATE: np.negative}


@dataclass(frozen=True, eq=False)
class StablehloUnary:
    fn: object

    def __call__(self, inputs, outputs):
        with np.errstate(all="ignore"):
            self.fn(inputs[0], outputs[0])


def _unary(op, fn, allowed):
    def prepare(ctx: OpContext):
        ctx.check_num(1)
        x = ctx.input(0)
        _not_quantized(ctx, x, ctx.outputs[0])
        ctx.check(x.dtype in allowed, f"Type {x.dtype} is unsupported by op {op.name}.")
        ctx.check(ctx.outputs[0].dtype == x.dtype, "output type must be the input type")
        ctx.set_output_shape(0, x.shape)
        return StablehloUnary(_in32(fn))

    register(op)(prepare)


for _op, _fn in UNARY_FLOAT.items():
    _unary(_op, _fn, _FLOATS)
for _op, _fn in UNARY_SIGNED.items():
    _unary(_op, _fn, _FLOATS + _SIGNED)


# -- binary ----------------------------------------------------------------------------------------------


def _subtract(a, b, out):
    np.subtract(a, b, out=out)


def _or(a, b, out):
    np.bitwise_or(a, b, out=out)


def _divide(a, b, out):
    if a.dtype.kind == "f":
        np.divide(a, b, out=out)
        return
    # truncating division in int64: a - fmod(a, b) is a multiple of b, so floor division of it is exact;
    # narrower types' INT_MIN / -1 wraps back to INT_MIN in the final cast, int64's wraps in numpy
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    zero = wide_b == 0
    safe = np.where(zero, 1, wide_b)
    q = (wide_a - np.fmod(wide_a, safe)) // safe
    q = np.where(zero, -1, q)
    np.copyto(out, q, casting="unsafe")


def _remainder(a, b, out):
    if a.dtype.kind == "f":
        np.fmod(a, b, out=out)
        return
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    zero = wide_b == 0
    safe = np.where(zero, 1, wide_b)
    r = np.fmod(wide_a, safe)  # C remainder: the dividend's sign
    np.copyto(out, np.where(zero, wide_a, r), casting="unsafe")


def _power(a, b, out):
    if a.dtype.kind == "f":
        np.power(a, b, out=out)
        return
    base, e = a.copy(), b.astype(np.int64)
    neg = e < 0
    acc = np.ones_like(a)
    e = np.where(neg, 0, e)
    while np.any(e):
        odd = (e & 1).astype(bool)
        np.multiply(acc, np.where(odd, base, 1).astype(a.dtype), out=acc)
        np.multiply(base, base, out=base)
        e >>= 1
    if np.any(neg):
        inv = np.where(a == 1, 1, np.where(a == -1, np.where(b.astype(np.int64) % 2 == 0, 1, -1), 0))
        acc = np.where(neg, inv.astype(a.dtype), acc)
    np.copyto(out, acc)


_NUMERIC = _FLOATS + _INTS
BINARY = {
    B.STABLEHLO_SUBTRACT: (_subtract, _NUMERIC),
    B.STABLEHLO_OR: (_or, _INTS + _BOOL),
    B.STABLEHLO_DIVIDE: (_divide, _NUMERIC),
    B.STABLEHLO_REMAINDER: (_remainder, _NUMERIC),
    B.STABLEHLO_POWER: (_power, _NUMERIC),
}


@dataclass(frozen=True, eq=False)
class StablehloBinaryOp:
    fn: object

    def __call__(self, inputs, outputs):
        with np.errstate(all="ignore"):
            self.fn(inputs[0], inputs[1], outputs[0])


def _binary(op, fn, allowed):
    def prepare(ctx: OpContext):
        ctx.check_num(2)
        a, b = ctx.input(0), ctx.input(1)
        _not_quantized(ctx, a, b, ctx.outputs[0])
        ctx.check(a.type == b.type, f"input types differ: {a.dtype} vs {b.dtype}")
        ctx.check(a.shape == b.shape, f"input shapes differ: {a.shape} vs {b.shape}")
        ctx.check(a.dtype in allowed, f"Type {a.dtype} is unsupported by op {op.name}.")
        ctx.check(ctx.outputs[0].dtype == a.dtype, "output type must be the input type")
        ctx.set_output_shape(0, a.shape)
        return StablehloBinaryOp(fn)

    register(op)(prepare)


for _op, (_fn, _allowed) in BINARY.items():
    _binary(_op, _fn, _allowed)


# -- compare ---------------------------------------------------------------------------------------------

_DIRECTIONS = {0: np.equal, 1: np.not_equal, 2: np.greater_equal, 3: np.greater, 4: np.less_equal, 5: np.less}
_SIGNED_VIEW = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_UNSIGNED_VIEW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _total_order_key(x):
    """Floats as signed ints ordered like FLOAT_TOTAL_ORDER: flip the magnitude bits of negatives."""
    i = x.view(_SIGNED_VIEW[x.dtype.itemsize])
    return np.where(i < 0, np.bitwise_xor(i, np.iinfo(i.dtype).max), i)


@dataclass(frozen=True, eq=False)
class StablehloCompare:
    fn: object
    view: object  # None, "total", or an integer dtype to reinterpret the inputs as

    def __call__(self, inputs, outputs):
        a, b = inputs
        if self.view == "total":
            a, b = _total_order_key(a), _total_order_key(b)
        elif self.view is not None:
            a, b = a.view(self.view), b.view(self.view)
        self.fn(a, b, out=outputs[0])


@register(B.STABLEHLO_COMPARE)
def prepare_stablehlo_compare(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    a, b = ctx.input(0), ctx.input(1)
    ctx.check(a.type == b.type, f"input types differ: {a.dtype} vs {b.dtype}")
    ctx.check(a.shape == b.shape, f"input shapes differ: {a.shape} vs {b.shape}")
    ctx.check(a.quantization == b.quantization, "quantized inputs must share their quantization")
    ctx.check(a.dtype in _NUMERIC + _BOOL, f"Type {a.dtype} is unsupported by op STABLEHLO_COMPARE.")
    ctx.check(ctx.outputs[0].dtype == np.dtype(np.bool_), "output must be bool")
    fn = _DIRECTIONS.get(int(ctx.options.comparison_direction))
    ctx.check(fn is not None, f"unknown comparison_direction {ctx.options.comparison_direction}")
    kind = int(ctx.options.compare_type)
    view = None
    if kind == 1:
        ctx.check(a.dtype in _FLOATS, "compare_type FLOAT needs float inputs")
    elif kind == 2:
        ctx.check(a.dtype in _FLOATS, "compare_type FLOAT_TOTAL_ORDER needs float inputs")
        view = "total"
    elif kind in (3, 4):
        ctx.check(a.dtype in _INTS + _BOOL, "compare_type SIGNED/UNSIGNED needs integer inputs")
        if a.dtype != np.dtype(np.bool_):
            view = (_SIGNED_VIEW if kind == 3 else _UNSIGNED_VIEW)[a.dtype.itemsize]
    else:
        ctx.check(kind == 0, f"unknown compare_type {kind}")
    ctx.set_output_shape(0, a.shape)
    return StablehloCompare(fn, view)


# -- select, clamp ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StablehloSelect:
    def __call__(self, inputs, outputs):
        np.copyto(outputs[0], np.where(inputs[0], inputs[1], inputs[2]))


@register(B.STABLEHLO_SELECT)
def prepare_stablehlo_select(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3)
    p, t, f = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.check(p.dtype == np.dtype(np.bool_), "pred must be bool")
    ctx.check(t.type == f.type and t.shape == f.shape, "on_true and on_false must have one type and shape")
    ctx.check(p.shape in ((), t.shape), "pred must be a scalar or have the operands' shape")
    ctx.set_output_shape(0, t.shape)
    return StablehloSelect()


@dataclass(frozen=True, eq=False)
class StablehloClamp:
    def __call__(self, inputs, outputs):
        with np.errstate(invalid="ignore"):
            np.copyto(outputs[0], np.minimum(np.maximum(inputs[1], inputs[0]), inputs[2]))


@register(B.STABLEHLO_CLAMP)
def prepare_stablehlo_clamp(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3)
    lo, x, hi = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.check(lo.type == x.type == hi.type, "min, operand and max must have one type")
    ctx.check(
        lo.quantization == x.quantization == hi.quantization == ctx.outputs[0].quantization,
        "quantized min, operand, max and result must share their quantization",
    )
    ctx.check(x.dtype in _NUMERIC + _BOOL, f"Type {x.dtype} is unsupported by op STABLEHLO_CLAMP.")
    for name, t in (("min", lo), ("max", hi)):
        ctx.check(t.shape in ((), x.shape), f"{name} must be a scalar or have the operand's shape")
    ctx.set_output_shape(0, x.shape)
    return StablehloClamp()


# -- convert ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StablehloConvert:
    float_to_int: bool

    def __call__(self, inputs, outputs):
        x, out = inputs[0], outputs[0]
        if self.float_to_int:
            info = np.iinfo(out.dtype)
            with np.errstate(invalid="ignore"):
                t = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
            # float64 cannot hold int64's max exactly: clip to the nearest representable values inside
            hi = np.nextafter(np.float64(info.max), 0) if info.bits == 64 else float(info.max)
            np.copyto(out, np.clip(t, float(info.min), hi), casting="unsafe")
        elif out.dtype == np.bool_:
            np.not_equal(x, 0, out=out)
        else:
            np.copyto(out, x, casting="unsafe")


@register(B.STABLEHLO_CONVERT)
def prepare_stablehlo_convert(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x, o = ctx.input(0), ctx.outputs[0]
    _not_quantized(ctx, x, o)
    ok = _NUMERIC + _BOOL
    ctx.check(x.dtype in ok and o.dtype in ok, f"cannot convert {x.dtype} to {o.dtype}")
    ctx.set_output_shape(0, x.shape)
    return StablehloConvert(x.dtype.kind == "f" and o.dtype.kind in "iu")
