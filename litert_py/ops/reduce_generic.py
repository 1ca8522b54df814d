"""Generic reductions: REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL (reduce.cc EvalGeneric).

Axis handling and output shape as MEAN / SUM (reduce_common.py: ``resolve_axes``, ``reduced_shape``).

REDUCE_MAX / REDUCE_MIN (float32, int32, int64, uint8, int8, int16, bool; quantized 8/16-bit reduce raw values
and need equal input / output scale and zero point), REDUCE_PROD (float32 in input order, integers wrapping,
bool; quantized int8 / int16 as reference_ops::QuantizedReduceProd, see ReduceProdQuantized), REDUCE_ANY /
REDUCE_ALL (bool): reduce.cc EvalGeneric with the reference reducers; see ReduceMaxMinFloat for NaN, inf and -0.0.

Sources matched: tflite/kernels/reduce.cc (EvalGeneric, EvalQuantizedProd), tflite/kernels/internal/reference/
reduce.h (ReduceGeneric, QuantizedReduceProd), tflite/kernels/internal/common.h (MultiplyByQuantizedMultiplier).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import InputValueError
from ..quant import dtype_range, quantize_multiplier
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .common import Reduction, clip_ufunc
from .reduce_common import ReduceDynamicAxes, reduced_shape, refuse_empty_quantized, resolve_axes
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT, AXIS, OUTPUT = 0, 1, 0

_F32, _I32, _I64 = TensorType.FLOAT32, TensorType.INT32, TensorType.INT64
_U8, _I8, _I16, _BOOL = TensorType.UINT8, TensorType.INT8, TensorType.INT16, TensorType.BOOL


# -- REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL (reduce.cc EvalGeneric) ---------------
@dataclass(frozen=True, eq=False)
class ReduceLogic:
    """Integer / bool REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL and integer / bool REDUCE_PROD (wrapping):
    ``ufunc.reduce`` over the reduced rows, starting from the reducer's initial value (an empty reduction gives
    it: lowest for MAX, max for MIN, 1 for PROD, false for ANY, true for ALL)."""

    reduction: Reduction
    ufunc: np.ufunc
    init: object

    def __call__(self, inputs, outputs):
        flat = outputs[OUTPUT].reshape(self.reduction.m)
        if self.reduction.n == 0:
            flat[...] = self.init
        else:
            self.ufunc.reduce(self.reduction.rows(inputs[INPUT]), axis=0, out=flat)


@dataclass(frozen=True, eq=False)
class ReduceProdFloat:
    """float32 REDUCE_PROD: products taken one after the other in input order, from 1 (the reference order)."""

    reduction: Reduction

    def __call__(self, inputs, outputs):
        r = self.reduction
        flat = outputs[OUTPUT].reshape(r.m)
        y = r.rows(inputs[INPUT])
        if r.n == 0:
            flat[...] = 1
        elif r.m == 1:
            flat[0] = np.multiply.accumulate(y[:, 0])[-1]
        else:
            np.multiply.reduce(np.ascontiguousarray(y), axis=0, out=flat)


@dataclass(frozen=True, eq=False)
class ReduceMaxMinFloat:
    """float32 REDUCE_MAX / REDUCE_MIN: ``current = in > current ? in : current`` (``<`` for MIN) over the
    reduced elements in input order, starting from ``start``: -FLT_MAX (FLT_MAX for MIN) in ReduceGeneric, or
    the first element when every axis is reduced (ReduceAllDims). Hence NaN is skipped (a leading NaN sticks in
    the all-axes case), an all -inf slice gives -FLT_MAX in ReduceGeneric, and of equal values (+0.0 and
    -0.0) the first one is kept."""

    reduction: Reduction
    is_max: bool
    all_dims: bool  # ReduceAllDims: start from the first element

    def __call__(self, inputs, outputs):
        r = self.reduction
        flat = outputs[OUTPUT].reshape(r.m)
        limit = np.float32(np.finfo(np.float32).min if self.is_max else np.finfo(np.float32).max)
        if r.n == 0:
            flat[...] = limit
            return
        y = r.rows(inputs[INPUT])
        best = (np.fmax if self.is_max else np.fmin).reduce(y, axis=0)  # NaN only where all are NaN
        if self.all_dims:
            start = y[0]
            better = np.ones(best.shape, bool)  # best >= start whenever start is not NaN
            better &= ~np.isnan(start)
        else:
            start = np.full(best.shape, limit)
            better = best > start if self.is_max else best < start
        result = np.where(better, best, start)
        zero = better & (best == 0)
        if zero.any():  # the first zero of the slice decides the sign
            first = np.argmax(y == 0, axis=0)
            result[zero] = y[first, np.arange(r.m)][zero]
        flat[...] = result


_MINMAX_REDUCE_TYPES = (_F32, _I32, _I64, _U8, _I8, _I16, _BOOL)


def _generic_op(code: int, dtype: np.dtype, reduction: Reduction, all_dims: bool):
    is_float = dtype == np.float32
    if code in (BuiltinOperator.REDUCE_MAX, BuiltinOperator.REDUCE_MIN):
        is_max = code == BuiltinOperator.REDUCE_MAX
        if is_float:
            return ReduceMaxMinFloat(reduction, is_max, all_dims)
        info = np.iinfo(dtype) if dtype != np.bool_ else None
        init = (info.min if is_max else info.max) if info else (not is_max)
        return ReduceLogic(reduction, np.maximum if is_max else np.minimum, init)
    if code == BuiltinOperator.REDUCE_PROD:
        if is_float:
            return ReduceProdFloat(reduction)
        return ReduceLogic(reduction, np.logical_and if dtype == np.bool_ else np.multiply, 1)
    if code == BuiltinOperator.REDUCE_ANY:
        return ReduceLogic(reduction, np.logical_or, False)
    return ReduceLogic(reduction, np.logical_and, True)


@dataclass(frozen=True, eq=False)
class ReduceProdQuantized:
    """int8 / int16 quantized REDUCE_PROD (reference_ops::QuantizedReduceProd): ``p = x0 - zi``, then for each
    further reduced element in input order ``p = MBQM64(p * (x - zi), M, e)``, finally
    ``clamp(MBQM64(p, M, e) + zo)``, with ``(M, e) = QuantizeMultiplier(s_in / s_out ** (1 / n))`` in double.
    The products are sequential, so this loops over the n reduced elements (each step vectorized over the
    outputs). An empty input leaves LiteRT's output unwritten; we write the output zero point."""

    reduction: Reduction
    zi: int
    zo: int
    multiplier: int
    shift: int
    qmin: int
    qmax: int

    def __call__(self, inputs, outputs):
        r = self.reduction
        flat = outputs[OUTPUT].reshape(r.m)
        if inputs[INPUT].size == 0:
            flat[...] = self.zo
            return
        y = r.rows(inputs[INPUT]).astype(np.int64)
        y -= self.zi
        p = y[0].copy()
        # MBQM64 inlined (tflite/kernels/internal/common.cc, int64 overload): Mr = the 16-bit reduced
        # multiplier, r = wrap32((x*Mr + 2^(14-e)) >> (15-e)); |p * x| < 2^47, so x*Mr stays below 2^62.
        mr, total = self.reduced_multiplier, 15 - self.shift
        half = 1 << (total - 1)
        for k in range(1, r.n + 1):  # p = MBQM64(p * y[k]) for each further element, then MBQM64(p) once more
            if k < r.n:
                p *= y[k]
            p *= mr
            p += half
            p >>= total
            p += 1 << 31
            p &= 0xFFFFFFFF
            p -= 1 << 31
        p += self.zo
        clip_ufunc(p, self.qmin, self.qmax, out=flat, casting="unsafe")

    @property
    def reduced_multiplier(self) -> int:
        m = self.multiplier
        return (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF


def _prod_quantized_op(x: TensorInfo | np.ndarray, scales: tuple, reduction: Reduction, size: int):
    """The ReduceProdQuantized of one reduction, or an error message (PrepareProd's multiplier)."""
    s_in, s_out, zi, zo, qmin, qmax = scales
    m, shift = 0, 0
    if size and reduction.m:
        scaling = float(np.float64(s_in) / np.float64(s_out) ** (1.0 / reduction.n))
        m, shift = quantize_multiplier(scaling)
        if not -31 <= shift <= 7:
            raise InputValueError(f"REDUCE_PROD: the scaling {scaling!r} is out of range (shift {shift})")
    return ReduceProdQuantized(reduction, zi, zo, m, shift, qmin, qmax)


def _generic_make(code: int, x: np.ndarray, axes, reduction: Reduction):
    return _generic_op(code, x.dtype, reduction, len(axes) == x.ndim)


def _prod_quantized_make(scales: tuple, x: np.ndarray, axes, reduction: Reduction):
    return _prod_quantized_op(x, scales, reduction, x.size)


@register(BuiltinOperator.REDUCE_MAX)
@register(BuiltinOperator.REDUCE_MIN)
@register(BuiltinOperator.REDUCE_PROD)
@register(BuiltinOperator.REDUCE_ANY)
@register(BuiltinOperator.REDUCE_ALL)
def prepare_reduce_generic(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, axis, y = ctx.input(INPUT), ctx.input(AXIS), ctx.outputs[OUTPUT]
    code = ctx.builtin_code
    ctx.check(axis.type == _I32, f"op_context.axis->type != kTfLiteInt32 ({axis.type_name} != INT32)")
    if code in (BuiltinOperator.REDUCE_ANY, BuiltinOperator.REDUCE_ALL):
        ctx.check(x.type == _BOOL, f"input->type != kTfLiteBool ({x.type_name} != BOOL)")
    elif x.type not in _MINMAX_REDUCE_TYPES:
        raise ctx.fail(f"Type {x.type_name} is unsupported by op {ctx.op_name}.")
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    keep_dims = bool(ctx.options.keep_dims)
    if code == BuiltinOperator.REDUCE_PROD and x.quantization.is_quantized and x.type != _BOOL:
        return _prepare_prod_quantized(ctx, x, axis, y, keep_dims)
    if x.type in (_U8, _I8, _I16):
        if x.type == _I16:  # PrepareSimple
            ctx.check(x.zero_point == 0, f"op_context.input->params.zero_point != 0 ({x.zero_point} != 0)")
            ctx.check(y.zero_point == 0, f"op_context.output->params.zero_point != 0 ({y.zero_point} != 0)")
        # EvalType: raw values are reduced, so input and output must share scale and zero point
        ctx.check(
            x.scale == y.scale and x.zero_point == y.zero_point,
            f"input->params != output->params (scale {x.scale} vs {y.scale}, zero point {x.zero_point} vs "
            f"{y.zero_point})",
        )
    if not axis.is_constant and axis.size > 0:
        ctx.set_output_dynamic(OUTPUT)
        return ReduceDynamicAxes(keep_dims, functools.partial(_generic_make, code))
    try:
        axes = resolve_axes(len(x.shape), axis.data.reshape(-1) if axis.is_constant else ())
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.set_output_shape(OUTPUT, reduced_shape(x.shape, axes, keep_dims))
    return _generic_op(code, x.dtype, Reduction.of(x.shape, axes), len(axes) == len(x.shape))


def _prepare_prod_quantized(ctx: OpContext, x: TensorInfo, axis: TensorInfo, y: TensorInfo, keep_dims: bool):
    """PrepareProd's quantized branch: int8 / int16 only (int16 zero points 0), per-tensor parameters."""
    ctx.check(x.type in (_I8, _I16), f"Unsupported quantized data type: {x.type_name}")
    for name, t in (("input", x), ("output", y)):
        ctx.check(
            len(t.quantization.scale) == 1 and np.isfinite(t.scale) and t.scale > 0,
            f"REDUCE_PROD: the {name} needs one positive scale",
        )
    if x.type == _I16:
        ctx.check(x.zero_point == 0, f"op_context.input->params.zero_point != 0 ({x.zero_point} != 0)")
        ctx.check(y.zero_point == 0, f"op_context.output->params.zero_point != 0 ({y.zero_point} != 0)")
    qmin, qmax = dtype_range(y.dtype)
    scales = (x.scale, y.scale, x.zero_point, y.zero_point, qmin, qmax)
    if not axis.is_constant and axis.size > 0:
        ctx.set_output_dynamic(OUTPUT)
        return ReduceDynamicAxes(keep_dims, functools.partial(_prod_quantized_make, scales))
    try:
        axes = resolve_axes(len(x.shape), axis.data.reshape(-1) if axis.is_constant else ())
        ctx.set_output_shape(OUTPUT, reduced_shape(x.shape, axes, keep_dims))
        reduction = Reduction.of(x.shape, axes)
        refuse_empty_quantized(ctx, reduction)
        return _prod_quantized_op(x, scales, reduction, x.size)
    except ValueError as e:
        raise ctx.fail(str(e)) from None
