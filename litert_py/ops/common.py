"""Helpers shared by kernels: fused activations, broadcasting shapes, padding arithmetic.

Sources: tensorflow/lite/kernels/kernel_util.{h,cc} (CalculateActivationRange, HaveSameShapes,
CalculateShapeForBroadcast), tensorflow/lite/kernels/padding.h (ComputePaddingHeightWidth).
"""

from __future__ import annotations

import numpy as np

from ..schema.model import ActivationFunctionType as Act

FLOAT_ACTIVATION_RANGE = {
    Act.NONE: (None, None),
    Act.RELU: (0.0, None),
    Act.RELU_N1_TO_1: (-1.0, 1.0),
    Act.RELU6: (0.0, 6.0),
}


def float_activation(ctx, code: int):
    """A function applying the fused activation ``code`` in place (None for NONE). Fails on unknown codes."""
    if code == Act.NONE:
        return None
    if code in FLOAT_ACTIVATION_RANGE:
        lo, hi = FLOAT_ACTIVATION_RANGE[code]
        if hi is None:
            return lambda x: np.maximum(x, lo, out=x)
        return lambda x: np.clip(x, lo, hi, out=x)
    if code == Act.TANH:
        return lambda x: np.tanh(x, out=x)
    if code == Act.SIGN_BIT:
        return lambda x: np.copyto(x, np.signbit(x).astype(x.dtype))
    raise ctx.fail(f"Unsupported fused activation {code}")


def broadcast_shape(ctx, *shapes) -> tuple[int, ...]:
    """NumPy broadcast of the input shapes, failing with TFLite's message when they are incompatible."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ctx.fail(
            "Given shapes, " + " and ".join(str(list(s)) for s in shapes) + ", are not broadcastable."
        ) from None


def same_padding(in_size: int, filter_size: int, stride: int, dilation: int) -> tuple[int, int]:
    """(output size, padding before) for SAME padding (TFLite ComputePaddingHeightWidth)."""
    eff = (filter_size - 1) * dilation + 1
    out = (in_size + stride - 1) // stride
    total = max((out - 1) * stride + eff - in_size, 0)
    return out, total // 2


def valid_out(in_size: int, filter_size: int, stride: int, dilation: int) -> int:
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + stride) // stride


def conv_out_and_pad(ctx, padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1):
    """Output size and leading padding for Padding.SAME (0) or VALID (1)."""
    ctx.check(stride > 0 and dilation > 0, f"stride ({stride}) and dilation ({dilation}) must be positive")
    if padding == 0:
        return same_padding(in_size, filter_size, stride, dilation)
    out = valid_out(in_size, filter_size, stride, dilation)
    return max(out, 0), 0
