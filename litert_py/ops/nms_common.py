"""Box suppression shared by NON_MAX_SUPPRESSION_V4/V5 (nms.py) and TFLite_Detection_PostProcess (detection.py):
libstdc++'s heap algorithms as std::partial_sort runs them, IoU and the vectorized greedy suppression (sources:
see nms.py and detection.py)."""

from __future__ import annotations

import struct

import numpy as np

F32 = np.float32


# ----------------------------------------------------------------------------------------------
# libstdc++ heap algorithms (bits/stl_heap.h), with ``less(a, b)`` as the comparator
# ----------------------------------------------------------------------------------------------


def _cdiv2(x: int) -> int:
    """C++ ``x / 2`` (truncation toward zero)."""
    return -((-x) // 2) if x < 0 else x // 2


def _adjust_heap(a: list, first: int, hole: int, length: int, value, less) -> None:
    # ``a[first:]`` is the heap; indices below are relative to ``first``.
    view_get = a.__getitem__
    top = hole
    child = hole
    while child < _cdiv2(length - 1):
        child = 2 * (child + 1)
        if less(view_get(first + child), view_get(first + child - 1)):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if (length & 1) == 0 and child == _cdiv2(length - 2):
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    # __push_heap on the relative range
    parent = _cdiv2(hole - 1)
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = _cdiv2(hole - 1)
    a[first + hole] = value


def _pop_heap_into(a: list, length: int, result: int, less) -> None:
    """``std::__pop_heap(first, first + length, result)`` with first = 0."""
    value = a[result]
    a[result] = a[0]
    _adjust_heap(a, 0, 0, length, value, less)


def _make_heap(a: list, length: int, less) -> None:
    if length < 2:
        return
    parent = _cdiv2(length - 2)
    while True:
        _adjust_heap(a, 0, parent, length, a[parent], less)
        if parent == 0:
            return
        parent -= 1


def partial_sort(a: list, middle: int, less, candidates=None) -> None:
    """``std::partial_sort(a.begin(), a.begin() + middle, a.end(), less)`` (libstdc++). ``candidates``: the
    positions past ``middle`` that may enter the heap (the others are known to fail ``less(a[i], a[0])``)."""
    _make_heap(a, middle, less)
    for i in range(middle, len(a)) if candidates is None else candidates:
        if less(a[i], a[0]):
            _pop_heap_into(a, middle, i, less)
    n = middle
    while n > 1:
        n -= 1
        _pop_heap_into(a, n, n, less)


# ----------------------------------------------------------------------------------------------
# IoU and greedy suppression, vectorized
# ----------------------------------------------------------------------------------------------

YMIN, XMIN, YMAX, XMAX, AREA = range(5)
R32 = struct.Struct("f")


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 IoU of the boxes ``a`` and ``b`` (rows ymin, xmin, ymax, xmax, area; broadcast), as LiteRT's
    ComputeIou / ComputeIntersectionOverUnion compute it: 0 when either area is <= 0, else
    ``inter / ((area_a + area_b) - inter)``. Symmetric in ``a`` and ``b`` (a NaN corner makes the area, hence
    the IoU, NaN either way). Callers silence numpy's floating-point warnings (np.errstate) once."""
    ih = np.minimum(a[YMAX], b[YMAX])
    ih -= np.maximum(a[YMIN], b[YMIN])
    iw = np.minimum(a[XMAX], b[XMAX])
    iw -= np.maximum(a[XMIN], b[XMIN])
    np.maximum(ih, F32(0), out=ih)
    np.maximum(iw, F32(0), out=iw)
    inter = np.multiply(ih, iw, out=ih)
    union = np.add(a[AREA], b[AREA], out=iw)
    union -= inter
    iou = np.divide(inter, union, out=inter)
    iou[(a[AREA] <= 0) | (b[AREA] <= 0)] = 0
    return iou


def greedy(
    s: np.ndarray, max_sel: int, thr, strict: bool, self_sup: np.ndarray | None = None, block: int = 128
) -> list[int]:
    """Greedy NMS over the boxes ``s`` (5, C), already in selection order: each box not suppressed by an
    earlier selection is selected and suppresses the later ones with ``iou > thr`` (``strict``) or ``>= thr``.
    Stops after ``max_sel`` selections. ``self_sup``: NON_MAX_SUPPRESSION's re-queued selection -- a selected
    box whose IoU with itself is not suppressing is popped again at once and fills every remaining slot.
    Returns positions into ``s``. Works in blocks of ``block`` boxes: one IoU matrix against the earlier
    selections, one inside the block, then the block's greedy walk with one vectorized row update per selection."""
    c = s.shape[1]
    sel: list[int] = []
    start = 0
    while start < c:
        end = min(c, start + block)
        b = s[:, start:end]
        if sel:
            iou = box_iou(b[:, :, None], s.take(sel, axis=1)[:, None, :])
            alive = ~np.any(iou > thr if strict else iou >= thr, axis=1)
            if not alive.any():
                start = end
                continue
        else:
            alive = np.ones(end - start, bool)
        iou = box_iou(b[:, :, None], b[:, None, :])
        sup = ~(iou > thr if strict else iou >= thr)
        for i in np.flatnonzero(alive).tolist():
            if not alive[i]:
                continue
            p = start + i
            sel.append(p)
            if len(sel) >= max_sel:
                return sel
            if self_sup is not None and not self_sup[p]:
                sel.extend([p] * (max_sel - len(sel)))
                return sel
            alive[i + 1 :] &= sup[i, i + 1 :]
        start = end
    return sel


def greedy_segments(s: np.ndarray, seg: np.ndarray, cap: int, thr, score: np.ndarray, keep_best: int) -> np.ndarray:
    """``greedy`` (strict) run independently on each segment of ``s`` (5, P): boxes sorted by segment, then in
    selection order inside it (decreasing ``score``); at most ``cap`` selections per segment. All segments
    advance together: each round selects the next live box of every live segment and suppresses within the
    segments at once. Only the ``keep_best`` best selections overall are wanted: once that many are known, the
    boxes scoring below the worst of the best are dropped (they, and what follows them in their segment, can
    only be selected behind them). Returns the selected positions, ascending (in selection order inside each
    segment); a superset of the wanted selections."""
    pos = np.arange(s.shape[1])
    out: list[np.ndarray] = []
    best = np.zeros(0, score.dtype)
    rounds = 0
    while pos.size and rounds < cap:
        rounds += 1
        first = np.empty(pos.size, bool)
        first[0] = True
        np.not_equal(seg[1:], seg[:-1], out=first[1:])
        heads = np.flatnonzero(first)
        out.append(pos[heads])
        if rounds == cap:
            break
        head_of = heads[np.cumsum(first) - 1]  # each live box's segment's new selection
        keep = ~(box_iou(s, s.take(head_of, axis=1)) > thr)
        keep[heads] = False
        best = np.concatenate([best, score[heads]])
        if best.size >= keep_best:
            best = np.partition(best, best.size - keep_best)[best.size - keep_best :]
            keep &= score >= best[0]
        s, seg, pos, score = s.compress(keep, axis=1), seg[keep], pos[keep], score[keep]
    return np.sort(np.concatenate(out)) if out else np.zeros(0, np.intp)


# ----------------------------------------------------------------------------------------------
# NON_MAX_SUPPRESSION_V4 / V5
# ----------------------------------------------------------------------------------------------
