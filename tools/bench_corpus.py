#!/usr/bin/env python3
"""Time every corpus model in litert_py and ai-edge-litert in the same run; print medians and ratios.

    python tools/bench_corpus.py [--repeats 5] [--filter REGEX]

For each model: median over --repeats rounds of the checker's own timing (``python -m litert_py.tools.check
--bench``: itself a median of at least 5 invokes after a warm-up), for litert_py, LiteRT default (AUTO,
XNNPACK) and LiteRT reference kernels (BUILTIN_REF), all with one thread; the ratios ours/LiteRT; and
litert_py's time per executed op (the interpreter's overhead per op on models whose ops are tiny).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "corpus"

from litert_py.tools import check  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--filter", default="")
    ap.add_argument("--corpus", type=pathlib.Path, default=CORPUS)
    a = ap.parse_args()
    from litert_py import Interpreter

    print(
        f"{'model':48s} {'ours ms':>9s} {'auto ms':>9s} {'ref ms':>9s} {'x auto':>7s} {'x ref':>7s} "
        f"{'ops':>4s} {'us/op':>7s}"
    )
    for model in sorted(a.corpus.glob("*.tflite")):
        if not re.search(a.filter, model.name):
            continue
        refs = a.corpus / "refs" / (model.stem + ".npz")
        rows = []
        for _ in range(a.repeats):
            r = check.run_one(model, refs, intermediates=False, strict=False, bench=True)
            r = {"status": r.status, "detail": r.detail, **r.timings}
            if "ours_ms" not in r:
                print(f"{model.stem:48s} not timed: {r['status']} {r.get('detail', '')[:60]}")
                break
            rows.append(r)
        if len(rows) < a.repeats:
            continue
        med = {
            k: statistics.median(r[k] for r in rows)
            for k in ("ours_ms", "litert_ms", "litert_ref_ms")
            if all(k in r for r in rows)
        }
        it = Interpreter(model_path=str(model))
        n_ops = sum(len(s.sg.operators) for s in it._subgraphs if s is not None)
        it.allocate_tensors()
        executed = len(it._subgraph(0).steps_nodes)
        nan = float("nan")
        ours, auto, ref = med.get("ours_ms", 0), med.get("litert_ms", nan), med.get("litert_ref_ms", nan)
        print(
            f"{model.stem:48s} {ours:9.3f} {auto:9.3f} {ref:9.3f} {ours / auto:7.2f} {ours / ref:7.2f} "
            f"{executed:4d} {1e3 * ours / max(executed, 1):7.1f}  ({n_ops} ops in the model, "
            f"{n_ops - executed} folded at prepare)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
