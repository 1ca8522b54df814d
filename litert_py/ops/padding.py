"""Padding: PAD, PADV2, MIRROR_PAD (the rest of data movement is in movement.py and slicing.py).

Paths (bytes are moved, never reinterpreted; quantized tensors pass through with their raw integers):
- PAD / PADV2: float32, float16, uint8, int8, int16, int32, int64, bool, rank <= 5; paddings int32, int64,
  int8, int16 or bool. Quantized uint8/int8/int16 pad with the output zero point (PAD) or with the raw
  constant value, which must share the output's scale and zero point (PADV2).
- MIRROR_PAD: every 8/16/32/64-bit dtype; paddings int32/int64 in [0, size - offset] (REFLECT offset 1,
  SYMMETRIC 0); int8/uint8/int16 input and output share scale and zero point (int16: zero point 0).

Shapes come from constant paddings tensors at prepare; a non-constant one makes the output dynamic.

Sources matched: tensorflow/lite/kernels/{pad,mirror_pad}.cc, tensorflow/lite/kernels/internal/reference/pad.h.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import InputValueError
from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .bound_plan import BoundCalls, BoundCalls3, contiguous_source
from .common import axis_slices, check_output_type, movable, reusable
from .registry import OpContext, PreparedOp, TensorInfo, register

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def is_quantized(t: TensorInfo) -> bool:
    return bool(t.quantization.scale)


# =================================================================================================
# PAD, PADV2
# =================================================================================================

INPUT, PADDINGS, CONSTANT_VALUES = 0, 1, 2
_PAD_TYPES = {np.dtype(t) for t in (np.float32, np.float16, np.uint8, np.int8, np.int16, np.int32, np.int64, np.bool_)}
_PADDING_TYPES = {np.dtype(t) for t in (np.int32, np.int64, np.int8, np.int16, np.bool_)}
_PAD_MAX_RANK = 5


def pad_params(paddings: np.ndarray, in_shape: tuple[int, ...], fail=InputValueError):
    """(left, right) per dimension from the (rank, 2) paddings, checked as pad.cc GetPadParams does."""
    p = np.asarray(paddings).astype(np.int64).reshape(-1, 2)
    if p.size and (p.min() < _INT32_MIN or p.max() > _INT32_MAX):
        raise fail("INT64 padding overflow. Only support value between INT32_MIN and INT32_MAX.")
    if p.size and p.min() < 0:
        raise fail("Pad value has to be greater than equal to 0.")
    pads = [(int(a), int(b)) for a, b in p.tolist()]
    return pads, tuple(d + a + b for d, (a, b) in zip(in_shape, pads))


def _pad_regions(pads, in_shape) -> tuple[tuple, tuple]:
    """Index tuples of the interior and of the border slabs to fill (zero-width slabs left out). The interior's
    ends with an Ellipsis: a 0-d output's index is then ``[...]``, a 0-d view (``out[()]`` is a numpy scalar)."""
    interior = (*(slice(a, a + d) for d, (a, _) in zip(in_shape, pads)), Ellipsis)
    borders = []
    for k, ((a, b), d) in enumerate(zip(pads, in_shape)):
        if a:
            borders.append(axis_slices(k, 0, a))
        if b:
            borders.append(axis_slices(k, a + d, None))
    return interior, tuple(borders)


@dataclass(frozen=True, eq=False)
class Pad(BoundCalls):
    """PAD with constant paddings and a static pad value: the value into each border slab, the input into the
    interior (bound_plan.BoundCalls: the slabs' views made once)."""

    interior: tuple
    borders: tuple
    value: object  # the pad value (PadValueInput: None, the constant_values input's, read at each call)

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The value into each border view of ``out``, then ``x`` into its interior view."""
        fills = tuple((operator.setitem, (out[b], Ellipsis, self.value), {}) for b in self.borders)
        return (*fills, (np.copyto, (out[self.interior], x), {}))


@dataclass(frozen=True, eq=False)
class PadValueInput(BoundCalls3, Pad):
    """Pad whose value is the constant_values input's (not constant): read at each call through a 0-d view of that
    input made at bind (BoundCalls3: the input, the paddings and the constant_values inputs identity-tested)."""

    def bound_calls(self, x: np.ndarray, paddings, cv: np.ndarray, out: np.ndarray) -> tuple:
        """The constant_values input's first value (its 0-d view) into each border view, then ``x``."""
        calls = []
        v = contiguous_source(cv, calls).reshape(-1)[0, ...]
        calls += [(operator.setitem, (out[b], Ellipsis, v), {}) for b in self.borders]
        return (*calls, (np.copyto, (out[self.interior], x), {}))


def pad_op(interior: tuple, borders: tuple, value) -> Pad:
    """Pad for a static ``value``, PadValueInput for None."""
    return Pad(interior, borders, value) if value is not None else PadValueInput(interior, borders, None)


