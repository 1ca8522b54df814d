"""Shape ops: RESHAPE, SQUEEZE, EXPAND_DIMS (bytes copied unchanged), SHAPE, RANK, FILL, RANGE,
BROADCAST_TO, BROADCAST_ARGS.

Paths: every dtype, strings (object arrays) included; quantized tensors pass through untouched (EXPAND_DIMS
checks, as LiteRT does, that input and output share scale and zero point, and that int16 has zero point 0).
Shapes come from constant tensors at prepare; a shape/axis tensor that is not constant makes the output
dynamic (its shape is computed from the values at eval).

SHAPE (out_type int32/int64) and RANK read only the input's shape (any dtype). FILL: dims int32/int64, any
value type (strings, bools included); value and output share scale and zero point (int16: zero point 0).
RANGE: int32, int64, float32 (float values accumulated one add at a time). BROADCAST_TO: every non-string
dtype, shape int32/int64. BROADCAST_ARGS: int32/int64 shapes.

Sources matched: tensorflow/lite/kernels/{shape,rank,fill,range,broadcast_to,broadcast_args}.cc,
tensorflow/lite/kernels/reshape.cc (GetOutputShape: the shape tensor is used only when it
is a 1-D int32 vector, otherwise ``new_shape`` from the options, ``[0]`` meaning a scalar),
tensorflow/lite/kernels/internal/reshape_utils.h (ResolveOutputShape: one -1, zero-sized dimensions),
tensorflow/lite/kernels/squeeze.cc, tensorflow/lite/kernels/expand_dims.cc.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import numpy as np

from .. import limits
from ..errors import InputValueError
from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .common import reusable
from .registry import OpContext, PreparedOp, register

INPUT, SHAPE, AXIS = 0, 1, 1
_INT32_MAX = 2**31 - 1


def _value_error(msg: str) -> Exception:
    return InputValueError(msg)


def resolve_reshape(in_shape: Sequence[int], shape: Sequence[int], fail: Callable[[str], Exception] = _value_error):
    """The output shape of RESHAPE (reshape_utils.h ResolveOutputShape): at most one -1, which takes the
    quotient of the non-zero input and output dimension products (0 when the input is empty and the other
    output dimensions are not)."""
    num_in = int(np.prod(in_shape, dtype=np.int64))
    nonzero_in = 1
    for d in in_shape:
        if d != 0:
            nonzero_in *= int(d)
    out = [int(d) for d in shape]
    stretch = -1
    nonzero_out = num_out = 1
    for i, d in enumerate(out):
        if d == -1:
            if stretch != -1:
                raise fail(f"stretch_dim != -1 ({stretch} != -1): RESHAPE shape {out} has more than one -1")
            stretch = i
            continue
        if d < 0:
            raise fail("output shape contains negative dimension")
        if d != 0:
            nonzero_out *= d
        num_out *= d
    if stretch != -1:
        inferred = 0 if num_in == 0 and num_out != 0 else nonzero_in // nonzero_out
        if inferred > _INT32_MAX:
            raise fail("inferred reshape dimension overflowed")
        out[stretch] = inferred
        num_out *= inferred
    if num_in != num_out:
        raise fail(f"num_input_elements != num_output_elements ({num_in} != {num_out})")
    return tuple(out)


def _check_same_type(ctx: OpContext) -> None:
    x, y = ctx.input(INPUT), ctx.outputs[0]
    ctx.check(x.type == y.type, f"{ctx.op_name}: output type {y.type_name} differs from input type {x.type_name}")


@dataclass(frozen=True, eq=False)
class CopyReshaped:
    """Copies the input into the output's (static) shape: RESHAPE, SQUEEZE, EXPAND_DIMS. ``bind``
    (ops/fusion.bind_steps) makes the reshaped view of a C-contiguous bound input once and the copy a bound
    ``out[...] = view`` call (ops/bound_plan.py; the same copy without np.copyto's dispatch: a GRU's (1, 32)
    RESHAPE inside a WHILE body, alone, hot: 0.59 -> 0.32-0.50 us); other arrays take np.copyto. Where the arena
    lets the output share the input's bytes (``copies_input_unchanged``), the step becomes runtime/subgraph's
    SharedInput and this copy runs only on other arrays (direct calls, the dynamic path)."""

    shape: tuple[int, ...]
    _bound = None  # bind's (the input, the output, the copy as a partial object), or None
    #: the output holds the input's bytes unchanged: the arena may give it the input's memory and drop the step
    #: (runtime/subgraph.SubgraphRuntime._unmodified_aliases)
    copies_input_unchanged: ClassVar[bool] = True

    def bind(self, inputs, outputs) -> None:
        x, out, bound = inputs[INPUT], outputs[0], None
        if x is not None and out is not None and x.flags.c_contiguous and out.shape == self.shape:
            bound = (x, out, partial(out.__setitem__, Ellipsis, x.reshape(self.shape)))  # a view: sees new values
        object.__setattr__(self, "_bound", bound)

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is not None and b[0] is inputs[INPUT] and b[1] is outputs[0]:
            b[2]()
            return
        np.copyto(outputs[0], inputs[INPUT].reshape(self.shape))

    def chain_calls(self, inputs, outputs) -> tuple | None:
        """The bound copy when bound to these arrays (ops/bound_chain.py), else None."""
        b = self._bound
        return (b[2],) if b is not None and b[0] is inputs[INPUT] and b[1] is outputs[0] else None


# -- RESHAPE --------------------------------------------------------------------------------------


def _param_shape(options) -> tuple[int, ...]:
    new_shape = tuple(options.new_shape or ()) if options is not None else ()
    if new_shape == (0,):  # legacy converters wrote [0] for a scalar
        return ()
    return new_shape


@dataclass(frozen=True, eq=False)
class ReshapeDynamic:
    """The int32 shape vector is not constant: the output shape is resolved from its values at each invoke. The
    values go into the output tensor's present array when it can take them (``common.reusable``: its own memory,
    this shape and dtype), so the output keeps its array: the next ops' bound plans (ops/bound_plan.py) stay valid
    instead of being made again at every invoke of the deferred subgraph (a float conv's plan: about 8 us)."""

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        y = x.reshape(resolve_reshape(x.shape, inputs[SHAPE].tolist()))
        out = outputs[0]
        if reusable(out, y.shape, y.dtype, x):
            np.copyto(out, y)
        else:
            outputs[0] = y.copy()


@register(BuiltinOperator.RESHAPE)
def prepare_reshape(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) in (1, 2), f"RESHAPE takes 1 or 2 inputs, got {len(ctx.inputs)}")
    ctx.check(len(ctx.outputs) == 1, f"RESHAPE produces 1 output, the model gives {len(ctx.outputs)}")
    x = ctx.input(INPUT)
    _check_same_type(ctx)
    shape_t = ctx.optional_input(SHAPE)
    use_tensor = shape_t is not None and len(shape_t.shape) == 1 and shape_t.dtype == np.int32
    param_shape = _param_shape(ctx.options)
    # Only the values of a non-empty int32 shape vector can be unknown before invoke (LiteRT also defers
    # when the new_shape option is used or the vector is empty, with the same result).
    if use_tensor and not shape_t.is_constant and shape_t.size:
        ctx.set_output_dynamic(0)
        return ReshapeDynamic()
    requested = (shape_t.data.tolist() if shape_t.size else []) if use_tensor else param_shape
    shape = resolve_reshape(x.shape, requested, ctx.fail)
    ctx.set_output_shape(0, shape)
    return CopyReshaped(shape)


