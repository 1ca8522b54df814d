"""Resource limits shared by the schema reader, the kernels and the runtime (below all of them).

The memory budget: one check before every allocation whose size comes from the model or input values.

``LITERT_PY_MAX_ARENA_BYTES`` (default 4 GiB) bounds each single allocation: a subgraph's arena, a tensor a
kernel creates at eval because its shape depends on input values (FILL, BROADCAST_TO, TILE, PAD, ONE_HOT,
RANGE, ...), a prepared op's scratch buffer, a sparse constant densified at load. A refused allocation raises
``ResourceLimitError`` before any memory is taken; the interpreter stays usable. The budget is read from this
module at each check (``limits.MAX_ARENA_BYTES``), so tests may lower it at run time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from .errors import InvokeError, ResourceLimitError

#: Bytes one allocation (a subgraph's whole arena counts as one) may take.
MAX_ARENA_BYTES = int(os.environ.get("LITERT_PY_MAX_ARENA_BYTES", 4 << 30))


def nbytes(shape: Iterable[int], dtype) -> int:
    """Bytes of an array of ``shape`` and ``dtype``, in Python integers (no int64 overflow)."""
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= max(int(d), 0)
    return n


def check_allocation(n: int, what: str) -> None:
    """Refuse an allocation of ``n`` bytes over the budget, with a ResourceLimitError naming ``what``."""
    if n > MAX_ARENA_BYTES:
        raise ResourceLimitError(
            f"{what} needs {n} bytes, over the limit of {MAX_ARENA_BYTES} (set LITERT_PY_MAX_ARENA_BYTES to raise it)"
        )


INT32_MAX = (1 << 31) - 1


def check_dims(shape, what: str) -> None:
    """LiteRT keeps dimensions in int32 (TfLiteIntArray): a larger one, even in a zero-element tensor (e.g.
    TILE multiples of 2^30 on a [0, 2] input), is refused instead of overflowing."""
    if any(int(d) > INT32_MAX for d in shape):
        raise InvokeError(f"{what}: shape {[int(d) for d in shape]} has a dimension over the int32 limit {INT32_MAX}")


def new_array(shape, dtype, what: str = "an output whose shape depends on input values") -> np.ndarray:
    """``np.empty(shape, dtype)`` after the budget check: for kernels that size an output from values."""
    shape = tuple(int(d) for d in shape)
    check_dims(shape, what)
    check_allocation(nbytes(shape, dtype), f"{what} of shape {list(shape)}")
    return np.empty(shape, dtype)
