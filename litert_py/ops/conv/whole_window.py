"""Index and epilogue helpers for merging two whole-window depthwise kernels into one op
(depthwise_quantized.DepthwiseConvWholeFolded.merging: a MixConv block's two kernels, which read windows of one
tensor and store into adjacent channel slices of one output), and the whole-window tap sum as one BLAS product
(``tap_dot``)."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from .requant import SmallFoldedEpilogue, SmallLateZeroPointEpilogue

ALL = (slice(None),) * 4


def full_index(index: tuple, rank: int) -> tuple:
    """``index`` with (Ellipsis,) spelled out as full slices."""
    return ALL[:rank] if index == (Ellipsis,) else tuple(index)


def adjacent(a, b) -> slice | None:
    """slice(c0, c2, 1) for the step-1 slices [c0, c1) and [c1, c2) with explicit bounds, else None."""
    ok = all(isinstance(s, slice) and s.step in (None, 1) and s.stop is not None for s in (a, b))
    return slice(a.start or 0, b.stop, 1) if ok and a.stop == (b.start or 0) else None


def merged_window(a: tuple, b: tuple) -> tuple | None:
    """The index covering two NHWC windows ``a`` and ``b`` (basic slices, step 1) that agree on batch and width,
    end at the same row, and take channels [c0, c1) then [c1, c2): rows from the earlier start, channels
    [c0, c2); None otherwise."""
    if len(a) != 4 or len(b) != 4 or not all(isinstance(s, slice) and s.step in (None, 1) for s in a + b):
        return None
    channels = adjacent(a[3], b[3])
    if a[0] != b[0] or a[2] != b[2] or a[1].stop is None or a[1].stop != b[1].stop or channels is None:
        return None
    return (a[0], slice(min(a[1].start or 0, b[1].start or 0), a[1].stop, 1), a[2], channels)


def merge_epilogues(a, b, shape_a: tuple, shape_b: tuple):
    """One small epilogue for two ops' outputs concatenated along channels: array fields with the outputs' shapes
    concatenated, every other field equal in both (None, 0-d bounds, constants); None when the two differ
    otherwise or are not small epilogues (whose every operation is elementwise)."""
    if type(a) is not type(b) or type(a) not in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue):
        return None
    merged = {}
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is None or y is None:
            if x is not y:
                return None
            merged[f.name] = None
        elif isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and (x.shape, y.shape) == (shape_a, shape_b):
            merged[f.name] = np.concatenate([x, y], axis=-1)
        elif np.ndim(x) == 0 and np.ndim(y) == 0 and float(x) == float(y):
            merged[f.name] = x
        else:
            return None
    return type(a)(**merged)


def tap_dot(products: np.ndarray, acc_rows: np.ndarray) -> tuple | None:
    """``(ones, rows)`` such that ``np.dot(ones, rows, out=acc_rows)`` sums the (1, taps + 1, C) ``products`` of a
    whole-window depthwise conv over its taps and its constant row: one BLAS matrix-vector product instead of
    np.add.reduce along the middle axis (about 0.45 us instead of 0.75-1.1 us for 4-18 rows of 64 channels).

    Exactness bound (the folding's, requant.py, checked where the op is prepared): every partial sum of the
    products is a multiple of the channel's unit 2^(ls-31-rs) below 2^53 units in whatever order they are added
    (the bound is on the sum of the terms' magnitudes), and each term ``1.0 * p`` is ``p`` exactly (in a fused
    multiply-add too), so BLAS's totals equal add.reduce's. A zero total may come out as -0.0 instead of +0.0:
    the folded epilogues round both alike (the sign term 2^-(rs+1) is below 1/2; see ``merging``). None (the
    add.reduce path) for a batch above 1 or an ``acc_rows`` np.dot cannot write into (not a C-contiguous
    (1, C) array)."""
    if products.ndim != 3 or products.shape[0] != 1 or acc_rows.shape != (1, products.shape[2]):
        return None
    if not acc_rows.flags.c_contiguous or acc_rows.dtype != np.float64 or products.dtype != np.float64:
        return None
    return np.ones((1, products.shape[1])), products[0]
