#!/usr/bin/env python3
"""Per-iteration cost of a WHILE loop in litert_py and ai-edge-litert, measured in the same run.

    python tools/bench_control_flow.py [--iterations 2000] [--repeats 7]

The model counts ``i < n: i += 1; x = x * 0.5 + 1`` (cond: 1 op, body: 3 ops on 4 floats), so the time per
iteration is the interpreter's overhead for running two subgraphs. Prints medians and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder


def counting_loop(n: int) -> bytes:
    b = ModelBuilder()
    i, x = b.input("i", (), np.int32), b.input("x", (4,), np.float32)
    outs = [b.tensor("i_out", (), np.int32), b.tensor("x_out", (4,), np.float32)]
    b.op("WHILE", [i, x], outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(*outs)
    b.subgraph("cond")
    ci, _ = b.input("i", (), np.int32), b.input("x", (4,), np.float32)
    c = b.tensor("c", (), np.bool_)
    b.op("LESS", [ci, b.const("n", np.int32(n))], [c])
    b.output(c)
    b.subgraph("body")
    bi, bx = b.input("i", (), np.int32), b.input("x", (4,), np.float32)
    i2, x1, x2 = b.tensor("i2", (), np.int32), b.tensor("x1", (4,), np.float32), b.tensor("x2", (4,), np.float32)
    b.op("ADD", [bi, b.const("one", np.int32(1))], [i2])
    b.op("MUL", [bx, b.const("half", np.float32(0.5))], [x1])
    b.op("ADD", [x1, b.const("one_x", np.float32(1))], [x2])
    b.output(i2, x2)
    return b.build()


def per_iteration(interpreter_class, model: bytes, n: int, repeats: int) -> tuple[float, np.ndarray]:
    it = interpreter_class(model_content=model, num_threads=1)
    it.allocate_tensors()
    d = it.get_input_details()
    it.set_tensor(d[0]["index"], np.int32(0))
    it.set_tensor(d[1]["index"], np.ones(4, np.float32))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        it.invoke()
        times.append(time.perf_counter() - t)
    return statistics.median(times) / n, it.get_tensor(it.get_output_details()[1]["index"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    model = counting_loop(a.iterations)
    ours, x_ours = per_iteration(Interpreter, model, a.iterations, a.repeats)
    theirs, x_theirs = per_iteration(LiteRT, model, a.iterations, a.repeats)
    assert np.array_equal(x_ours, x_theirs), (x_ours, x_theirs)
    print(
        f"WHILE, {a.iterations} iterations, median of {a.repeats}: litert_py {ours * 1e6:.2f} us/iteration, "
        f"LiteRT {theirs * 1e6:.2f} us/iteration, ratio {ours / theirs:.1f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
