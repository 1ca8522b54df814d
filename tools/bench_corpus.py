#!/usr/bin/env python3
"""Time every corpus model in litert_py and ai-edge-litert in the same run; print medians and ratios.

    python tools/bench_corpus.py [--repeats 5] [--filter REGEX]

For each model: median over --repeats rounds of the shared checker's own timing (itself a median of 5
invokes after a warm-up), for litert_py, LiteRT default (AUTO, XNNPACK) and LiteRT reference kernels
(BUILTIN_REF), all with one thread; the ratios ours/LiteRT; and litert_py's time per executed op (the
interpreter's overhead per op on models whose ops are tiny).
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import re
import statistics

SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--filter", default="")
    ap.add_argument("--corpus", type=pathlib.Path, default=SHARED / "corpus")
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("corpus_check", SHARED / "tools" / "corpus_check.py")
    cc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cc)
    from litert_py import Interpreter

    print(f"{'model':48s} {'ours ms':>9s} {'auto ms':>9s} {'ref ms':>9s} {'x auto':>7s} {'x ref':>7s} "
          f"{'ops':>4s} {'us/op':>7s}")
    for model in sorted(a.corpus.glob("*.tflite")):
        if not re.search(a.filter, model.name):
            continue
        refs = a.corpus / "refs" / (model.stem + ".npz")
        rows = []
        for _ in range(a.repeats):
            try:
                r = cc.check_model(model, refs, bench=True)
            except Exception as e:  # noqa: BLE001 - a model litert_py cannot run yet is reported, not fatal
                r = {"status": "error", "detail": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
            if "ours_ms" not in r:
                print(f"{model.stem:48s} not timed: {r['status']} {r.get('detail', '')[:60]}")
                break
            rows.append(r)
        if len(rows) < a.repeats:
            continue
        med = {k: statistics.median(r[k] for r in rows) for k in ("ours_ms", "litert_ms", "litert_ref_ms")
               if all(k in r for r in rows)}
        it = Interpreter(model_path=str(model))
        n_ops = sum(len(s.sg.operators) for s in it._subgraphs if s is not None)
        it.allocate_tensors()
        executed = len(it._subgraph(0).steps_nodes)
        nan = float("nan")
        ours, auto, ref = med.get("ours_ms", 0), med.get("litert_ms", nan), med.get("litert_ref_ms", nan)
        print(f"{model.stem:48s} {ours:9.3f} {auto:9.3f} {ref:9.3f} {ours / auto:7.2f} {ours / ref:7.2f} "
              f"{executed:4d} {1e3 * ours / max(executed, 1):7.1f}  ({n_ops} ops in the model, "
              f"{n_ops - executed} folded at prepare)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
