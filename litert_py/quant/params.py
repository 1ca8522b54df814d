"""Quantization parameters: fused-activation clamp ranges, QUANTIZE / DEQUANTIZE arithmetic, type ranges.

All float arithmetic follows the C++ types exactly: where TFLite computes in ``float`` we compute in
numpy float32, where it uses ``double`` we use float64 (docs/quantized-arithmetic.md sections 1, 4,
5.11). Scales are float32 in the flatbuffer; Python floats passed as scales are rounded to float32
first, as TFLite would have stored them.
"""

from __future__ import annotations

import numpy as np

from litert_py.errors import PrepareError
from litert_py.quant.fixedpoint import round_away, trunc_to_int32, wrap32

__all__ = [
    "ACT_NONE",
    "ACT_RELU",
    "ACT_RELU_N1_TO_1",
    "ACT_RELU6",
    "ACT_TANH",
    "ACT_SIGN_BIT",
    "dtype_range",
    "calculate_activation_range_quantized",
    "calculate_activation_range",
    "calculate_activation_range_float",
    "quantize",
    "quantize_per_axis",
    "dequantize",
    "dequantize_per_axis",
]

# ActivationFunctionType codes of the TFLite schema.
ACT_NONE = 0
ACT_RELU = 1
ACT_RELU_N1_TO_1 = 2
ACT_RELU6 = 3
ACT_TANH = 4
ACT_SIGN_BIT = 5


def dtype_range(dtype) -> tuple[int, int]:
    """``(std::numeric_limits<T>::min(), max())`` for an integer dtype (as used throughout
    tflite/kernels/kernel_util.cc and the quantized kernels), as Python ints."""
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        raise TypeError(f"dtype_range: {dt} is not an integer dtype")
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _quantize_bound(f: float, scale, zero_point: int) -> int:
    """The ``Quantize`` helper of tflite/kernels/kernel_util.cc:
    ``zp + static_cast<int32_t>(TfLiteRound(f / scale))`` with float32 division and roundf, and an
    error (prepare failure) when the rounded value is outside the int32 range."""
    with np.errstate(all="ignore"):
        tmp = round_away(np.float32(f) / np.float32(scale))
    # static_cast<float>(INT32_MAX) is 2^31, so the check admits 2^31 (which then casts to INT32_MIN on
    # x86, as trunc_to_int32 reproduces).
    if not (np.float32(-(2.0**31)) <= tmp <= np.float32(2.0**31)):
        raise PrepareError(f"activation bound {f} / scale {scale} overflows int32")
    return int(wrap32(int(zero_point) + int(trunc_to_int32(tmp))))


def calculate_activation_range_quantized(activation: int, scale, zero_point, qmin: int, qmax: int):
    """``CalculateActivationRangeQuantized`` / ``CalculateActivationRangeQuantizedImpl`` of
    tflite/kernels/kernel_util.cc: the integer clamp ``(lo, hi)`` of a fused activation, for an
    output with ``scale``/``zero_point`` and storage range ``[qmin, qmax]``.

    RELU: ``(max(qmin, Q(0)), qmax)``; RELU6: ``(max(qmin, Q(0)), min(qmax, Q(6)))``;
    RELU_N1_TO_1: ``(max(qmin, Q(-1)), min(qmax, Q(1)))``; every other code (NONE, TANH, SIGN_BIT, ...)
    gives ``(qmin, qmax)``, as the C++ ``else`` branch does. ``Q(f) = zp + roundf(f32(f / scale))``.
    Raises :class:`PrepareError` where TFLite's ``TF_LITE_ENSURE`` fails (int32 overflow).
    """
    act = int(activation)
    qmin = int(qmin)
    qmax = int(qmax)
    if act == ACT_RELU:
        return max(qmin, _quantize_bound(0.0, scale, zero_point)), qmax
    if act == ACT_RELU6:
        return (max(qmin, _quantize_bound(0.0, scale, zero_point)), min(qmax, _quantize_bound(6.0, scale, zero_point)))
    if act == ACT_RELU_N1_TO_1:
        return (max(qmin, _quantize_bound(-1.0, scale, zero_point)), min(qmax, _quantize_bound(1.0, scale, zero_point)))
    return qmin, qmax


