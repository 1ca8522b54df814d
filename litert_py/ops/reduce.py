"""Reductions: MEAN and SUM (every dtype path LiteRT has, quantized included).

Axis handling and output shape: reduce_common.py, shared with reduce_generic.py.

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

Generic reductions (REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL) are in reduce_generic.py,
which shares the axis handling (reduce_common.py); ARG_MAX / ARG_MIN / CUMSUM in reduce_axis.py.

Sources matched: tflite/kernels/reduce.cc, tflite/kernels/internal/reference/reduce.h (Mean, ReduceSumImpl,
ResolveAxis, QuantizedMeanOrSum), tflite/kernels/internal/optimized/reduce.h (QuantizedMeanOrSum),
tflite/kernels/internal/common.h (MultiplyByQuantizedMultiplier).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..quant import dtype_range, quantize_multiplier, requantize_int64_inplace, round_away, trunc_to_int32, wrap32
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .bound_plan import BoundCalls, contiguous_source
from .common import Reduction, c_einsum, clip_ufunc, reshape_view
from .reduce_common import AXIS, INPUT, OUTPUT, ReduceDynamicAxes, reduced_shape, refuse_empty_quantized, resolve_axes
from .registry import OpContext, PreparedOp, TensorInfo, register

_F32, _I32, _I64 = TensorType.FLOAT32, TensorType.INT32, TensorType.INT64
_U8, _I8, _I16, _BOOL = TensorType.UINT8, TensorType.INT8, TensorType.INT16, TensorType.BOOL


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
class MeanFloatColumns(BoundCalls):
    """float32 MEAN with more than one output (a global spatial mean over NHWC keeps C): the same in-order sum
    as MeanFloat, by np.einsum over the C-contiguous (n, m) rows. With m > 1 the outputs' axis has the smaller
    stride, so numpy's iterator runs it innermost and steps through the n rows in the outer loop; einsum's inner
    loop for an output with a non-zero stride adds elementwise (out[j] += row[j]): per output the sequential
    float32 sum from +0.0 in row-major order, as reference_ops::ReduceSumImpl accumulates from its 0 init (a row
    of -0.0 gives +0.0 there; np.add.reduce started from the first row and kept -0.0). About 5x cheaper per
    inner loop than np.add.reduce (72x128x16 -> 16: 170 -> 41 us). The (n, m) view is copied when the reduced
    axes do not lead (else einsum could pick the reduced axis as its inner loop and sum it in SIMD lanes)."""

    reduction: Reduction
    count: np.float32

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """A bound plan (ops/bound_plan.py; a layer norm's (1, 32, 64) -> (1, 32, 1) MEAN in invokes: 7.5 -> 5.6 us):
        the transposed input copied into a C-contiguous scratch made at bind when it is not one already (the
        (n, m) rows np.ascontiguousarray made per call, the same values in the same layout; an input-sized array
        kept while the op is bound, outside the arena), einsum's sum into
        the output (into a scratch when the output is not C-contiguous, copied after), the division."""
        r, calls = self.reduction, []
        rows = contiguous_source(x.transpose(r.perm), calls).reshape(r.n, r.m)  # a view of a C-contiguous array
        dst = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
        calls.append((c_einsum, ("ij->j", rows), {"out": dst.reshape(r.m)}))
        calls.append((np.divide, (dst, self.count), {"out": dst}))
        if dst is not out:
            calls.append((np.copyto, (out, dst), {}))
        return tuple(calls)


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
class SumColumns:
    """SumInOrder with more than one output: np.einsum over the C-contiguous (n, m) rows, the in-order sum of
    MeanFloatColumns (float32; int32 / int64 sums wrap in the input's type and are exact in any order)."""

    reduction: Reduction

    def __call__(self, inputs, outputs):
        r = self.reduction
        np.einsum("ij->j", np.ascontiguousarray(r.rows(inputs[INPUT])), out=outputs[OUTPUT].reshape(r.m))


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


#: 8-bit MEAN (and uint8 SUM) over n <= MEAN_TABLE_MAX_COUNT values reads its result from a table of every sum.
MEAN_TABLE_MAX_COUNT = 1024


@dataclass(frozen=True, eq=False)
class MeanQuantizedTable(BoundCalls):
    """MeanQuantized for 8-bit types and n <= MEAN_TABLE_MAX_COUNT: one gather from a table of every possible
    sum replaces the int64 requantization passes. Exact: the table holds MeanQuantized's own arithmetic
    (requantize_int64_inplace of wrap32(sum - zi * n)) evaluated at prepare on every sum in [qmin * n, qmax * n];
    entry ``s mod len(table)`` holds sum ``s``'s result (the table has 255 * n + 1 entries, one per sum, so
    ``take(mode="wrap")`` reads negative int8 sums without an offset pass).

    ``sum_dtype``: the sums are accumulated in int16 (int8 input) / uint16 (uint8 input) when no sum of n values
    can leave that type (n * 128 <= 32768, n * 255 <= 65535: checked at ``build``), else in int32 (n <=
    MEAN_TABLE_MAX_COUNT: |sum| <= 255 * 1024, far inside int32; np.take converts the indices). Measured
    alone (1 thread, (n, m) = (64, 96) .. (64, 240)): 4.5-8.2 -> 3.2-4.0 us; int32 against intp (medians of 7
    alternated rounds, the reduction alone): (1024, 32) 24.0 -> 16.0 us, (256, 144) 16.5 -> 8.1 us."""

    reduction: Reduction
    table: np.ndarray  # (255 * n + 1,) in the output type, rolled: entry s mod len holds sum s
    sum_dtype: np.dtype

    @staticmethod
    def build(reduction: Reduction, op: MeanQuantized, dtype) -> MeanQuantizedTable:
        n = reduction.n
        total = np.arange(op.qmin * n, op.qmax * n + 1, dtype=np.int64) - op.zi_n
        if op.wrap:
            wrap32(total, out=total)
        table = np.empty(total.shape, dtype)
        requantize_int64_inplace(total, op.multiplier, op.shift, op.zo, op.qmin, op.qmax, table)
        narrow = np.dtype(np.int16 if op.qmin < 0 else np.uint16)
        info = np.iinfo(narrow)
        fits = info.min <= op.qmin * n and op.qmax * n <= info.max
        wide = np.dtype(np.int32)
        # int32 sums: max(-qmin, qmax) * n <= 255 * MEAN_TABLE_MAX_COUNT, far below 2^31 (the caller's bound)
        return MeanQuantizedTable(reduction, np.roll(table, op.qmin * n), narrow if fits else wide)

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The sums (``sum_calls``), then the gather from the table into ``out`` viewed as (m,)."""
        sums, indices = self.sum_calls(x)
        # ndarray.take: np.take's C call without its Python wrapper (see fully_connected_tail's module docstring)
        return (*sums, (self.table.take, (indices, None, out.reshape(self.reduction.m), "wrap"), {}))

    def sum_calls(self, x: np.ndarray) -> tuple:
        """(calls, indices): the (m,) sums of ``x`` the table is read at (mode="wrap") as bound-plan calls into a
        buffer made here (once per bind: no allocation per invoke): one reduction of the (n, m) rows when they
        are a view of ``x`` (the reduced axes leading), else ``sums_into`` (the rows copied first)."""
        r, total = self.reduction, np.empty(self.reduction.m, self.sum_dtype)
        try:
            rows = reshape_view(x.transpose(r.perm), (r.n, r.m))
        except ValueError:
            return ((self.sums_into, (x, total), {}),), total
        return ((np.add.reduce, (rows, 0, self.sum_dtype, total), {}),), total

    def sums_into(self, x: np.ndarray, total: np.ndarray) -> None:
        """The (m,) sums of ``x`` into ``total``."""
        np.add.reduce(self.reduction.rows(x), 0, self.sum_dtype, total)

    def feeding(self, consumer):
        """This MEAN and the folded FULLY_CONNECTED that alone reads its output as one step
        (fully_connected_tail.PooledIntoRows; also through a RESHAPE: PooledReshaped), or None."""
        from .fully_connected_tail import pool_feeding  # it imports the FC modules, which import ops.quantize

        return pool_feeding(self, self.table, "wrap", (self.reduction.m,), consumer)


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


def _reduce_op(path: str, reduction: Reduction, size: int, qp: QuantParams | None, table: bool = True):
    """The prepared op of one MEAN / SUM path for a given reduction (``table``: MeanQuantizedTable allowed; not
    for the per-invoke reductions of non-constant axes, where building it would cost more than it saves)."""
    if size == 0:
        return Fill(np.nan if path == "mean-float" else 0)  # InitializeMeanOutput / the reducers' init value
    n = reduction.n
    if path == "mean-float":
        return MeanFloatColumns(reduction, np.float32(n)) if reduction.m > 1 else MeanFloat(reduction)
    if path == "mean-int":
        return MeanInt(reduction)
    if path == "sum":
        return SumColumns(reduction) if reduction.m > 1 else SumInOrder(reduction)
    if path == "sum-bool":
        return SumBool(reduction)
    if path == "sum-float":
        scale = np.float32(np.float32(qp.s_in) / np.float32(qp.s_out))
        bias = np.float32(np.float32(np.float32(-qp.zi) * scale) * np.float32(n))
        return SumQuantizedFloat(reduction, scale, bias, qp.zo, qp.qmin, qp.qmax)
    m, shift = _mean_multiplier(qp.multiplier, qp.shift, n) if path == "mean-q" else (qp.multiplier, qp.shift)
    op = MeanQuantized(reduction, m, shift, qp.zi * n, qp.zo, qp.qmin, qp.qmax, _may_wrap(n, qp.zi, qp.qmin, qp.qmax))
    if table and qp.qmax - qp.qmin == 255 and 0 < n <= MEAN_TABLE_MAX_COUNT:  # input and output share the 8-bit type
        return MeanQuantizedTable.build(reduction, op, np.int8 if qp.qmin < 0 else np.uint8)
    return op


def _reduce_make(path: str, qp: QuantParams | None, x: np.ndarray, axes, reduction: Reduction):
    # no MeanQuantizedTable for a reduction made at every invoke: building it would cost more than it saves
    return _reduce_op(path, reduction, x.size, qp, table=False)


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
        return ReduceDynamicAxes(keep_dims, functools.partial(_reduce_make, path, qp))
    try:  # an empty axis tensor has no buffer (so is not "constant") but its values are known: none
        axes = resolve_axes(len(x.shape), axis.data.reshape(-1) if axis.is_constant else ())
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.set_output_shape(OUTPUT, reduced_shape(x.shape, axes, keep_dims))
    reduction = Reduction.of(x.shape, axes)
    if path == "sum-float":
        refuse_empty_quantized(ctx, reduction)
    return _reduce_op(path, reduction, x.size, qp)
