"""Benchmark litert_py's CONV_2D / DEPTHWISE_CONV_2D / MAX_POOL_2D / AVERAGE_POOL_2D against ai-edge-litert.

Each case is a single-op float32 model built with litert_py's writer. It is run by litert_py and by
ai-edge-litert with the reference kernels (BUILTIN_REF) and with its default resolver (AUTO: optimized
kernels and the XNNPACK delegate), every interpreter with num_threads=1 (litert_py then runs its BLAS on one
thread). The script prints the median invoke time of each over --runs runs (after warm-up) and the ratios
ours/ref and ours/auto. The target is ours/ref <= 0.5 for every case.

    python tools/bench_conv.py [--runs 21] [--only conv]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from litert_py import Interpreter  # noqa: E402
from litert_py.schema.writer import ModelBuilder  # noqa: E402

SAME = 0


def single_op(op: str, in_shape, out_shape, consts=(), options=None) -> bytes:
    b = ModelBuilder()
    x = b.input("x", in_shape, np.float32)
    ins = [x] + [b.tensor(f"c{k}", c.shape, np.float32, data=c) for k, c in enumerate(consts)]
    out = b.tensor("y", out_shape, np.float32)
    b.op(op, ins, [out], options or {})
    b.output(out)
    return b.build()


def conv(rng, shape, out_c, k, stride=1):
    n, h, w, c = shape
    oh, ow = -(-h // stride), -(-w // stride)
    f = rng.standard_normal((out_c, k, k, c)).astype(np.float32)
    bias = rng.standard_normal(out_c).astype(np.float32)
    return single_op("CONV_2D", shape, (n, oh, ow, out_c), [f, bias],
                     {"padding": SAME, "stride_h": stride, "stride_w": stride})


def depthwise(rng, shape, k, stride=1):
    n, h, w, c = shape
    oh, ow = -(-h // stride), -(-w // stride)
    f = rng.standard_normal((1, k, k, c)).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    return single_op("DEPTHWISE_CONV_2D", shape, (n, oh, ow, c), [f, bias],
                     {"padding": SAME, "stride_h": stride, "stride_w": stride, "depth_multiplier": 1})


def pool(op, shape, k, stride):
    n, h, w, c = shape
    return single_op(op, shape, (n, -(-h // stride), -(-w // stride), c), (),
                     {"padding": SAME, "stride_h": stride, "stride_w": stride, "filter_height": k, "filter_width": k})


def cases(rng):
    return [
        ("conv 1x64x64x32->32 3x3 SAME", conv(rng, (1, 64, 64, 32), 32, 3), (1, 64, 64, 32)),
        ("conv 1x32x32x64->128 1x1", conv(rng, (1, 32, 32, 64), 128, 1), (1, 32, 32, 64)),
        ("depthwise 1x64x64x64 3x3", depthwise(rng, (1, 64, 64, 64), 3), (1, 64, 64, 64)),
        ("depthwise 1x32x32x128 3x3 s2", depthwise(rng, (1, 32, 32, 128), 3, 2), (1, 32, 32, 128)),
        ("maxpool 1x64x64x32 2x2 s2", pool("MAX_POOL_2D", (1, 64, 64, 32), 2, 2), (1, 64, 64, 32)),
        ("avgpool 1x64x64x32 2x2 s2", pool("AVERAGE_POOL_2D", (1, 64, 64, 32), 2, 2), (1, 64, 64, 32)),
    ]


def median_invoke(interp, x, runs: int) -> tuple[float, np.ndarray]:
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    for _ in range(3):
        interp.invoke()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        interp.invoke()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), interp.get_tensor(interp.get_output_details()[0]["index"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=21, help="timed invokes per interpreter (median; >= 7)")
    p.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = p.parse_args(argv)
    runs = max(args.runs, 7)
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    rng = np.random.default_rng(0)
    print(f"median of {runs} invokes, num_threads=1 everywhere; times in ms")
    print(f"{'case':32} {'litert_py':>10} {'REF':>10} {'AUTO':>10} {'ours/ref':>9} {'ours/auto':>9}  max|diff| vs REF")
    worst = 0.0
    for name, model, shape in cases(rng):
        if args.only not in name:
            continue
        x = rng.standard_normal(shape).astype(np.float32)
        ours, y = median_invoke(Interpreter(model_content=model, num_threads=1), x, runs)
        ref, y_ref = median_invoke(LiteRT(model_content=model, num_threads=1,
                                          experimental_op_resolver_type=OpResolverType.BUILTIN_REF), x, runs)
        auto, _ = median_invoke(LiteRT(model_content=model, num_threads=1,
                                       experimental_op_resolver_type=OpResolverType.AUTO), x, runs)
        worst = max(worst, ours / ref)
        print(f"{name:32} {ours * 1e3:10.3f} {ref * 1e3:10.3f} {auto * 1e3:10.3f} {ours / ref:9.3f} "
              f"{ours / auto:9.2f}  {float(np.max(np.abs(y - y_ref))):.2g}")
    print(f"worst ours/ref: {worst:.3f} (target <= 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
