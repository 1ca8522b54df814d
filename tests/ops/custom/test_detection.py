"""NON_MAX_SUPPRESSION_V4 / V5 and the custom TFLite_Detection_PostProcess against the oracle.

Boxes and scores are drawn from coarse grids so that equal scores, equal IoUs, degenerate and flipped
boxes are common: the selected indices, classes and counts must then come out in exactly LiteRT's order.
"""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.oracle import T, quant, run_both, single_op_model

# float outputs: NMS scores are the inputs' (exact) or soft-NMS products of expf (1 ulp); the post-process
# boxes are decoded with exp in double (LiteRT's libm vs numpy's may differ in the last bit of a double).
TOLERANCE = {"NON_MAX_SUPPRESSION_V4": 0.0, "NON_MAX_SUPPRESSION_V5": 1e-6, "TFLite_Detection_PostProcess": 1e-6}
RESOLVER = {
    "NON_MAX_SUPPRESSION_V4": "BUILTIN_REF",
    "NON_MAX_SUPPRESSION_V5": "BUILTIN_REF",
    "TFLite_Detection_PostProcess": "BUILTIN_REF",
}

seeds = st.integers(0, 2**32 - 1)


def _boxes(rng, n):
    corners = rng.integers(0, 6, (n, 4)).astype(np.float32) / 4  # coarse grid: equal IoUs, empty boxes
    swap = rng.random(n) < 0.2  # some boxes with y1 > y2 (NMS normalises the corners)
    corners[swap] = corners[swap][:, [2, 3, 0, 1]]
    return corners


@st.composite
def nms_case(draw, op):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 12))
    boxes = _boxes(rng, n)
    scores = (rng.integers(0, 6, n) / 5).astype(np.float32)  # ties
    if draw(st.booleans()):  # continuous boxes and scores: soft-NMS products and IoUs off any grid
        boxes = rng.uniform(0, 1, (n, 4)).astype(np.float32)
        scores = rng.random(n).astype(np.float32)
    const_m = draw(st.booleans())
    # LiteRT's get_tensor refuses an empty dynamic output, so a non-constant max_output_size is >= 1
    m = draw(st.integers(0 if const_m else 1, n + 2))
    iou = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    sthr = draw(st.sampled_from([-1.0, 0.0, 0.3]))
    ins = [
        T(boxes.shape),
        T(scores.shape),
        T.const(np.int32(m)) if const_m else T((), np.int32),
        T.const(np.float32(iou)),
        T.const(np.float32(sthr)),
    ]
    if op == "NON_MAX_SUPPRESSION_V5":
        ins.append(T.const(np.float32(draw(st.sampled_from([0.0, 0.2, 0.5, 2.0])))))
        outs = [T((m,), np.int32), T((m,), np.float32), T((), np.int32)]
    else:
        outs = [T((m,), np.int32), T((), np.int32)]
    return single_op_model(op, ins, outs), [boxes, scores] + ([] if const_m else [np.int32(m)])


@pytest.mark.parametrize("op", ["NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5"])
@given(data=st.data())
def test_nms(op, data):
    model, inputs = data.draw(nms_case(op))
    ours, theirs = run_both(model, inputs, RESOLVER[op])
    assert_close(ours, theirs, rtol=TOLERANCE[op], atol=0)


