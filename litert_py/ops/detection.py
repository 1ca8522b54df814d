"""Detection ops: NON_MAX_SUPPRESSION_V4, NON_MAX_SUPPRESSION_V5 and the custom TFLite_Detection_PostProcess.

Paths: NMS V4/V5 float32 (ai-edge-litert 2.3.0 runs no quantized NMS); TFLite_Detection_PostProcess with
float32 or uint8 box encodings / class predictions (uint8 boxes need uint8 anchors, float boxes float
anchors; everything is dequantized to float32 first, as LiteRT does). All outputs of the post-process are
float32.

Non-max suppression (tensorflow/lite/kernels/non_max_suppression.cc,
tensorflow/lite/kernels/internal/reference/non_max_suppression.h): candidates with ``score >
score_threshold`` go into a ``std::priority_queue`` (ordered by score only); ties are resolved exactly as
libstdc++'s ``push_heap``/``pop_heap`` resolve them, which ``_Heap`` reproduces step by step. The IoU is
float32 on min/max-normalised corners; a candidate is hard-suppressed by ``iou >= iou_threshold``; with
``soft_nms_sigma > 0`` its score is multiplied by ``expf(scale * iou * iou)``, ``scale = -0.5f / sigma``,
once per previously selected box it has not been compared with yet, and it is re-queued while its score
stays above the threshold. Unused output slots are zero.

TFLite_Detection_PostProcess (tensorflow/lite/kernels/detection_postprocess.cc): box decoding in double
(``ycenter = y / y_scale * anchor_h + anchor_y``, ``half_h = 0.5 * exp(h / h_scale) * anchor_h``, rounded to
float, then corners in float), single-class NMS with ``score >= threshold``, a stable descending sort and
``iou > threshold`` suppression (unnormalised corners), fast NMS (per-anchor top classes by
``std::partial_sort``, reproduced by ``_partial_sort`` step by step so equal scores come out in LiteRT's
order, or the first maximum when one class is kept) and regular NMS (LiteRT's single-threaded
ComputeNMSResult: at most ``min(detections_per_class, max_detections)`` per class, stably merged into the
running list with ``std::inplace_merge``, earlier classes first on equal scores, cut to max_detections).
Matched against google-ai-edge/LiteRT tflite/kernels/detection_postprocess.cc.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .registry import OpContext, register

F32 = np.float32
BOXES, SCORES, MAX_OUTPUT_SIZE, IOU_THRESHOLD, SCORE_THRESHOLD, SIGMA = range(6)


# ----------------------------------------------------------------------------------------------
# libstdc++ heap algorithms (bits/stl_heap.h), with ``less(a, b)`` as the comparator
# ----------------------------------------------------------------------------------------------


def _cdiv2(x: int) -> int:
    """C++ ``x / 2`` (truncation toward zero)."""
    return -((-x) // 2) if x < 0 else x // 2


def _push_hole(a: list, hole: int, top: int, value, less) -> None:
    parent = _cdiv2(hole - 1)
    while hole > top and less(a[parent], value):
        a[hole] = a[parent]
        hole = parent
        parent = _cdiv2(hole - 1)
    a[hole] = value


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


def _partial_sort(a: list, middle: int, less) -> None:
    """``std::partial_sort(a.begin(), a.begin() + middle, a.end(), less)`` (libstdc++)."""
    _make_heap(a, middle, less)
    for i in range(middle, len(a)):
        if less(a[i], a[0]):
            _pop_heap_into(a, middle, i, less)
    n = middle
    while n > 1:
        n -= 1
        _pop_heap_into(a, n, n, less)


class _Heap:
    """``std::priority_queue<Candidate>`` over a deque: the max-score candidate on top, ties as libstdc++."""

    __slots__ = ("a",)

    @staticmethod
    def less(x, y) -> bool:
        return x[0] < y[0]

    def __init__(self):
        self.a: list = []

    def push(self, item) -> None:
        self.a.append(item)
        _push_hole(self.a, len(self.a) - 1, 0, item, self.less)

    def pop(self):
        a = self.a
        top = a[0]
        n = len(a)
        if n > 1:
            _pop_heap_into(a, n - 1, n - 1, self.less)
        a.pop()
        return top


# ----------------------------------------------------------------------------------------------
# NON_MAX_SUPPRESSION_V4 / V5
# ----------------------------------------------------------------------------------------------


def nms_float(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output_size: int,
    iou_threshold: float,
    score_threshold: float,
    sigma: float,
) -> tuple[list[int], list[float]]:
    """reference_ops::NonMaxSuppression (float): the selected indices and their (soft-NMS) scores."""
    b = boxes.astype(F32, copy=False)
    ymin, ymax = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    xmin, xmax = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (ymax - ymin) * (xmax - xmin)
    thr_s = F32(score_threshold)
    thr_iou = F32(iou_threshold)
    heap = _Heap()
    for i in np.flatnonzero(scores > thr_s).tolist():
        heap.push((float(scores[i]), i, 0))
    num_outputs = min(len(heap.a), max_output_size)
    sel: list[int] = []
    sel_scores: list[float] = []
    if num_outputs <= 0:
        return sel, sel_scores
    soft = sigma > 0.0
    scale = float(F32(-0.5) / F32(sigma)) if soft else 0.0
    while len(sel) < num_outputs and heap.a:
        original, idx, begin = heap.pop()
        score = original
        n = len(sel)
        hard = False
        if n > begin:
            js = np.asarray(sel[begin:n][::-1], dtype=np.intp)  # the loop walks the selections backwards
            with np.errstate(invalid="ignore", divide="ignore"):
                inter = np.maximum(
                    np.minimum(ymax[idx], ymax[js]) - np.maximum(ymin[idx], ymin[js]), F32(0)
                ) * np.maximum(np.minimum(xmax[idx], xmax[js]) - np.maximum(xmin[idx], xmin[js]), F32(0))
                union = (area[idx] + area[js]) - inter
                iou = np.where(union == 0, F32(0), inter / np.where(union == 0, F32(1), union))
            iou[(area[js] <= 0) | (area[idx] <= 0)] = 0
            if not soft:
                hard = bool(np.any(iou >= thr_iou))
            else:
                for v in iou.tolist():
                    if v >= thr_iou:
                        hard = True
                        break
                    # float32: score * expf((scale * iou) * iou)
                    e = float(F32(math.exp(float(F32(F32(scale) * F32(v)) * F32(v)))))
                    score = float(F32(score) * F32(e))
                    if score <= thr_s:
                        break
        if not hard:
            if score == original:
                sel.append(idx)
                sel_scores.append(score)
            if score > thr_s:
                heap.push((score, idx, n))
    return sel, sel_scores


@dataclass(frozen=True, eq=False)
class NonMaxSuppressionFloat:
    soft: bool  # V5: outputs (indices, scores, count); V4: (indices, count)
    dynamic: bool  # max_output_size not constant: the index/score outputs are sized at eval

    def __call__(self, inputs, outputs):
        m = int(inputs[MAX_OUTPUT_SIZE].reshape(-1)[0])
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
def prepare_non_max_suppression_v4(ctx: OpContext):
    return _prepare_nms(ctx, soft=False)


@register(BuiltinOperator.NON_MAX_SUPPRESSION_V5)
def prepare_non_max_suppression_v5(ctx: OpContext):
    return _prepare_nms(ctx, soft=True)


# ----------------------------------------------------------------------------------------------
# TFLite_Detection_PostProcess
# ----------------------------------------------------------------------------------------------

BOX_ENCODINGS, CLASS_PREDICTIONS, ANCHORS = range(3)


def _single_class_nms(
    corners: np.ndarray,
    area: np.ndarray,
    scores: np.ndarray,
    score_threshold: F32,
    iou_threshold: F32,
    max_detections: int,
) -> list[int]:
    """NonMaxSuppressionSingleClassHelper: greedy NMS over the kept scores in stable decreasing order."""
    keep = np.flatnonzero(scores >= score_threshold)
    order = keep[np.argsort(-scores[keep], kind="stable")]
    output_size = min(len(order), max_detections)
    selected: list[int] = []
    if output_size <= 0:
        return selected
    active = np.ones(len(order), bool)
    ymin, xmin, ymax, xmax = corners[order].T
    a = area[order]
    for i in range(len(order)):
        if len(selected) >= output_size:
            break
        if not active[i]:
            continue
        selected.append(int(order[i]))
        active[i] = False
        rest = np.flatnonzero(active[i + 1 :]) + i + 1
        if rest.size == 0:
            break
        with np.errstate(invalid="ignore", divide="ignore"):
            inter = np.maximum(np.minimum(ymax[i], ymax[rest]) - np.maximum(ymin[i], ymin[rest]), F32(0)) * np.maximum(
                np.minimum(xmax[i], xmax[rest]) - np.maximum(xmin[i], xmin[rest]), F32(0)
            )
            iou = inter / ((a[i] + a[rest]) - inter)
        iou[(a[rest] <= 0) | (a[i] <= 0)] = 0
        active[rest[iou > iou_threshold]] = False
    return selected


def _decreasing_partial_argsort(values: np.ndarray, num_to_sort: int) -> list[int]:
    """DecreasingPartialArgSort: ArgMaxVector (first maximum) for one, else libstdc++ partial_sort."""
    if num_to_sort == 1:
        return [int(np.argmax(values))]
    vals = values.tolist()
    idx = list(range(len(vals)))
    _partial_sort(idx, num_to_sort, lambda i, j: vals[i] > vals[j])
    return idx


@dataclass(frozen=True, eq=False)
class DetectionPostProcess:
    box_q: tuple[float, float] | None  # (scale, zero_point) of uint8 box encodings, None for float
    class_q: tuple[float, float] | None
    anchors: np.ndarray | None  # constant anchors, already dequantized to float32 (N, 4)
    anchor_q: tuple[float, float] | None
    scale_values: tuple[float, float, float, float]  # y, x, h, w
    max_detections: int
    max_classes_per_detection: int
    detections_per_class: int
    score_threshold: float
    iou_threshold: float
    num_classes: int
    regular: bool

    @staticmethod
    def _dequantize(x: np.ndarray, q) -> np.ndarray:
        if q is None:
            return x.astype(F32, copy=False)
        return (x.astype(F32) - F32(q[1])) * F32(q[0])

    def decode(self, enc: np.ndarray, anchors: np.ndarray) -> np.ndarray:
        e = self._dequantize(enc[0, :, :4], self.box_q).astype(np.float64)
        an = anchors.astype(np.float64)
        ys, xs, hs, ws = (float(F32(v)) for v in self.scale_values)
        yc = (e[:, 0] / ys * an[:, 2] + an[:, 0]).astype(F32)
        xc = (e[:, 1] / xs * an[:, 3] + an[:, 1]).astype(F32)
        hh = (0.5 * np.exp(e[:, 2] / hs) * an[:, 2]).astype(F32)
        hw = (0.5 * np.exp(e[:, 3] / ws) * an[:, 3]).astype(F32)
        return np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=1)

    def __call__(self, inputs, outputs):
        anchors = self.anchors if self.anchors is not None else self._dequantize(inputs[ANCHORS], self.anchor_q)
        corners = self.decode(inputs[BOX_ENCODINGS], anchors)
        area = (corners[:, 2] - corners[:, 0]) * (corners[:, 3] - corners[:, 1])
        scores = self._dequantize(inputs[CLASS_PREDICTIONS][0], self.class_q)
        label_offset = scores.shape[1] - self.num_classes
        scores = scores[:, label_offset:]
        out_boxes, out_classes, out_scores, out_num = (o.reshape(-1) for o in outputs)
        out_boxes[...] = 0
        out_classes[...] = 0
        out_scores[...] = 0
        out_boxes = out_boxes.reshape(-1, 4)
        thr_s, thr_iou = F32(self.score_threshold), F32(self.iou_threshold)
        if self.regular:
            # LiteRT's ComputeNMSResult (one thread): each class's selections (already in decreasing score
            # order) are std::inplace_merge'd after the running list -- a stable merge, earlier classes first
            # on equal scores -- and the list is cut to max_detections.
            max_det = self.max_detections
            per_class = min(self.detections_per_class, max_det)
            merged: list[tuple[float, int, int]] = []  # (score, anchor, class)
            for c in range(self.num_classes):
                cs = np.ascontiguousarray(scores[:, c])
                sel = _single_class_nms(corners, area, cs, thr_s, thr_iou, per_class)
                if not sel:
                    continue
                merged = sorted(merged + [(float(cs[a]), a, c) for a in sel], key=lambda t: -t[0])[:max_det]
            n = len(merged)
            if n:
                out_boxes[:n] = corners[[a for _, a, _ in merged]]
                out_classes[:n] = [c for _, _, c in merged]
                out_scores[:n] = [s for s, _, _ in merged]
            out_num[0] = n
        else:
            per = self.max_classes_per_detection
            ncat = min(per, self.num_classes)
            if ncat == 1:
                top = np.argmax(scores, axis=1)[:, None]
            else:
                top = np.array([_decreasing_partial_argsort(row, ncat)[:ncat] for row in scores], np.intp)
            max_scores = np.take_along_axis(scores, top[:, :1], axis=1)[:, 0]
            sel = _single_class_nms(corners, area, max_scores, thr_s, thr_iou, self.max_detections)
            for k, a in enumerate(sel):
                slots = slice(per * k, per * k + ncat)
                out_boxes[slots] = corners[a]
                out_classes[slots] = top[a]
                out_scores[slots] = scores[a, top[a]]
            out_num[0] = len(sel)


def _qparams(t) -> tuple[float, float]:
    return (float(t.scale), float(t.zero_point))


@register("TFLite_Detection_PostProcess")
def prepare_detection_postprocess(ctx: OpContext):
    from flatbuffers import flexbuffers

    try:
        m = flexbuffers.Loads(bytes(ctx.custom_options)) if ctx.custom_options else {}
    except Exception as e:  # malformed flexbuffer
        raise ctx.fail(f"custom options are not a valid FlexBuffer map: {e}") from None
    ctx.check(isinstance(m, dict), "custom options must be a FlexBuffer map")

    def geti(key, default=0):
        v = m.get(key)
        return default if v is None else int(v)

    def getf(key):
        v = m.get(key)
        return 0.0 if v is None else float(F32(v))

    ctx.check(len(ctx.inputs) == 3, f"NumInputs(node) != 3 (got {len(ctx.inputs)})")
    ctx.check(len(ctx.outputs) == 4, f"NumOutputs(node) != 4 (got {len(ctx.outputs)})")
    box, cls, anc = ctx.input(BOX_ENCODINGS), ctx.input(CLASS_PREDICTIONS), ctx.input(ANCHORS)
    ctx.check(len(box.shape) == 3, "NumDimensions(input_box_encodings) != 3")
    ctx.check(len(cls.shape) == 3, "NumDimensions(input_class_predictions) != 3")
    ctx.check(len(anc.shape) == 2, "NumDimensions(input_anchors) != 2")
    max_det = geti("max_detections")
    per = geti("max_classes_per_detection")
    dpc = geti("detections_per_class", 100)
    regular = bool(m.get("use_regular_nms") or False)
    num_classes = geti("num_classes")
    score_thr, iou_thr = getf("nms_score_threshold"), getf("nms_iou_threshold")
    scales = tuple(getf(k) for k in ("y_scale", "x_scale", "h_scale", "w_scale"))
    num_boxes = box.shape[1]
    for t, name in ((box, "box encodings"), (cls, "class predictions")):
        ctx.check(
            t.dtype in (np.float32, np.uint8),
            f"Type {t.type_name} of {name} is unsupported by op TFLite_Detection_PostProcess (float32 or uint8).",
        )
    ctx.check(anc.dtype == box.dtype, f"anchors must be {box.type_name} like the box encodings")
    ctx.check(box.shape[0] == 1, "input_box_encodings->dims->data[0] != kBatchSize (1)")
    ctx.check(box.shape[2] >= 4, "input_box_encodings->dims->data[2] >= kNumCoordBox was not true.")
    ctx.check(anc.shape[0] >= num_boxes and anc.shape[1] == 4, "anchors must be (num_boxes, 4)")
    ctx.check(cls.shape[0] == 1, "input_class_predictions->dims->data[0] != kBatchSize (1)")
    ctx.check(cls.shape[1] == num_boxes, "input_class_predictions->dims->data[1] != num_boxes")
    ctx.check(0 <= cls.shape[2] - num_classes <= 1, "num_classes_with_background - num_classes must be 0 or 1")
    ctx.check(max_det >= 0, "max_detections must be non-negative")
    ctx.check(per >= 0 and dpc >= 0, "max_classes_per_detection and detections_per_class must be non-negative")
    ctx.check(num_classes > 0, "num_classes must be positive")
    ctx.check(
        0.0 < iou_thr <= 1.0,
        "(intersection_over_union_threshold > 0.0f) && (intersection_over_union_threshold <= 1.0f) was not true.",
    )
    if regular:
        ctx.check(min(dpc, max_det) > 0, "num_detections_per_class > 0 was not true.")
    else:
        ctx.check(per > 0, "(max_categories_per_anchor > 0) was not true.")
    for o in ctx.outputs:
        ctx.check(o.dtype == np.float32, "TFLite_Detection_PostProcess outputs are float32")
    box_q = _qparams(box) if box.dtype == np.uint8 else None
    class_q = _qparams(cls) if cls.dtype == np.uint8 else None
    anchor_q = _qparams(anc) if anc.dtype == np.uint8 else None
    anchors = None
    if anc.is_constant:
        anchors = DetectionPostProcess._dequantize(np.asarray(anc.data)[:num_boxes], anchor_q)
        # ValidateBoxes: decoded boxes have ymin <= ymax, xmin <= xmax exactly when the anchor sizes are >= 0.
        ctx.check(bool(np.all(anchors[:, 2:] >= 0)), "ValidateBoxes(decoded_boxes, num_boxes) was not true.")
    n = max_det * per
    ctx.set_output_shape(0, (1, n, 4))
    ctx.set_output_shape(1, (1, n))
    ctx.set_output_shape(2, (1, n))
    ctx.set_output_shape(3, (1,))
    return DetectionPostProcess(
        box_q, class_q, anchors, anchor_q, scales, max_det, per, dpc, score_thr, iou_thr, num_classes, regular
    )
