"""Benchmark litert_py's NON_MAX_SUPPRESSION_V4 / V5 and TFLite_Detection_PostProcess against ai-edge-litert.

Each case is a single-op model built with litert_py's writer, run by litert_py and by ai-edge-litert (reference
kernels, BUILTIN_REF, num_threads=1) on the same inputs, their invokes interleaved. Boxes are clustered around a
few centres (many overlaps); NMS scores are multiples of 1/50 (ties) or uniform random ("distinct"),
post-process class scores (k/20)**2 (10 or 90 classes). The script prints, per case, the median per-invoke time of
each (over --runs samples, each the mean of a batch of invokes taking about 2 ms), the ratio ours/LiteRT and
whether the outputs agree (NMS: exactly; post-process: count, classes and scores exactly, boxes within 1e-6).

    python tools/bench_detection.py [--runs 15] [--sizes 10,100,1000] [--only nms|postprocess] [--impl FILE]

--impl FILE registers the kernels of another, self-contained copy of the detection kernels (e.g. the
pre-split detection.py saved aside) over the current ones, to time "before" and "after" with the same script.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flatbuffers import flexbuffers  # noqa: E402

from litert_py import Interpreter  # noqa: E402
from litert_py.schema.builder import ModelBuilder  # noqa: E402


def _model(op, inputs, outputs, custom_code=None, custom_options=b"") -> bytes:
    """``inputs``: (shape, dtype, data or None) -- None data is a graph input."""
    b = ModelBuilder()
    idx = []
    for k, (shape, dtype, data) in enumerate(inputs):
        if data is None:
            idx.append(b.input(f"in{k}", shape, dtype))
        else:
            idx.append(b.tensor(f"c{k}", shape, dtype, data=np.asarray(data, dtype)))
    outs = [b.tensor(f"out{k}", shape, dtype) for k, (shape, dtype) in enumerate(outputs)]
    b.op(op, idx, outs, {}, custom_code=custom_code, custom_options=custom_options)
    b.output(*outs)
    return b.build()


def _clustered_boxes(rng, n: int) -> np.ndarray:
    centres = rng.uniform(0.1, 0.9, (max(1, n // 8), 2))
    c = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 0.02, (n, 2))
    hw = rng.uniform(0.05, 0.2, (n, 2))
    return np.concatenate([c - hw / 2, c + hw / 2], 1).astype(np.float32)


def nms_case(rng, n: int, soft: bool, sigma: float = 0.0, m: int = 100, ties: bool = True):
    boxes = _clustered_boxes(rng, n)
    scores = (rng.integers(0, 50, n) / 50) if ties else rng.random(n)
    scores = scores.astype(np.float32)
    ins = [
        ((n, 4), np.float32, None),
        ((n,), np.float32, None),
        ((), np.int32, np.int32(m)),
        ((), np.float32, np.float32(0.5)),
        ((), np.float32, np.float32(0.1)),
    ]
    if soft:
        ins.append(((), np.float32, np.float32(sigma)))
        outs = [((m,), np.int32), ((m,), np.float32), ((), np.int32)]
        op = "NON_MAX_SUPPRESSION_V5"
    else:
        outs = [((m,), np.int32), ((), np.int32)]
        op = "NON_MAX_SUPPRESSION_V4"
    return _model(op, ins, outs), [boxes, scores]


def postprocess_case(rng, n: int, regular: bool, num_classes: int = 10):
    max_det, per = 20, (1 if regular else 3)
    opts = dict(
        max_detections=max_det,
        max_classes_per_detection=per,
        detections_per_class=10,
        use_regular_nms=regular,
        nms_score_threshold=0.3,
        nms_iou_threshold=0.5,
        num_classes=num_classes,
        y_scale=10.0,
        x_scale=10.0,
        h_scale=5.0,
        w_scale=5.0,
    )
    g = int(np.ceil(np.sqrt(n)))
    yy, xx = np.meshgrid((np.arange(g) + 0.5) / g, (np.arange(g) + 0.5) / g, indexing="ij")
    anchors = np.stack([yy.ravel()[:n], xx.ravel()[:n], np.full(n, 2.0 / g), np.full(n, 2.0 / g)], 1)
    anchors = anchors.astype(np.float32)
    enc = rng.normal(0, 1, (1, n, 4)).astype(np.float32)
    cls = (rng.integers(0, 20, (1, n, num_classes + 1)) ** 2 / 400).astype(np.float32)  # most scores low
    k = max_det * per
    model = _model(
        "CUSTOM",
        [((1, n, 4), np.float32, None), ((1, n, num_classes + 1), np.float32, None), ((n, 4), np.float32, anchors)],
        [((1, k, 4), np.float32), ((1, k), np.float32), ((1, k), np.float32), ((1,), np.float32)],
        custom_code="TFLite_Detection_PostProcess",
        custom_options=bytes(flexbuffers.Dumps(opts)),
    )
    return model, [enc, cls]


def paired_median_invoke(interps, inputs, runs: int) -> list[tuple[float, list[np.ndarray]]]:
    """Median seconds per invoke of each interpreter (invokes interleaved) and its outputs."""
    for it in interps:
        it.allocate_tensors()
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], x)
        it.invoke()
    reps = []
    for it in interps:
        t = time.perf_counter()
        it.invoke()
        reps.append(max(1, min(500, int(2e-3 / max(time.perf_counter() - t, 1e-7)))))
    samples = [[] for _ in interps]
    for _ in range(runs):
        for k, it in enumerate(interps):
            t = time.perf_counter()
            for _ in range(reps[k]):
                it.invoke()
            samples[k].append((time.perf_counter() - t) / reps[k])
    return [
        (float(np.median(s)), [it.get_tensor(d["index"]) for d in it.get_output_details()])
        for s, it in zip(samples, interps)
    ]


def _agree(ours, theirs, float_tol: float) -> bool:
    """Integers exactly; float outputs (soft-NMS scores, boxes) within ``float_tol`` relative; the
    post-process classes and scores (2-D float) exactly."""
    for a, b in zip(ours, theirs):
        if a.shape != b.shape:
            return False
        tol = float_tol * max(1.0, float(np.max(np.abs(b), initial=0))) if a.dtype.kind == "f" and a.ndim != 2 else 0
        if not np.allclose(a, b, rtol=0, atol=tol):
            return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--only", choices=["nms", "postprocess"])
    ap.add_argument("--impl", help="another detection.py whose kernels replace the current ones")
    args = ap.parse_args()
    if args.impl:
        import importlib.util

        import litert_py.ops  # noqa: F401  (the registry, then the override)

        spec = importlib.util.spec_from_file_location("litert_py.ops._bench_detection_impl", args.impl)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    sizes = [int(s) for s in args.sizes.split(",")]
    cases = []
    for n in sizes:
        if args.only in (None, "nms"):
            cases += [
                (f"nms-v4 n={n}", *nms_case(np.random.default_rng(n), n, soft=False)),
                (f"nms-v4-distinct n={n}", *nms_case(np.random.default_rng(n), n, soft=False, ties=False)),
                (f"nms-v5-hard n={n}", *nms_case(np.random.default_rng(n), n, soft=True, sigma=0.0)),
                (f"nms-v5-soft(0.5) n={n}", *nms_case(np.random.default_rng(n), n, soft=True, sigma=0.5)),
                (
                    f"nms-v5-soft-distinct n={n}",
                    *nms_case(np.random.default_rng(n), n, soft=True, sigma=0.5, ties=False),
                ),
            ]
        if args.only in (None, "postprocess"):
            for nc in (10, 90):
                cases += [
                    (
                        f"postprocess-fast c={nc} n={n}",
                        *postprocess_case(np.random.default_rng(n), n, regular=False, num_classes=nc),
                    ),
                    (
                        f"postprocess-regular c={nc} n={n}",
                        *postprocess_case(np.random.default_rng(n), n, regular=True, num_classes=nc),
                    ),
                ]
    print(f"median per-invoke time over {args.runs} samples, num_threads=1, LiteRT = BUILTIN_REF")
    print(f"{'case':34s} {'ours ms':>10s} {'litert ms':>10s} {'ratio':>8s}  equal")
    for name, model, inputs in cases:
        (t_ours, y_ours), (t_ref, y_ref) = paired_median_invoke(
            [
                Interpreter(model_content=model, num_threads=1),
                LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF),
            ],
            inputs,
            args.runs,
        )
        if name.startswith("postprocess"):  # compare only the detections LiteRT wrote
            k = int(y_ref[3][0])
            per = y_ref[1].shape[1] // 20
            y_ours = [y_ours[0][:, : k * per], y_ours[1][:, : k * per], y_ours[2][:, : k * per], y_ours[3]]
            y_ref = [y_ref[0][:, : k * per], y_ref[1][:, : k * per], y_ref[2][:, : k * per], y_ref[3]]
        ok = _agree(y_ours, y_ref, 1e-6)
        print(f"{name:34s} {t_ours * 1e3:10.4f} {t_ref * 1e3:10.4f} {t_ours / t_ref:8.1f}  {ok}", flush=True)


if __name__ == "__main__":
    main()
