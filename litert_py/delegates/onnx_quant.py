"""Quantized (int8/uint8) nodes for the ONNX Runtime delegate, only with ``allow_inexact_quantized=True``.

A quantized node is lowered through its float view: constant weights and biases are dequantized here (per
channel along ``quantized_dimension``), quantized activations enter through DequantizeLinear, and every
quantized output is requantized with QuantizeLinear (ONNX's round-half-to-even, where LiteRT's reference
kernels use fixed-point multipliers with round-half-away-from-zero, TFLite ``MultiplyByQuantizedMultiplier``).
The results therefore differ from litert_py's bit-exact kernels by a few quantization steps; see the README.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator as B

#: Ops whose float semantics, requantized at their outputs, approximate TFLite's quantized kernels.
QUANT_OPS = {
    B.CONV_2D,
    B.DEPTHWISE_CONV_2D,
    B.FULLY_CONNECTED,
    B.AVERAGE_POOL_2D,
    B.MAX_POOL_2D,
    B.ADD,
    B.SUB,
    B.MUL,
    B.CONCATENATION,
    B.RESHAPE,
    B.SQUEEZE,
    B.EXPAND_DIMS,
    B.PAD,
    B.MEAN,
    B.SOFTMAX,
    B.LOGISTIC,
    B.TANH,
    B.RELU,
    B.RELU6,
    B.HARD_SWISH,
    B.TRANSPOSE,
    B.SLICE,
    B.STRIDED_SLICE,
    B.RESIZE_BILINEAR,
    B.RESIZE_NEAREST_NEIGHBOR,
    B.QUANTIZE,
    B.DEQUANTIZE,
    B.MAXIMUM,
    B.MINIMUM,
    B.LEAKY_RELU,
}
_ACTIVATION_TYPES = (TensorType.INT8, TensorType.UINT8)


def is_quantized(info) -> bool:
    return info is not None and info.type in (*_ACTIVATION_TYPES, TensorType.INT32) and bool(info.quantization.scale)


def float_view(info):
    """The float32 TensorInfo a quantized tensor stands for (constant data dequantized); others unchanged."""
    if not is_quantized(info):
        return info
    data = None
    if info.data is not None:
        q = info.quantization
        scale = np.asarray(q.scale, np.float64)
        zp = np.asarray(q.zero_point or [0], np.float64)
        if scale.size > 1:
            shape = [1] * info.data.ndim
            shape[q.quantized_dimension] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape) if zp.size > 1 else zp
        data = ((info.data.astype(np.float64) - zp) * scale).astype(np.float32)
    return dataclasses.replace(info, type=TensorType.FLOAT32, data=data, quantization=type(info.quantization)())


def float_context(ctx):
    return dataclasses.replace(
        ctx, inputs=[float_view(t) for t in ctx.inputs], outputs=[float_view(t) for t in ctx.outputs]
    )


def quantized_supported(node, ctx) -> bool:
    """A node with int8/uint8 activations (per-tensor) whose float view the lowering handles."""
    if node.code.builtin_code not in QUANT_OPS:
        return False
    tensors = [t for t in ctx.inputs if t is not None] + list(ctx.outputs)
    if not any(is_quantized(t) for t in tensors):
        return False
    for t in tensors:
        if t.data is not None:
            continue
        if t.type == TensorType.FLOAT32:
            continue
        if t.type not in _ACTIVATION_TYPES or len(t.quantization.scale) != 1:
            return False
    return True
