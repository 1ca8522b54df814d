"""TensorType <-> numpy dtype.

TensorType numbers and names are those of schema.fbs (the `tflite` package's ``TensorType``).
INT4 tensors are stored packed two per byte; once unpacked they are held as int8.
STRING, RESOURCE and VARIANT tensors are held as numpy object arrays outside the arena.
"""

from __future__ import annotations

import numpy as np
import tflite

TENSOR_TYPE_NAMES: dict[int, str] = {
    v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_") and isinstance(v, int)
}
# Types of LiteRT's current schema.fbs that the `tflite` package (2.18) does not list yet.
for _num, _name in {18: "BFLOAT16", 19: "INT2", 20: "UINT4", 21: "FLOAT8_E4M3FN", 22: "FLOAT8_E5M2"}.items():
    TENSOR_TYPE_NAMES.setdefault(_num, _name)
TensorType = type("TensorType", (), {name: num for num, name in TENSOR_TYPE_NAMES.items()})

_NUMPY: dict[int, type] = {
    0: np.float32,
    1: np.float16,
    2: np.int32,
    3: np.uint8,
    4: np.int64,
    5: np.bytes_,  # STRING
    6: np.bool_,
    7: np.int16,
    8: np.complex64,
    9: np.int8,
    10: np.float64,
    11: np.complex128,
    12: np.uint64,
    13: np.object_,  # RESOURCE
    14: np.object_,  # VARIANT
    15: np.uint32,
    16: np.uint16,
    17: np.int8,  # INT4, unpacked
}
#: Types whose values do not live in the numeric arena.
OBJECT_TYPES = frozenset({5, 13, 14})

#: Bits one element occupies in a constant buffer (sub-byte types are packed, low bits first).
_STORAGE_BITS: dict[int, int] = {
    0: 32,
    1: 16,
    2: 32,
    3: 8,
    4: 64,
    6: 8,
    7: 16,
    8: 64,
    9: 8,
    10: 64,
    11: 128,
    12: 64,
    15: 32,
    16: 16,
    17: 4,
    18: 16,
    19: 2,
    20: 4,
    21: 8,
    22: 8,
}


def storage_bits(tensor_type: int) -> int | None:
    """Bits per element in a model's constant buffer; None for STRING/RESOURCE/VARIANT and unknown types."""
    return _STORAGE_BITS.get(tensor_type)


def buffer_bytes(tensor_type: int, num_elements: int) -> int | None:
    """Bytes a dense constant buffer of ``num_elements`` elements holds (sub-byte types packed)."""
    bits = _STORAGE_BITS.get(tensor_type)
    return None if bits is None else (num_elements * bits + 7) // 8


def type_name(tensor_type: int) -> str:
    """``'FLOAT32'`` for 0, ``'UNKNOWN(99)'`` for a number the schema does not define."""
    return TENSOR_TYPE_NAMES.get(tensor_type, f"UNKNOWN({tensor_type})")


def to_numpy(tensor_type: int) -> type:
    """The numpy scalar type tf.lite reports in detail dicts (``np.float32``, ``np.bytes_``, ...).

    Types with no numpy equivalent (BFLOAT16, INT2, UINT4, FLOAT8_*) raise ``UnsupportedOpError`` (a
    ValueError and a LiteRTError): litert_py has no kernel that takes them.
    """
    try:
        return _NUMPY[tensor_type]
    except KeyError:
        from ..errors import UnsupportedOpError

        raise UnsupportedOpError(
            f"tensor type {type_name(tensor_type)} has no numpy equivalent; litert_py does not support it"
        ) from None


_FROM_NUMPY = {np.dtype(v): k for k, v in reversed(list(_NUMPY.items())) if v is not np.object_}
_FROM_NUMPY[np.dtype(np.int8)] = 9
_FROM_NUMPY[np.dtype(np.bytes_)] = 5


def from_numpy(dtype) -> int:
    """TensorType number of a numpy dtype (``np.object_`` and ``np.str_`` map to STRING)."""
    dt = np.dtype(dtype)
    if dt.kind in "SUO":
        return 5
    try:
        return _FROM_NUMPY[dt]
    except KeyError:
        raise ValueError(f"numpy dtype {dt} has no TensorType") from None


def itemsize(tensor_type: int) -> int:
    """Bytes per element in the arena (INT4 counts 1: it is unpacked to int8)."""
    if tensor_type in OBJECT_TYPES:
        return 0
    return np.dtype(to_numpy(tensor_type)).itemsize


def upper_name(dtype) -> str:
    """``'FLOAT32'`` for np.float32: the spelling LiteRT's error messages use."""
    dt = np.dtype(dtype)
    if dt.kind in "SU":
        return "STRING"
    if dt.kind == "O":
        return "OBJECT"
    return dt.name.upper()


def string_buffer(values) -> bytes:
    """TFLite's STRING tensor buffer: int32 count, int32 offsets[count + 1] from the buffer start, bytes."""
    items = [v if isinstance(v, bytes) else str(v).encode() for v in np.asarray(values, dtype=object).reshape(-1)]
    head = 4 * (len(items) + 2)
    offsets = np.cumsum([head] + [len(v) for v in items]).astype("<i4")
    return np.int32(len(items)).astype("<i4").tobytes() + offsets.tobytes() + b"".join(items)