def _many_boxes(rng, n, kind):
    """``n`` boxes in clusters (many overlaps): continuous corners, or a coarse grid (equal IoUs, empty boxes)."""
    centres = rng.uniform(0.1, 0.9, (max(1, n // 10), 2))
    c = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 0.03, (n, 2))
    hw = rng.uniform(0.02, 0.25, (n, 2))
    boxes = np.concatenate([c - hw / 2, c + hw / 2], 1)
    if kind == "grid":
        boxes = np.round(boxes * 16) / 16
    boxes = boxes.astype(np.float32)
    swap = rng.random(n) < 0.1
    boxes[swap] = boxes[swap][:, [2, 3, 0, 1]]
    return boxes


@st.composite
def nms_many_case(draw, op):
    """100-2000 boxes: hard and soft NMS through the vectorized greedy and the simulated queue."""
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.sampled_from([100, 300, 1000, 2000]))
    boxes = _many_boxes(rng, n, draw(st.sampled_from(["continuous", "grid"])))
    kind = draw(st.sampled_from(["distinct", "levels", "uint8"]))
    if kind == "distinct":
        scores = rng.permutation(n).astype(np.float32) / n + np.float32(0.5 / n)
    elif kind == "levels":  # many equal scores
        scores = (rng.integers(0, 40, n) / 40).astype(np.float32)
    else:  # dequantized uint8 sigmoid outputs: ties everywhere, a few distinct high scores
        scores = (np.round(rng.beta(0.5, 3, n) * 255) / 255).astype(np.float32)
    m = draw(st.sampled_from([1, 10, 100, n]))
    iou = draw(st.sampled_from([0.3, 0.5, 0.7]))
    sthr = draw(st.sampled_from([-1.0, 0.0, 0.2, 0.5]))
    ins = [T(boxes.shape), T(scores.shape), T.const(np.int32(m)), T.const(np.float32(iou)), T.const(np.float32(sthr))]
    if op == "NON_MAX_SUPPRESSION_V5":
        ins.append(T.const(np.float32(draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])))))
        outs = [T((m,), np.int32), T((m,), np.float32), T((), np.int32)]
    else:
        outs = [T((m,), np.int32), T((), np.int32)]
    return single_op_model(op, ins, outs), [boxes, scores]


@pytest.mark.parametrize("op", ["NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5"])
@given(data=st.data())
def test_nms_many_boxes(op, data):
    model, inputs = data.draw(nms_many_case(op))
    ours, theirs = run_both(model, inputs, RESOLVER[op])
    assert_close(ours, theirs, rtol=TOLERANCE[op], atol=0)


def _edge_boxes(name, rng, n):
    """Named box / score sets on the paths' corners (300 boxes, uniform corners, distinct scores unless named)."""
    b = rng.uniform(0, 1, (n, 4)).astype(np.float32)
    s = rng.random(n).astype(np.float32)
    if name == "zero-area-top":  # selected, not suppressed by itself: LiteRT re-selects it into every slot
        b[np.argmax(s), 2:] = b[np.argmax(s), :2]
    elif name == "nan-corners":
        b[rng.random(n) < 0.05, rng.integers(0, 4)] = np.nan
    elif name == "inf-corners":
        b[rng.random(n) < 0.05, 2] = np.inf
    elif name == "nan-scores":
        s[rng.random(n) < 0.05] = np.nan
    elif name == "equal-scores":
        s[:] = 0.5
    elif name == "identical-boxes":
        b[:] = b[0]
    elif name == "huge-boxes":  # areas near FLT_MAX: area + area overflows, the self-IoU is 0 or NaN
        big = rng.random(n) < 0.1
        b[big] = b[big] * np.float32(3e19)
        b[np.argmax(s)] = [0, 0, 1.5e19, 1.5e19]
    return b, s


NMS_EDGES = [
    "zero-area-top",
    "nan-corners",
    "inf-corners",
    "nan-scores",
    "equal-scores",
    "identical-boxes",
    "huge-boxes",
]


@pytest.mark.parametrize("iou", [0.0, 0.5, 1.0])
@pytest.mark.parametrize(
    "op,sigma", [("NON_MAX_SUPPRESSION_V4", 0.0), ("NON_MAX_SUPPRESSION_V5", 0.0), ("NON_MAX_SUPPRESSION_V5", 0.5)]
)
@pytest.mark.parametrize("name", NMS_EDGES)
def test_nms_edges(name, op, sigma, iou):
    boxes, scores = _edge_boxes(name, np.random.default_rng(7), 300)
    m = 50
    ins = [T(boxes.shape), T(scores.shape), T.const(np.int32(m)), T.const(np.float32(iou)), T.const(np.float32(0))]
    if op == "NON_MAX_SUPPRESSION_V5":
        ins.append(T.const(np.float32(sigma)))
        outs = [T((m,), np.int32), T((m,), np.float32), T((), np.int32)]
    else:
        outs = [T((m,), np.int32), T((), np.int32)]
    ours, theirs = run_both(single_op_model(op, ins, outs), [boxes, scores], RESOLVER[op])
    assert_close(ours, theirs, rtol=TOLERANCE[op], atol=0)


