"""FULLY_CONNECTED.

Paths: float32 (weights float32, or float16 weights folded by DEQUANTIZE at prepare). The quantized and
hybrid paths are added by the quantized-core work.
Source matched: tensorflow/lite/kernels/fully_connected.cc (Prepare: output shape and keep_num_dims),
tensorflow/lite/kernels/internal/reference/fully_connected.h.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .common import float_activation
from .registry import OpContext, register

INPUT, WEIGHTS, BIAS = 0, 1, 2


def fc_output_shape(ctx: OpContext) -> tuple[tuple[int, ...], int]:
    """(output shape, batch rows) as FULLY_CONNECTED's Prepare computes them."""
    x, w = ctx.input(INPUT), ctx.input(WEIGHTS)
    ctx.check(len(w.shape) == 2, f"weights must be 2-D, got shape {list(w.shape)}")
    units, depth = w.shape
    size = x.size
    ctx.check(depth > 0 and size % depth == 0,
              f"input of {size} elements is not a multiple of the weights' input depth {depth}")
    batches = size // depth if depth else 0
    if ctx.options.keep_num_dims:
        ctx.check(x.shape[-1] == depth, f"keep_num_dims needs the last input dim ({x.shape[-1]}) == {depth}")
        return tuple(x.shape[:-1]) + (units,), batches
    return (batches, units), batches


@dataclass(frozen=True, eq=False)
class FullyConnectedFloat:
    weights_t: np.ndarray  # (depth, units), contiguous: x @ weights_t is one BLAS call
    bias: np.ndarray | None
    depth: int
    activation: object

    def __call__(self, inputs, outputs):
        out = outputs[0]
        out2d = out.reshape(-1, self.weights_t.shape[1])
        np.matmul(inputs[INPUT].reshape(-1, self.depth), self.weights_t, out=out2d)
        if self.bias is not None:
            out2d += self.bias
        if self.activation is not None:
            self.activation(out)


@dataclass(frozen=True, eq=False)
class FullyConnectedFloatDynamicWeights:
    """Weights that are not constant (e.g. computed by an earlier op): transposed on every invoke."""

    depth: int
    activation: object

    def __call__(self, inputs, outputs):
        out = outputs[0]
        w = inputs[WEIGHTS]
        out2d = out.reshape(-1, w.shape[0])
        np.matmul(inputs[INPUT].reshape(-1, self.depth), w.T, out=out2d)
        if len(inputs) > BIAS and inputs[BIAS] is not None:
            out2d += inputs[BIAS]
        if self.activation is not None:
            self.activation(out)


@register(BuiltinOperator.FULLY_CONNECTED)
def prepare_fully_connected(ctx: OpContext):
    ctx.check(len(ctx.inputs) in (2, 3), f"FULLY_CONNECTED takes 2 or 3 inputs, got {len(ctx.inputs)}")
    x, w = ctx.input(INPUT), ctx.input(WEIGHTS)
    bias = ctx.optional_input(BIAS)
    shape, _ = fc_output_shape(ctx)
    ctx.set_output_shape(0, shape)
    if x.dtype == np.float32 and w.dtype == np.float32:
        act = float_activation(ctx, ctx.options.fused_activation_function)
        depth = w.shape[1]
        if w.is_constant and (bias is None or bias.is_constant):
            return FullyConnectedFloat(np.ascontiguousarray(w.data.T), None if bias is None else bias.data.copy(),
                                       depth, act)
        return FullyConnectedFloatDynamicWeights(depth, act)
    raise ctx.fail(f"FULLY_CONNECTED with input {x.type_name} and weights {w.type_name} is not supported yet")
