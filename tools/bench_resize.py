#!/usr/bin/env python3
"""Benchmark int8 / int16 RESIZE_BILINEAR single-op models against ai-edge-litert, in the same run.

For each shape (model-like 2x upsamplings) and mode, the script builds a one-op model, asserts that
litert_py's output equals BUILTIN_REF's, then prints the median process CPU time per invoke (1 thread,
bench_families.median_invoke_ms) of litert_py with the kernel prepare chooses (``new``, with its class), of
litert_py with the integer phase kernel disabled (``gather``: ResizeBilinearInteger), of LiteRT AUTO and
of LiteRT BUILTIN_REF, and the ratios new/AUTO, new/REF and new/gather.

    python tools/bench_resize.py [--dtype int8 int16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
from unittest import mock

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from bench_families import median_invoke_ms  # noqa: E402

from litert_py import Interpreter  # noqa: E402
from litert_py.schema.builder import ModelBuilder  # noqa: E402

SHAPES = [((1, 16, 16, 128), (32, 32)), ((1, 32, 32, 64), (64, 64)), ((1, 64, 64, 16), (128, 128))]
MODES = ["plain", "half_pixel_centers", "align_corners"]


def resize_model(shape, out_hw, dtype, mode) -> bytes:
    b = ModelBuilder()
    x = b.input("x", shape, dtype)
    size = b.const("size", np.array(out_hw, np.int32))
    y = b.tensor("y", (shape[0], *out_hw, shape[3]), dtype)
    opts = {"align_corners": mode == "align_corners", "half_pixel_centers": mode == "half_pixel_centers"}
    b.op("RESIZE_BILINEAR", [x, size], [y], opts)
    b.output(y)
    return b.build()


def run(interp, x):
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"]).copy()


def main() -> int:
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtype", nargs="*", default=["int8", "int16"], choices=["int8", "int16"])
    ap.add_argument("--repeat", type=int, default=3, help="rounds; each time is the median over them")
    a = ap.parse_args()
    print(
        f"{'dtype':6} {'shape':>16} {'mode':19} {'kernel':28} {'new':>7} {'gather':>7} {'AUTO':>7} {'REF':>7}"
        f"  {'/AUTO':>6} {'/REF':>6} {'/gath':>6}"
    )
    for dname in a.dtype:
        dt = np.dtype(dname)
        info = np.iinfo(dt)
        for shape, hw in SHAPES:
            x = np.random.default_rng(0).integers(info.min, info.max + 1, shape).astype(dt)
            for mode in MODES:
                model = resize_model(shape, hw, dt, mode)
                ours = Interpreter(model_content=model, num_threads=1)
                with mock.patch("litert_py.ops.resize.make_integer_phases_op", return_value=None):
                    gather = Interpreter(model_content=model, num_threads=1)
                    gather.allocate_tensors()
                auto, ref = (
                    LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=r)
                    for r in (OpResolverType.AUTO, OpResolverType.BUILTIN_REF)
                )
                want = run(ref, x)
                assert np.array_equal(run(ours, x), want), f"{dname} {shape} {mode}: differs from BUILTIN_REF"
                assert np.array_equal(run(gather, x), want)
                (prepared,) = ours._subgraphs[0].prepared_ops.values()
                times = [[median_invoke_ms(i, x) for i in (ours, gather, auto, ref)] for _ in range(a.repeat)]
                new, gat, au, rf = (statistics.median(t) for t in zip(*times))
                print(
                    f"{dname:6} {'x'.join(map(str, shape[1:])):>16} {mode:19} {type(prepared).__name__:28} "
                    f"{new:7.3f} {gat:7.3f} {au:7.3f} {rf:7.3f}  {new / au:6.2f} {new / rf:6.2f} {new / gat:6.2f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
