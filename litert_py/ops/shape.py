"""RESHAPE, SQUEEZE, EXPAND_DIMS: ops that only change the shape; the bytes are copied unchanged.

Paths: every dtype, strings (object arrays) included; quantized tensors pass through untouched (EXPAND_DIMS
checks, as LiteRT does, that input and output share scale and zero point, and that int16 has zero point 0).
Shapes come from constant tensors at prepare; a shape/axis tensor that is not constant makes the output
dynamic (its shape is computed from the values at eval).

Sources matched: tensorflow/lite/kernels/reshape.cc (GetOutputShape: the shape tensor is used only when it
is a 1-D int32 vector, otherwise ``new_shape`` from the options, ``[0]`` meaning a scalar),
tensorflow/lite/kernels/internal/reshape_utils.h (ResolveOutputShape: one -1, zero-sized dimensions),
tensorflow/lite/kernels/squeeze.cc, tensorflow/lite/kernels/expand_dims.cc.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .registry import OpContext, register

INPUT, SHAPE, AXIS = 0, 1, 1
_INT32_MAX = 2**31 - 1


def _value_error(msg: str) -> Exception:
    return ValueError(msg)


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
    """Copies the input into the output's (static) shape: RESHAPE, SQUEEZE, EXPAND_DIMS."""

    shape: tuple[int, ...]

    def __call__(self, inputs, outputs):
        np.copyto(outputs[0], inputs[INPUT].reshape(self.shape))


# -- RESHAPE --------------------------------------------------------------------------------------


def _param_shape(options) -> tuple[int, ...]:
    new_shape = tuple(options.new_shape or ()) if options is not None else ()
    if new_shape == (0,):  # legacy converters wrote [0] for a scalar
        return ()
    return new_shape


@dataclass(frozen=True, eq=False)
class ReshapeDynamic:
    """The int32 shape vector is not constant: the output shape is resolved from its values at each invoke."""

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        outputs[0] = x.reshape(resolve_reshape(x.shape, inputs[SHAPE].tolist())).copy()


@register(BuiltinOperator.RESHAPE)
def prepare_reshape(ctx: OpContext):
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
def prepare_squeeze(ctx: OpContext):
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
            ctx.check(0 <= cur < rank and x.shape[cur] == 1,
                      f"cannot squeeze dimension {d} of shape {list(x.shape)}: it must exist and have size 1")
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
def prepare_expand_dims(ctx: OpContext):
    ctx.check_num(2)
    x, axis = ctx.input(INPUT), ctx.input(AXIS)
    _check_same_type(ctx)
    y = ctx.outputs[0]
    ctx.check(x.scale == y.scale, f"input->params.scale != output->params.scale ({x.scale} != {y.scale})")
    ctx.check(x.zero_point == y.zero_point,
              f"input->params.zero_point != output->params.zero_point ({x.zero_point} != {y.zero_point})")
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
