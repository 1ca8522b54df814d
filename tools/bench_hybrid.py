#!/usr/bin/env python3
"""Hybrid (dynamic-range quantized: float activations, int8 weights) CONV_2D and FULLY_CONNECTED, and the
DEQUANTIZE / QUANTIZE at a model's edges, per invoke in litert_py and ai-edge-litert, same run, process CPU
time, 1 thread: medians of ``--runs`` invokes, ratios against LiteRT's default kernels (AUTO) and its
reference kernels (BUILTIN_REF).

    python tools/bench_hybrid.py [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder, quant


def conv_model(rng, shape, out_c: int, k: int) -> bytes:
    """CONV_2D k x k, SAME, ReLU, per-channel int8 weights, float bias."""
    b = ModelBuilder()
    x = b.input("x", shape, np.float32)
    w = rng.integers(-127, 128, (out_c, k, k, shape[3])).astype(np.int8)
    wt = b.tensor("w", w.shape, np.int8, data=w, quantization=quant(rng.uniform(0.001, 0.01, out_c), 0, 0))
    bias = b.const("b", rng.standard_normal(out_c).astype(np.float32))
    y = b.tensor("y", (shape[0], shape[1], shape[2], out_c), np.float32)
    b.op("CONV_2D", [x, wt, bias], [y], {"padding": 0, "stride_h": 1, "stride_w": 1, "fused_activation_function": 1})
    b.output(y)
    return b.build()


def fc_model(rng, rows: int, n_in: int, n_out: int, asymmetric: bool = False) -> bytes:
    """FULLY_CONNECTED, ReLU, per-tensor int8 weights, float bias."""
    b = ModelBuilder()
    x = b.input("x", (rows, n_in), np.float32)
    w = rng.integers(-127, 128, (n_out, n_in)).astype(np.int8)
    wt = b.tensor("w", w.shape, np.int8, data=w, quantization=quant(0.01, 0))
    bias = b.const("b", rng.standard_normal(n_out).astype(np.float32))
    y = b.tensor("y", (rows, n_out), np.float32)
    opts = {"fused_activation_function": 1, "asymmetric_quantize_inputs": asymmetric}
    b.op("FULLY_CONNECTED", [x, wt, bias], [y], opts)
    b.output(y)
    return b.build()


def edge_model(op: str, shape, dtype, zero_point: int) -> bytes:
    """DEQUANTIZE (int -> float32) or QUANTIZE (float32 -> int) per tensor."""
    b = ModelBuilder()
    q = quant(0.0235, zero_point)
    if op == "DEQUANTIZE":
        x, y = b.input("x", shape, dtype, quantization=q), b.tensor("y", shape, np.float32)
    else:
        x, y = b.input("x", shape, np.float32), b.tensor("y", shape, dtype, quantization=q)
    b.op(op, [x], [y], {})
    b.output(y)
    return b.build()


def edge_input(rng, op: str, shape, dtype) -> np.ndarray:
    if op == "DEQUANTIZE":
        return rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32)


def median_ms(it, x: np.ndarray, runs: int) -> float:
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    ts = []
    for _ in range(runs):
        t = time.process_time()
        it.invoke()
        ts.append(time.process_time() - t)
    return 1e3 * statistics.median(ts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args(argv)
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    rng = np.random.default_rng(0)
    cases = [
        ("conv 3x3 32x32x16 -> 32", conv_model(rng, (1, 32, 32, 16), 32, 3), (1, 32, 32, 16)),
        ("conv 1x1 16x16x64 -> 64", conv_model(rng, (1, 16, 16, 64), 64, 1), (1, 16, 16, 64)),
        ("fc 64 -> 32", fc_model(rng, 1, 64, 32), (1, 64)),
        ("fc 256 -> 128", fc_model(rng, 1, 256, 128), (1, 256)),
        ("fc 256 -> 128 asym", fc_model(rng, 1, 256, 128, True), (1, 256)),
        ("fc 1024 -> 512", fc_model(rng, 1, 1024, 512), (1, 1024)),
        ("fc 8 x 1024 -> 512", fc_model(rng, 8, 1024, 512), (8, 1024)),
    ]
    edge = (1, 32, 32, 64)
    for op, dtype, zp in [("DEQUANTIZE", np.int8, 0), ("DEQUANTIZE", np.int8, -5), ("DEQUANTIZE", np.uint8, 128)]:
        name = f"{op.lower()} {np.dtype(dtype).name} zp {zp}"
        cases.append((name, edge_model(op, edge, dtype, zp), edge, edge_input(rng, op, edge, dtype)))
    cases.append(("quantize int8 zp -5", edge_model("QUANTIZE", edge, np.int8, -5), edge, None))
    for name, model, shape, *given in cases:
        x = given[0] if given and given[0] is not None else rng.standard_normal(shape).astype(np.float32)
        ours = Interpreter(model_content=model)
        ours.allocate_tensors()
        times = {"ours": median_ms(ours, x, args.runs)}
        outs = {"ours": ours.get_tensor(ours.get_output_details()[0]["index"])}
        for key, res in (("AUTO", OpResolverType.AUTO), ("REF", OpResolverType.BUILTIN_REF)):
            it = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=res)
            it.allocate_tensors()
            times[key] = median_ms(it, x, args.runs)
            outs[key] = it.get_tensor(it.get_output_details()[0]["index"])
        assert np.array_equal(outs["ours"], outs["REF"]), f"{name}: litert_py differs from BUILTIN_REF"
        ours_ms, auto, ref = times["ours"], times["AUTO"], times["REF"]
        print(
            f"{name:24s} litert_py {ours_ms:.3f} ms  AUTO {auto:.3f} ms  x{ours_ms / auto:.2f}"
            f"  REF {ref:.3f} ms  x{ours_ms / ref:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