def _options(**kw) -> bytes:
    return bytes(flexbuffers.Dumps(kw))


@st.composite
def postprocess_case(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 10))
    num_classes = draw(st.integers(1, 4))
    background = draw(st.integers(0, 1))
    max_det = draw(st.integers(1, 5))
    per = draw(st.integers(1, 3))
    regular = draw(st.booleans())
    path = draw(st.sampled_from(["float32", "uint8", "uint8-boxes", "uint8-scores"]))
    opts = dict(
        max_detections=max_det,
        max_classes_per_detection=per,
        detections_per_class=draw(st.integers(1, 4)),
        use_regular_nms=regular,
        nms_score_threshold=draw(st.sampled_from([0.0, 0.2, 0.5])),
        nms_iou_threshold=draw(st.sampled_from([0.3, 0.5, 1.0])),
        num_classes=num_classes,
        y_scale=10.0,
        x_scale=10.0,
        h_scale=5.0,
        w_scale=5.0,
    )
    anchors = np.stack(
        [rng.integers(0, 5, n) / 4, rng.integers(0, 5, n) / 4, rng.integers(1, 4, n) / 8, rng.integers(1, 4, n) / 8], 1
    ).astype(np.float32)
    enc = (rng.integers(-8, 9, (1, n, 4)) / 4).astype(np.float32)
    cls = (rng.integers(0, 5, (1, n, num_classes + background)) / 4).astype(np.float32)  # ties
    qbox, qcls = path in ("uint8", "uint8-boxes"), path in ("uint8", "uint8-scores")
    if qbox:
        enc = np.round(enc / 0.05 + 128).astype(np.uint8)
        box_t = T(enc.shape, np.uint8, q=quant(0.05, 128))
        anc_t = T.const(np.round(anchors / (1 / 64)).astype(np.uint8), q=quant(1 / 64, 0))
    else:
        box_t, anc_t = T(enc.shape), T.const(anchors)
    if qcls:
        cls = np.round(cls * 255).astype(np.uint8)
        cls_t = T(cls.shape, np.uint8, q=quant(1 / 255, 0))
    else:
        cls_t = T(cls.shape)
    k = max_det * per
    outs = [T((1, k, 4)), T((1, k)), T((1, k)), T((1,))]
    model = single_op_model(
        "CUSTOM",
        [box_t, cls_t, anc_t],
        outs,
        custom_code="TFLite_Detection_PostProcess",
        custom_options=_options(**opts),
    )
    return model, [enc, cls], opts


@st.composite
def postprocess_many_case(draw):
    """100-2000 anchors on a grid, up to 20 classes, up to 100 detections: fast and regular NMS at scale."""
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.sampled_from([100, 500, 2000]))
    num_classes = draw(st.sampled_from([1, 5, 20]))
    background = draw(st.integers(0, 1))
    max_det = draw(st.sampled_from([1, 10, 100]))
    per = draw(st.integers(1, 3))
    regular = draw(st.booleans())
    opts = dict(
        max_detections=max_det,
        max_classes_per_detection=per,
        detections_per_class=draw(st.sampled_from([1, 10, 100])),
        use_regular_nms=regular,
        nms_score_threshold=draw(st.sampled_from([0.0, 0.3, 0.6])),
        nms_iou_threshold=draw(st.sampled_from([0.3, 0.6, 1.0])),
        num_classes=num_classes,
        y_scale=10.0,
        x_scale=10.0,
        h_scale=5.0,
        w_scale=5.0,
    )
    g = int(np.ceil(np.sqrt(n)))
    yy, xx = np.meshgrid((np.arange(g) + 0.5) / g, (np.arange(g) + 0.5) / g, indexing="ij")
    anchors = np.stack([yy.ravel()[:n], xx.ravel()[:n], np.full(n, 3.0 / g), np.full(n, 3.0 / g)], 1)
    anchors = anchors.astype(np.float32)
    enc = rng.normal(0, 1, (1, n, 4)).astype(np.float32)
    shape = (1, n, num_classes + background)
    if draw(st.booleans()):  # coarse scores: ties within and across classes
        cls = (rng.integers(0, 20, shape) / 20).astype(np.float32)
        cls_t = T(cls.shape)
    else:  # uint8 scores
        cls = np.round(rng.beta(0.5, 3, shape) * 255).astype(np.uint8)
        cls_t = T(cls.shape, np.uint8, q=quant(1 / 255, 0))
    k = max_det * per
    model = single_op_model(
        "CUSTOM",
        [T(enc.shape), cls_t, T.const(anchors)],
        [T((1, k, 4)), T((1, k)), T((1, k)), T((1,))],
        custom_code="TFLite_Detection_PostProcess",
        custom_options=_options(**opts),
    )
    return model, [enc, cls], opts


