"""The one comparator of the tests and the op dashboard (tools/op_coverage.py): our outputs against a reference's.

The rule, for each pair of outputs (ours, reference):

- the same number of outputs, the same shapes and the same dtypes;
- strings (bytes / object arrays), integers and bools: equal, element for element;
- floats and complex: NaN exactly where the reference has NaN, the same infinities where it has infinities,
  and at every other element ``|ours - ref| <= atol + rtol * max|ref| + rtol_each * |ref|``, where ``max|ref|``
  is the largest finite magnitude in that reference output (0 when it has none) and the difference is taken
  in float64 / complex128. ``rtol`` is a tolerance relative to the output's scale (what a sum of products
  needs: cancellation leaves elements far smaller than the rounding of the terms); ``rtol_each`` is relative to
  each element (what an elementwise op over many decades needs: numpy's ``rtol``); ``atol`` is a number or an
  array of the output's shape (one absolute tolerance per element). All three default to 0: floats are then
  compared exactly.

numpy only (the dashboard imports this module without pytest).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["assert_close", "mismatch"]


def _strings(a: np.ndarray) -> list:
    return [x if isinstance(x, bytes) else x.encode() if isinstance(x, str) else bytes(x) for x in a.reshape(-1)]


def _at(flat: int, shape: tuple) -> tuple:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _output(a, b, rtol: float, atol: float, rtol_each: float, where: bool) -> str | None:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {list(a.shape)}, reference {list(b.shape)}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype}, reference {b.dtype}"
    if b.dtype.kind in "OSU":
        sa, sb = _strings(a), _strings(b)
        if sa == sb:
            return None
        k = next(i for i, (x, y) in enumerate(zip(sa, sb)) if x != y)
        at = f" (first at index {_at(k, b.shape)}: {sa[k]!r}, reference {sb[k]!r})"
        return "strings differ" + (at if where else "")
    if b.dtype.kind not in "fc":
        bad = a != b
        if not bad.any():
            return None
        wide = np.int64 if b.dtype.kind in "iub" else object
        d = np.abs(a.astype(wide) - b.astype(wide)) if b.dtype != np.bool_ else bad.astype(np.int64)
        msg = f"{int(bad.sum())}/{b.size} elements differ (max |diff| {d.max()})"
        if where:
            k = int(np.argmax(d.reshape(-1)))
            msg += f"; largest at index {_at(k, b.shape)}: ours {a.reshape(-1)[k]}, reference {b.reshape(-1)[k]}"
        return msg
    fin = np.isfinite(b)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    special = ~fin & ~nan_b  # the reference's infinities
    if not np.array_equal(nan_a, nan_b) or not np.array_equal(a[special], b[special]):
        msg = "non-finite values differ"
        if where:
            bad = (nan_a != nan_b) | (special & (a != b)) | (fin & ~np.isfinite(a))
            k = int(np.flatnonzero(bad.reshape(-1))[0])
            msg += f" (first at index {_at(k, b.shape)}: ours {a.reshape(-1)[k]}, reference {b.reshape(-1)[k]})"
        return msg
    if not fin.any():
        return None
    wide = np.complex128 if b.dtype.kind == "c" else np.float64
    ref = b[fin].astype(wide)
    scale = float(np.max(np.abs(ref)))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a[fin].astype(wide) - ref)  # inf where ours is not finite: never within tolerance
    per_element = np.ndim(atol) > 0
    atol_f = np.broadcast_to(np.asarray(atol, np.float64), b.shape)[fin] if per_element else atol
    tol = atol_f + rtol * scale + (rtol_each * np.abs(ref) if rtol_each else 0.0)
    over = diff > tol
    if not over.any():
        return None
    if rtol_each or per_element:
        k = int(np.argmax(np.where(over, diff - tol, -np.inf)))
        msg = f"{int(over.sum())}/{b.size} elements beyond tolerance (|diff| {diff[k]:.3g}, tolerance {tol[k]:.3g})"
    else:
        k = int(np.argmax(diff))
        msg = f"max |diff| {diff[k]:.3g} (tolerance {tol:.3g})"
    if where:
        idx = _at(int(np.flatnonzero(fin.reshape(-1))[k]), b.shape)
        ours, theirs = a[fin][k], b[fin][k]
        msg += (
            f"; {int(over.sum())}/{b.size} elements over, worst at index {idx}: ours {ours!r}, reference {theirs!r}"
            f" (atol {atol_f[k] if per_element else atol:g} + rtol {rtol:g} * max|ref| {scale:.6g}"
            f" + rtol_each {rtol_each:g} * |ref|)"
        )
    return msg


def mismatch(
    ours: Sequence[np.ndarray],
    theirs: Sequence[np.ndarray],
    *,
    rtol: float = 0.0,
    atol: float | np.ndarray = 0.0,
    rtol_each: float = 0.0,
    where: bool = True,
) -> str | None:
    """None when ``ours`` matches the reference ``theirs`` under the module's rule; else the first difference:
    which output, how much, and (``where``) at which index with both values."""
    if len(ours) != len(theirs):
        return f"{len(ours)} outputs, the reference gives {len(theirs)}"
    for k, (a, b) in enumerate(zip(ours, theirs)):
        why = _output(a, b, rtol, atol, rtol_each, where)
        if why:
            return f"output {k}: {why}"
    return None


def assert_close(ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray], *, err_msg: str = "", **tolerance) -> None:
    """Fail (AssertionError) unless ``ours`` matches the reference ``theirs`` (lists of outputs) under the
    module's rule; ``tolerance``: ``rtol``, ``atol``, ``rtol_each`` (all 0 by default). The message says where
    and by how much."""
    why = mismatch(ours, theirs, **tolerance, where=True)
    if why:
        raise AssertionError(f"{err_msg}: {why}" if err_msg else why)
