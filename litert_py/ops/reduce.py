"""Reductions: MEAN and SUM (every dtype path LiteRT has, quantized included).

Axis handling and output shape follow reduce.cc (ResolveAxis, GetOutputShape), shared by every reducer:
the axis tensor is int32 (any shape; its values are read flat); negative axes count from the end,
repeated axes count once, an axis outside [-rank, rank) is rejected; ``keep_dims`` keeps reduced axes as 1.
A rank-0 input ignores the axes and gives a rank-0 output. A constant axis tensor gives a static output shape;
otherwise the output is dynamic and the axes are read at eval.

MEAN (ai-edge-litert 2.3.0, BUILTIN_REF):
- float32: sum in float32, accumulated in the input's row-major order as reference_ops::ReduceSumImpl does
  (not NumPy's pairwise sum), then divided by the number of reduced elements.
- int32 / int64: sum in int64 (wrapping), then C++ division truncating toward zero; int32 converts back by
  wrapping (static_cast).
- uint8 / int8 / int16 (int16: zero points 0): reference_ops::QuantizedMeanOrSum for every shape and axis list
  (the 4-D spatial special case exists only in LiteRT's optimized kernels, which can differ by 1):
  ``(M, e) = QuantizeMultiplier(f64(s_in) / f64(s_out))``, ``k = min(floor(log2 n), 32, 31 + e)``,
  ``M' = (M << k) / n``, ``out = clamp(MBQM(wrap32(sum - zi n), M', e - k) + zo)`` with an int32 sum.
- An empty input fills the output with NaN (0 for integers: quiet_NaN of an integer type), as
  InitializeMeanOutput does.

SUM:
- float32 / int32 / int64: the reference kernel's in-order sum in the input type (integers wrap); bool: OR.
- uint8: the integer formula above without the 1/n (BUILTIN_REF).
- int8 / int16: LiteRT's *optimized* float formula (optimized_ops::QuantizedMeanOrSum):
  ``clamp(int32(roundf(f32(f32(sum) f32(s_in/s_out)) + f32(f32(-zi s_in/s_out) n))) + zo)``. The reference
  kernel reads int8 / int16 data as uint8 bytes, a LiteRT bug (docs/quantized-arithmetic.md 5.12).
- An empty input gives zeros (the reducers' initial value).

REDUCE_MAX / REDUCE_MIN (float32, int32, int64, uint8, int8, int16, bool; quantized 8/16-bit reduce raw values
and need equal input / output scale and zero point), REDUCE_PROD (float32 in input order, integers wrapping,
bool; quantized int8 / int16 as reference_ops::QuantizedReduceProd, see ReduceProdQuantized), REDUCE_ANY /
REDUCE_ALL (bool): reduce.cc EvalGeneric with the reference reducers; see ReduceMaxMinFloat for NaN, inf and -0.0.

ARG_MAX / ARG_MIN (float32, uint8, int8, int32, bool; int32 / int64 axis and output): first extreme index,
see ArgMaxMin for NaN. CUMSUM (float32, int32, int64; int32 axis; exclusive, reverse): sequential running sum.

Sources matched: tflite/kernels/{reduce,arg_min_max,cumsum}.cc, reference/arg_min_max.h,
tflite/kernels/internal/reference/reduce.h (Mean, ReduceSumImpl,
ResolveAxis, QuantizedMeanOrSum, ReduceGeneric), tflite/kernels/internal/optimized/reduce.h
(QuantizedMeanOrSum), tflite/kernels/internal/common.h (MultiplyByQuantizedMultiplier),
tflite/kernels/internal/optimized/optimized_ops.h (ArgMinMax, ArgMaxVector / ArgMinVector) with NEON_2_SSE.h's
vpmax_f32 / vpmin_f32 (the x86 wheel's NEON emulation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputValueError
from ..quant import dtype_range, quantize_multiplier, requantize_int64_inplace, round_away, trunc_to_int32, wrap32
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .common import Reduction, clip_ufunc
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT, AXIS, OUTPUT = 0, 1, 0

_F32, _I32, _I64 = TensorType.FLOAT32, TensorType.INT32, TensorType.INT64
_U8, _I8, _I16, _BOOL = TensorType.UINT8, TensorType.INT8, TensorType.INT16, TensorType.BOOL


# -- axes and shapes (every reducer) ----------------------------------------------------------------
def resolve_axes(rank: int, axis_values: Sequence[int]) -> tuple[int, ...]:
    """ResolveAxis: non-negative axes in the order given, repeats dropped. Raises ValueError when out of range."""
    if rank == 0:
        return ()
    axes: list[int] = []
    for a in (int(v) for v in axis_values):
        r = a + rank if a < 0 else a
        if not 0 <= r < rank:
            raise InputValueError(f"Invalid axis index {a} for a rank-{rank} input.")
        if r not in axes:
            axes.append(r)
    return tuple(axes)


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keep_dims: bool) -> tuple[int, ...]:
    """GetOutputShape: reduced axes become 1 (keep_dims) or disappear."""
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


# -- MEAN -----------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MeanFloat:
    """float32 MEAN: in-order float32 sum, then one division by the count."""

    reduction: Reduction

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        self.reduction.sum_in_order(inputs[INPUT], out)
        np.divide(out, np.float32(self.reduction.n), out=out)


@dataclass(frozen=True, eq=False)
class MeanInt:
    """int32 / int64 MEAN: int64 sum (wrapping), C++ truncating division, static_cast back."""

    reduction: Reduction

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        total = np.empty(out.shape, np.int64)
        self.reduction.sum_in_order(inputs[INPUT], total)
        n = np.int64(self.reduction.n)
        q = np.floor_divide(total, n)
        q += (q * n != total) & (total < 0)  # floor -> toward zero
        np.copyto(out, q, casting="unsafe")


@dataclass(frozen=True, eq=False)
class Fill:
    """An empty input: every output element is ``value`` (InitializeMeanOutput)."""

    value: object

    def __call__(self, inputs, outputs):
        outputs[OUTPUT][...] = self.value


@dataclass(frozen=True, eq=False)
class SumInOrder:
    """float32 / int32 / int64 SUM: the reference kernel's in-order sum in the input's type (integers wrap)."""

    reduction: Reduction

    def __call__(self, inputs, outputs):
        self.reduction.sum_in_order(inputs[INPUT], outputs[OUTPUT])


@dataclass(frozen=True, eq=False)
class SumBool:
    """bool SUM: ``current + in`` converted back to bool, i.e. a logical OR."""

    reduction: Reduction

    def __call__(self, inputs, outputs):
        np.logical_or.reduce(self.reduction.rows(inputs[INPUT]), axis=0, out=outputs[OUTPUT].reshape(self.reduction.m))


def _int_sums(reduction: Reduction, x: np.ndarray) -> np.ndarray:
    """The int32 sums of the quantized kernels (``temp_sum``, wrapping), as int64, one per output."""
    return wrap32(np.add.reduce(reduction.rows(x), axis=0, dtype=np.int64))


def _may_wrap(n: int, zi: int, qmin: int, qmax: int) -> bool:
    """Whether ``sum(x - zi)`` over n values in [qmin, qmax] can leave int32 (then the int32 arithmetic wraps)."""
    return n * max(abs(qmin - zi), abs(qmax - zi)) > 2**31 - 1


@dataclass(frozen=True, eq=False)
class MeanQuantized:
    """uint8 / int8 / int16 MEAN (and uint8 SUM), reference_ops::QuantizedMeanOrSum:
    ``clamp(MBQM(wrap32(sum - zi * n), M, shift) + zo, type range)``; for MEAN, ``(M, shift)`` already holds
    the 1/n factor (see ``_mean_multiplier``)."""

    reduction: Reduction
    multiplier: int
    shift: int
    zi_n: int  # input zero point times n
    zo: int
    qmin: int
    qmax: int
    wrap: bool  # the int32 sums can wrap (else they are exact in int64 and the wrap32 passes are skipped)

    def __call__(self, inputs, outputs):
        total = np.add.reduce(self.reduction.rows(inputs[INPUT]), axis=0, dtype=np.int64)
        total -= self.zi_n
        if self.wrap:  # int32 arithmetic is modular: one wrap at the end equals wrapping every addition
            wrap32(total, out=total)
        requantize_int64_inplace(
            total, self.multiplier, self.shift, self.zo, self.qmin, self.qmax, outputs[OUTPUT].reshape(self.reduction.m)
        )


@dataclass(frozen=True, eq=False)
class SumQuantizedFloat:
    """int8 / int16 SUM as LiteRT's optimized kernel computes it (optimized_ops::QuantizedMeanOrSum), in float32:
    ``clamp(int32(roundf(f32(f32(sum) * scale) + bias)) + zo)`` with ``scale = f32(s_in / s_out)`` and
    ``bias = f32(f32(-zi * scale) * n)``.

    LiteRT's reference SUM reads int8 / int16 data as uint8 (reference_ops::QuantizedMeanOrSum<uint8_t> on the
    raw bytes), which is wrong whenever a value is negative; this is the default (optimized) kernel's result.
    """

    reduction: Reduction
    scale: np.float32
    bias: np.float32
    zo: int
    qmin: int
    qmax: int

    def __call__(self, inputs, outputs):
        v = _int_sums(self.reduction, inputs[INPUT]).astype(np.float32)
        v *= self.scale
        v += self.bias
        q = wrap32(trunc_to_int32(round_away(v, out=v)) + self.zo)
        clip_ufunc(q, self.qmin, self.qmax, out=outputs[OUTPUT].reshape(self.reduction.m), casting="unsafe")


# -- MEAN, SUM: which op for which path --------------------------------------------------------------
@dataclass(frozen=True)
class QuantParams:
    """Prepare-time quantization data of a quantized MEAN / SUM (before the reduction length is known)."""

    multiplier: int  # QuantizeMultiplier(f64(s_in) / f64(s_out))
    shift: int
    s_in: float
    s_out: float
    zi: int
    zo: int
    qmin: int
    qmax: int


def _mean_multiplier(multiplier: int, shift: int, n: int) -> tuple[int, int]:
    """Fold 1/n into (M, shift) as QuantizedMeanOrSum does: ``k = min(floor(log2 n), 32, 31 + shift)``,
    ``M' = (M << k) / n`` (int64, truncating), ``shift' = shift - k``."""
    k = min(n.bit_length() - 1, 32, 31 + shift)
    return (multiplier << k) // n, shift - k


def _reduce_op(path: str, reduction: Reduction, size: int, qp: QuantParams | None):
    """The prepared op of one MEAN / SUM path for a given reduction."""
    if size == 0:
        return Fill(np.nan if path == "mean-float" else 0)  # InitializeMeanOutput / the reducers' init value
    n = reduction.n
    if path == "mean-float":
        return MeanFloat(reduction)
    if path == "mean-int":
        return MeanInt(reduction)
    if path == "sum":
        return SumInOrder(reduction)
    if path == "sum-bool":
        return SumBool(reduction)
    if path == "sum-float":
        scale = np.float32(np.float32(qp.s_in) / np.float32(qp.s_out))
        bias = np.float32(np.float32(np.float32(-qp.zi) * scale) * np.float32(n))
        return SumQuantizedFloat(reduction, scale, bias, qp.zo, qp.qmin, qp.qmax)
    m, shift = _mean_multiplier(qp.multiplier, qp.shift, n) if path == "mean-q" else (qp.multiplier, qp.shift)
    return MeanQuantized(reduction, m, shift, qp.zi * n, qp.zo, qp.qmin, qp.qmax, _may_wrap(n, qp.zi, qp.qmin, qp.qmax))


@dataclass(frozen=True, eq=False)
class ReduceDynamicAxes:
    """MEAN / SUM whose axis tensor is not constant: axes, output shape and the op are worked out at eval."""

    keep_dims: bool
    path: str
    qp: QuantParams | None

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        axes = resolve_axes(x.ndim, inputs[AXIS].reshape(-1))
        out = np.empty(reduced_shape(x.shape, axes, self.keep_dims), x.dtype)
        _reduce_op(self.path, Reduction.of(x.shape, axes), x.size, self.qp)([x], [out])
        outputs[OUTPUT] = out


def _quant_params(ctx: OpContext, x: TensorInfo, y: TensorInfo) -> QuantParams:
    for name, t in (("input", x), ("output", y)):
        q = t.quantization
        ctx.check(
            len(q.scale) <= 1, f"{ctx.op_name}: the {name} has per-channel quantization; only per-tensor is supported"
        )
        ctx.check(
            q.is_quantized and np.isfinite(t.scale) and t.scale > 0,
            f"{ctx.op_name} on {t.type_name} needs a quantized {name} with a positive scale",
        )
    if x.type == _I16:  # PrepareSimple
        ctx.check(x.zero_point == 0, f"op_context.input->params.zero_point != 0 ({x.zero_point} != 0)")
        ctx.check(y.zero_point == 0, f"op_context.output->params.zero_point != 0 ({y.zero_point} != 0)")
    real = float(np.float64(x.scale) / np.float64(y.scale))  # PrepareMeanOrSum: in double
    ctx.check(np.isfinite(real), f"{ctx.op_name}: the scale ratio {real} is not finite")
    m, shift = quantize_multiplier(real)
    ctx.check(shift <= 31, f"{ctx.op_name}: the input/output scale ratio {real!r} is too large (shift {shift})")
    qmin, qmax = dtype_range(y.dtype)
    return QuantParams(m, shift, x.scale, y.scale, x.zero_point, y.zero_point, qmin, qmax)


_MEAN_TYPES = (_F32, _I32, _I64, _U8, _I8, _I16)
_SUM_TYPES = (*_MEAN_TYPES, _BOOL)


@register(BuiltinOperator.MEAN)
@register(BuiltinOperator.SUM)
def prepare_mean_sum(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, axis, y = ctx.input(INPUT), ctx.input(AXIS), ctx.outputs[OUTPUT]
    ctx.check(axis.type == _I32, f"op_context.axis->type != kTfLiteInt32 ({axis.type_name} != INT32)")
    is_sum = ctx.builtin_code == BuiltinOperator.SUM
    if x.type not in (_SUM_TYPES if is_sum else _MEAN_TYPES):
        raise ctx.fail(f"Type {x.type_name} is unsupported by op {ctx.op_name}.")
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    qp = None
    if x.type in (_U8, _I8, _I16):
        qp = _quant_params(ctx, x, y)
        # uint8 SUM: the reference integer formula; int8 / int16 SUM: the optimized kernel's float formula
        # (the reference one reinterprets the bytes as uint8, see SumQuantizedFloat)
        path = ("sum-q" if x.type == _U8 else "sum-float") if is_sum else "mean-q"
    elif is_sum:
        path = "sum-bool" if x.type == _BOOL else "sum"
    else:
        path = "mean-float" if x.type == _F32 else "mean-int"
    keep_dims = bool(ctx.options.keep_dims)
    if not axis.is_constant and axis.size > 0:
        ctx.set_output_dynamic(OUTPUT)
        return ReduceDynamicAxes(keep_dims, path, qp)
    try:  # an empty axis tensor has no buffer (so is not "constant") but its values are known: none
        axes = resolve_axes(len(x.shape), axis.data.reshape(-1) if axis.is_constant else ())
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.set_output_shape(OUTPUT, reduced_shape(x.shape, axes, keep_dims))
    reduction = Reduction.of(x.shape, axes)
    if path == "sum-float":
        _refuse_empty_quantized(ctx, reduction)
    return _reduce_op(path, reduction, x.size, qp)


def _refuse_empty_quantized(ctx: OpContext, reduction: Reduction) -> None:
    """int8 / int16 SUM and REDUCE_PROD over no element: LiteRT's kernels return uninitialized scratch values
    (e.g. SUM int16 of a (0, 3, 4) input over axes 0 and 2 gives [0 16128 32670], its optimized kernel
    [7792 16383 32670]; the sum is 0), so the model is refused rather than answered differently."""
    ctx.check(
        reduction.n > 0 or reduction.m == 0,
        f"quantized {ctx.op_name} over an empty dimension: LiteRT returns uninitialized values there",
    )


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


@dataclass(frozen=True, eq=False)
class ReduceProdQuantizedDynamicAxes:
    """Quantized REDUCE_PROD whose axis tensor is not constant."""

    keep_dims: bool
    scales: tuple

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        axes = resolve_axes(x.ndim, inputs[AXIS].reshape(-1))
        out = np.empty(reduced_shape(x.shape, axes, self.keep_dims), x.dtype)
        _prod_quantized_op(x, self.scales, Reduction.of(x.shape, axes), x.size)([x], [out])
        outputs[OUTPUT] = out


@dataclass(frozen=True, eq=False)
class ReduceGenericDynamicAxes:
    """A generic reducer whose axis tensor is not constant: axes, output shape and the op worked out at eval."""

    code: int
    keep_dims: bool

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        axes = resolve_axes(x.ndim, inputs[AXIS].reshape(-1))
        out = np.empty(reduced_shape(x.shape, axes, self.keep_dims), x.dtype)
        _generic_op(self.code, x.dtype, Reduction.of(x.shape, axes), len(axes) == x.ndim)([x], [out])
        outputs[OUTPUT] = out


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
        return ReduceGenericDynamicAxes(code, keep_dims)
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
        return ReduceProdQuantizedDynamicAxes(keep_dims, scales)
    try:
        axes = resolve_axes(len(x.shape), axis.data.reshape(-1) if axis.is_constant else ())
        ctx.set_output_shape(OUTPUT, reduced_shape(x.shape, axes, keep_dims))
        reduction = Reduction.of(x.shape, axes)
        _refuse_empty_quantized(ctx, reduction)
        return _prod_quantized_op(x, scales, reduction, x.size)
    except ValueError as e:
        raise ctx.fail(str(e)) from None


# -- ARG_MAX, ARG_MIN (arg_min_max.cc, reference/arg_min_max.h, optimized_ops.h ArgMinMax) ---------------
@dataclass(frozen=True, eq=False)
class ArgMaxMin:
    """Index of the first maximum (minimum) along ``axis``: a later element wins only when strictly greater
    (less). arg_min_max.cc registers one kernel for every resolver (BUILTIN_REF included): it calls
    optimized_ops::ArgMinMax, which sends float32 / int8 / uint8 with an inner size of 1 (every axis after the
    reduced one has size 1) to ArgMinMaxLastAxis and everything else to reference_ops::ArgMinMax. Integers and
    float32 without NaN give the first extreme index on both paths.

    float32 NaN, reference path (inner size > 1, reference/arg_min_max.h NaN-aware comparator): a NaN candidate
    never wins and a NaN current value is replaced by any non-NaN one: the first non-NaN extreme, 0 if all NaN.

    float32 NaN, inner size 1 (ArgMaxVector / ArgMinVector<float>, optimized_ops.h, built with USE_NEON on
    x86-64 through NEON_2_SSE.h, no __aarch64__): for a length n < 4 the scalar loop above. For n >= 4, with
    k = 4 * (n // 4): lane j (elements j, j+4, ... below k) keeps its first non-NaN extreme and its index (NaN
    if the lane is all NaN); the lanes are folded as ``m = p(p(l0, l1), p(l2, l3))`` with NEON_2_SSE's serial
    vpmax_f32 ``p(a, b) = b if a < b else a`` (vpmin_f32: ``b if a > b else a``), so a NaN first operand
    propagates and a NaN second operand is dropped; the index is the smallest lane index whose lane value
    equals m (none when m is NaN). The tail (elements k..n-1) then runs the NaN-aware scalar loop from (m,
    index); a final NaN m gives 0. E.g. ARG_MAX [1, 2, NaN, 3] = 1, [NaN, NaN, 5, 8, 2] = 4. See _lanes_arg."""

    axis: int | None  # None: read from the axis tensor at eval
    is_max: bool
    out_dtype: np.dtype
    lanes: bool = False  # float32 with inner size 1 and axis length >= 4 (the vectorized kernel)

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if self.axis is None:
            axis = _arg_axis(int(inputs[AXIS].reshape(-1)[0]), x.ndim)
            lanes = _uses_lanes(x.dtype.kind == "f", x.shape, axis)
        else:
            axis, lanes = self.axis, self.lanes
        if lanes:
            best = (np.maximum if self.is_max else np.minimum).reduce(x, axis=axis, keepdims=True)
            if np.isnan(best).any():  # NaN somewhere: the vectorized kernel's own NaN behaviour
                idx = _lanes_arg(x.reshape(-1, x.shape[axis]), self.is_max).reshape(
                    x.shape[:axis] + x.shape[axis + 1 :]
                )
            else:  # no NaN: the first extreme, as on the reference path
                idx = np.argmax(x == best, axis=axis)
        elif x.dtype.kind == "f":
            best = (np.fmax if self.is_max else np.fmin).reduce(x, axis=axis, keepdims=True)
            idx = np.argmax(x == best, axis=axis)
        else:
            idx = (np.argmax if self.is_max else np.argmin)(x, axis=axis)
        if self.axis is None:
            outputs[OUTPUT] = idx.astype(self.out_dtype)
        else:
            np.copyto(outputs[OUTPUT], idx, casting="unsafe")


def _lanes_arg(x: np.ndarray, is_max: bool) -> np.ndarray:
    """ArgMaxVector / ArgMinVector<float> (NEON via NEON_2_SSE) for each row of ``x`` (rows, n), n >= 4."""
    rows, n = x.shape
    k = n - n % 4
    red = np.fmax if is_max else np.fmin
    v = x[:, :k].reshape(rows, k // 4, 4)
    lane = v  # each lane's non-NaN extreme (NaN when the lane is all NaN), halving the chunks (fast on any shape)
    while lane.shape[1] > 1:
        h = lane.shape[1] // 2
        half = red(lane[:, :h], lane[:, h : 2 * h])
        lane = np.concatenate((half, lane[:, 2 * h :]), axis=1) if lane.shape[1] % 2 else half
    lane = lane[:, 0]
    lane_idx = np.argmax(v == lane[:, None, :], axis=1) * 4 + np.arange(4)  # first index of it in its lane
    if is_max:

        def fold(a, b):
            return np.where(a < b, b, a)  # vpmax_f32: (a < b) ? b : a
    else:

        def fold(a, b):
            return np.where(a > b, b, a)  # vpmin_f32: (a > b) ? b : a

    m = fold(fold(lane[:, 0], lane[:, 1]), fold(lane[:, 2], lane[:, 3]))
    m_nan = np.isnan(m)
    hit = np.where(lane == m[:, None], lane_idx, n)  # index masks as vbslq_s32, then the smallest one
    res = np.where(m_nan, 0, np.minimum(np.minimum(hit[:, 0], hit[:, 1]), np.minimum(hit[:, 2], hit[:, 3])))
    if k < n:  # scalar tail: a non-NaN element wins over a NaN m or when strictly better
        t = x[:, k:]
        tb = t[:, 0] if n - k == 1 else red(t[:, 0], t[:, 1]) if n - k == 2 else red(red(t[:, 0], t[:, 1]), t[:, 2])
        better = (tb > m) if is_max else (tb < m)
        take = ~np.isnan(tb) & (m_nan | better)
        res = np.where(take, k + np.argmax(t == tb[:, None], axis=1), res)
    return res


def _uses_lanes(is_float: bool, shape: Sequence[int], axis: int) -> bool:
    """optimized_ops::ArgMinMax takes ArgMinMaxLastAxis (inner size 1); its float kernel vectorizes from 4."""
    return is_float and shape[axis] >= 4 and all(d == 1 for d in shape[axis + 1 :])


def _arg_axis(a: int, rank: int) -> int:
    r = a + rank if a < 0 else a
    if not 0 <= r < rank:
        raise InputValueError(f"Invalid axis index {a} for a rank-{rank} input.")
    return r


_ARG_TYPES = (_F32, _U8, _I8, _I32, _BOOL)


@register(BuiltinOperator.ARG_MAX)
@register(BuiltinOperator.ARG_MIN)
def prepare_arg_max_min(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, axis, y = ctx.input(INPUT), ctx.input(AXIS), ctx.outputs[OUTPUT]
    ctx.check(axis.size == 1, f"NumElements(axis) != 1 ({axis.size} != 1)")
    ctx.check(axis.type in (_I32, _I64), "axis->type == kTfLiteInt32 || axis->type == kTfLiteInt64 was not true.")
    ctx.check(y.type in (_I32, _I64), f"Unknown index output data type: {y.type_name}")
    if x.type not in _ARG_TYPES:
        raise ctx.fail(f"Unknown input type: {x.type_name}")
    ctx.check(len(x.shape) >= 1, "NumDimensions(input) >= 1 was not true.")
    is_max = ctx.builtin_code == BuiltinOperator.ARG_MAX
    if not axis.is_constant:
        ctx.set_output_dynamic(OUTPUT)
        return ArgMaxMin(None, is_max, y.dtype)
    try:
        a = _arg_axis(int(axis.data.reshape(-1)[0]), len(x.shape))
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.check(x.shape[a] > 0, "Cannot compute ArgMin/ArgMax over an empty axis.")
    ctx.set_output_shape(OUTPUT, tuple(d for i, d in enumerate(x.shape) if i != a))
    return ArgMaxMin(a, is_max, y.dtype, _uses_lanes(x.type == _F32, x.shape, a))


# -- CUMSUM (cumsum.cc, optimized_ops::CumSum) --------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Cumsum:
    """Running sum along ``axis`` in the input type (integers wrap), added in order (reversed for ``reverse``);
    ``exclusive`` shifts it by one, starting from 0."""

    axis: int | None  # None: read from the axis tensor at eval
    exclusive: bool
    reverse: bool

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        if x.size == 0:
            return
        axis = self.axis if self.axis is not None else _arg_axis(int(inputs[AXIS].reshape(-1)[0]), x.ndim)
        if self.reverse:
            x = np.flip(x, axis)
            target = np.flip(out, axis)
        else:
            target = out
        if self.exclusive:
            n = x.shape[axis]
            head = [slice(None)] * x.ndim
            head[axis] = slice(0, 1)
            target[tuple(head)] = 0
            if n > 1:
                src, dst = list(head), list(head)
                src[axis], dst[axis] = slice(0, n - 1), slice(1, n)
                np.add.accumulate(x[tuple(src)], axis=axis, dtype=out.dtype, out=target[tuple(dst)])
        else:
            np.add.accumulate(x, axis=axis, dtype=out.dtype, out=target)


@register(BuiltinOperator.CUMSUM)
def prepare_cumsum(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, axis, y = ctx.input(INPUT), ctx.input(AXIS), ctx.outputs[OUTPUT]
    ctx.check(
        x.type in (_I32, _F32, _I64),
        "input->type == kTfLiteInt32 || input->type == kTfLiteFloat32 || input->type == kTfLiteInt64 was not true.",
    )
    ctx.check(axis.type == _I32, f"axis->type != kTfLiteInt32 ({axis.type_name} != INT32)")
    ctx.check(axis.size == 1, f"NumElements(axis) != 1 ({axis.size} != 1)")
    ctx.check(len(x.shape) >= 1, "NumDimensions(input) >= 1 was not true.")
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    ctx.set_output_shape(OUTPUT, x.shape)
    a = None
    if axis.is_constant:
        try:
            a = _arg_axis(int(axis.data.reshape(-1)[0]), len(x.shape))
        except ValueError as e:
            raise ctx.fail(str(e)) from None
    return Cumsum(a, bool(ctx.options.exclusive), bool(ctx.options.reverse))
