"""Constant tensor data: buffers of the model as numpy arrays of the tensor's type and shape."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..schema import dtypes
from ..schema.model import Model, Tensor
from ..schema.validate import tensor_num_elements

INT4 = dtypes.TensorType.INT4
STRING = dtypes.TensorType.STRING


def unpack_int4(raw: np.ndarray, count: int) -> np.ndarray:
    """Two signed 4-bit values per byte, low nibble first (TFLite's UnpackDenseInt4IntoInt8)."""
    lo = (raw.astype(np.int8) << 4) >> 4
    hi = raw.astype(np.int8) >> 4
    return np.stack([lo, hi], axis=-1).reshape(-1)[:count]


def decode_strings(raw: np.ndarray, shape) -> np.ndarray:
    """TFLite's string buffer (int32 count, int32 offsets[count + 1], bytes) -> array of bytes objects."""
    buf = raw.tobytes()
    if len(buf) < 4:
        return np.empty(shape, dtype=object)
    count = int.from_bytes(buf[:4], "little", signed=True)
    if count < 0 or 4 * (count + 2) > len(buf):
        raise ValueError(f"string buffer claims {count} strings in {len(buf)} bytes")
    offs = np.frombuffer(buf, "<i4", count + 1, 4).astype(np.int64)
    if np.any(np.diff(offs) < 0) or offs[0] < 4 * (count + 2) or offs[-1] > len(buf):
        raise ValueError("string buffer offsets out of order or out of range")
    items = np.empty(count, dtype=object)
    items[:] = [buf[a:b] for a, b in zip(offs[:-1].tolist(), offs[1:].tolist())]
    return items.reshape(shape) if tensor_num_elements(shape) == count else items


def constant_array(model: Model, t: Tensor) -> np.ndarray | None:
    """The tensor's constant value (read-only view where possible), or None if it has no data."""
    raw = model.buffers[t.buffer].data
    if raw.size == 0 or t.type in (dtypes.TensorType.RESOURCE, dtypes.TensorType.VARIANT):
        return None  # RESOURCE/VARIANT hold handles, never constant bytes (the reader rejects such buffers)
    if t.type == STRING:
        return decode_strings(raw, t.shape)
    if t.sparsity is not None:
        return raw  # still encoded; DENSIFY (or the consuming kernel) expands it
    n = tensor_num_elements(t.shape)
    if t.type == INT4:
        arr = unpack_int4(raw, n).reshape(t.shape)
        arr.flags.writeable = False
        return arr
    dtype = np.dtype(dtypes.to_numpy(t.type)).newbyteorder("<")
    return raw.view(dtype).reshape(t.shape)


def int32_quantization(q):
    """The quantization LiteRT works with: the schema's int64 zero points stored in C ``int``
    (TfLiteAffineQuantization.zero_point, filled by InterpreterBuilder::ParseQuantization), so a zero point
    outside int32 wraps modulo 2**32 (2**31 -> -2**31, 2**62 -> 0), in the details and in every kernel."""
    if q is None or all(-(1 << 31) <= z < (1 << 31) for z in q.zero_point):
        return q
    wrapped = tuple((int(z) + (1 << 31)) % (1 << 32) - (1 << 31) for z in q.zero_point)
    return dataclasses.replace(q, zero_point=wrapped)