# -- SQUEEZE --------------------------------------------------------------------------------------


@register(BuiltinOperator.SQUEEZE)
def prepare_squeeze(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x = ctx.input(INPUT)
    _check_same_type(ctx)
    rank = len(x.shape)
    ctx.check(rank <= 8, f"input_num_dims <= 8 was not true: SQUEEZE input has {rank} dimensions")
    dims = tuple(ctx.options.squeeze_dims or ())
    if not dims:
        drop = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        drop = set()
        for d in dims:
            cur = d + rank if d < 0 else d
            ctx.check(
                0 <= cur < rank and x.shape[cur] == 1,
                f"cannot squeeze dimension {d} of shape {list(x.shape)}: it must exist and have size 1",
            )
            drop.add(cur)
    shape = tuple(d for i, d in enumerate(x.shape) if i not in drop)
    ctx.set_output_shape(0, shape)
    return CopyReshaped(shape)


# -- EXPAND_DIMS ----------------------------------------------------------------------------------


def _expand_shape(shape: tuple[int, ...], axis: int, fail: Callable[[str], Exception] = _value_error):
    if axis < 0:
        axis += len(shape) + 1
    if not 0 <= axis <= len(shape):
        raise fail(f"EXPAND_DIMS axis out of range for an input of rank {len(shape)}")
    return shape[:axis] + (1,) + shape[axis:]


@dataclass(frozen=True, eq=False)
class ExpandDimsDynamic:
    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        outputs[0] = x.reshape(_expand_shape(x.shape, int(inputs[AXIS].reshape(-1)[0]))).copy()


@register(BuiltinOperator.EXPAND_DIMS)
def prepare_expand_dims(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, axis = ctx.input(INPUT), ctx.input(AXIS)
    _check_same_type(ctx)
    y = ctx.outputs[0]
    ctx.check(x.scale == y.scale, f"input->params.scale != output->params.scale ({x.scale} != {y.scale})")
    ctx.check(
        x.zero_point == y.zero_point,
        f"input->params.zero_point != output->params.zero_point ({x.zero_point} != {y.zero_point})",
    )
    if x.dtype == np.int16:
        ctx.check(x.zero_point == 0, f"input->params.zero_point != 0 ({x.zero_point} != 0)")
    ctx.check(axis.size == 1, f"NumElements(&axis) != 1 ({axis.size} != 1)")
    ctx.check(axis.dtype in (np.int32, np.int64), f"EXPAND_DIMS axis must be int32 or int64, got {axis.type_name}")
    if not axis.is_constant:
        ctx.set_output_dynamic(0)
        return ExpandDimsDynamic()
    shape = _expand_shape(x.shape, int(axis.data.reshape(-1)[0]), ctx.fail)
    ctx.set_output_shape(0, shape)
    return CopyReshaped(shape)


# -- SHAPE, RANK ----------------------------------------------------------------------------------
# Every input dtype (strings included): only the shape is read.


@dataclass(frozen=True, eq=False)
class WriteConstant:
    """Writes a value known at prepare (SHAPE, RANK: it depends only on the input's shape)."""

    value: np.ndarray

    @property
    def constant_output(self) -> np.ndarray:
        """The runtime folds a node whose prepared op has this into a constant at prepare (its output does not
        depend on the input's values), so the ops after SHAPE/RANK of a static shape stay static."""
        return self.value

    def __call__(self, inputs, outputs):
        outputs[0][...] = self.value


@register(BuiltinOperator.SHAPE)
def prepare_shape(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x, y = ctx.input(INPUT), ctx.outputs[0]
    out_type = ctx.options.out_type
    # shape.cc: params->out_type picks the output type; anything but INT32/INT64 is refused.
    ctx.check(
        out_type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
        f"Unknown shape output data type: {dtypes.type_name(out_type)}",
    )
    ctx.check(
        y.type == out_type, f"SHAPE: output type {y.type_name} differs from out_type {dtypes.type_name(out_type)}"
    )
    ctx.set_output_shape(0, (len(x.shape),))
    return WriteConstant(np.array(x.shape, dtype=y.dtype))


@register(BuiltinOperator.RANK)
def prepare_rank(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x, y = ctx.input(INPUT), ctx.outputs[0]
    # rank.cc makes the output INT32 whatever the model says; an int64 output tensor gets the same value.
    ctx.check(
        y.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64), f"RANK output must be INT32, got {y.type_name}"
    )
    ctx.set_output_shape(0, ())
    return WriteConstant(np.array(len(x.shape), dtype=y.dtype))


# -- FILL -----------------------------------------------------------------------------------------
# fill.cc: dims is a 1-D int32/int64 vector (negative entries refused), value a scalar of the output's type
# (any type LiteRT holds, strings included; quantized int8/int16 need the value's scale and zero point).

DIMS, VALUE = 0, 1


def _fill_shape(dims, fail: Callable[[str], Exception] = _value_error) -> tuple[int, ...]:
    shape = tuple(int(d) for d in np.asarray(dims).reshape(-1))
    if any(d < 0 for d in shape):
        raise fail("Fill dimensions must be >= 0")
    return shape


@dataclass(frozen=True, eq=False)
class Fill:
    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[VALUE].reshape(())


@dataclass(frozen=True, eq=False)
class FillDynamic:
    dtype: np.dtype

    def __call__(self, inputs, outputs):
        out = limits.new_array(_fill_shape(inputs[DIMS]), self.dtype, "FILL's output")
        out[...] = inputs[VALUE].reshape(())
        outputs[0] = out


@register(BuiltinOperator.FILL)
def prepare_fill(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    dims, value, y = ctx.input(DIMS), ctx.input(VALUE), ctx.outputs[0]
    ctx.check(
        dims.dtype in (np.int32, np.int64) and dims.type not in dtypes.OBJECT_TYPES,
        f"Fill only currently supports int32, int64 for input 0, got {dims.type_name}.",
    )
    ctx.check(len(dims.shape) == 1, f"NumDimensions(dims) != 1 ({len(dims.shape)} != 1)")
    ctx.check(len(value.shape) == 0, f"NumDimensions(value) != 0 ({len(value.shape)} != 0)")
    ctx.check(value.type == y.type, f"FILL: output type {y.type_name} differs from value type {value.type_name}")
    ctx.check(
        value.type not in (dtypes.TensorType.RESOURCE, dtypes.TensorType.VARIANT),
        f"Type {value.type_name} is unsupported by op FILL.",
    )
    # fill.cc checks the parameters for every type (an unquantized tensor has scale 0, zero point 0).
    ctx.check(y.scale == value.scale, f"output->params.scale != value->params.scale ({y.scale} != {value.scale})")
    ctx.check(
        y.zero_point == value.zero_point,
        f"output->params.zero_point != value->params.zero_point ({y.zero_point} != {value.zero_point})",
    )
    if value.type == dtypes.TensorType.INT16:
        ctx.check(value.zero_point == 0, f"value->params.zero_point != 0 ({value.zero_point} != 0)")
    if not dims.is_constant:
        ctx.set_output_dynamic(0)
        return FillDynamic(y.dtype if y.type not in dtypes.OBJECT_TYPES else np.dtype(object))
    ctx.set_output_shape(0, _fill_shape(dims.data, ctx.fail))
    return Fill()


# -- RANGE ----------------------------------------------------------------------------------------
# range.cc: start, limit, delta are scalars of one type (int32, int64, float32); the size is
# ceil(|limit - start| / |delta|) (integers: exact integer division rounding up) and the values are
# accumulated one by one (value += delta), which for float32 is not start + i * delta.

START, LIMIT, DELTA = 0, 1, 2


def range_size(start, limit, delta, fail: Callable[[str], Exception] = _value_error) -> int:
    if delta == 0:
        raise fail("delta != 0 was not true")
    if not ((start >= limit and delta < 0) or (start <= limit and delta > 0)):
        raise fail("(start >= limit && delta < 0) || (start <= limit && delta > 0) was not true")
    if isinstance(start, np.floating):
        with np.errstate(all="ignore"):
            n = np.ceil(np.abs((limit - start) / delta))  # float32 arithmetic, as in C++
        if not np.isfinite(n) or n > _INT32_MAX:
            raise fail("RANGE output size overflows int32")
        return int(n)
    span, step = abs(int(limit) - int(start)), abs(int(delta))
    n = (span + step - 1) // step
    if n > _INT32_MAX:
        raise fail("RANGE output size overflows int32")
    return n


def range_values(start, delta, n: int, dtype: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
    """start, start + delta, ... accumulated sequentially in ``dtype`` (np.cumsum is a sequential add), in place in
    ``out`` (1-D, n values; a new array when None): no second array of the output's size (a RANGE to 2^30 int32
    values: 4.3 GB at most, not 8.6, and 2.3x faster)."""
    out = np.empty(n, dtype) if out is None else out
    out.fill(delta)
    if n:
        out[0] = start
    with np.errstate(all="ignore"):
        np.cumsum(out, dtype=dtype, out=out)
    return out


def _scalar(a: np.ndarray):
    return a.reshape(-1)[0]


@dataclass(frozen=True, eq=False)
class Range:
    """Output size known at prepare (start, limit, delta constant): the values are written at eval."""

    dtype: np.dtype

    def __call__(self, inputs, outputs):
        range_values(_scalar(inputs[START]), _scalar(inputs[DELTA]), outputs[0].size, self.dtype, outputs[0])


@dataclass(frozen=True, eq=False)
class RangeDynamic:
    dtype: np.dtype

    def __call__(self, inputs, outputs):
        start, limit, delta = (_scalar(inputs[k]) for k in (START, LIMIT, DELTA))
        n = range_size(start, limit, delta)
        limits.check_allocation(limits.nbytes((n,), self.dtype), f"RANGE's output of {n} elements")
        outputs[0] = range_values(start, delta, n, self.dtype)


@register(BuiltinOperator.RANGE)
def prepare_range(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3)
    start, limit, delta = (ctx.input(k) for k in (START, LIMIT, DELTA))
    y = ctx.outputs[0]
    for t in (start, limit, delta):
        ctx.check(t.size == 1 and len(t.shape) <= 1, f"NumDimensions({t.name}) must be 0 (a scalar)")
    ctx.check(
        start.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64, dtypes.TensorType.FLOAT32),
        f"Unknown index output data type: {start.type_name}",
    )
    ctx.check(
        limit.type == start.type and delta.type == start.type,
        f"RANGE: start, limit and delta differ in type ({start.type_name}, {limit.type_name}, {delta.type_name})",
    )
    ctx.check(y.type == start.type, f"RANGE: output type {y.type_name} differs from input type {start.type_name}")
    if all(t.is_constant for t in (start, limit, delta)):
        n = range_size(*(_scalar(t.data) for t in (start, limit, delta)), fail=ctx.fail)
        ctx.set_output_shape(0, (n,))
        return Range(y.dtype)
    ctx.set_output_dynamic(0)
    return RangeDynamic(y.dtype)


# -- BROADCAST_TO, BROADCAST_ARGS ------------------------------------------------------------------
# broadcast_to.cc (registered from version 2): input rank <= 8 and no strings; the shape is a 1-D
# int32/int64 vector of at most 8 entries, at least as long as the input rank, each input dimension 1 or
# equal to the target's. broadcast_args.cc: two 1-D int32/int64 shape vectors of one type -> their
# broadcast shape (length max of both); incompatible values fail at eval.

_MAX_BROADCAST_RANK = 8


def broadcast_to_shape(in_shape, shape, fail: Callable[[str], Exception] = _value_error) -> tuple[int, ...]:
    target = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if len(target) > _MAX_BROADCAST_RANK:
        raise fail(f"BroadcastTo only supports 1-8D tensor (output rank {len(target)}).")
    if len(target) < len(in_shape):
        raise fail("Output shape must be broadcastable from input shape.")
    off = len(target) - len(in_shape)
    for i, d in enumerate(in_shape):
        if d != 1 and d != target[off + i]:
            raise fail(f"Output shape must be broadcastable from input shape ({list(in_shape)} to {list(target)}).")
    if any(d < 0 for d in target):
        raise fail("BROADCAST_TO target shape has a negative dimension")
    return target


@dataclass(frozen=True, eq=False)
class BroadcastTo:
    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[INPUT]


@dataclass(frozen=True, eq=False)
class BroadcastToDynamic:
    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        out = limits.new_array(broadcast_to_shape(x.shape, inputs[SHAPE]), x.dtype, "BROADCAST_TO's output")
        out[...] = x
        outputs[0] = out


@register(BuiltinOperator.BROADCAST_TO)
def prepare_broadcast_to(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    # LiteRT registers BROADCAST_TO from version 2 (version 1 was a placeholder of the converter).
    ctx.check(ctx.version >= 2, f"Didn't find op for builtin opcode 'BROADCAST_TO' version '{ctx.version}'")
    x, shape_t = ctx.input(INPUT), ctx.input(SHAPE)
    ctx.check(len(x.shape) <= _MAX_BROADCAST_RANK, "BroadcastTo only supports 1-8D tensor.")
    ctx.check(len(shape_t.shape) == 1, f"NumDimensions(shape) != 1 ({len(shape_t.shape)} != 1)")
    ctx.check(
        shape_t.dtype in (np.int32, np.int64) and shape_t.type not in dtypes.OBJECT_TYPES,
        "Shape with type other than int32 or int64 is not supported.",
    )
    ctx.check(x.type != dtypes.TensorType.STRING, "op_context.input->type != kTfLiteString was not true.")
    ctx.check(x.type not in dtypes.OBJECT_TYPES, f"Type {x.type_name} is unsupported by op BROADCAST_TO.")
    _check_same_type(ctx)
    if not shape_t.is_constant:
        ctx.set_output_dynamic(0)
        return BroadcastToDynamic()
    ctx.set_output_shape(0, broadcast_to_shape(x.shape, shape_t.data, ctx.fail))
    return BroadcastTo()


def broadcast_args(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.reshape(-1), b.reshape(-1)
    n = max(a.size, b.size)
    pa = np.concatenate([np.ones(n - a.size, a.dtype), a])
    pb = np.concatenate([np.ones(n - b.size, b.dtype), b])
    ok = (pa == pb) | (pa == 1) | (pb == 1)
    if not ok.all():
        raise InputValueError(f"BROADCAST_ARGS: shapes {a.tolist()} and {b.tolist()} are not broadcastable")
    return np.where(pa == 1, pb, pa)


@dataclass(frozen=True, eq=False)
class BroadcastArgs:
    def __call__(self, inputs, outputs):
        outputs[0][...] = broadcast_args(inputs[0], inputs[1])


@register(BuiltinOperator.BROADCAST_ARGS)
def prepare_broadcast_args(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    s0, s1, y = ctx.input(0), ctx.input(1), ctx.outputs[0]
    ctx.check(
        s0.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
        f"BROADCAST_ARGS shapes must be INT32 or INT64, got {s0.type_name}",
    )
    ctx.check(
        s1.type == s0.type and y.type == s0.type,
        f"s0->type != s1->type or output ({s0.type_name}, {s1.type_name}, {y.type_name})",
    )
    ctx.check(len(s0.shape) == 1 and len(s1.shape) == 1, "NumDimensions(shape) != 1: BROADCAST_ARGS takes vectors")
    ctx.set_output_shape(0, (max(s0.size, s1.size),))
    return BroadcastArgs()
