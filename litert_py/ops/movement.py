"""Data movement: CONCATENATION, TRANSPOSE, TILE, PACK, UNPACK, REVERSE_V2, REVERSE_SEQUENCE (PAD, PADV2 and
MIRROR_PAD are in padding.py; the slicing ops STRIDED_SLICE, SLICE, SPLIT, SPLIT_V and GATHER in slicing.py).

Paths (bytes are moved, never reinterpreted; quantized tensors pass through with their raw integers):
- CONCATENATION: float32, float16, uint8, int8, int16, int32, int64, bool, uint32, int4. int8 inputs must
  share the output's scale and zero point and int16 zero points must be 0 (LiteRT's Prepare checks); uint8
  inputs whose (scale, zero point) differ from the output's are requantized in float32 exactly as the
  reference ConcatenationWithScaling does. LiteRT rejects any fused activation, and so do we. Rank-0 inputs
  are allowed only when all are constant (they are stacked into a vector).
- TRANSPOSE: every 8/16/32/64-bit dtype, rank <= 8, perm int32 (negative entries count from the end).
- TILE: every dtype, strings included; multiples int32/int64 (non-negative).
- PACK: float32, uint8, int8, int16, int32, int64, uint32; UNPACK: float32, float16, uint8, int8, int16, int32,
  bool. Every input and output share scale and zero point (LiteRT's Prepare checks, for every type).
- REVERSE_V2: float32, float16, uint8, int8, int16, int32, int64, bool; axis int32 (negative counts from the
  end), several axes only when they form one contiguous run (LiteRT's rule). REVERSE_SEQUENCE: float32,
  uint8, int16, int32, int64; seq_lengths int32/int64.

Shapes come from constant index tensors at prepare; a non-constant one makes the output dynamic.

Where LiteRT writes uninitialized memory instead of failing, we fail at prepare: a TRANSPOSE perm with
repeated entries and a REVERSE_SEQUENCE length beyond the sequence axis (LiteRT checks only the first length).

Sources matched: tensorflow/lite/kernels/{concatenation,transpose,tile,pack,unpack,reverse,reverse_sequence}.cc,
tensorflow/lite/kernels/internal/reference/concatenation.h.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import InputValueError
from ..quant.fixedpoint import round_away, trunc_to_int32
from ..schema import dtypes
from ..schema.model import ActivationFunctionType, BuiltinOperator
from .common import check_output_type, index_values, movable
from .registry import OpContext, PreparedOp, TensorInfo, register

# =================================================================================================
# CONCATENATION
# =================================================================================================

_CONCAT_TYPES = {
    np.dtype(t) for t in (np.float32, np.float16, np.uint8, np.int8, np.int16, np.int32, np.int64, np.bool_, np.uint32)
}


@dataclass(frozen=True, eq=False)
class Concatenation:
    axis: int

    def __call__(self, inputs, outputs):
        np.concatenate(inputs, axis=self.axis, out=outputs[0])


@dataclass(frozen=True, eq=False)
class ConcatenationScalars:
    """Constant rank-0 inputs stacked into a vector (folded at prepare)."""

    def __call__(self, inputs, outputs):
        np.stack(inputs, axis=0, out=outputs[0])


def rescale_uint8(x: np.ndarray, scale: np.float32, bias: np.float32, zero_point: int) -> np.ndarray:
    """ConcatenationWithScaling's per-element step: ``TfLiteRound(x * scale + bias) + zp`` in float32
    (two separate roundings, no FMA), cast to int32 as x86 does, clamped to [0, 255]."""
    f = np.multiply(x, scale, dtype=np.float32)
    f += bias
    q = trunc_to_int32(round_away(f, out=f))
    q += zero_point
    return np.clip(q, 0, 255).astype(np.uint8)


@dataclass(frozen=True, eq=False)
class ConcatenationUInt8Rescaled:
    """uint8 inputs, some with another (scale, zero point) than the output: those are requantized, through a
    256-entry table per input (``rescale_uint8`` evaluated at prepare on every uint8 value: the same per-value
    result, one gather instead of about eight float32 passes)."""

    axis: int
    tables: tuple  # per input: None (copied) or its (256,) uint8 table, rescale_uint8 of every value

    def __call__(self, inputs, outputs):
        parts = [x if t is None else np.take(t, x, mode="wrap") for x, t in zip(inputs, self.tables)]
        np.concatenate(parts, axis=self.axis, out=outputs[0])


@register(BuiltinOperator.CONCATENATION)
def prepare_concatenation(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) >= 1 and len(ctx.outputs) == 1, "CONCATENATION needs inputs and one output")
    ins = [ctx.input(i) for i in range(len(ctx.inputs))]
    t0, out = ins[0], ctx.outputs[0]
    rank = len(t0.shape)
    axis = ctx.options.axis
    if axis < 0:
        axis += rank
    ctx.check(
        axis >= 0 and (axis < rank or (rank == 0 and axis == 0)),
        f"CONCATENATION axis {ctx.options.axis} is out of range for inputs of rank {rank}",
    )
    act = ctx.options.fused_activation_function
    ctx.check(act == ActivationFunctionType.NONE, f"params->activation != kTfLiteActNone ({act} != 0)")
    ctx.check(
        t0.type == dtypes.TensorType.INT4 or t0.dtype in _CONCAT_TYPES,
        f"Type {t0.type_name} is unsupported by op CONCATENATION.",
    )
    for t in ins[1:]:
        ctx.check(len(t.shape) == rank, f"t->dims->size != t0->dims->size ({len(t.shape)} != {rank})")
        ctx.check(t.type == t0.type, f"CONCATENATION inputs have different types: {t0.type_name}, {t.type_name}")
    check_output_type(ctx, t0)
    if rank == 0:
        ctx.check(
            all(t.is_constant for t in ins),
            "t0->dims->size > 0 was not true: only constant scalars can be concatenated",
        )
        ctx.set_output_shape(0, (len(ins),))
        return ConcatenationScalars()
    shape = list(t0.shape)
    for t in ins[1:]:
        for d in range(rank):
            if d == axis:
                shape[d] += t.shape[d]
            else:
                ctx.check(
                    t.shape[d] == t0.shape[d],
                    f"t->dims->data[d] != t0->dims->data[d] ({t.shape[d]} != {t0.shape[d]}) at dimension {d}",
                )
    if t0.type == dtypes.TensorType.INT8:  # no rescaling in the int8 kernel
        for t in ins:
            ctx.check(t.scale == out.scale, f"t->params.scale != output->params.scale ({t.scale} != {out.scale})")
            ctx.check(
                t.zero_point == out.zero_point,
                f"t->params.zero_point != output->params.zero_point ({t.zero_point} != {out.zero_point})",
            )
    if t0.dtype == np.int16:
        for t in ins + [out]:
            ctx.check(t.zero_point == 0, f"params.zero_point != 0 ({t.zero_point} != 0)")
    ctx.set_output_shape(0, shape)
    if t0.dtype == np.uint8:
        rescale = []
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # an output scale of 0: as in C
            inv = np.float32(1.0) / np.float32(out.scale)
            for t in ins:
                if t.zero_point == out.zero_point and t.scale == out.scale:
                    rescale.append(None)
                else:
                    s = np.float32(t.scale) * inv
                    rescale.append((s, np.float32(-t.zero_point) * s))
        if any(r is not None for r in rescale):
            every = np.arange(256, dtype=np.uint8)
            with np.errstate(all="ignore"):
                tables = [None if r is None else rescale_uint8(every, r[0], r[1], out.zero_point) for r in rescale]
            return ConcatenationUInt8Rescaled(axis, tuple(tables))
    return Concatenation(axis)


# =================================================================================================
# TRANSPOSE
# =================================================================================================

_TRANSPOSE_MAX_RANK = 8


def transpose_perm(perm, rank: int, fail=InputValueError) -> tuple[int, ...]:
    p = [int(v) for v in np.asarray(perm).reshape(-1)]
    if len(p) != rank:
        raise fail(f"op_context->perm->dims->data[0] != dims ({len(p)} != {rank})")
    if any(not -rank <= v < rank for v in p):
        raise fail("Transpose op permutations array is out of bounds.")
    p = [v + rank if v < 0 else v for v in p]
    if len(set(p)) != rank:
        raise fail(f"Transpose op permutation {p} repeats an axis")
    return tuple(p)


@dataclass(frozen=True, eq=False)
class Transpose:
    perm: tuple[int, ...]

    def __call__(self, inputs, outputs):
        np.copyto(outputs[0], inputs[0].transpose(self.perm))


#: TransposeBlocked copies blocks of about this many source bytes (rows of the 2-D source): each block's
#: transposed reads and writes stay in L1 (measured, 1 thread: float32 (1024, 64) 63 -> 20 us, (256, 256) 70 -> 22,
#: (196, 768) 152 -> 71, int8 (1024, 64) 27 -> 18; 8-16 KB blocks were slower, 64 KB ones mostly too).
TRANSPOSE_BLOCK_BYTES = 32 << 10


def collapse_transpose(shape: tuple, perm: tuple) -> tuple[tuple, tuple]:
    """The fewest axes that describe the same transpose: axes of size 1 dropped, and input axes that stay
    adjacent and in order in the output merged (NHWC -> NCHW of (1, H, W, C) is the 2-D (H*W, C) -> (C, H*W))."""
    kept = [i for i in range(len(shape)) if shape[i] != 1]
    order = [kept.index(p) for p in perm if shape[p] != 1]  # the output's axes as positions in ``kept``
    groups: list[list[int]] = []
    for a in order:
        if groups and a == groups[-1][-1] + 1:
            groups[-1].append(a)
        else:
            groups.append([a])
    by_input = sorted(range(len(groups)), key=lambda g: groups[g][0])
    dims = tuple(int(np.prod([shape[kept[a]] for a in groups[g]])) for g in by_input)
    return dims, tuple(by_input.index(g) for g in range(len(groups)))


@dataclass(frozen=True, eq=False)
class TransposeBlocked:
    """A transpose that is, on its collapsed axes (collapse_transpose), (A, B) -> (B, A), or (N, A, B) -> (N, B, A):
    copied in blocks of ``rows`` source rows (TRANSPOSE_BLOCK_BYTES), the same values as one strided copy."""

    src_dims: tuple  # (N, A, B)
    rows: int

    def __call__(self, inputs, outputs):
        n, a, b = self.src_dims
        src = inputs[0].reshape(n, a, b)
        dst = outputs[0].reshape(n, b, a)
        rows = self.rows
        for i in range(0, a, rows):
            np.copyto(dst[:, :, i : i + rows], src[:, i : i + rows].transpose(0, 2, 1))


def _transpose_op(shape: tuple, perm: tuple, itemsize: int):
    """TransposeBlocked when the transpose collapses to a swap of two axes (after an optional leading one) with
    at least two blocks of rows, else Transpose (also for zero values: no rows to block)."""
    if 0 in shape:
        return Transpose(perm)
    dims, p = collapse_transpose(shape, perm)
    if p == (1, 0):
        dims, p = (1, *dims), (0, 2, 1)
    if p == (0, 2, 1):
        n, a, b = dims
        rows = max(8, TRANSPOSE_BLOCK_BYTES // (b * itemsize))
        if a >= 2 * rows:
            return TransposeBlocked(dims, rows)
    return Transpose(perm)


@dataclass(frozen=True, eq=False)
class TransposeDynamic:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        outputs[0] = np.ascontiguousarray(x.transpose(transpose_perm(inputs[1], x.ndim)))


@register(BuiltinOperator.TRANSPOSE)
def prepare_transpose(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, perm = ctx.input(0), ctx.input(1)
    rank = len(x.shape)
    ctx.check(rank <= _TRANSPOSE_MAX_RANK, "Transpose op only supports 1D-8D input arrays.")
    check_output_type(ctx, x)
    ctx.check(movable(x), f"Type {x.type_name} is currently not supported by Transpose.")
    ctx.check(perm.dtype == np.int32, f"TRANSPOSE perm must be int32, got {perm.type_name}")
    ctx.check(len(perm.shape) == 1, f"NumDimensions(op_context->perm) != 1 ({len(perm.shape)} != 1)")
    if not perm.is_constant:
        ctx.set_output_dynamic(0)
        return TransposeDynamic()
    p = transpose_perm(perm.data, rank, ctx.fail)
    ctx.set_output_shape(0, tuple(x.shape[k] for k in p))
    return _transpose_op(tuple(x.shape), p, x.dtype.itemsize)


# =================================================================================================
# TILE, PACK, UNPACK
# =================================================================================================


def tile_shape(in_shape, multiples, fail=InputValueError) -> tuple[int, ...]:
    m = index_values(multiples)
    if len(m) != len(in_shape):
        raise fail(f"NumElements(multipliers) != NumDimensions(input) ({len(m)} != {len(in_shape)})")
    if any(v < 0 for v in m):
        raise fail(f"TILE multipliers must be non-negative, got {m}")
    return tuple(d * v for d, v in zip(in_shape, m))


@dataclass(frozen=True, eq=False)
class Tile:
    """Static multiples: the input is broadcast into a (m0, d0, m1, d1, ...) view of the output."""

    view: tuple[int, ...]  # output viewed as interleaved (multiple, size) pairs
    src: tuple[int, ...]  # input viewed as (1, d0, 1, d1, ...)

    def __call__(self, inputs, outputs):
        outputs[0].reshape(self.view)[...] = inputs[0].reshape(self.src)


def _tile_views(in_shape, multiples) -> tuple[tuple[int, ...], tuple[int, ...]]:
    view, src = [], []
    for d, m in zip(in_shape, multiples):
        view += [m, d]
        src += [1, d]
    return tuple(view), tuple(src)


@dataclass(frozen=True, eq=False)
class TileDynamic:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        shape = tile_shape(x.shape, inputs[1])
        out = limits.new_array(shape, x.dtype, "TILE's output")
        Tile(*_tile_views(x.shape, index_values(inputs[1])))([x], [out])
        outputs[0] = out


@register(BuiltinOperator.TILE)
def prepare_tile(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, mult = ctx.input(0), ctx.input(1)
    check_output_type(ctx, x)
    ctx.check(
        x.type not in (dtypes.TensorType.RESOURCE, dtypes.TensorType.VARIANT),
        f"Type '{x.type_name}' is not supported by tile.",
    )
    ctx.check(len(mult.shape) == 1, f"NumDimensions(multipliers) != 1 ({len(mult.shape)} != 1)")
    ctx.check(
        mult.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
        f"Multipliers of type '{mult.type_name}' are not supported by tile.",
    )
    ctx.check(
        mult.size == len(x.shape), f"NumElements(multipliers) != NumDimensions(input) ({mult.size} != {len(x.shape)})"
    )
    if not mult.is_constant:
        ctx.set_output_dynamic(0)
        return TileDynamic()
    shape = tile_shape(x.shape, mult.data, ctx.fail)
    ctx.set_output_shape(0, shape)
    return Tile(*_tile_views(x.shape, index_values(mult.data)))


_PACK_TYPES = {
    dtypes.TensorType.FLOAT32,
    dtypes.TensorType.UINT8,
    dtypes.TensorType.INT8,
    dtypes.TensorType.INT16,
    dtypes.TensorType.INT32,
    dtypes.TensorType.INT64,
    dtypes.TensorType.UINT32,
}
_UNPACK_TYPES = {
    dtypes.TensorType.FLOAT32,
    dtypes.TensorType.FLOAT16,
    dtypes.TensorType.UINT8,
    dtypes.TensorType.INT8,
    dtypes.TensorType.INT16,
    dtypes.TensorType.INT32,
    dtypes.TensorType.BOOL,
}


def _check_same_quantization(ctx: OpContext, a: TensorInfo, b: TensorInfo) -> None:
    """pack.cc / unpack.cc: quantized tensors are moved, not requantized, so the parameters must agree."""
    ctx.check(
        a.zero_point == b.zero_point,
        f"input->params.zero_point != output->params.zero_point ({a.zero_point} != {b.zero_point})",
    )
    ctx.check(a.scale == b.scale, f"input->params.scale != output->params.scale ({a.scale} != {b.scale})")


@dataclass(frozen=True, eq=False)
class Pack:
    index: tuple  # per input, its place in the output: (:, ..., k)

    def __call__(self, inputs, outputs):
        out = outputs[0]
        for x, ix in zip(inputs, self.index):
            out[ix] = x


@register(BuiltinOperator.PACK)
def prepare_pack(ctx: OpContext) -> PreparedOp:
    n = ctx.options.values_count
    ctx.check(len(ctx.inputs) == n, f"NumInputs(node) != values_count ({len(ctx.inputs)} != {n})")
    ctx.check(n >= 1 and len(ctx.outputs) == 1, "PACK takes values_count >= 1 inputs and one output")
    ins = [ctx.input(i) for i in range(n)]
    x, y = ins[0], ctx.outputs[0]
    rank = len(x.shape)
    axis = ctx.options.axis
    if axis < 0:
        axis += rank + 1
    ctx.check(
        0 <= axis <= rank,
        f"axis >= 0 && axis <= NumDimensions(input0) was not true (axis {ctx.options.axis}, rank {rank})",
    )
    ctx.check(x.type in _PACK_TYPES, f"Type '{x.type_name}' is not supported by pack.")
    check_output_type(ctx, x)
    for t in ins:
        ctx.check(t.shape == x.shape, f"PACK inputs differ in shape: {list(x.shape)} and {list(t.shape)}")
        ctx.check(t.type == x.type, f"PACK inputs differ in type: {x.type_name} and {t.type_name}")
        _check_same_quantization(ctx, t, y)
    ctx.set_output_shape(0, x.shape[:axis] + (n,) + x.shape[axis:])
    return Pack(tuple((slice(None),) * axis + (k,) for k in range(n)))


@dataclass(frozen=True, eq=False)
class Unpack:
    index: tuple  # per output, its place in the input: (:, ..., k)

    def __call__(self, inputs, outputs):
        x = inputs[0]
        for out, ix in zip(outputs, self.index):
            out[...] = x[ix]


@register(BuiltinOperator.UNPACK)
def prepare_unpack(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) == 1, f"UNPACK takes 1 input, got {len(ctx.inputs)}")
    x = ctx.input(0)
    n = ctx.options.num
    ctx.check(len(ctx.outputs) == n, f"NumOutputs(node) != data->num ({len(ctx.outputs)} != {n})")
    rank = len(x.shape)
    axis = ctx.options.axis
    if axis < 0:
        axis += rank
    ctx.check(0 <= axis < rank, f"0 <= axis && axis < NumDimensions(input) was not true (axis {ctx.options.axis})")
    ctx.check(x.type in _UNPACK_TYPES, f"Type '{x.type_name}' is not supported by unpack.")
    ctx.check(x.shape[axis] == n, f"UNPACK: num {n} differs from the size {x.shape[axis]} of axis {axis}")
    shape = x.shape[:axis] + x.shape[axis + 1 :]
    for k in range(n):
        check_output_type(ctx, x, k)
        _check_same_quantization(ctx, x, ctx.outputs[k])
        ctx.set_output_shape(k, shape)
    return Unpack(tuple((slice(None),) * axis + (k,) for k in range(n)))


# =================================================================================================
# REVERSE_V2, REVERSE_SEQUENCE
# =================================================================================================

_REVERSE_TYPES = {
    dtypes.TensorType.FLOAT32,
    dtypes.TensorType.FLOAT16,
    dtypes.TensorType.UINT8,
    dtypes.TensorType.INT8,
    dtypes.TensorType.INT16,
    dtypes.TensorType.INT32,
    dtypes.TensorType.INT64,
    dtypes.TensorType.BOOL,
}


def reverse_axes(axis, rank: int, fail=InputValueError) -> tuple[int, ...]:
    axes = []
    for a in index_values(axis):
        if a < 0:
            a += rank
        if not 0 <= a < rank:
            raise fail(f"axis >= 0 && axis < NumDimensions(input) was not true (axis {a})")
        axes.append(a)
    ordered = sorted(axes)
    if any(b != a + 1 for a, b in zip(ordered, ordered[1:])):
        raise fail(f"Non-contiguous `axes` not supported: {axes}")
    return tuple(axes)


@dataclass(frozen=True, eq=False)
class Reverse:
    index: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0][self.index]


@dataclass(frozen=True, eq=False)
class ReverseDynamicAxis:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        outputs[0][...] = np.flip(x, reverse_axes(inputs[1], x.ndim))


def _flip_index(axes, rank: int) -> tuple:
    return tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(rank))


@register(BuiltinOperator.REVERSE_V2)
def prepare_reverse_v2(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, axis = ctx.input(0), ctx.input(1)
    ctx.check(len(axis.shape) == 1, f"NumDimensions(axis) != 1 ({len(axis.shape)} != 1)")
    ctx.check(len(x.shape) >= axis.size, "NumDimensions(input) >= NumElements(axis) was not true.")
    ctx.check(x.type in _REVERSE_TYPES, f"Type '{x.type_name}' is not supported by reverse.")
    ctx.check(axis.type == dtypes.TensorType.INT32, f"Axis Type '{axis.type_name}' is not supported by reverse.")
    check_output_type(ctx, x)
    ctx.set_output_shape(0, x.shape)
    if not axis.is_constant:
        return ReverseDynamicAxis()
    axes = reverse_axes(axis.data, len(x.shape), ctx.fail)
    # e.g. (1, 4, 4, 0) reversed along axis 2: LiteRT's reverse.cc divides by the empty inner size (SIGSEGV)
    ctx.check(
        not axes or 0 not in x.shape[max(axes) + 1 :],
        f"REVERSE_V2 of {list(x.shape)} along axis {max(axes) if axes else 0}: a later dimension is empty "
        "(LiteRT segfaults)",
    )
    return Reverse(_flip_index(axes, len(x.shape)))


_REVERSE_SEQUENCE_TYPES = {
    dtypes.TensorType.FLOAT32,
    dtypes.TensorType.UINT8,
    dtypes.TensorType.INT16,
    dtypes.TensorType.INT32,
    dtypes.TensorType.INT64,
}


def reverse_sequence_index(seq_lengths, seq_size: int, fail=InputValueError) -> np.ndarray:
    """(batch, seq) source positions along the sequence axis: the first L entries reversed, the rest in place
    (reference_ops::ReverseSequence; L <= 0 leaves the row unchanged). reverse_sequence.cc only checks the
    first length against the sequence size; a longer later one (LiteRT reads outside the input) is refused."""
    lengths = np.asarray(seq_lengths).reshape(-1).astype(np.int64)
    if lengths.size and lengths.max() > seq_size:
        raise fail(f"seq_lengths[i] <= SizeOfDimension(input, seq_dim) was not true: {lengths.max()} > {seq_size}")
    j = np.arange(seq_size, dtype=np.int64)
    last = lengths[:, None] - 1
    return np.where(j[None, :] <= last, last - j[None, :], j[None, :])


@dataclass(frozen=True, eq=False)
class ReverseSequence:
    """Constant lengths: one gather through a flat index computed at prepare."""

    flat_index: np.ndarray

    def __call__(self, inputs, outputs):
        np.take(inputs[0].reshape(-1), self.flat_index, out=outputs[0].reshape(-1))


def _reverse_sequence_flat(shape, seq_dim: int, batch_dim: int, index: np.ndarray) -> np.ndarray:
    """Flat source offset of every output element: positions along seq_dim come from ``index[batch, seq]``."""
    pos = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), np.int64)
    pos[seq_dim] = index[pos[batch_dim], pos[seq_dim]]
    return np.ravel_multi_index(tuple(pos), shape).reshape(-1) if int(np.prod(shape)) else np.zeros(0, np.int64)


@dataclass(frozen=True, eq=False)
class ReverseSequenceDynamic:
    seq_dim: int
    batch_dim: int

    def __call__(self, inputs, outputs):
        x = inputs[0]
        index = reverse_sequence_index(inputs[1], x.shape[self.seq_dim])
        flat = _reverse_sequence_flat(x.shape, self.seq_dim, self.batch_dim, index)
        np.take(x.reshape(-1), flat, out=outputs[0].reshape(-1))


@register(BuiltinOperator.REVERSE_SEQUENCE)
def prepare_reverse_sequence(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, lengths = ctx.input(0), ctx.input(1)
    ctx.check(len(lengths.shape) == 1, f"NumDimensions(seq_lengths) != 1 ({len(lengths.shape)} != 1)")
    ctx.check(x.type in _REVERSE_SEQUENCE_TYPES, f"Type '{x.type_name}' is not supported by reverse_sequence.")
    ctx.check(
        lengths.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
        f"Seq_lengths type '{lengths.type_name}' is not supported by reverse_sequence.",
    )
    check_output_type(ctx, x)
    # LiteRT checks these at eval; they depend on nothing but the shapes, so prepare can.
    rank = len(x.shape)
    seq_dim, batch_dim = ctx.options.seq_dim, ctx.options.batch_dim
    ctx.check(seq_dim >= 0 and batch_dim >= 0, "seq_dim >= 0 && batch_dim >= 0 was not true.")
    ctx.check(seq_dim != batch_dim, "seq_dim != batch_dim was not true.")
    ctx.check(seq_dim < rank and batch_dim < rank, "seq_dim and batch_dim must be < NumDimensions(input).")
    ctx.check(
        lengths.shape[0] == x.shape[batch_dim],
        f"SizeOfDimension(seq_lengths_tensor, 0) != "
        f"SizeOfDimension(input, batch_dim) ({lengths.shape[0]} != {x.shape[batch_dim]})",
    )
    ctx.set_output_shape(0, x.shape)
    if not lengths.is_constant:
        return ReverseSequenceDynamic(seq_dim, batch_dim)
    index = reverse_sequence_index(lengths.data, x.shape[seq_dim], ctx.fail)
    return ReverseSequence(_reverse_sequence_flat(x.shape, seq_dim, batch_dim, index))
