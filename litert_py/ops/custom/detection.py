"""The custom op TFLite_Detection_PostProcess, with float32 or uint8 box encodings / class predictions (uint8
boxes need uint8 anchors, float boxes float anchors; everything is dequantized to float32 first, as LiteRT
does). All outputs are float32. Its NMS helpers live in nms.py.

TFLite_Detection_PostProcess (tensorflow/lite/kernels/detection_postprocess.cc): box decoding in double
(``ycenter = y / y_scale * anchor_h + anchor_y``, ``half_h = 0.5 * exp(h / h_scale) * anchor_h``, rounded to
float, then corners in float), single-class NMS with ``score >= threshold``, a stable descending sort and
``iou > threshold`` suppression (unnormalised corners; ``greedy``), fast NMS (per-anchor top classes by
``std::partial_sort``: the maximum decides the NMS, and the class order is needed only for the selected
anchors -- ``np.argsort`` when their top values are distinct, else ``partial_sort`` step by step so equal
scores come out in LiteRT's order, or the first maximum when one class is kept) and regular NMS (LiteRT's
single-threaded ComputeNMSResult: at most ``min(detections_per_class, max_detections)`` per class, stably
merged into the running list with ``std::inplace_merge``, earlier classes first on equal scores, cut to
max_detections -- i.e. the first max_detections selections ordered by (decreasing score, class, rank); the
classes' NMS run together, one vectorized round per selection rank, ``greedy_segments``).
Matched against google-ai-edge/LiteRT tflite/kernels/detection_postprocess.cc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.flexbuffers import as_bool, as_float, as_int64
from ..common import flex_options
from ..nms_common import AREA, XMAX, XMIN, YMAX, YMIN, greedy, greedy_segments, partial_sort
from ..registry import OpContext, PreparedOp, register

F32 = np.float32


# ----------------------------------------------------------------------------------------------
# TFLite_Detection_PostProcess
# ----------------------------------------------------------------------------------------------

BOX_ENCODINGS, CLASS_PREDICTIONS, ANCHORS = range(3)


def _single_class_nms(
    s: np.ndarray, scores: np.ndarray, score_threshold: F32, iou_threshold: F32, max_detections: int
) -> np.ndarray:
    """NonMaxSuppressionSingleClassHelper: greedy NMS (``iou > threshold``) over the boxes ``s`` (5, N) with
    ``score >= threshold``, in stable decreasing score order. Returns the selected box indices."""
    keep = np.flatnonzero(scores >= score_threshold)
    if keep.size == 0 or max_detections <= 0:
        return keep[:0]
    order = keep[np.argsort(-scores[keep], kind="stable")]
    return order[greedy(s.take(order, axis=1), max_detections, iou_threshold, strict=True)]


def _decreasing_partial_argsort(values: np.ndarray, num_to_sort: int) -> list[int]:
    """DecreasingPartialArgSort: ArgMaxVector (first maximum) for one, else libstdc++ partial_sort. The heap
    keeps the largest values seen, its top the smallest of them, which only grows: an element not above the
    smallest of the first ``num_to_sort`` never enters, so only the others are walked."""
    if num_to_sort == 1:
        return [int(np.argmax(values))]
    vals = values.tolist()
    idx = list(range(len(vals)))
    head = values[:num_to_sort]
    cand = None
    if not np.isnan(head).any():
        cand = (num_to_sort + np.flatnonzero(values[num_to_sort:] > head.min())).tolist()
    partial_sort(idx, num_to_sort, lambda i, j: vals[i] > vals[j], cand)
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
        scores = self._dequantize(inputs[CLASS_PREDICTIONS][0], self.class_q)
        scores = scores[:, scores.shape[1] - self.num_classes :]
        out_boxes, out_classes, out_scores, out_num = (o.reshape(-1) for o in outputs)
        out_boxes[...] = 0
        out_classes[...] = 0
        out_scores[...] = 0
        out_boxes = out_boxes.reshape(-1, 4)
        thr_s, thr_iou = F32(self.score_threshold), F32(self.iou_threshold)
        with np.errstate(all="ignore"):
            s = np.empty((5, corners.shape[0]), F32)
            s[:4] = corners.T
            np.multiply(s[YMAX] - s[YMIN], s[XMAX] - s[XMIN], out=s[AREA])
            if self.regular:
                n = self._regular(s, scores, thr_s, thr_iou, out_boxes, out_classes, out_scores, corners)
            else:
                n = self._fast(s, scores, thr_s, thr_iou, out_boxes, out_classes, out_scores, corners)
        out_num[0] = n

    def _regular(self, s, scores, thr_s, thr_iou, out_boxes, out_classes, out_scores, corners) -> int:
        # LiteRT's ComputeNMSResult (one thread): each class's selections (in decreasing score order) are
        # std::inplace_merge'd after the running list -- a stable merge, earlier classes first on equal scores --
        # and the list is cut to max_detections. That is the first max_detections of all the selections in the
        # order (decreasing score, class, selection rank), the per-class NMS of all classes run together.
        max_det = self.max_detections
        per_class = min(self.detections_per_class, max_det)
        # Each class's first selection is its best score: a candidate below the max_det-th best of those can
        # never be output (nor can anything after it in its class), so it is left out from the start.
        if scores.size == 0:  # no box
            return 0
        cmax = np.fmax.reduce(scores, axis=0)
        cmax = cmax[cmax >= thr_s]
        if cmax.size > max_det:
            thr_s = max(thr_s, np.partition(cmax, cmax.size - max_det)[cmax.size - max_det])
        cls, anchor = np.nonzero(scores.T >= thr_s)  # class-major, anchors ascending
        if cls.size == 0:
            return 0
        sc = scores[anchor, cls]
        o = np.lexsort((-sc, cls))  # stable: by class, then decreasing score, then anchor
        cls, anchor, sc = cls[o], anchor[o], sc[o]
        pos = greedy_segments(s.take(anchor, axis=1), cls, per_class, thr_iou, sc, max_det)
        pos = pos[np.argsort(-sc[pos], kind="stable")[:max_det]]
        n = pos.size
        out_boxes[:n] = corners[anchor[pos]]
        out_classes[:n] = cls[pos]
        out_scores[:n] = sc[pos]
        return n

    def _fast(self, s, scores, thr_s, thr_iou, out_boxes, out_classes, out_scores, corners) -> int:
        # Each anchor's best class score (the first of DecreasingPartialArgSort's order) goes to single-class
        # NMS; the per-anchor class order is needed only for the selected anchors.
        per = self.max_classes_per_detection
        num_classes = scores.shape[1]
        ncat = min(per, num_classes)
        sel = _single_class_nms(s, scores.max(axis=1), thr_s, thr_iou, self.max_detections)
        k = sel.size
        if k == 0:
            return 0
        rows = scores[sel]
        if ncat == 1:
            top = np.argmax(rows, axis=1)[:, None]
        else:
            top = np.argsort(-rows, axis=1, kind="stable")
            v = np.take_along_axis(rows, top, axis=1)
            # equal values among the first ncat (or at the cut): partial_sort's order, step by step
            tied = np.any(v[:, 1 : ncat + 1] == v[:, : min(ncat, num_classes - 1)], axis=1)
            top = top[:, :ncat]
            for r in np.flatnonzero(tied).tolist():
                top[r] = _decreasing_partial_argsort(rows[r], ncat)[:ncat]
        slots = (per * np.arange(k)[:, None] + np.arange(ncat)).reshape(-1)
        out_boxes[slots] = np.repeat(corners[sel], ncat, axis=0)
        out_classes[slots] = top.reshape(-1)
        out_scores[slots] = np.take_along_axis(rows, top, axis=1).reshape(-1)
        return k


def _qparams(t) -> tuple[float, float]:
    return (float(t.scale), float(t.zero_point))


@register("TFLite_Detection_PostProcess")
def prepare_detection_postprocess(ctx: OpContext) -> PreparedOp:
    m = flex_options(ctx, allow_empty=True, require_map=True)

    def geti(key, default=0):
        v = m.get(key)
        return default if v is None else as_int64(v)

    def getf(key):
        return as_float(m.get(key))

    ctx.check(len(ctx.inputs) == 3, f"NumInputs(node) != 3 (got {len(ctx.inputs)})")
    ctx.check(len(ctx.outputs) == 4, f"NumOutputs(node) != 4 (got {len(ctx.outputs)})")
    box, cls, anc = ctx.input(BOX_ENCODINGS), ctx.input(CLASS_PREDICTIONS), ctx.input(ANCHORS)
    ctx.check(len(box.shape) == 3, "NumDimensions(input_box_encodings) != 3")
    ctx.check(len(cls.shape) == 3, "NumDimensions(input_class_predictions) != 3")
    ctx.check(len(anc.shape) == 2, "NumDimensions(input_anchors) != 2")
    max_det = geti("max_detections")
    per = geti("max_classes_per_detection")
    dpc = geti("detections_per_class", 100)
    regular = as_bool(m.get("use_regular_nms"))
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
