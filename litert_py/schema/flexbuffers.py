"""Custom-operator options stored as a FlexBuffer (``flexbuffers::GetRoot(buffer, length)``), decoded once here.

``loads`` decodes the bytes (flatbuffers' Python ``flexbuffers.Loads``) and raises :class:`FlexBufferError`
naming the decoder's exception when they are truncated or corrupt. The ``as_*`` functions are flexbuffers'
``Reference::As*`` conversions on a decoded value, explicit about every type (flatbuffers/flexbuffers.h):

* ``as_int64``: null -> 0, bool/int as is, float truncated toward zero (NaN/inf -> 0 here: undefined in C++),
  string parsed as an integer (0 when it is not one), vector/map -> its size.
* ``as_int32``: ``static_cast<int32_t>(AsInt64())`` (two's-complement wrap).
* ``as_double``: null -> 0, bool/int/float as a double, string parsed (``strtod``; 0 when it is not a number),
  vector/map -> its size. ``as_float``: ``static_cast<float>(AsDouble())`` (beyond the float range: +-inf).
* ``as_bool``: a bool as stored, anything else ``AsUInt64() != 0``.

Kernels that refuse a value LiteRT would turn into undefined behaviour (a NaN option, a string where a number
belongs) check it before converting (ops/common.py ``flex_*``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FlexBufferError", "loads", "as_int64", "as_int32", "as_double", "as_float", "as_bool", "NUMBER"]

#: the decoded types that are numbers (FBT_BOOL, FBT_INT/UINT and their indirect forms, FBT_FLOAT)
NUMBER = (bool, int, float)


class FlexBufferError(ValueError):
    """The bytes are not a valid FlexBuffer."""


def loads(raw: bytes):
    """The decoded root value (a dict for a map). Malformed input: FlexBufferError naming the decoder's error."""
    from flatbuffers import flexbuffers

    try:
        return flexbuffers.Loads(bytes(raw))
    except Exception as e:  # truncated or corrupt
        raise FlexBufferError(f"{type(e).__name__}: {e}") from None


def as_int64(v) -> int:
    """flexbuffers ``AsInt64``."""
    if v is None:
        return 0
    if isinstance(v, bool | int):
        return int(v)
    if isinstance(v, float):
        return int(v) if math.isfinite(v) else 0
    if isinstance(v, str | bytes):
        try:
            return int(v)
        except ValueError:
            return 0
    if isinstance(v, list | tuple | dict):
        return len(v)
    return 0


def as_int32(v) -> int:
    """flexbuffers ``AsInt32``: AsInt64 stored into an ``int32_t`` (two's-complement wrap)."""
    return (as_int64(v) + 2**31) % 2**32 - 2**31


def as_double(v) -> float:
    """flexbuffers ``AsDouble``."""
    if v is None:
        return 0.0
    if isinstance(v, NUMBER):
        return float(v)
    if isinstance(v, str | bytes):
        try:
            return float(v)
        except ValueError:
            return 0.0
    if isinstance(v, list | tuple | dict):
        return float(len(v))
    return 0.0


def as_float(v) -> float:
    """flexbuffers ``AsFloat``: ``static_cast<float>(AsDouble())``, returned as a Python float."""
    with np.errstate(over="ignore"):  # a double beyond the float range becomes +-inf, as in C++
        return float(np.float32(as_double(v)))


def as_bool(v) -> bool:
    """flexbuffers ``AsBool``."""
    return v if isinstance(v, bool) else as_int64(v) != 0