#: Outputs of at most this many bytes with two or more border slabs take PadFilled (measured, 1 thread, the
#: border slabs against the filled output: int8 (1, 31, 27, 48) 2.6 -> 1.8 us, (1, 17, 15, 48) 2.1 -> 0.7,
#: (1, 9, 9, 48) 1.5 -> 0.6, (1, 5, 5, 96) 1.1 -> 0.6 us; int8 (1, 50, 50, 32) 3.7 -> 3.3 us; from about 150 KB
#: the slabs win: (1, 98, 98, 16) 5.7 vs 6.1 us, float32 (1, 32, 27, 48) 5.1 vs 7.4 us).
FILL_MAX_BYTES = 1 << 16


@dataclass(frozen=True, eq=False)
class PadFilled(Pad):
    """Pad for small outputs: the whole output filled with the (static) pad value in one call, then the input
    copied into the interior: two numpy calls instead of one per border slab (the same bytes: every border
    element gets the value, every interior one the input's)."""

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """``out`` filled with the value, then ``x`` into its interior view."""
        return (out.fill, (self.value,), {}), (np.copyto, (out[self.interior], x), {})


@dataclass(frozen=True, eq=False)
class PadDynamic:
    """Paddings that are not constant: the output shape is known only at eval."""

    value: object
    _last = None  # (paddings, input shape, the Pad made for them) of the last call

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        pads, shape = pad_params(inputs[PADDINGS], x.shape)
        out = outputs[0]
        if not reusable(out, shape, x.dtype, x):  # else into the tensor's present array (common.reusable)
            out = outputs[0] = limits.new_array(shape, x.dtype, "PAD's output")
        last = self._last
        if last is None or last[0] != pads or last[1] != x.shape:
            interior, borders = _pad_regions(pads, x.shape)
            last = (pads, x.shape, pad_op(interior, borders, self.value))
            object.__setattr__(self, "_last", last)
        last[2](inputs, [out])  # bound to these arrays at its first call, then run (its plan kept while they stay)


def _pad_value(ctx: OpContext, x: TensorInfo, cv: TensorInfo | None):
    """The static pad value (None when it comes from a non-constant constant_values input)."""
    out = ctx.outputs[0]
    if x.dtype == np.uint8 or (x.dtype in (np.int8, np.int16) and is_quantized(x)):
        info = np.iinfo(x.dtype)
        if cv is None:  # quantized PAD: 0.0 in the output's quantization, i.e. its zero point
            zp = out.zero_point
            ctx.check(info.min <= zp <= info.max, f"output zero point {zp} is outside the {x.type_name} range")
            return x.dtype.type(zp)
        ctx.check(
            cv.zero_point == out.zero_point,
            f"output->params.zero_point != constant_values->params.zero_point ({out.zero_point} != {cv.zero_point})",
        )
        ctx.check(
            cv.scale == out.scale, f"output->params.scale != constant_values->params.scale ({out.scale} != {cv.scale})"
        )
    if cv is None:
        return x.dtype.type(0)
    return cv.data.reshape(-1)[0] if cv.is_constant else None


def _prepare_pad(ctx: OpContext):
    ctx.check(
        len(ctx.inputs) in (2, 3) and len(ctx.outputs) == 1,
        f"{ctx.op_name} takes 2 or 3 inputs and 1 output, got {len(ctx.inputs)} and {len(ctx.outputs)}",
    )
    x, paddings = ctx.input(INPUT), ctx.input(PADDINGS)
    cv = ctx.optional_input(CONSTANT_VALUES)
    ctx.check(
        paddings.dtype in _PADDING_TYPES and paddings.type not in dtypes.OBJECT_TYPES,
        f"Padding type {paddings.type_name} is currently not supported by Pad.",
    )
    rank = len(x.shape)
    ctx.check(
        len(paddings.shape) == 2 and paddings.shape[1] == 2,
        f"paddings must have shape [rank, 2], got {list(paddings.shape)}",
    )
    ctx.check(paddings.shape[0] == rank, f"SizeOfDimension(paddings, 0) != dims ({paddings.shape[0]} != {rank})")
    check_output_type(ctx, x)
    ctx.check(
        x.dtype in _PAD_TYPES and x.type not in dtypes.OBJECT_TYPES,
        f"Type {x.type_name} is currently not supported by Pad.",
    )
    if cv is not None:
        ctx.check(cv.type == x.type, f"constant_values type {cv.type_name} differs from input type {x.type_name}")
        ctx.check(cv.size == 1, f"constant_values_count != 1 ({cv.size} != 1)")
    ctx.check(rank <= _PAD_MAX_RANK, f"dims <= 5 was not true: {ctx.op_name} input has rank {rank}")
    value = _pad_value(ctx, x, cv)
    if not paddings.is_constant:
        ctx.set_output_dynamic(0)
        return PadDynamic(value)
    pads, shape = pad_params(paddings.data, x.shape, ctx.fail)
    ctx.set_output_shape(0, shape)
    interior, borders = _pad_regions(pads, x.shape)
    if value is not None and len(borders) >= 2 and int(np.prod(shape)) * x.dtype.itemsize <= FILL_MAX_BYTES:
        return PadFilled(interior, borders, value)
    return pad_op(interior, borders, value)


