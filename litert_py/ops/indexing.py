"""Indexing: GATHER_ND, SCATTER_ND, DYNAMIC_UPDATE_SLICE, MATRIX_DIAG, MATRIX_SET_DIAG, ONE_HOT,
SPARSE_TO_DENSE, WHERE, UNIQUE, TOPK_V2, BUCKETIZE.

Paths (all exact: values are moved, compared or counted, never rounded):
- GATHER_ND: params float32, uint8, int8, int16, int32, int64, bool, strings; indices int16, int32, int64.
  Every coordinate outside [0, dim) is "gather_nd index out of bounds" (an InvokeError), as in LiteRT.
- SCATTER_ND: updates float32, uint8, int8, int32, int64, bool; indices/shape int32 or int64. Zero-filled
  output; duplicate indices accumulate in index order (bool: logical or, as C++ ``bool += bool``); every
  coordinate must lie in [0, dim) ("scatter_nd index out of bounds"). A non-constant shape makes the output dynamic.
- DYNAMIC_UPDATE_SLICE: every 8/16/32/64-bit dtype; start indices int32/int64, clamped to
  ``[0, operand_dim - update_dim]`` as LiteRT does.
- MATRIX_DIAG / MATRIX_SET_DIAG: float32, uint8, int8, int16, int32, int64. LiteRT runs any other type
  (bool, strings) through its float32 branch, out of bounds (garbage or a crash): we reject them.
- ONE_HOT: indices int32/int64, depth int32, on/off float32, int8, uint8, int32, int64, bool; an index
  outside [0, depth) gives an all-off row. A non-constant depth makes the output dynamic.
- SPARSE_TO_DENSE: values float32, int32, int64, int8, uint8; indices and output shape int32/int64; output
  rank <= 4. An index outside the output (LiteRT writes out of bounds) is an InvokeError here.
- WHERE: bool, float32, int8, uint8, int32, int64, uint32 condition -> int64 coordinates (dynamic output).
- UNIQUE: float32, int8, int16, int32, int64, uint8 vectors; idx int32 or int64 (``idx_out_type``); values
  in order of first occurrence (dynamic first output).
- TOPK_V2: float32, uint8, int8, int16, int32, int64; k int32 or int16 (a non-constant k makes both
  outputs dynamic); indices int32 or int16. Ties: lower index first (TopContainer's comparator).
- BUCKETIZE: float32, float64, int32, int64 -> int32: ``upper_bound`` of each value in ``boundaries``; the
  value is compared as C++ does (int against float: the int converted to float32).

Sources matched: tensorflow/lite/kernels/{gather_nd,scatter_nd,dynamic_update_slice,matrix_diag,
matrix_set_diag,one_hot,sparse_to_dense,where,unique,topk_v2,bucketize}.cc and
tensorflow/lite/kernels/internal/reference/reference_ops.h (GatherNd, ScatterNd, SparseToDense,
MatrixSetDiag).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import InputValueError, InvokeError
from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register

_dt = np.dtype
_F32, _F16, _F64 = _dt(np.float32), _dt(np.float16), _dt(np.float64)
_I8, _U8, _I16, _I32, _I64, _U32, _BOOL = (
    _dt(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.bool_)
)
_STRING = dtypes.TensorType.STRING


def _prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _same_output_type(ctx: OpContext, k: int, src) -> None:
    ctx.check(
        ctx.outputs[k].type == src.type,
        f"{ctx.op_name}: output type {ctx.outputs[k].type_name} differs from input type {src.type_name}",
    )


def _shape_from(ctx: OpContext, t) -> tuple[int, ...] | None:
    """The values of a constant 1-D shape tensor, or None when it is not constant."""
    if t.data is None:
        return None
    shape = tuple(int(v) for v in np.asarray(t.data).reshape(-1))
    ctx.check(all(d >= 0 for d in shape), f"{ctx.op_name}: negative output dimension in {shape}")
    return shape


class IndexOutOfBounds(InvokeError, IndexError):
    """An index LiteRT rejects at eval (or would use to write outside its output): a documented InvokeError
    (still an IndexError for code that catches that)."""


def _flat_offsets(idx: np.ndarray, dims: np.ndarray, strides: np.ndarray, what: str) -> np.ndarray:
    """Flat slice numbers of index rows; every coordinate must lie in [0, dim) (LiteRT checks each).

    ``dims`` is uint64: a negative coordinate, viewed as uint64, is huge, so one comparison checks both ends."""
    idx = idx.astype(np.int64, copy=False)
    if (idx.view(np.uint64) >= dims).any():
        raise IndexOutOfBounds(f"{what} index out of bounds")
    if idx.shape[1] == 1:
        return idx[:, 0]  # strides == [1]
    return idx @ strides if idx.shape[1] else np.zeros(idx.shape[0], np.int64)


def _slice_strides(shape, nd: int) -> tuple[np.ndarray, int]:
    """Strides (in slices) of the first ``nd`` dims of ``shape`` and their slice count."""
    outer = tuple(shape[:nd])
    strides = np.array([_prod(outer[k + 1 :]) for k in range(nd)], np.int64)
    return strides, _prod(outer)


# =================================================================================================
# GATHER_ND
# =================================================================================================

_GATHER_ND_TYPES = {_F32, _U8, _I8, _I16, _I32, _I64, _BOOL, _dt(object), _dt(np.bytes_)}


@dataclass(frozen=True, eq=False)
class GatherNd:
    nd: int
    dims: np.ndarray  # uint64, the first nd params dims
    strides: np.ndarray
    n_slices: int
    slice_size: int

    def __call__(self, inputs, outputs):
        params, idx = inputs
        off = _flat_offsets(idx.reshape(-1, self.nd), self.dims, self.strides, "gather_nd")
        out = outputs[0]
        np.take(
            params.reshape(self.n_slices, self.slice_size), off, axis=0, out=out.reshape(off.shape[0], self.slice_size)
        )


@register(BuiltinOperator.GATHER_ND)
def prepare_gather_nd(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    params, indices = ctx.input(0), ctx.input(1)
    if params.type != _STRING and params.dtype not in _GATHER_ND_TYPES:
        raise ctx.fail(f"Params type '{params.type_name}' are not supported by gather_nd.")
    ctx.check(
        indices.dtype in (_I16, _I32, _I64), f"Indices of type '{indices.type_name}' are not supported by gather_nd."
    )
    _same_output_type(ctx, 0, params)
    p, i = params.shape, indices.shape
    ctx.check(len(p) >= 1, "Params must be at least a vector.")
    ctx.check(len(i) >= 1, "Indices must be at least a vector.")
    nd = i[-1]
    ctx.check(nd <= len(p), "Index innermost dimension length must be <= params rank.")
    # LiteRT fails every eval of an empty index ("gather_nd index out of bounds"): refused here at once.
    ctx.check(nd >= 1, "gather_nd: indices' innermost dimension must be at least 1")
    ctx.check(params.size > 0 or indices.size == 0, "gather_nd: empty params with non-empty indices")
    strides, n_slices = _slice_strides(p, nd)
    ctx.set_output_shape(0, tuple(i[:-1]) + tuple(p[nd:]))
    return GatherNd(nd, np.array(p[:nd], np.uint64), strides, n_slices, _prod(p[nd:]))


# =================================================================================================
# SCATTER_ND
# =================================================================================================

_SCATTER_ND_TYPES = {_F32, _U8, _I8, _I32, _I64, _BOOL}


@dataclass(frozen=True, eq=False)
class ScatterNd:
    nd: int
    dynamic: bool
    out_dtype: np.dtype
    shape: tuple[int, ...] | None  # None: from the shape input at eval

    def __call__(self, inputs, outputs):
        idx, updates, shape_t = inputs
        if self.dynamic:
            shape = tuple(int(v) for v in shape_t.reshape(-1))
            if (
                any(d < 0 for d in shape)
                or len(shape) < self.nd
                or (updates.shape != idx.shape[:-1] + shape[self.nd :])
            ):
                raise InputValueError(
                    f"scatter_nd: updates shape {updates.shape} does not match indices {idx.shape} and shape {shape}"
                )
            out = limits.new_array(shape, self.out_dtype, "SCATTER_ND's output")
            out[...] = 0
            outputs[0] = out
        else:
            shape = self.shape
            out = outputs[0]
            out.fill(0)
        strides, n_slices = _slice_strides(shape, self.nd)
        off = _flat_offsets(idx.reshape(-1, self.nd), np.array(shape[: self.nd], np.uint64), strides, "scatter_nd")
        out2 = out.reshape(n_slices, -1) if n_slices else out.reshape(0, 0)
        upd2 = updates.reshape(off.shape[0], out2.shape[1])
        if out.dtype == _BOOL:
            np.logical_or.at(out2, off, upd2)
        else:
            np.add.at(out2, off, upd2)  # sequential in index order, like the reference loop


@register(BuiltinOperator.SCATTER_ND)
def prepare_scatter_nd(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3)
    indices, updates, shape_t = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.check(indices.dtype == _I32, f"Indices of type '{indices.type_name}' are not supported by scatter_nd.")
    ctx.check(shape_t.type == indices.type, "scatter_nd: indices and shape must have the same type")
    if updates.dtype not in _SCATTER_ND_TYPES or updates.type == _STRING:
        raise ctx.fail(f"Updates of type '{updates.type_name}' are not supported by scatter_nd.")
    _same_output_type(ctx, 0, updates)
    ctx.check(len(indices.shape) >= 1, "scatter_nd: indices must be at least a vector")
    ctx.check(len(shape_t.shape) == 1, "scatter_nd: shape must be a vector")
    nd = indices.shape[-1]
    shape = _shape_from(ctx, shape_t)
    if shape is None:
        ctx.set_output_dynamic(0)
        return ScatterNd(nd, True, updates.dtype, None)
    ctx.check(nd <= len(shape), "scatter_nd: indices' last dimension exceeds the output rank")
    ctx.check(
        tuple(updates.shape) == tuple(indices.shape[:-1]) + shape[nd:],
        f"scatter_nd: updates shape {updates.shape} does not match indices {indices.shape} and shape {shape}",
    )
    ctx.set_output_shape(0, shape)
    return ScatterNd(nd, False, updates.dtype, shape)


# =================================================================================================
# DYNAMIC_UPDATE_SLICE
# =================================================================================================


@dataclass(frozen=True, eq=False)
class DynamicUpdateSlice:
    limits: tuple[int, ...]  # operand_dim - update_dim per axis
    update_shape: tuple[int, ...]

    def __call__(self, inputs, outputs):
        operand, update, start = inputs
        out = outputs[0]
        out[...] = operand
        sl = tuple(
            slice(s, s + n)
            for s, n in zip((min(max(0, int(v)), m) for v, m in zip(start.reshape(-1), self.limits)), self.update_shape)
        )
        out[sl] = update


@register(BuiltinOperator.DYNAMIC_UPDATE_SLICE)
def prepare_dynamic_update_slice(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3)
    operand, update, start = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.check(operand.type == update.type, "DYNAMIC_UPDATE_SLICE: operand and update types differ")
    if operand.type in dtypes.OBJECT_TYPES or operand.dtype.itemsize not in (1, 2, 4, 8):
        raise ctx.fail(
            f"DynamicUpdateSlice only currently supports 1-bit/8-bit/32-bit/64-bit integer or "
            f"float type, got {operand.type_name}."
        )
    ctx.check(start.dtype in (_I32, _I64), f"Type {start.type_name} is unsupported by op {ctx.op_name}.")
    _same_output_type(ctx, 0, operand)
    o, u = operand.shape, update.shape
    ctx.check(len(o) == len(u), "DYNAMIC_UPDATE_SLICE: operand and update must have the same rank")
    ctx.check(
        len(start.shape) == 1 and start.shape[0] == len(o),
        "DYNAMIC_UPDATE_SLICE: start_indices must be a vector of the operand's rank",
    )
    ctx.check(all(b <= a for a, b in zip(o, u)), "DYNAMIC_UPDATE_SLICE: update is larger than the operand")
    ctx.set_output_shape(0, o)
    return DynamicUpdateSlice(tuple(a - b for a, b in zip(o, u)), tuple(u))


# =================================================================================================
# MATRIX_DIAG, MATRIX_SET_DIAG
# =================================================================================================

# Every other type (bool, strings, float16) falls to LiteRT's float32 branch, which reads and writes 4-byte
# elements out of bounds of 1-byte bool buffers: refused here.
_DIAG_TYPES = {_F32, _U8, _I8, _I16, _I32, _I64}


@dataclass(frozen=True, eq=False)
class MatrixSetDiag:
    """Writes ``diag`` (batch, k) onto the main diagonal of the (batch, rows, cols) output; ``fill`` first
    copies the input (MATRIX_SET_DIAG) or zeroes the output (MATRIX_DIAG)."""

    batch: int
    cols: int
    k: int
    copy_input: bool

    def __call__(self, inputs, outputs):
        out = outputs[0]
        if self.copy_input:
            out[...] = inputs[0]
            diag = inputs[1]
        else:
            out.fill(0)
            diag = inputs[0]
        if out.size:
            out.reshape(self.batch, -1)[:, :: self.cols + 1][:, : self.k] = diag.reshape(self.batch, self.k)


def _check_diag_type(ctx: OpContext, t) -> None:
    if t.type in dtypes.OBJECT_TYPES or t.dtype not in _DIAG_TYPES:
        raise ctx.fail(f"Type {t.type_name} is unsupported by op {ctx.op_name}.")


@register(BuiltinOperator.MATRIX_DIAG)
def prepare_matrix_diag(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x = ctx.input(0)
    _check_diag_type(ctx, x)
    _same_output_type(ctx, 0, x)
    ctx.check(len(x.shape) >= 1, "MATRIX_DIAG: input must be at least a vector")
    n = x.shape[-1]
    ctx.set_output_shape(0, tuple(x.shape) + (n,))
    return MatrixSetDiag(_prod(x.shape[:-1]), n, n, False)


@register(BuiltinOperator.MATRIX_SET_DIAG)
def prepare_matrix_set_diag(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, d = ctx.input(0), ctx.input(1)
    _check_diag_type(ctx, x)
    ctx.check(d.type == x.type, "MATRIX_SET_DIAG: diagonal type differs from input type")
    _same_output_type(ctx, 0, x)
    ctx.check(len(x.shape) >= 2, "MATRIX_SET_DIAG: input must be at least a matrix")
    m, n = x.shape[-2:]
    k = min(m, n)
    ctx.check(
        tuple(d.shape) == tuple(x.shape[:-2]) + (k,),
        f"MATRIX_SET_DIAG: diagonal shape {d.shape} must be {tuple(x.shape[:-2]) + (k,)}",
    )
    ctx.set_output_shape(0, x.shape)
    return MatrixSetDiag(_prod(x.shape[:-2]), n, k, True)


# =================================================================================================
# ONE_HOT
# =================================================================================================

_ONE_HOT_TYPES = {_F32, _I8, _U8, _I32, _I64, _BOOL}


@dataclass(frozen=True, eq=False)
class OneHot:
    axis: int  # non-negative, in the output
    depth: int | None  # None: dynamic (from the depth input)
    dtype: np.dtype
    classes: np.ndarray | None = None  # arange(depth) shaped to broadcast against the indices, when static

    def __call__(self, inputs, outputs):
        idx, depth_t, on, off = inputs
        if self.depth is None:
            depth = int(depth_t.reshape(-1)[0])
            if depth < 0:
                raise InputValueError(f"ONE_HOT: depth must be non-negative, got {depth}")
            shape = idx.shape[: self.axis] + (depth,) + idx.shape[self.axis :]
            out = limits.new_array(shape, self.dtype, "ONE_HOT's output")
            outputs[0] = out
        else:
            depth, out = self.depth, outputs[0]
        classes = (
            self.classes
            if self.classes is not None
            else np.arange(depth).reshape((depth,) + (1,) * (idx.ndim - self.axis))
        )
        hot = np.expand_dims(idx, self.axis) == classes
        np.copyto(out, off.reshape(-1)[0])
        np.copyto(out, on.reshape(-1)[0], where=hot)


@register(BuiltinOperator.ONE_HOT)
def prepare_one_hot(ctx: OpContext) -> PreparedOp:
    ctx.check_num(4)
    idx, depth, on, off = (ctx.input(k) for k in range(4))
    ctx.check(idx.dtype in (_I32, _I64), f"Unknown index output data type: {idx.type_name}")
    ctx.check(depth.dtype == _I32, "ONE_HOT: depth must be int32")
    if on.type in dtypes.OBJECT_TYPES or on.dtype not in _ONE_HOT_TYPES:
        raise ctx.fail(f"Unknown output data type: {on.type_name}")
    ctx.check(off.type == on.type, "ONE_HOT: on_value and off_value types differ")
    _same_output_type(ctx, 0, on)
    ctx.check(
        depth.size == 1 and on.size == 1 and off.size == 1, "ONE_HOT: depth, on_value and off_value must be scalars"
    )
    rank = len(idx.shape)
    axis = int(ctx.options.axis)
    axis = rank if axis == -1 else axis
    ctx.check(0 <= axis <= rank, f"ONE_HOT: axis {ctx.options.axis} out of range for rank {rank + 1}")
    if depth.data is None:
        ctx.set_output_dynamic(0)
        return OneHot(axis, None, on.dtype)
    d = int(np.asarray(depth.data).reshape(-1)[0])
    ctx.check(d >= 0, f"ONE_HOT: depth must be non-negative, got {d}")
    ctx.set_output_shape(0, tuple(idx.shape[:axis]) + (d,) + tuple(idx.shape[axis:]))
    return OneHot(axis, d, on.dtype, np.arange(d).reshape((d,) + (1,) * (rank - axis)))


# =================================================================================================
# SPARSE_TO_DENSE
# =================================================================================================

_S2D_TYPES = {_F32, _I32, _I64, _I8, _U8}


@dataclass(frozen=True, eq=False)
class SparseToDense:
    dynamic: bool
    dtype: np.dtype

    def __call__(self, inputs, outputs):
        indices, shape_t, vals, default = inputs
        shape = tuple(int(v) for v in shape_t.reshape(-1))
        if self.dynamic:
            if any(d < 0 for d in shape) or len(shape) > 4:
                raise InputValueError(f"SPARSE_TO_DENSE: invalid output shape {shape}")
            outputs[0] = limits.new_array(shape, self.dtype, "SPARSE_TO_DENSE's output")
        out = outputs[0]
        idx = indices.reshape(-1, 1) if indices.ndim < 2 else indices
        if idx.shape[1] != len(shape):
            raise InputValueError(
                f"SPARSE_TO_DENSE: indices of {idx.shape[1]} coordinates for an output of rank {len(shape)}"
            )
        if idx.size and ((idx < 0).any() or (idx >= np.array(shape, np.int64)).any()):
            raise IndexOutOfBounds(f"SPARSE_TO_DENSE: index outside the output shape {shape}")
        out.fill(default.reshape(-1)[0])
        n = idx.shape[0]
        v = vals.reshape(-1)[0] if vals.ndim == 0 else vals.reshape(-1)[:n]
        out[tuple(idx.T)] = v  # a repeated index keeps its last value, as the reference loop does


@register(BuiltinOperator.SPARSE_TO_DENSE)
def prepare_sparse_to_dense(ctx: OpContext) -> PreparedOp:
    ctx.check_num(4)
    indices, shape_t, vals, default = (ctx.input(k) for k in range(4))
    ctx.check(len(indices.shape) < 3, f"Wrong indices dimensions {len(indices.shape)}, should be less than 3.")
    ctx.check(len(shape_t.shape) == 1, "SPARSE_TO_DENSE: output_shape must be a vector")
    ctx.check(len(vals.shape) < 2, "SPARSE_TO_DENSE: values must be a scalar or a vector")
    ctx.check(default.size == 1, "SPARSE_TO_DENSE: default_value must have one element")
    ctx.check(indices.dtype in (_I32, _I64), f"Type {indices.type_name} is unsupported by op {ctx.op_name}.")
    ctx.check(shape_t.dtype in (_I32, _I64), f"Dense shape type {shape_t.type} not supported.")
    if vals.type in dtypes.OBJECT_TYPES or vals.dtype not in _S2D_TYPES:
        raise ctx.fail(f"Value type {vals.type_name} is currently not supported by sparse to dense.")
    ctx.check(default.type == vals.type, "SPARSE_TO_DENSE: values and default_value types differ")
    _same_output_type(ctx, 0, vals)
    n_out = shape_t.shape[0]
    if len(indices.shape) < 2:
        ctx.check(n_out == 1, "SPARSE_TO_DENSE: 0-D/1-D indices need a 1-D output")
        n_idx = indices.size
    else:
        ctx.check(indices.shape[1] == n_out, "SPARSE_TO_DENSE: indices' second dimension must equal the output rank")
        n_idx = indices.shape[0]
    if len(vals.shape) > 0:  # a scalar value is written at every index (sparse_to_dense.h)
        # LiteRT reads values[i] for every index: fewer values would be read out of bounds.
        ctx.check(vals.shape[0] >= n_idx, f"SPARSE_TO_DENSE: {vals.shape[0]} values for {n_idx} indices")
    ctx.check(n_out <= 4, f"SPARSE_TO_DENSE: output rank {n_out} is over 4")
    shape = _shape_from(ctx, shape_t)
    if shape is None:
        ctx.set_output_dynamic(0)
        return SparseToDense(True, vals.dtype)
    ctx.set_output_shape(0, shape)
    return SparseToDense(False, vals.dtype)


# =================================================================================================
# WHERE
# =================================================================================================

_WHERE_TYPES = {_BOOL, _F32, _I8, _U8, _I32, _I64, _U32}


@dataclass(frozen=True, eq=False)
class Where:
    def __call__(self, inputs, outputs):
        outputs[0] = np.argwhere(inputs[0]).astype(np.int64, copy=False)


@register(BuiltinOperator.WHERE)
def prepare_where(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x = ctx.input(0)
    if x.type in dtypes.OBJECT_TYPES or x.dtype not in _WHERE_TYPES:
        raise ctx.fail(f"Condition tensor has unsupported type: '{x.type_name}'.")
    ctx.check(ctx.outputs[0].dtype == _I64, "WHERE: output must be int64")
    ctx.set_output_dynamic(0)
    return Where()


# =================================================================================================
# UNIQUE
# =================================================================================================

_UNIQUE_TYPES = {_F32, _I8, _I16, _I32, _I64, _U8}


@dataclass(frozen=True, eq=False)
class Unique:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
        # np.unique numbers groups in sorted order; renumber them by first occurrence.
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        outputs[0] = x[first[order]]  # the first occurrence's value (keeps -0.0 vs 0.0 as LiteRT)
        np.copyto(outputs[1], rank[inverse.reshape(-1)], casting="unsafe")


@register(BuiltinOperator.UNIQUE)
def prepare_unique(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 2)
    x = ctx.input(0)
    ctx.check(len(x.shape) == 1, "UNIQUE: input must be a vector")
    if x.type in dtypes.OBJECT_TYPES or x.dtype not in _UNIQUE_TYPES:
        raise ctx.fail(f"Unique index output array can only be Int32 or In64, got {x.type_name}")
    _same_output_type(ctx, 0, x)
    idx_type = ctx.outputs[1].dtype
    ctx.check(
        idx_type in (_I32, _I64), f"Unique index output array can only be Int32 or In64, got {ctx.outputs[1].type_name}"
    )
    ctx.set_output_dynamic(0)
    ctx.set_output_shape(1, x.shape)
    return Unique()


# =================================================================================================
# TOPK_V2
# =================================================================================================

_TOPK_TYPES = {_F32, _U8, _I8, _I16, _I32, _I64}


@dataclass(frozen=True, eq=False)
class TopKV2:
    k: int | None  # None: from the k input at eval (dynamic outputs)
    idx_dtype: np.dtype

    def __call__(self, inputs, outputs):
        x = inputs[0]
        n = x.shape[-1]
        if self.k is None:
            k = int(inputs[1].reshape(-1)[0])
            if not 0 <= k <= n:
                raise InputValueError(f"TOPK_V2: k = {k} outside [0, {n}]")
            outputs[0] = np.empty(x.shape[:-1] + (k,), x.dtype)
            outputs[1] = np.empty(x.shape[:-1] + (k,), self.idx_dtype)
        else:
            k = self.k
        x2 = x.reshape(-1, n)
        # Stable ascending sort of the reversed rows, read backwards: descending, ties lower index first.
        order = np.argsort(x2[:, ::-1], axis=1, kind="stable")[:, ::-1][:, :k]
        idx = (n - 1) - order
        outputs[0][...] = np.take_along_axis(x2, idx, axis=1).reshape(outputs[0].shape)
        np.copyto(outputs[1], idx.reshape(outputs[1].shape), casting="unsafe")


@register(BuiltinOperator.TOPK_V2)
def prepare_topk_v2(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 2)
    x, k_t = ctx.input(0), ctx.input(1)
    if x.type in dtypes.OBJECT_TYPES or x.dtype not in _TOPK_TYPES:
        raise ctx.fail(f"Type {x.type_name} is currently not supported by TopK.")
    ctx.check(k_t.dtype in (_I16, _I32), "top_k->type == kTfLiteInt32 || top_k->type == kTfLiteInt16 was not true.")
    ctx.check(k_t.size == 1, "TOPK_V2: k must be a scalar")
    ctx.check(len(x.shape) >= 1, "TOPK_V2: input must be at least a vector")
    _same_output_type(ctx, 0, x)
    idx_dtype = ctx.outputs[1].dtype
    ctx.check(
        idx_dtype in (_I16, _I32), f"Output index type {ctx.outputs[1].type_name} is currently not supported by TopK."
    )
    if k_t.data is None:
        ctx.set_output_dynamic(0)
        ctx.set_output_dynamic(1)
        return TopKV2(None, idx_dtype)
    k = int(np.asarray(k_t.data).reshape(-1)[0])
    ctx.check(0 <= k <= x.shape[-1], "input must have at least k columns")
    shape = tuple(x.shape[:-1]) + (k,)
    ctx.set_output_shape(0, shape)
    ctx.set_output_shape(1, shape)
    return TopKV2(k, idx_dtype)


# =================================================================================================
# BUCKETIZE
# =================================================================================================


@dataclass(frozen=True, eq=False)
class Bucketize:
    boundaries: np.ndarray  # in the dtype the C++ comparison ``value < boundary`` happens in

    def __call__(self, inputs, outputs):
        x = inputs[0].astype(self.boundaries.dtype, copy=False)
        np.copyto(outputs[0], np.searchsorted(self.boundaries, x, side="right"), casting="unsafe")


@register(BuiltinOperator.BUCKETIZE)
def prepare_bucketize(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x = ctx.input(0)
    if x.type in dtypes.OBJECT_TYPES or x.dtype not in (_F32, _F64, _I32, _I64):
        raise ctx.fail(f"Type '{x.type_name}' is not supported by bucketize.")
    ctx.check(ctx.outputs[0].dtype == _I32, "BUCKETIZE: output must be int32")
    b = np.asarray(ctx.options.boundaries if ctx.options.boundaries is not None else (), np.float32)
    ctx.check(bool(np.all(b[1:] >= b[:-1])), "Expected sorted boundaries")
    # C++ compares int32/int64/float values with float boundaries in float32; double values in double.
    ctx.set_output_shape(0, x.shape)
    return Bucketize(b.astype(np.float64) if x.dtype == _F64 else b)