def _written(opts: dict, num: int) -> np.ndarray:
    """The detection slots LiteRT writes; it leaves the others as they were (uninitialised memory)."""
    per = opts["max_classes_per_detection"]
    mask = np.zeros(opts["max_detections"] * per, bool)
    if opts["use_regular_nms"]:
        mask[: opts["max_detections"]] = True  # detections past the count are zero-filled
    else:
        ncat = min(per, opts["num_classes"])
        for k in range(num):
            mask[per * k : per * k + ncat] = True
    return mask


@given(case=postprocess_case())
def test_detection_postprocess(case):
    model, inputs, opts = case
    op = "TFLite_Detection_PostProcess"
    ours, theirs = run_both(model, inputs, RESOLVER[op])
    assert_close(ours[3:], theirs[3:])  # num_detections exactly
    w = _written(opts, int(theirs[3][0]))
    assert_close([ours[0][0, w]], [theirs[0][0, w]], rtol=TOLERANCE[op], atol=1e-7)
    assert_close([ours[1][0, w], ours[2][0, w]], [theirs[1][0, w], theirs[2][0, w]])  # classes, scores exactly


@given(case=postprocess_many_case())
def test_detection_postprocess_many_anchors(case):
    test_detection_postprocess.hypothesis.inner_test(case)


def _nms_model(boxes=None, scores=None, m=None):
    ins = [
        boxes or T((4, 4)),
        scores or T((4,)),
        m or T.const(np.int32(2)),
        T.const(np.float32(0.5)),
        T.const(np.float32(0.0)),
    ]
    return single_op_model("NON_MAX_SUPPRESSION_V4", ins, [T((2,), np.int32), T((), np.int32)])


def _pp_model(box=None, cls=None, **kw):
    opts = dict(
        max_detections=2,
        max_classes_per_detection=1,
        detections_per_class=2,
        use_regular_nms=False,
        nms_score_threshold=0.0,
        nms_iou_threshold=0.5,
        num_classes=2,
        y_scale=1.0,
        x_scale=1.0,
        h_scale=1.0,
        w_scale=1.0,
    )
    opts.update(kw)
    anc = T.const(np.full((3, 4), 0.5, np.float32))
    return single_op_model(
        "CUSTOM",
        [box or T((1, 3, 4)), cls or T((1, 3, 3)), anc],
        [T((1, 2, 4)), T((1, 2)), T((1, 2)), T((1,))],
        custom_code="TFLite_Detection_PostProcess",
        custom_options=_options(**opts),
    )


ERRORS = {
    "nms-int32-boxes": lambda: _nms_model(boxes=T((4, 4), np.int32)),
    "nms-boxes-not-4-wide": lambda: _nms_model(boxes=T((4, 3))),
    "nms-scores-length": lambda: _nms_model(scores=T((5,))),
    "nms-negative-max-output": lambda: _nms_model(m=T.const(np.int32(-1))),
    "nms-max-output-not-scalar": lambda: _nms_model(m=T.const(np.array([2], np.int32))),
    "postprocess-int8-boxes": lambda: _pp_model(box=T((1, 3, 4), np.int8, q=quant(0.1, 0))),
    "postprocess-iou-threshold-0": lambda: _pp_model(nms_iou_threshold=0.0),
    "postprocess-two-background-classes": lambda: _pp_model(cls=T((1, 3, 4))),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    with pytest.raises(PrepareError):
        Interpreter(model_content=ERRORS[name]()).allocate_tensors()
