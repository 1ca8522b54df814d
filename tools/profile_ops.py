#!/usr/bin/env python3
"""Per-op-type process CPU time of one model in litert_py (a developer script, not the runtime's profiler).

    python tools/profile_ops.py MODEL.tflite [--invokes 50] [--nodes 10] [--hot] [--calls]

Allocates the model, fills its inputs with random values, then times every step of the primary subgraph's
invoke loop separately (process CPU time, summed over ``--invokes`` invokes after one warm-up) and prints,
per op type, the node count, the time per invoke and its share; then the ``--nodes`` slowest nodes with
their prepared-op class (which fast path prepare chose). With ``--hot`` each of those nodes is also timed run
``--invokes`` times in a row on its own (caches hot, as a timeit loop would have it) beside its time inside the
invokes: a step runs 1.3-4x slower inside an invoke, after the other steps evicted its data and Python objects,
so judge a change by the in-sequence column. With ``--calls`` each of those nodes whose step runs a bound plan
(ops/bound_plan.BoundCalls: ``_bound``'s last item, its calls) also gets every call of the plan timed inside
real invokes (median, the step's other calls running as usual; the timer's own cost taken off), to see which part
pays the in-sequence penalty, and the step's median time outside its plan's calls (its Python work around the
plan), the step timed whole with the same clock.
Models whose subgraph runs through the dynamic path (shapes known only at eval) are timed as a whole.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

import numpy as np


def random_inputs(it) -> None:
    rng = np.random.default_rng(0)
    for d in it.get_input_details():
        dt = np.dtype(d["dtype"])
        if dt.kind in "iu":
            info = np.iinfo(dt)
            v = rng.integers(max(info.min, -128), min(info.max, 127) + 1, d["shape"]).astype(dt)
        elif dt.kind == "b":
            v = rng.integers(0, 2, d["shape"]).astype(dt)
        else:
            v = rng.standard_normal(d["shape"]).astype(dt)
        it.set_tensor(d["index"], v)


def plan_call_times(it, sub, k: int, invokes: int) -> tuple:
    """(per call of step ``k``'s bound plan (call name, median us inside real invokes), the step's median time
    outside its plan's calls in us), or ([], None) when it has none. Both from the same clock, the timer's own cost
    (a calibrated empty pair of clock reads) taken off each call: what is left outside is the step's Python work
    around its plan (a hybrid row's scalars, a check), not the profiler's."""
    import functools
    import statistics

    op, ins, outs = sub.steps[k]
    bound = getattr(op, "_bound", None)
    plan = bound[-1] if isinstance(bound, tuple) and bound else None
    if not isinstance(plan, tuple) or not all(isinstance(c, functools.partial) for c in plan):
        return [], None
    clock = time.perf_counter_ns
    pairs = []
    for _ in range(2001):
        t0 = clock()
        pairs.append(clock() - t0)
    overhead = statistics.median(pairs)
    times = [[] for _ in plan]
    sums, whole = [], []

    def timed(inputs, outputs):
        total = 0
        for call, acc in zip(plan, times):
            t0 = clock()
            call()
            dt = clock() - t0 - overhead
            acc.append(dt)
            total += dt
        sums.append(total)

    def timed_whole(inputs, outputs):
        t0 = clock()
        op(inputs, outputs)
        whole.append(clock() - t0 - overhead)

    try:
        with np.errstate(all="ignore"):
            for wrapper in (timed, timed_whole):
                sub.steps[k] = (wrapper, ins, outs)
                for _ in range(invokes):
                    it.invoke()
    finally:
        sub.steps[k] = (op, ins, outs)
    names = [getattr(c.func, "__qualname__", None) or getattr(c.func, "__name__", repr(c.func)) for c in plan]
    calls = [(f"{i}: {n}", statistics.median(t) / 1e3) for i, (n, t) in enumerate(zip(names, times))]
    return calls, (statistics.median(whole) - statistics.median(sums)) / 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--invokes", type=int, default=50)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--hot", action="store_true", help="also time the slowest nodes alone, repeated (hot caches)")
    ap.add_argument("--calls", action="store_true", help="also time each call of the slowest nodes' bound plans")
    a = ap.parse_args()
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # this checkout's litert_py
    from litert_py import Interpreter

    it = Interpreter(model_path=a.model)
    it.allocate_tensors()
    random_inputs(it)
    it.invoke()
    sub = it._subgraph(0)
    clock = time.process_time
    if sub.deferred:
        t0 = clock()
        for _ in range(a.invokes):
            it.invoke()
        print(f"dynamic path (not timed per op): {(clock() - t0) / a.invokes * 1e3:.3f} ms per invoke")
        return 0
    per_node = collections.defaultdict(float)
    with np.errstate(all="ignore"):
        for _ in range(a.invokes):
            for k, (op, ins, outs) in enumerate(sub.steps):
                t0 = clock()
                op(ins, outs)
                per_node[k] += clock() - t0
    by_type: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])
    for k, t in per_node.items():
        row = by_type[sub.steps_nodes[k][0].name]
        row[0] += 1
        row[1] += t
    total = sum(per_node.values())
    print(f"{a.model}: {len(sub.steps)} steps, {total / a.invokes * 1e3:.3f} ms per invoke (sum of steps)")
    print(f"{'op type':32s} {'nodes':>5s} {'ms':>8s} {'share':>6s}")
    for name, (n, t) in sorted(by_type.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:32s} {n:5d} {t / a.invokes * 1e3:8.3f} {t / total:6.1%}")
    print(f"\nslowest {a.nodes} nodes:" + ("  (in sequence, alone and hot, ratio)" if a.hot else ""))
    for k, t in sorted(per_node.items(), key=lambda kv: -kv[1])[: a.nodes]:
        node, op = sub.steps_nodes[k]
        shape = tuple(sub.tensors[node.operator.outputs[0]].shape) if node.operator.outputs else ()
        line = (
            f"  node {node.index:4d} {node.name:24s} {type(op).__name__:28s} {str(shape):22s} "
            f"{t / a.invokes * 1e6:9.1f} us"
        )
        if a.hot:
            step, ins, outs = sub.steps[k]
            with np.errstate(all="ignore"):
                t0 = clock()
                for _ in range(a.invokes):
                    step(ins, outs)
                hot = clock() - t0
            line += f" {hot / a.invokes * 1e6:9.1f} us {t / hot:5.2f}x"
        print(line)
        if a.calls:
            calls, rest = plan_call_times(it, sub, k, a.invokes)
            for name, us in calls:
                print(f"      {name:40s} {us:9.2f} us")
            if calls:  # the step's own Python work around its plan (medians, timer cost taken off)
                print(f"      {'(outside the plan)':40s} {rest:9.2f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