register(BuiltinOperator.PAD)(_prepare_pad)
register(BuiltinOperator.PADV2)(_prepare_pad)


# =================================================================================================
# MIRROR_PAD
# =================================================================================================

REFLECT, SYMMETRIC = 0, 1


def mirror_pad_index(in_shape, paddings, mode: int, fail=InputValueError) -> tuple[np.ndarray, ...]:
    """Per dimension, the input position of every output position (mirror_pad.cc GetInputDimension).
    REFLECT skips the edge element (offset 1), SYMMETRIC repeats it. Each pad must lie in [0, size - offset]
    (LiteRT's check, made at prepare for constant paddings and at eval otherwise)."""
    offset = 1 if mode == REFLECT else 0
    p = np.asarray(paddings).astype(np.int64).reshape(-1, 2)
    out = []
    for k, (d, (left, right)) in enumerate(zip(in_shape, p.tolist())):
        if min(left, right) < 0:
            raise fail("MirrorPad paddings must be non-negative.")
        if max(left, right) > d - offset:
            raise fail(
                "MirrorPad paddings must be no greater than the input dimension size minus the mode offset. "
                f"Dimension {k} has input size {d}, mode offset {offset}, max padding {d - offset}, left "
                f"padding {left}, and right padding {right}."
            )
        lo = left + offset - 1 - np.arange(left, dtype=np.int64)
        hi = d - 1 - offset - np.arange(right, dtype=np.int64)
        out.append(np.concatenate([lo, np.arange(d, dtype=np.int64), hi]))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class MirrorPad:
    flat_index: np.ndarray  # flat input offset of every output element

    def __call__(self, inputs, outputs):
        np.take(inputs[0].reshape(-1), self.flat_index, out=outputs[0].reshape(-1))


def _mirror_flat(in_shape, idx: tuple[np.ndarray, ...]) -> np.ndarray:
    flat = np.zeros([len(i) for i in idx], dtype=np.int64)
    stride = 1
    for k in range(len(idx) - 1, -1, -1):
        shape = [1] * len(idx)
        shape[k] = len(idx[k])
        flat += (idx[k] * stride).reshape(shape)
        stride *= in_shape[k]
    return flat.reshape(-1)


@dataclass(frozen=True, eq=False)
class MirrorPadDynamic:
    mode: int

    def __call__(self, inputs, outputs):
        x = inputs[0]
        idx = mirror_pad_index(x.shape, inputs[1], self.mode)
        outputs[0] = x[np.ix_(*idx)] if idx else x.copy()


@register(BuiltinOperator.MIRROR_PAD)
def prepare_mirror_pad(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, pads = ctx.input(0), ctx.input(1)
    ctx.check(len(pads.shape) == 2, f"NumDimensions(padding_matrix) != 2 ({len(pads.shape)} != 2)")
    ctx.check(
        pads.shape[0] == len(x.shape),
        f"SizeOfDimension(padding_matrix, 0) != NumDimensions(input_tensor) ({pads.shape[0]} != {len(x.shape)})",
    )
    ctx.check(pads.shape[1] == 2, f"MIRROR_PAD paddings must have shape [rank, 2], got {list(pads.shape)}")
    ctx.check(
        pads.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
        f"MIRROR_PAD paddings must be INT32 or INT64, got {pads.type_name}",
    )
    ctx.check(movable(x), f"Type {x.type_name} is not supported by MIRROR_PAD.")
    check_output_type(ctx, x)
    if x.dtype in (np.int8, np.uint8, np.int16) and x.type != dtypes.TensorType.BOOL:
        y = ctx.outputs[0]
        ctx.check(
            x.scale == y.scale, f"input_tensor->params.scale != output_tensor->params.scale ({x.scale} != {y.scale})"
        )
        ctx.check(
            x.zero_point == y.zero_point,
            f"input_tensor->params.zero_point != output_tensor->params.zero_point ({x.zero_point} != {y.zero_point})",
        )
        if x.dtype == np.int16:
            ctx.check(x.zero_point == 0, f"input_tensor->params.zero_point != 0 ({x.zero_point} != 0)")
    mode = ctx.options.mode
    ctx.check(mode in (REFLECT, SYMMETRIC), f"MIRROR_PAD mode {mode} is neither REFLECT (0) nor SYMMETRIC (1)")
    if not pads.is_constant:
        ctx.set_output_dynamic(0)
        return MirrorPadDynamic(mode)
    idx = mirror_pad_index(x.shape, pads.data, mode, ctx.fail)
    ctx.set_output_shape(0, tuple(len(i) for i in idx))
    return MirrorPad(_mirror_flat(x.shape, idx))
