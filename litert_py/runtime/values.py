"""The value checks of ``set_tensor`` (and of every other way an input is fed: SignatureRunner, tflite-run's
signature feed, the Ray batch path), in one place, with tf.lite's messages."""

from __future__ import annotations

import numpy as np

from ..schema import dtypes

__all__ = ["check_value_type", "input_value"]


def check_value_type(got, want, pos, name: str) -> None:
    """ValueError (tf.lite's message) unless an array of dtype ``got`` can feed a tensor of numpy dtype ``want``:
    the same dtype in either byte order (the copy into the tensor converts '>f4' to the same values), and not an
    object/string/void array."""
    got, want = np.dtype(got), np.dtype(want)
    if got.kind in "OUSV" or got.newbyteorder("=") != want:  # the other byte order ('>f4') is converted on copy
        raise ValueError(
            f"Cannot set tensor: Got value of type {dtypes.upper_name(got)} but expected type "
            f"{dtypes.upper_name(want)} for input {pos}, name: {name} "
        )


def check_value_shape(arr: np.ndarray, shape, pos) -> None:
    """ValueError with tf.lite's message when ``arr``'s rank or a dimension differs from ``shape``."""
    if arr.ndim != len(shape):
        raise ValueError(
            f"Cannot set tensor: Dimension mismatch. Got {arr.ndim} but expected {len(shape)} for input {pos}."
        )
    for k, (got, exp) in enumerate(zip(arr.shape, shape)):
        if got != exp:
            raise ValueError(
                f"Cannot set tensor: Dimension mismatch. Got {got} but expected {exp} for dimension {k} of input {pos}."
            )


def input_value(name: str, type_: int, value, pos) -> np.ndarray:
    """``value`` as the array set_tensor stores into the tensor ``name`` of current type ``type_`` (a TensorType
    number) at input position ``pos``; ValueError with tf.lite's message when its type does not match."""
    if type_ == dtypes.TensorType.STRING:
        return _string_array(value, pos, name)
    try:
        arr = np.asarray(value)
    except Exception:
        raise ValueError("Failed to convert value into readable tensor.") from None
    check_value_type(arr.dtype, dtypes.to_numpy(type_), pos, name)
    return arr


def _string_array(value, pos: int, name: str) -> np.ndarray:
    """A value for a STRING tensor as LiteRT's wrapper takes it: a numpy array of bytes (S), str (U, encoded
    as UTF-8; a 0-d U array gives its raw UCS-4 bytes, as LiteRT does) or objects that are each bytes or
    str; the result is an object array of ``bytes``, what get_tensor returns."""
    if not isinstance(value, np.ndarray):
        tp = type(value)
        tp_name = tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__.split('.')[0]}.{tp.__name__}"
        raise ValueError(f"Passed in value type is not a numpy array, got type {tp_name}.")
    if value.dtype.kind not in "OSU":
        raise ValueError(
            f"Cannot set tensor: Got value of type {dtypes.upper_name(value.dtype)} but expected type "
            f"STRING for input {pos}, name: {name} "
        )
    out = np.empty(value.shape, dtype=object)
    if value.dtype.kind == "U" and value.ndim == 0:
        out[()] = value.tobytes()
        return out
    items = []
    for v in value.reshape(-1).tolist():
        if isinstance(v, str):
            v = v.encode()
        elif not isinstance(v, bytes):
            raise ValueError("PyBytes_AsStringAndSize() failed.")
        items.append(bytes(v))
    out.reshape(-1)[:] = items
    return out
