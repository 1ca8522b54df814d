"""Reductions: MEAN (float32, int32, int64).

Axis handling and output shape follow reduce.cc (ResolveAxis, GetOutputShape), shared by every reducer:
the axis tensor is int32 (any shape; its values are read flat); negative axes count from the end,
repeated axes count once, an axis outside [-rank, rank) is rejected; ``keep_dims`` keeps reduced axes as 1.
A rank-0 input ignores the axes and gives a rank-0 output. A constant axis tensor gives a static output shape;
otherwise the output is dynamic and the axes are read at eval.

MEAN paths (ai-edge-litert 2.3.0, BUILTIN_REF):
- float32: sum in float32, accumulated in the input's row-major order as reference_ops::ReduceSumImpl does
  (not NumPy's pairwise sum), then divided by the number of reduced elements.
- int32 / int64: sum in int64 (wrapping), then C++ division truncating toward zero; int32 converts back by
  wrapping (static_cast).
- An empty input fills the output with NaN (0 for integers: quiet_NaN of an integer type), as
  InitializeMeanOutput does.
The quantized uint8 / int8 / int16 paths plug in at ``prepare_mean_quantized`` (until then they fail at
prepare); SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY and REDUCE_ALL reuse ``resolve_axes``,
``reduced_shape`` and ``Reduction`` with their own prepared ops.

Sources matched: tflite/kernels/reduce.cc, tflite/kernels/internal/reference/reduce.h (Mean, ReduceSumImpl,
ResolveAxis).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .registry import OpContext, register

INPUT, AXIS, OUTPUT = 0, 1, 0

_F32, _I32, _I64 = TensorType.FLOAT32, TensorType.INT32, TensorType.INT64
_U8, _I8, _I16 = TensorType.UINT8, TensorType.INT8, TensorType.INT16


# -- axes and shapes (every reducer) ----------------------------------------------------------------
def resolve_axes(rank: int, axis_values: Sequence[int]) -> tuple[int, ...]:
    """ResolveAxis: non-negative axes in the order given, repeats dropped. Raises ValueError when out of range."""
    if rank == 0:
        return ()
    axes: list[int] = []
    for a in (int(v) for v in axis_values):
        r = a + rank if a < 0 else a
        if not 0 <= r < rank:
            raise ValueError(f"Invalid axis index {a} for a rank-{rank} input.")
        if r not in axes:
            axes.append(r)
    return tuple(axes)


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keep_dims: bool) -> tuple[int, ...]:
    """GetOutputShape: reduced axes become 1 (keep_dims) or disappear."""
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@dataclass(frozen=True)
class Reduction:
    """How one reduction walks its input: reduced axes moved first, then the input viewed as (n, m).

    ``perm`` puts the reduced axes (ascending) before the kept ones, so row i of the (n, m) view holds the
    i-th reduced element (row-major) of every output, and summing the rows in order repeats the reference
    kernel's order of accumulation.
    """

    perm: tuple[int, ...]
    n: int  # reduced elements per output
    m: int  # outputs

    @staticmethod
    def of(shape: Sequence[int], axes: Sequence[int]) -> Reduction:
        reduced = sorted(axes)
        kept = [i for i in range(len(shape)) if i not in reduced]
        n = int(np.prod([shape[i] for i in reduced], dtype=np.int64))
        m = int(np.prod([shape[i] for i in kept], dtype=np.int64))
        return Reduction(tuple(reduced + kept), n, m)

    def rows(self, x: np.ndarray) -> np.ndarray:
        """The input as an (n, m) array (a view when the reduced axes already lead)."""
        return x.transpose(self.perm).reshape(self.n, self.m)

    def sum_in_order(self, x: np.ndarray, out: np.ndarray) -> None:
        """out (m elements) = the sum of the n rows, added one after the other in out's dtype."""
        y = self.rows(x)
        flat = out.reshape(self.m)
        if self.m == 1:  # a full reduction: NumPy would sum pairwise, the reference sums in order
            flat[0] = np.add.accumulate(y[:, 0], dtype=out.dtype)[-1] if self.n else 0
        else:  # along axis 0 of a C-contiguous (n, m) array NumPy adds row after row (a strided view may
            # be reordered into a pairwise inner loop, hence the copy when the reduced axes do not lead)
            np.add.reduce(np.ascontiguousarray(y), axis=0, out=flat, dtype=out.dtype)


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
class MeanDynamicAxes:
    """MEAN whose axis tensor is not constant: axes, output shape and the mean are worked out at eval."""

    keep_dims: bool
    is_float: bool

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        axes = resolve_axes(x.ndim, inputs[AXIS].reshape(-1))
        out = np.empty(reduced_shape(x.shape, axes, self.keep_dims), x.dtype)
        _mean_op(Reduction.of(x.shape, axes), x.size, x.dtype, self.is_float)([x], [out])
        outputs[OUTPUT] = out


def _mean_op(reduction: Reduction, size: int, dtype: np.dtype, is_float: bool):
    if size == 0:
        return Fill(np.nan if is_float else 0)
    return MeanFloat(reduction) if is_float else MeanInt(reduction)


def prepare_mean_quantized(ctx: OpContext):
    """The uint8 / int8 / int16 paths (rescaled integer means): added by the quantized-core work."""
    raise ctx.fail(f"MEAN on quantized {ctx.input(INPUT).type_name} tensors is not supported yet")


@register(BuiltinOperator.MEAN)
def prepare_mean(ctx: OpContext):
    ctx.check_num(2, 1)
    x, axis, y = ctx.input(INPUT), ctx.input(AXIS), ctx.outputs[OUTPUT]
    ctx.check(axis.type == _I32, f"op_context.axis->type != kTfLiteInt32 ({axis.type_name} != INT32)")
    if x.type in (_U8, _I8, _I16):
        return prepare_mean_quantized(ctx)
    if x.type not in (_F32, _I32, _I64):
        raise ctx.fail(f"Type {x.type_name} is unsupported by op MEAN.")
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    keep_dims = bool(ctx.options.keep_dims)
    is_float = x.type == _F32
    if not axis.is_constant and axis.size > 0:
        ctx.set_output_dynamic(OUTPUT)
        return MeanDynamicAxes(keep_dims, is_float)
    try:  # an empty axis tensor has no buffer (so is not "constant") but its values are known: none
        axes = resolve_axes(len(x.shape), axis.data.reshape(-1) if axis.is_constant else ())
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.set_output_shape(OUTPUT, reduced_shape(x.shape, axes, keep_dims))
    return _mean_op(Reduction.of(x.shape, axes), x.size, x.dtype, is_float)
