"""Comparisons, logical and bitwise binary ops, SELECT / SELECT_V2 (NumPy broadcasting, output rank <= 8).

Dtype paths (what ai-edge-litert 2.3.0 runs under BUILTIN_REF):
- EQUAL, NOT_EQUAL: string (bytewise), bool, float32, float16, int16, int32, int64, and quantized uint8 / int8 /
  int16 (int16 only with quantization parameters; without them it is a raw comparison). LiteRT's string
  broadcast gets a rank-0 operand wrong (always "not equal"); we broadcast it as NumPy does.
- LESS, LESS_EQUAL, GREATER, GREATER_EQUAL: float32, float16, int16 (always raw, quantization ignored), int32,
  int64, and quantized uint8 / int8.
- Quantized comparisons rescale both sides (ComparisonWithScaling): ``v = MBQM((x - zp) << 8, M, shift)`` with
  ``(M, shift) = QuantizeMultiplierSmallerThanOneExp(scale)``, then compare the int32 values. A scale of 0 (no
  quantization: LiteRT aborts) or >= 1 (a negative RoundingDivideByPOT exponent, UB) fails at prepare. Each side
  is a 256- or 65536-entry table of those values, built in prepare.
- LOGICAL_AND, LOGICAL_OR: bool only ("Logical ops only support bool type.").
- BITWISE_XOR: int8/16/32, uint8/16/32. RIGHT_SHIFT: the same types, the shift clamped to [0, bits - 1] and
  arithmetic for signed types (RightShift in right_shift.cc).
- SELECT: condition bool; x, y of one type (any fixed-size type: the kernel copies bits); same shapes, or a
  scalar condition, or a rank-1 condition matching x's first dimension. SELECT_V2 broadcasts all three.
  When condition, x, y and the output all have one element, the output keeps the model's shape (as LiteRT).
- NOT_EQUAL on unquantized int16 leaves LiteRT's output unwritten (a gap in its switch); we compute the raw
  comparison.

Sources matched: tflite/kernels/comparisons.cc, tflite/kernels/internal/reference/comparisons.h,
tflite/kernels/logical.cc, bitwise_xor.cc, right_shift.cc, select.cc.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..quant import multiply_by_quantized_multiplier, quantize_multiplier
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .common import broadcast_shape, clip_ufunc
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT1, INPUT2, OUTPUT = 0, 1, 0
CONDITION, X, Y = 0, 1, 2
MAX_RANK = 8

_B = BuiltinOperator
_F32, _F16, _BOOL, _STR = TensorType.FLOAT32, TensorType.FLOAT16, TensorType.BOOL, TensorType.STRING
_I8, _I16, _I32, _I64 = TensorType.INT8, TensorType.INT16, TensorType.INT32, TensorType.INT64
_U8, _U16, _U32 = TensorType.UINT8, TensorType.UINT16, TensorType.UINT32

#: op -> (numpy ufunc, types compared raw, types compared after rescaling)
COMPARISONS: dict[int, tuple[Callable, frozenset, frozenset]] = {
    _B.EQUAL: (np.equal, frozenset({_STR, _BOOL, _F32, _F16, _I16, _I32, _I64}), frozenset({_U8, _I8, _I16})),
    _B.NOT_EQUAL: (np.not_equal, frozenset({_STR, _BOOL, _F32, _F16, _I16, _I32, _I64}), frozenset({_U8, _I8, _I16})),
    _B.LESS: (np.less, frozenset({_F32, _F16, _I16, _I32, _I64}), frozenset({_U8, _I8})),
    _B.LESS_EQUAL: (np.less_equal, frozenset({_F32, _F16, _I16, _I32, _I64}), frozenset({_U8, _I8})),
    _B.GREATER: (np.greater, frozenset({_F32, _F16, _I16, _I32, _I64}), frozenset({_U8, _I8})),
    _B.GREATER_EQUAL: (np.greater_equal, frozenset({_F32, _F16, _I16, _I32, _I64}), frozenset({_U8, _I8})),
}

_BITWISE_TYPES = frozenset({_I8, _I16, _I32, _U8, _U16, _U32})
_UNSIGNED = {np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16, np.dtype(np.uint8): np.uint8}


def _unsupported(ctx: OpContext, t: TensorInfo, allowed: str):
    return ctx.fail(f"Does not support type {t.type_name}, requires {allowed}")


def _binary_shape(ctx: OpContext, a: TensorInfo, b: TensorInfo) -> tuple[int, ...]:
    ctx.check(a.type == b.type, f"input types differ: {a.type_name} and {b.type_name}")
    if a.shape == b.shape:
        return a.shape
    shape = broadcast_shape(ctx, a.shape, b.shape)
    ctx.check(len(shape) <= MAX_RANK, f"broadcasting supports up to {MAX_RANK} dimensions, got {len(shape)}")
    return shape


@dataclass(frozen=True, eq=False)
class BinaryPlain:
    """``fn(a, b, out=y)``: one NumPy ufunc with broadcasting."""

    fn: Callable

    def __call__(self, inputs, outputs):
        self.fn(inputs[INPUT1], inputs[INPUT2], out=outputs[OUTPUT])


def scaled_table(ctx: OpContext, t: TensorInfo) -> np.ndarray:
    """``MultiplyByQuantizedMultiplierSmallerThanOneExp((x - zp) << 8, M, shift)`` for every stored value x,
    indexed by x viewed as unsigned (comparisons.cc: left_shift 8)."""
    scale = t.scale
    ctx.check(
        0.0 < scale < 1.0,
        f"quantized {ctx.op_name} needs an input scale in (0, 1), got {scale} (LiteRT aborts or is undefined)",
    )
    m, shift = quantize_multiplier(float(scale))
    info = np.iinfo(t.dtype)
    raw = np.arange(info.min, info.max + 1, dtype=np.int64)
    values = multiply_by_quantized_multiplier((raw - t.zero_point) << 8, m, shift)
    table = np.empty(raw.size, np.int32)
    table[raw.astype(t.dtype).view(_UNSIGNED[t.dtype])] = values
    return table


@dataclass(frozen=True, eq=False)
class ComparisonQuantized:
    """Both sides mapped through their rescaling tables, then compared as int32."""

    fn: Callable
    table1: np.ndarray
    table2: np.ndarray
    index_dtype: type

    def __call__(self, inputs, outputs):
        a = self.table1[inputs[INPUT1].view(self.index_dtype)]
        b = self.table2[inputs[INPUT2].view(self.index_dtype)]
        self.fn(a, b, out=outputs[OUTPUT])


@register(_B.EQUAL)
@register(_B.NOT_EQUAL)
@register(_B.LESS)
@register(_B.LESS_EQUAL)
@register(_B.GREATER)
@register(_B.GREATER_EQUAL)
def prepare_comparison(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    a, b = ctx.input(INPUT1), ctx.input(INPUT2)
    fn, raw_types, scaled_types = COMPARISONS[ctx.builtin_code]
    ctx.set_output_shape(OUTPUT, _binary_shape(ctx, a, b))
    ctx.set_output_type(OUTPUT, _BOOL)  # comparisons.cc's Prepare: output->type = kTfLiteBool, whatever the model says
    scaled = a.type in scaled_types and (a.type != _I16 or a.quantization.is_quantized)
    if scaled:
        return ComparisonQuantized(fn, scaled_table(ctx, a), scaled_table(ctx, b), _UNSIGNED[a.dtype])
    if a.type not in raw_types:
        raise _unsupported(
            ctx,
            a,
            "bool|float|int|uint8|int8|int16"
            if ctx.builtin_code in (_B.EQUAL, _B.NOT_EQUAL)
            else "float|int|uint8|int8|int16",
        )
    return BinaryPlain(fn)


@register(_B.LOGICAL_AND)
@register(_B.LOGICAL_OR)
def prepare_logical(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    a, b = ctx.input(INPUT1), ctx.input(INPUT2)
    ctx.check(a.type == _BOOL and b.type == _BOOL, "Logical ops only support bool type.")
    ctx.set_output_shape(OUTPUT, _binary_shape(ctx, a, b))
    ctx.set_output_type(OUTPUT, _BOOL)  # logical.cc's Prepare: output->type = input1->type (BOOL)
    return BinaryPlain(np.logical_and if ctx.builtin_code == _B.LOGICAL_AND else np.logical_or)


@dataclass(frozen=True, eq=False)
class RightShift:
    """``x >> clamp(y, 0, bits - 1)`` (arithmetic for signed types). The bounds are 0-d arrays of y's type: with
    Python ints, numpy 1.x's clip of a 0-d uint y gave int64 (no value-based casting among scalars only), and
    its right shift then failed to cast to the unsigned output."""

    lo: np.ndarray
    hi: np.ndarray

    def __call__(self, inputs, outputs):
        y = clip_ufunc(inputs[INPUT2], self.lo, self.hi)
        np.right_shift(inputs[INPUT1], y, out=outputs[OUTPUT])


@register(_B.BITWISE_XOR)
@register(_B.RIGHT_SHIFT)
def prepare_bitwise(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    a, b = ctx.input(INPUT1), ctx.input(INPUT2)
    shape = _binary_shape(ctx, a, b)
    if a.type not in _BITWISE_TYPES:
        raise ctx.fail(f"Unsupported datatype {a.type_name} for {ctx.op_name}")
    ctx.set_output_type(OUTPUT, a.type)  # bitwise_xor.cc / right_shift.cc's Prepare: output->type = input1->type
    ctx.set_output_shape(OUTPUT, shape)
    if ctx.builtin_code == _B.BITWISE_XOR:
        return BinaryPlain(np.bitwise_xor)
    return RightShift(np.array(0, b.dtype), np.array(a.dtype.itemsize * 8 - 1, b.dtype))


@dataclass(frozen=True, eq=False)
class Select:
    """``out = y; out[cond] = x`` with broadcasting; ``cond_shape`` reshapes a rank-1 SELECT condition."""

    cond_shape: tuple[int, ...] | None = None

    def __call__(self, inputs, outputs):
        cond = inputs[CONDITION]
        if self.cond_shape is not None:
            cond = cond.reshape(self.cond_shape)
        out = outputs[OUTPUT]
        np.copyto(out, inputs[Y])
        np.copyto(out, inputs[X], where=cond)


@dataclass(frozen=True, eq=False)
class SelectOne:
    """One element in every tensor, whatever their ranks."""

    def __call__(self, inputs, outputs):
        pick = inputs[X] if inputs[CONDITION].reshape(-1)[0] else inputs[Y]
        outputs[OUTPUT].reshape(-1)[0] = pick.reshape(-1)[0]


@register(_B.SELECT)
@register(_B.SELECT_V2)
def prepare_select(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3, 1)
    cond, x, y = ctx.input(CONDITION), ctx.input(X), ctx.input(Y)
    out = ctx.outputs[OUTPUT]
    ctx.check(cond.type == _BOOL, f"condition must be BOOL, got {cond.type_name}")
    ctx.check(x.type == y.type, f"x and y types differ: {x.type_name} and {y.type_name}")
    ctx.check(out.type == x.type, f"output type {out.type_name} differs from the input type {x.type_name}")
    ctx.check(
        x.dtype.kind in "biufc" and x.dtype.itemsize in (1, 2, 4, 8),
        f"Does not support type other than bool|float|int, got {x.type_name}",
    )
    if cond.size == 1 and x.size == 1 and y.size == 1 and out.size == 1:
        # LiteRT keeps the model's output shape here (mixed-rank scalars)
        ctx.set_output_shape(OUTPUT, out.shape)
        return SelectOne()
    if cond.shape == x.shape == y.shape:
        ctx.set_output_shape(OUTPUT, x.shape)
        return Select()
    if ctx.builtin_code == _B.SELECT:
        low_rank = len(cond.shape) == 0 or (len(cond.shape) == 1 and len(x.shape) >= 1 and cond.shape[0] == x.shape[0])
        ctx.check(low_rank, "condition must be a scalar, have x's shape, or be rank 1 matching x's first dimension")
        ctx.check(x.shape == y.shape, f"x and y shapes differ: {list(x.shape)} and {list(y.shape)}")
        ctx.set_output_shape(OUTPUT, x.shape)
        return Select(cond.shape + (1,) * (len(x.shape) - len(cond.shape)))
    shape = broadcast_shape(ctx, cond.shape, x.shape, y.shape)
    ctx.check(len(shape) <= MAX_RANK, f"broadcasting supports up to {MAX_RANK} dimensions, got {len(shape)}")
    ctx.set_output_shape(OUTPUT, shape)
    return Select()