def calculate_activation_range(activation: int, dtype) -> tuple:
    """``CalculateActivationRange<T>`` of tflite/kernels/kernel_util.h: ``(lo, hi)`` as scalars of ``dtype``.

    RELU ``(0, max)``, RELU6 ``(0, 6)``, RELU_N1_TO_1 ``(-1, 1)``, anything else the full range of T
    (``numeric_limits<T>::lowest()/max()``: for float ``+-FLT_MAX``, not infinities). Bounds are converted to T as
    C++ converts them (-1 wraps for unsigned types).
    """
    act = int(activation)
    dtype = np.dtype(dtype)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    if act == ACT_RELU:
        lo, hi = 0, info.max
    elif act == ACT_RELU6:
        lo, hi = 0, 6
    elif act == ACT_RELU_N1_TO_1:
        lo, hi = -1, 1
    else:
        lo, hi = info.min, info.max
    return np.array(lo).astype(dtype)[()], np.array(hi).astype(dtype)[()]


def calculate_activation_range_float(activation: int) -> tuple[np.float32, np.float32]:
    """``CalculateActivationRange<float>``: ``(lo, hi)`` as float32. A fused TANH or SIGN_BIT gives the full range,
    so kernels that clamp with it ignore those codes (as LiteRT does) and +-inf outputs become +-FLT_MAX."""
    return calculate_activation_range(activation, np.float32)


def _axis_shape(ndim: int, axis: int, n: int) -> tuple[int, ...]:
    shape = [1] * ndim
    shape[axis] = n
    return tuple(shape)


def _per_axis_params(x: np.ndarray, scales, zero_points, quantized_dimension: int):
    axis = int(quantized_dimension)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"quantized_dimension {axis} out of range for a {x.ndim}-d tensor")
    axis %= x.ndim
    n = x.shape[axis]
    s = np.asarray(scales, dtype=np.float32).reshape(-1)
    z = np.asarray(zero_points, dtype=np.int64).reshape(-1)
    if z.size == 1 and n != 1:
        z = np.broadcast_to(z, (n,))
    if s.size != n or z.size != n:
        raise ValueError(
            f"per-axis quantization: {s.size} scales / {z.size} zero points for dimension {axis} of size {n}"
        )
    shape = _axis_shape(x.ndim, axis, n)
    return s.reshape(shape), z.reshape(shape)


def _affine_quantize(x, scale_f32, zp, dtype):
    lo, hi = dtype_range(dtype)
    xf = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        r = round_away(np.divide(xf, scale_f32))
    v = wrap32(trunc_to_int32(r) + zp)
    return np.asarray(np.clip(v, lo, hi)).astype(dtype)


def quantize(x_float, scale, zero_point, dtype):
    """float -> integer as the reference QUANTIZE kernel, tflite/kernels/internal/reference/quantize.h
    (AffineQuantize): ``clamp(int32(roundf(f32(x / f32(scale)))) + zp, type range)``.

    A float32 *division* and ties away from zero (the optimized kernel and XNNPACK multiply by the
    reciprocal and round ties to even). Input is converted to float32 first. Out-of-range / NaN casts
    follow x86 (``INT32_MIN``, so e.g. NaN -> type minimum). Returns an array of ``dtype``.
    """
    return _affine_quantize(x_float, np.float32(scale), np.int64(zero_point), np.dtype(dtype))


def quantize_per_axis(x_float, scales, zero_points, quantized_dimension: int, dtype):
    """Per-channel QUANTIZE: tflite/kernels/internal/reference/quantize.h (PerChannelQuantize),
    ``scale[c]``/``zero_point[c]`` along ``quantized_dimension``; same arithmetic as :func:`quantize`."""
    x = np.asarray(x_float, dtype=np.float32)
    s, z = _per_axis_params(x, scales, zero_points, quantized_dimension)
    return _affine_quantize(x, s, z, np.dtype(dtype))


def dequantize(q, scale, zero_point):
    """Reference DEQUANTIZE, tflite/kernels/internal/reference/dequantize.h (Dequantize) and
    reference/integer_ops/dequantize.h: ``static_cast<float>(double(scale) * (q - zp))``.

    The product is formed in double (``scale`` is the float32 tensor scale widened to double) and
    rounded once to float32. (The optimized kernel computes ``q*s + (-zp*s)`` in float32 and can
    differ by 1 ulp.) Returns float32.
    """
    v = np.asarray(q).astype(np.int64) - np.int64(zero_point)
    return (np.float64(np.float32(scale)) * v).astype(np.float32)


def dequantize_per_axis(q, scales, zero_points, quantized_dimension: int):
    """Per-channel DEQUANTIZE, tflite/kernels/internal/reference/dequantize.h (PerChannelDequantize):
    ``scale[c] * (q - zp[c])`` evaluated in float (the int difference is converted to float32, then
    one float32 multiply). For 8/16-bit inputs this equals the per-tensor double formula bit for bit.
    """
    qa = np.asarray(q)
    s, z = _per_axis_params(qa, scales, zero_points, quantized_dimension)
    v = (qa.astype(np.int64) - z).astype(np.float32)
    return np.multiply(s, v, dtype=np.float32)
