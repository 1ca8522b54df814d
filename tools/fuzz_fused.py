#!/usr/bin/env python3
"""Differential fuzzing of the fused int8 steps at length: draw random models of the shapes the prepare-time fusions
target (tests/fuzz/fused_models.py), run each in litert_py and ai-edge-litert BUILTIN_REF over several invokes in a
forked child, and print the outcomes per pattern.

    python tools/fuzz_fused.py [--cases 2000] [--seed 0] [--pattern streaming] [--save DIR]
    python tools/fuzz_fused.py --float [--cases 3000] [--seed 0] [--pattern fc] [--save DIR]

``--float``: the float fusions instead (tests/fuzz/float_models.py): each float32 model runs fused, unfused
(``experimental_preserve_all_tensors=True``) and in BUILTIN_REF; a "fusion-mismatch" (fused and unfused outputs
not byte-identical) or a "tolerance" failure (tests/fuzz/float_check.py) is printed and saved as below.

A mismatch or an unexpected exception is printed with its case (ops, notes, our prepared steps) and whether it
persists with every fusion disabled (``experimental_preserve_all_tensors=True``: then a kernel, not a fusion, is at
fault); ``--save DIR`` writes its model (``<n>_<pattern>.tflite``) and a ``.txt`` with the case (the input values
are ``fused_check.feeds(details, seed, invokes)``). Run from the repository root (it imports tests.fuzz).
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import signal
import sys
import time

# the repository root, after any PYTHONPATH entries (so PYTHONPATH=<other litert_py> measures that one)
_extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
sys.path.insert(1 + len(_extra), str(pathlib.Path(__file__).resolve().parents[1]))


def main() -> int:
    from hypothesis import HealthCheck, given, seed, settings

    from tests.fuzz.float_check import PASSING, compare_float_isolated
    from tests.fuzz.float_models import FLOAT_PATTERNS, float_models
    from tests.fuzz.fused_check import compare_isolated
    from tests.fuzz.fused_models import PATTERNS, fused_models

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pattern", choices=PATTERNS + FLOAT_PATTERNS, default=None, help="one pattern (default: drawn)")
    ap.add_argument("--float", action="store_true", help="the float fusions (float_models.py, float_check.py)")
    ap.add_argument("--save", default="", help="directory: write each failing case's model and description there")
    a = ap.parse_args()
    strategy = float_models(a.pattern) if a.float else fused_models(a.pattern)
    passing = PASSING if a.float else ("ok", "rejected", "refused", "oracle-crash")
    counts: collections.Counter = collections.Counter()
    seen: set = set()
    stopping: list = []
    start = time.monotonic()

    @seed(a.seed)
    @settings(
        max_examples=a.cases,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=["generate"],
    )
    @given(strategy)
    def run(case):
        if stopping:  # a timeout's SIGTERM: stop drawing, print the counts so far (raised here, not in a handler)
            raise KeyboardInterrupt
        r = compare_float_isolated(case) if a.float else compare_isolated(case)
        if stopping:  # the SIGTERM may have reached the case's child too: not a result
            raise KeyboardInterrupt
        counts[(case.pattern, r.kind)] += 1
        if sum(counts.values()) % 500 == 0:
            _summary(counts, start, a.seed)
        if r.kind in passing:
            return
        if a.float:  # the check itself tells a fusion (fused vs unfused) from a kernel (both vs LiteRT)
            unfused = r
            where = "fusion" if r.kind == "fusion-mismatch" else "kernel (also unfused)"
        else:
            unfused = compare_isolated(case, preserve=True) if not case.preserve else r
            where = "fusion" if unfused.kind in ("ok", "rejected") else "kernel (also unfused)"
        n = sum(v for (_, k), v in counts.items() if k not in passing)
        key = (r.kind, r.message, tuple(r.steps))
        if key in seen:  # the same failure again (hypothesis draws a failing example more than once)
            return
        seen.add(key)
        print(f"[{n}] {r.kind} ({where}): {r.message}\n  {case!r}\n  steps: {r.steps}", flush=True)
        if a.save:
            path = pathlib.Path(a.save) / f"{n}_{case.pattern}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.with_suffix(".tflite").write_bytes(case.model)
            text = f"{r.kind} ({where}): {r.message}\n{case!r}\nsteps: {r.steps}\n"
            path.with_suffix(".txt").write_text(text + f"unfused: {unfused.kind} {unfused.message}\n")

    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    try:
        run()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    _summary(counts, start, a.seed)
    return 1 if any(k not in passing for _, k in counts) else 0


def _summary(counts: collections.Counter, start: float, seed: int) -> None:
    print(f"{sum(counts.values())} cases in {time.monotonic() - start:.0f} s (seed {seed})")
    for pattern in sorted({p for p, _ in counts}):
        row = {k: v for (p, k), v in counts.items() if p == pattern}
        print(f"  {pattern:10s} {sum(row.values()):6d}  " + "  ".join(f"{k} {v}" for k, v in sorted(row.items())))
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
