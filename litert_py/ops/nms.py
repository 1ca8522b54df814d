"""NON_MAX_SUPPRESSION_V4 and NON_MAX_SUPPRESSION_V5 (float32: ai-edge-litert 2.3.0 runs no quantized NMS), and
the greedy-NMS and libstdc++ heap helpers that TFLite_Detection_PostProcess (detection.py) shares.

Non-max suppression (tensorflow/lite/kernels/non_max_suppression.cc,
tensorflow/lite/kernels/internal/reference/non_max_suppression.h): candidates with ``score >
score_threshold`` go into a ``std::priority_queue`` (ordered by score only); a popped candidate is compared
with the selections it has not seen yet (newest first); the IoU is float32 on corners normalised with
std::min/std::max; ``iou >= iou_threshold`` hard-suppresses; with ``soft_nms_sigma > 0`` the score is
multiplied by ``expf(scale * iou * iou)``, ``scale = -0.5f / sigma``; a candidate whose score did not change
is selected, and (LiteRT has no ``continue`` there) every candidate still above the threshold -- the
selected one included -- is re-queued. Unused output slots are zero. Two exact paths:

- hard NMS whose popped scores are all distinct: the queue pops in decreasing score order and a selection,
  re-queued with the top score, is popped again at once (dropped by its own IoU, or -- an empty box --
  selected into every remaining slot), so this is the vectorized greedy ``greedy``: blocks of candidates,
  one IoU matrix against the earlier selections and one inside the block, a vectorized row per selection;
- equal scores popped, or soft NMS: ``_nms_simulate`` runs LiteRT's loop with the priority queue simulated
  as libstdc++'s ``push_heap``/``pop_heap`` do (``_heap_push``/``_heap_pop``), so ties pop in LiteRT's
  order; each selection computes its IoU with every candidate once (vectorized), leaving only O(1) work
  (or a short float32 product of decay factors) per pop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import limits
from ..schema.model import BuiltinOperator
from .nms_common import AREA, R32, XMAX, XMIN, YMAX, YMIN, box_iou, greedy
from .registry import OpContext, PreparedOp, register

F32 = np.float32
BOXES, SCORES, MAX_OUTPUT_SIZE, IOU_THRESHOLD, SCORE_THRESHOLD, SIGMA = range(6)


def _nms_boxes(boxes: np.ndarray) -> np.ndarray:
    """(5, N) float32: corners normalised with std::min / std::max (a NaN second operand yields the first),
    and the area."""
    b = boxes.astype(F32, copy=False)
    y1, x1, y2, x2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    s = np.empty((5, b.shape[0]), F32)
    s[YMIN] = np.where(y2 < y1, y2, y1)
    s[YMAX] = np.where(y1 < y2, y2, y1)
    s[XMIN] = np.where(x2 < x1, x2, x1)
    s[XMAX] = np.where(x1 < x2, x2, x1)
    np.multiply(s[YMAX] - s[YMIN], s[XMAX] - s[XMIN], out=s[AREA])
    return s


def _sift_up(a: list, hole: int, item) -> None:
    """libstdc++ __push_heap: move ``item`` = (key, ...) up from ``hole`` past every parent with a smaller key."""
    key = item[0]
    while hole > 0:
        parent = (hole - 1) >> 1
        if a[parent][0] < key:
            a[hole] = a[parent]
            hole = parent
        else:
            break
    a[hole] = item


def _heap_push(a: list, item) -> None:
    """std::push_heap of ``item`` onto the max-heap ``a``."""
    a.append(item)
    _sift_up(a, len(a) - 1, item)


def _heap_pop(a: list):
    """std::pop_heap + pop_back (libstdc++ __pop_heap / __adjust_heap / __push_heap): the top item."""
    top = a[0]
    n = len(a) - 1  # the heap length after the pop
    value = a.pop()
    if n == 0:
        return top
    hole = 0
    child = 0
    half = (n - 1) >> 1
    while child < half:
        child = 2 * (child + 1)
        if a[child][0] < a[child - 1][0]:
            child -= 1
        a[hole] = a[child]
        hole = child
    if (n & 1) == 0 and child == (n - 2) >> 1:
        child = 2 * (child + 1)
        a[hole] = a[child - 1]
        hole = child - 1
    _sift_up(a, hole, value)
    return top


def _nms_simulate(s, cs, num_outputs, thr_iou, thr_s, scale) -> tuple[list[int], list[float]]:
    """reference_ops::NonMaxSuppression step by step over the candidates (boxes ``s``, scores ``cs``): the
    std::priority_queue is simulated exactly (libstdc++ heap, candidates pushed in index order), so equal
    scores pop in LiteRT's order. Returns candidate positions and their final scores.

    The IoU work is vectorized and done once per (selection, candidate) pair, and only for the candidates
    that can be popped: the queue's top score never rises, so a popped candidate's original score is at least
    that of every later pop -- candidates are ranked by decreasing score and the pairs are computed for the
    ranks below a frontier ``hi`` that grows (in blocks, against all selections so far) when a candidate past
    it pops; each selection computes its row up to ``hi``. ``last_sup[r]`` is the last selection
    hard-suppressing rank r; for soft NMS row j of ``factors`` holds the float32 decay factors
    ``expf(scale * iou * iou)`` of selection j. A popped candidate is decayed by the selections it has not
    seen, newest first, in float32 (a long run by np.multiply.accumulate, sequential like LiteRT's loop); the
    loop's early exits (hard suppression, score <= threshold) both drop it, and the decay never raises a score,
    so the full product decides."""
    n_cand = len(cs)
    order = np.argsort(-cs, kind="stable")
    rank_of = np.empty(n_cand, np.intp)
    rank_of[order] = np.arange(n_cand)
    s = s.take(order, axis=1)  # boxes by rank
    heap: list = []
    for v, r in zip(cs.tolist(), rank_of.tolist()):
        _heap_push(heap, (v, r, 0))
    soft = scale is not None
    scale = F32(scale) if soft else None
    last_sup = np.full(n_cand, -1, np.intp)
    factors = np.empty((num_outputs, n_cand), F32) if soft else None
    buf = np.empty(num_outputs + 1, F32)
    pack, unpack = R32.pack, R32.unpack
    sel: list[int] = []  # ranks
    sel_scores: list[float] = []
    hi = 0
    while len(sel) < num_outputs and heap:
        original, r, begin = _heap_pop(heap)
        n = len(sel)
        if r >= hi:  # extend the frontier: the new ranks against every selection so far
            lo, hi = hi, min(n_cand, max(r + 1, 2 * hi, 64))
            if n:
                iou = box_iou(s.take(sel, axis=1)[:, :, None], s[:, None, lo:hi])  # (n, hi - lo)
                sup = iou >= thr_iou
                last = (n - 1) - np.argmax(sup[::-1], axis=0)
                last_sup[lo:hi] = np.where(sup.any(axis=0), last, -1)
                if soft:
                    factors[:n, lo:hi] = np.exp(((scale * iou) * iou).astype(np.float64))
        score = original
        if begin < n:
            if last_sup[r] >= begin:
                continue  # hard-suppressed
            if soft:
                col = factors[begin:n, r]
                if n - begin <= 8:
                    for f in col.tolist()[::-1]:
                        score = unpack(pack(score * f))[0]
                else:
                    m = n - begin
                    buf[0] = score
                    buf[m:0:-1] = col
                    score = float(np.multiply.accumulate(buf[: m + 1])[m])
        if score == original:
            sel.append(r)
            sel_scores.append(score)
            iou = box_iou(s[:, r : r + 1], s[:, :hi])
            last_sup[:hi][iou >= thr_iou] = n
            if soft:
                factors[n, :hi] = np.exp(((scale * iou) * iou).astype(np.float64))
        if score > thr_s:
            _heap_push(heap, (score, r, n))
    return order[sel].tolist(), sel_scores


def nms_float(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output_size: int,
    iou_threshold: float,
    score_threshold: float,
    sigma: float,
) -> tuple[list[int], list[float]]:
    """reference_ops::NonMaxSuppression (float): the selected indices and their (soft-NMS) scores.

    Hard NMS whose candidate scores are distinct (up to the last one popped) takes the vectorized greedy: the
    queue then pops in decreasing score order, a selection is re-queued with the top score and popped again at
    once (hard-suppressed by its own IoU, or selected again). Anything else (equal scores popped, soft NMS)
    simulates the queue."""
    thr_s = F32(score_threshold)
    thr_iou = F32(iou_threshold)
    sc = scores.astype(F32, copy=False)
    cand = np.flatnonzero(sc > thr_s)
    num_outputs = min(cand.size, max_output_size)
    if num_outputs <= 0:
        return [], []
    with np.errstate(all="ignore"):
        s = _nms_boxes(boxes).take(cand, axis=1)
        cs = sc[cand]
        if sigma > 0.0:
            scale = float(F32(-0.5) / F32(sigma))
            sel, sel_scores = _nms_simulate(s, cs, num_outputs, thr_iou, float(thr_s), scale)
            return cand[sel].tolist(), sel_scores
        order = np.argsort(-cs, kind="stable")
        keys = cs[order]
        ss = s.take(order, axis=1)
        # a box's IoU with itself: its intersection is its area (the same float ops), its union (a + a) - a
        area = ss[AREA]
        self_iou = area / ((area + area) - area)
        self_iou[area <= 0] = 0
        self_sup = self_iou >= thr_iou
        k = keys[: num_outputs + 1]
        # Equal scores among the first num_outputs + 1 are popped (unless a selection fills the outputs early)
        if not (np.any(k[1:] == k[:-1]) and self_sup[:num_outputs].all()):
            pos = greedy(ss, num_outputs, thr_iou, strict=False, self_sup=self_sup)
            k = keys[: pos[-1] + 2]
            if not np.any(k[1:] == k[:-1]):  # no equal scores were popped: the heap's order is the score's
                return cand[order[pos]].tolist(), keys[pos].tolist()
        sel, sel_scores = _nms_simulate(s, cs, num_outputs, thr_iou, float(thr_s), None)
        return cand[sel].tolist(), sel_scores


@dataclass(frozen=True, eq=False)
class NonMaxSuppressionFloat:
    soft: bool  # V5: outputs (indices, scores, count); V4: (indices, count)
    dynamic: bool  # max_output_size not constant: the index/score outputs are sized at eval

    def __call__(self, inputs, outputs):
        m = int(inputs[MAX_OUTPUT_SIZE].reshape(-1)[0])
        limits.check_allocation(limits.nbytes((m,), np.int64), "NON_MAX_SUPPRESSION's outputs")
        sigma = float(inputs[SIGMA].reshape(-1)[0]) if self.soft else 0.0
        sel, sc = nms_float(
            inputs[BOXES],
            inputs[SCORES],
            m,
            float(inputs[IOU_THRESHOLD].reshape(-1)[0]),
            float(inputs[SCORE_THRESHOLD].reshape(-1)[0]),
            sigma,
        )
        k = len(sel)
        if self.dynamic:
            outputs[0] = np.zeros(max(m, 0), np.int32)
            if self.soft:
                outputs[1] = np.zeros(max(m, 0), np.float32)
        idx = outputs[0]
        idx[...] = 0
        idx[:k] = sel
        if self.soft:
            outputs[1][...] = 0
            outputs[1][:k] = sc
            outputs[2][...] = k
        else:
            outputs[1][...] = k


def _prepare_nms(ctx: OpContext, soft: bool):
    n_in = len(ctx.inputs)
    ctx.check(n_in in (5, 6), f"Found NMS op with invalid num inputs: {n_in}")
    ctx.check(n_in == (6 if soft else 5), f"{ctx.op_name} takes {6 if soft else 5} inputs, got {n_in}")
    boxes, scores = ctx.input(BOXES), ctx.input(SCORES)
    ctx.check_types([np.float32], BOXES, SCORES, IOU_THRESHOLD, SCORE_THRESHOLD, *((SIGMA,) if soft else ()))
    ctx.check(len(boxes.shape) == 2, "NumDimensions(input_boxes) != 2")
    ctx.check(boxes.shape[1] == 4, "SizeOfDimension(input_boxes, 1) != 4")
    ctx.check(len(scores.shape) == 1, "NumDimensions(input_scores) != 1")
    ctx.check(scores.shape[0] == boxes.shape[0], "num_boxes != SizeOfDimension(input_scores, 0)")
    mos = ctx.input(MAX_OUTPUT_SIZE)
    ctx.check(mos.dtype == np.int32, f"input_max_output_size->type != INT32 (got {mos.type_name})")
    ctx.check(len(mos.shape) == 0, "NumDimensions(input_max_output_size) != 0")
    for i in (IOU_THRESHOLD, SCORE_THRESHOLD) + ((SIGMA,) if soft else ()):
        ctx.check(len(ctx.input(i).shape) == 0, f"NumDimensions(input {i}) != 0")
    n_out = 3 if soft else 2
    ctx.check(len(ctx.outputs) == n_out, f"NumOutputs(node) != {n_out}")
    ctx.check(
        ctx.outputs[0].dtype == np.int32 and ctx.outputs[-1].dtype == np.int32,
        "selected indices and their count are int32",
    )
    if soft:
        ctx.check(ctx.outputs[1].dtype == np.float32, "selected scores have the type of the scores (float32)")
        sig = ctx.input(SIGMA)
        if sig.is_constant:
            ctx.check(float(sig.data.reshape(-1)[0]) >= 0, "Invalid sigma value for soft NMS")
    ctx.set_output_shape(n_out - 1, ())
    dynamic = not mos.is_constant
    if dynamic:
        for i in range(n_out - 1):
            ctx.set_output_dynamic(i)
    else:
        m = int(mos.data.reshape(-1)[0])
        ctx.check(m >= 0, "(max_output_size_value >= 0) was not true.")
        for i in range(n_out - 1):
            ctx.set_output_shape(i, (m,))
    return NonMaxSuppressionFloat(soft, dynamic)


@register(BuiltinOperator.NON_MAX_SUPPRESSION_V4)
def prepare_non_max_suppression_v4(ctx: OpContext) -> PreparedOp:
    return _prepare_nms(ctx, soft=False)


@register(BuiltinOperator.NON_MAX_SUPPRESSION_V5)
def prepare_non_max_suppression_v5(ctx: OpContext) -> PreparedOp:
    return _prepare_nms(ctx, soft=True)
