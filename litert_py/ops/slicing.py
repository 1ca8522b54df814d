"""Slicing: STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, GATHER (the rest of data movement is in movement.py and padding.py).

Paths (bytes are moved, never reinterpreted; quantized tensors pass through with their raw integers):
- STRIDED_SLICE: every 8/16/32/64-bit dtype and strings; begin/end/strides int32; all five masks and the
  ``offset`` option, negative strides, clamping exactly as the reference kernel.
- SPLIT, SPLIT_V: float32, uint8, int8, int16, int32, int64 (axis tensor; size_splits int32/int64 with at
  most one -1).
- GATHER: float32, float16, uint8, int8, int16, int32, int64, bool, int4, strings (1-D); indices int16,
  int32, int64; ``axis`` and ``batch_dims``. An index outside [0, axis size) raises at eval (LiteRT's
  "gather index out of bounds").
- SLICE: every dtype, strings included, any rank; begin/size int32 or int64 (one type), size -1 = the rest.
  LiteRT keeps an output shape the model declares (ranked, no -1 in shape_signature) and fails when the
  slice differs; litert_py does the same, and makes the output dynamic when begin/size are not constant and
  no such shape is declared.

Shapes come from constant index tensors at prepare; a non-constant one makes the output dynamic.

Where LiteRT writes uninitialized memory instead of failing, we fail at prepare: a STRIDED_SLICE shrink
axis with a negative stride or an out-of-range begin, an ``offset`` slice reaching past the input, and a
negative SLICE begin.

Sources matched: tensorflow/lite/kernels/{strided_slice,split,split_v,gather,slice}.cc,
tensorflow/lite/kernels/internal/reference/{strided_slice,gather}.h,
tensorflow/lite/kernels/internal/strided_slice_logic.h (the index logic: strided_slice_logic.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import InputValueError, InvokeError
from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .common import axis_slices, check_output_type, index_values, movable
from .registry import OpContext, PreparedOp, TensorInfo, register
from .strided_slice_logic import output_shape, strided_slice_spec

_STRING = dtypes.TensorType.STRING


# =================================================================================================
# STRIDED_SLICE
# =================================================================================================

BEGIN, END, STRIDES = 1, 2, 3


@dataclass(frozen=True, eq=False)
class StridedSlice:
    """Static slice: begin, end and strides were constant."""

    effective_shape: tuple[int, ...]
    index: tuple
    counts: tuple[int, ...]

    def __call__(self, inputs, outputs):
        outputs[0].reshape(self.counts)[...] = inputs[0].reshape(self.effective_shape)[self.index]


@dataclass(frozen=True, eq=False)
class StridedSliceDirect(StridedSlice):
    """StridedSlice when the index applies to the input's own shape and the slice has the output's shape (the
    usual slice of a streaming model's buffer): no reshapes, about half the time of a small slice (0.26 us
    instead of 0.59 us); the same copy."""

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0][self.index]


@dataclass(frozen=True, eq=False)
class StridedSliceDynamic:
    """Some index tensor is not constant. ``shape`` is the output shape when prepare could compute it
    (``offset`` with constant end and strides), else None (dynamic output)."""

    options: object
    shape: tuple[int, ...] | None

    def __call__(self, inputs, outputs):
        x, begin, end, strides = inputs[0], inputs[BEGIN], inputs[END], inputs[STRIDES]
        shape = self.shape
        if shape is None:
            shape = output_shape(x.shape, begin, end, strides, self.options, ValueError)
            out = np.empty(shape, dtype=x.dtype)
        else:
            out = outputs[0]
        spec = strided_slice_spec(x.shape, begin, end, strides, self.options, out.size)
        out.reshape(spec.counts)[...] = x.reshape(spec.effective_shape)[spec.index]
        outputs[0] = out


@register(BuiltinOperator.STRIDED_SLICE)
def prepare_strided_slice(ctx: OpContext) -> PreparedOp:
    ctx.check_num(4)
    x = ctx.input(0)
    begin, end, strides = ctx.input(BEGIN), ctx.input(END), ctx.input(STRIDES)
    for t in (begin, end, strides):
        ctx.check(len(t.shape) == 1, f"NumDimensions(begin/end/strides) != 1 ({len(t.shape)} != 1)")
    ctx.check(
        begin.size == end.size,
        f"NumElements(op_context.begin) != NumElements(op_context.end) ({begin.size} != {end.size})",
    )
    ctx.check(strides.size == begin.size, f"STRIDED_SLICE has {begin.size} begin values but {strides.size} strides")
    check_output_type(ctx, x)
    for t in (begin, end, strides):
        ctx.check(t.dtype == np.int32, f"begin/end/strides must be INT32, got {t.type_name}")
    ctx.check(begin.size <= 31, "StridedSlice op only supports up to 31 indices.")
    ctx.check(movable(x) or x.type == _STRING, f"Type {x.type_name} is currently not supported by StridedSlice.")
    o = ctx.options
    if strides.is_constant and begin.is_constant and end.is_constant:
        shape = output_shape(x.shape, begin.data, end.data, strides.data, o, ctx.fail)
        size = int(np.prod(shape, dtype=np.int64))
        spec = strided_slice_spec(x.shape, begin.data, end.data, strides.data, o, size, ctx.fail)
        ctx.set_output_shape(0, shape)
        direct = tuple(spec.effective_shape) == tuple(x.shape) and tuple(spec.counts) == tuple(shape)
        return (StridedSliceDirect if direct else StridedSlice)(spec.effective_shape, spec.index, spec.counts)
    if o.offset and strides.is_constant and end.is_constant:
        shape = output_shape(x.shape, None, end.data, strides.data, o, ctx.fail)
        ctx.set_output_shape(0, shape)
        return StridedSliceDynamic(o, shape)
    ctx.set_output_dynamic(0)
    return StridedSliceDynamic(o, None)


# =================================================================================================
# SPLIT, SPLIT_V
# =================================================================================================

_SPLIT_TYPES = {np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int16, np.int32, np.int64)}


def _split_axis(axis_value, rank: int, fail) -> int:
    a = int(np.asarray(axis_value).reshape(-1)[0])
    if a < 0:
        a += rank
    if not 0 <= a < rank:
        raise fail(
            f"axis_value < NumDimensions(input) was not true: axis {a - rank if a < 0 else a} "
            f"for an input of rank {rank}"
        )
    return a


def _even_sizes(size: int, n: int, fail) -> list[int]:
    if n == 0:
        raise fail("num_splits != 0 was not true")
    if size % n:
        raise fail("Not an even split")
    return [size // n] * n


def _v_sizes(size_splits, size: int, fail) -> list[int]:
    sizes = [int(v) for v in np.asarray(size_splits).reshape(-1)]
    if sizes.count(-1) > 1:
        raise fail("The size_splits contains more than one -1.")
    if any(v < -1 for v in sizes):
        raise fail(f"size_splits {sizes} has a negative size")
    total = sum(v for v in sizes if v != -1)
    if -1 in sizes:
        if total > size:
            raise fail("The sum of size_splits must be less than the dimension of value.")
        sizes[sizes.index(-1)] = size - total
    elif total != size:
        raise fail("The size_splits must sum to the dimension of value along axis.")
    return sizes


def _split_index(axis: int, sizes: list[int]) -> tuple:
    bounds = np.cumsum([0] + sizes).tolist()
    return tuple(axis_slices(axis, a, b) for a, b in zip(bounds[:-1], bounds[1:]))


@dataclass(frozen=True, eq=False)
class Split:
    """SPLIT and SPLIT_V with a constant axis (and size_splits): one slice copy per output. ``bind``
    (ops/fusion.bind_steps) makes the slices of the bound data array once, and each output's copy as a bound
    ``out[...] = view`` call (ops/bound_plan.py; the same assignment: a (1, 96) -> 3 x (1, 32) split, alone,
    hot: 1.15 -> 0.94 us; a GRU's splits whose readers take views are dropped, ops/slice_views.py); other arrays:
    the same assignments, slices made at the call."""

    data: int  # which input holds the data (SPLIT: 1, SPLIT_V: 0)
    index: tuple
    _bound = None  # bind's (the data array, the output arrays, their copies as partial objects), or None

    def bind(self, inputs, outputs) -> None:
        x, bound = inputs[self.data], None
        if x is not None and len(outputs) == len(self.index) and all(o is not None for o in outputs):
            bound = (
                x,
                tuple(outputs),
                tuple(partial(o.__setitem__, Ellipsis, x[sl]) for o, sl in zip(outputs, self.index)),
            )
        object.__setattr__(self, "_bound", bound)

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is not None and b[0] is inputs[self.data] and len(outputs) == len(b[1]):
            for out, bound_out in zip(outputs, b[1]):
                if out is not bound_out:
                    break
            else:
                for call in b[2]:
                    call()
                return
        x = inputs[self.data]
        for out, sl in zip(outputs, self.index):
            out[...] = x[sl]  # same type and shape: a plain assignment costs less than np.copyto


@dataclass(frozen=True, eq=False)
class SplitDynamic:
    """The axis (or size_splits) is not constant: every output shape is found at eval."""

    data: int
    axis_input: int
    sizes_input: int | None  # SPLIT_V's size_splits, None for SPLIT (even split)
    num_splits: int

    def __call__(self, inputs, outputs):
        x = inputs[self.data]
        axis = _split_axis(inputs[self.axis_input], x.ndim, ValueError)
        if self.sizes_input is None:
            sizes = _even_sizes(x.shape[axis], self.num_splits, ValueError)
        else:
            sizes = _v_sizes(inputs[self.sizes_input], x.shape[axis], ValueError)
        for k, sl in enumerate(_split_index(axis, sizes)):
            outputs[k] = x[sl].copy()


def _prepare_split_common(ctx: OpContext, data: int, axis_t: TensorInfo, num_splits: int) -> TensorInfo:
    x = ctx.input(data)
    ctx.check(len(ctx.outputs) == num_splits, f"NumOutputs(node) != num_splits ({len(ctx.outputs)} != {num_splits})")
    ctx.check(
        x.dtype in _SPLIT_TYPES and x.type not in dtypes.OBJECT_TYPES,
        f"Type {x.type_name} is unsupported by op {ctx.op_name}.",
    )
    for k in range(len(ctx.outputs)):
        check_output_type(ctx, x, k)
    ctx.check(axis_t.dtype == np.int32 and axis_t.size >= 1, f"{ctx.op_name} axis must be an int32 scalar")
    return x


@register(BuiltinOperator.SPLIT)
def prepare_split(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) == 2, f"SPLIT takes 2 inputs, got {len(ctx.inputs)}")
    axis_t = ctx.input(0)
    n = ctx.options.num_splits
    x = _prepare_split_common(ctx, 1, axis_t, n)
    if not axis_t.is_constant:
        for k in range(n):
            ctx.set_output_dynamic(k)
        return SplitDynamic(1, 0, None, n)
    axis = _split_axis(axis_t.data, len(x.shape), ctx.fail)
    sizes = _even_sizes(x.shape[axis], n, ctx.fail)
    for k, s in enumerate(sizes):
        ctx.set_output_shape(k, x.shape[:axis] + (s,) + x.shape[axis + 1 :])
    return Split(1, _split_index(axis, sizes))


@register(BuiltinOperator.SPLIT_V)
def prepare_split_v(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) == 3, f"SPLIT_V takes 3 inputs, got {len(ctx.inputs)}")
    size_splits, axis_t = ctx.input(1), ctx.input(2)
    n = ctx.options.num_splits
    x = _prepare_split_common(ctx, 0, axis_t, n)
    ctx.check(len(size_splits.shape) == 1, f"NumDimensions(size_splits) != 1 ({len(size_splits.shape)} != 1)")
    ctx.check(size_splits.size == n, f"NumOutputs(node) != NumElements(size_splits) ({n} != {size_splits.size})")
    ctx.check(size_splits.dtype in (np.int32, np.int64), "size_splits only support type int32|int64.")
    if not (axis_t.is_constant and size_splits.is_constant):
        for k in range(n):
            ctx.set_output_dynamic(k)
        return SplitDynamic(0, 2, 1, n)
    axis = _split_axis(axis_t.data, len(x.shape), ctx.fail)
    sizes = _v_sizes(size_splits.data, x.shape[axis], ctx.fail)
    for k, s in enumerate(sizes):
        ctx.set_output_shape(k, x.shape[:axis] + (s,) + x.shape[axis + 1 :])
    return Split(0, _split_index(axis, sizes))


# =================================================================================================
# GATHER
# =================================================================================================

_GATHER_TYPES = {
    np.dtype(t) for t in (np.float32, np.float16, np.uint8, np.int8, np.int16, np.int32, np.int64, np.bool_)
}


class GatherIndexError(InvokeError, IndexError):
    """An index outside [0, axis size): LiteRT fails the invoke with "gather index out of bounds"."""


def _check_indices(idx: np.ndarray, axis_size: int, axis: int, upper: bool = True) -> None:
    """gather.cc rejects a negative index whatever the shapes; reference_ops::Gather tests the upper end inside its
    copy loop, so where the batch or outer size is 0 (``upper`` False) an index past the end is never seen and the
    (empty) gather succeeds."""
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or (upper and hi >= axis_size):
            bad = lo if lo < 0 else hi
            raise GatherIndexError(
                f"gather index out of bounds: index {bad} is outside [0, {axis_size}) on axis {axis}"
            )


@dataclass(frozen=True, eq=False)
class Gather:
    axis: int
    axis_size: int
    check: bool = True  # False: constant indices already found in range at prepare
    upper: bool = True  # False: an empty outer size, where LiteRT never tests the upper end (_check_indices)

    def __call__(self, inputs, outputs):
        idx = inputs[1]
        if self.check:
            _check_indices(idx, self.axis_size, self.axis, self.upper)
        # mode="clip" only avoids numpy's buffered bounds check: the indices were just checked.
        np.take(inputs[0], idx, axis=self.axis, out=outputs[0], mode="clip")


@dataclass(frozen=True, eq=False)
class GatherOne:
    """One index (rank 0 or one element), batch_dims 0: the step of an RNN that the converter unrolls into a
    WHILE body (``GATHER(sequence, step)`` once per time step), in a Python bounds check and one slice copy
    (a (20, 1, 16) float32 input: 7.3 -> 0.9 us, Gather's two reductions and take)."""

    axis: int
    outer: int  # the input as (outer, axis_size, inner), the output as (outer, inner)
    axis_size: int
    inner: int

    def __call__(self, inputs, outputs):
        i = inputs[1].item()
        if not 0 <= i < self.axis_size:
            raise GatherIndexError(
                f"gather index out of bounds: index {i} is outside [0, {self.axis_size}) on axis {self.axis}"
            )
        x3 = inputs[0].reshape(self.outer, self.axis_size, self.inner)
        out = outputs[0]
        out[...] = x3[:, i].reshape(out.shape)  # the output written whatever its strides (a direct call's array)


@dataclass(frozen=True, eq=False)
class GatherBatched:
    """batch_dims > 0: input viewed as (batch, outer, axis, inner), indices as (batch, coords)."""

    axis: int
    x_shape: tuple[int, int, int, int]
    idx_shape: tuple[int, int, int, int]
    out_shape: tuple[int, int, int, int]

    def __call__(self, inputs, outputs):
        idx = inputs[1]
        _check_indices(idx, self.x_shape[2], self.axis, self.x_shape[0] * self.x_shape[1] != 0)
        x4 = inputs[0].reshape(self.x_shape)
        outputs[0].reshape(self.out_shape)[...] = np.take_along_axis(x4, idx.reshape(self.idx_shape), axis=2)


@register(BuiltinOperator.GATHER)
def prepare_gather(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, positions = ctx.input(0), ctx.input(1)
    ctx.check(
        positions.dtype in (np.int16, np.int32, np.int64) and positions.type not in dtypes.OBJECT_TYPES,
        f"Positions of type '{positions.type_name}' are not supported by gather.",
    )
    check_output_type(ctx, x)
    if x.type == _STRING:
        ctx.check(len(x.shape) == 1, f"NumDimensions(input) != 1 ({len(x.shape)} != 1): gather of strings is 1-D only")
    else:
        ctx.check(
            x.dtype in _GATHER_TYPES and x.type not in dtypes.OBJECT_TYPES,
            f"Type '{x.type_name}' is not supported by gather.",
        )
    rank, prank = len(x.shape), len(positions.shape)
    axis = ctx.options.axis
    if axis < 0:
        axis += rank
    ctx.check(
        0 <= axis < rank,
        f"0 <= axis && axis < NumDimensions(input) was not true: axis {ctx.options.axis} for an input of rank {rank}",
    )
    bd = ctx.options.batch_dims
    if bd < 0:
        bd += prank
    ctx.check(bd <= axis, f"batch_dims <= axis was not true ({bd} > {axis})")
    ctx.check(0 <= bd < rank, f"0 <= batch_dims && batch_dims < NumDimensions(input) was not true (batch_dims {bd})")
    ctx.check(bd <= prank, f"batch_dims <= NumDimensions(positions) was not true ({bd} > {prank})")
    for i in range(bd):
        ctx.check(
            x.shape[i] == positions.shape[i],
            f"input->dims->data[{i}] != positions->dims->data[{i}] ({x.shape[i]} != {positions.shape[i]})",
        )
    shape = x.shape[:axis] + positions.shape[bd:] + x.shape[axis + 1 :]
    ctx.set_output_shape(0, shape)
    if bd == 0:
        # Constant indices in range need no check at eval; out-of-range ones still fail at invoke, as in LiteRT.
        known_good = positions.is_constant and (
            positions.size == 0 or (positions.data.min() >= 0 and positions.data.max() < x.shape[axis])
        )
        if positions.size == 1 and not positions.is_constant and x.type != _STRING and x.size:
            outer = int(np.prod(x.shape[:axis], dtype=np.int64))
            return GatherOne(axis, outer, x.shape[axis], int(np.prod(x.shape[axis + 1 :], dtype=np.int64)))
        outer = int(np.prod(x.shape[:axis], dtype=np.int64))
        return Gather(axis, x.shape[axis], check=not known_good, upper=outer != 0)

    def prod(s):
        return int(np.prod(s, dtype=np.int64))

    b, o, a, i = prod(x.shape[:bd]), prod(x.shape[bd:axis]), x.shape[axis], prod(x.shape[axis + 1 :])
    c = prod(positions.shape[bd:])
    return GatherBatched(axis, (b, o, a, i), (b, 1, c, 1), (b, o, c, i))


# =================================================================================================
# SLICE
# =================================================================================================


def slice_bounds(in_shape, begin, size, fail=InputValueError) -> tuple[tuple[int, int], ...]:
    """(start, stop) per dimension as slice.cc CalculateOutputShapeVector checks them; a size of -1 takes the
    rest of the dimension. A negative begin (LiteRT reads before the array) is refused."""
    b, s = index_values(begin), index_values(size)
    if len(b) != len(in_shape) or len(s) != len(in_shape):
        raise fail(f"begin and size must have {len(in_shape)} elements, got {len(b)} and {len(s)}")
    out = []
    for d, a, n in zip(in_shape, b, s):
        if a < 0:
            raise fail(f"SLICE begin {a} is negative: LiteRT would read before the input")
        if n < 0:
            if n != -1:
                raise fail("Invalid size.")
            n = d - a
            if n < 0:
                raise fail("Invalid begin and size.")
        elif d < a + n:
            raise fail("Invalid begin and size.")
        out.append((a, a + n))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Slice:
    index: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0][self.index]


@dataclass(frozen=True, eq=False)
class SliceDynamic:
    """begin/size not constant. ``shape``: the output shape the model declares (LiteRT keeps a declared,
    fully known ranked shape and checks the slice against it at eval), or None: dynamic output."""

    shape: tuple[int, ...] | None

    def __call__(self, inputs, outputs):
        x = inputs[0]
        bounds = slice_bounds(x.shape, inputs[1], inputs[2])
        sizes = tuple(b - a for a, b in bounds)
        if self.shape is not None and sizes != self.shape:
            raise InputValueError(
                f"output_shape_vector[idx] != SizeOfDimension(output, idx): slice {list(sizes)} "
                f"differs from the declared output shape {list(self.shape)}"
            )
        result = x[tuple(slice(a, b) for a, b in bounds)]
        if self.shape is None:
            outputs[0] = result.copy()
        else:
            outputs[0][...] = result


def declared_static_shape(ctx: OpContext, k: int = 0) -> tuple[int, ...] | None:
    """The model's own shape of output ``k`` when it is ranked and fully known (no -1 in its
    shape_signature), else None. LiteRT's SLICE keeps such a shape instead of computing one."""
    if ctx.model is None:
        return None
    t = ctx.model.subgraphs[ctx.subgraph_index].tensors[ctx.outputs[k].index]
    sig = t.shape_signature if t.shape_signature is not None else t.shape
    if len(t.shape) == 0 or any(d < 0 for d in sig):
        return None
    return tuple(int(d) for d in t.shape)


@register(BuiltinOperator.SLICE)
def prepare_slice(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3)
    x, begin, size = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = len(x.shape)
    ctx.check(
        begin.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
        f"Type {begin.type_name} is not supported by Slice: begin must be INT32 or INT64.",
    )
    ctx.check(size.type == begin.type, f"TF_LITE_ENSURE_TYPES_EQ(begin, size): {begin.type_name} != {size.type_name}")
    ctx.check(len(begin.shape) == 1 and len(size.shape) == 1, "Begin and size tensors must be 1-D.")
    ctx.check(
        begin.size == rank and size.size == rank,
        f"NumElements(begin) and NumElements(size) must equal the input rank {rank}",
    )
    check_output_type(ctx, x)
    ctx.check(
        x.type not in (dtypes.TensorType.RESOURCE, dtypes.TensorType.VARIANT),
        f"Type {x.type_name} is currently not supported by Slice.",
    )
    declared = declared_static_shape(ctx)
    if not (begin.is_constant and size.is_constant):
        if declared is None:
            ctx.set_output_dynamic(0)
        else:
            ctx.set_output_shape(0, declared)
        return SliceDynamic(declared)
    bounds = slice_bounds(x.shape, begin.data, size.data, ctx.fail)
    shape = tuple(b - a for a, b in bounds)
    ctx.check(
        declared is None or declared == shape,
        f"output_shape_vector[idx] != SizeOfDimension(output, idx): "
        f"the slice {list(shape)} differs from the declared output shape {list(declared or ())}",
    )
    ctx.set_output_shape(0, shape)
    return Slice(tuple(slice(a, b) for a, b in bounds))
