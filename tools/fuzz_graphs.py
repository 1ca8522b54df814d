#!/usr/bin/env python3
"""Draw random small graphs (tests/fuzz/strategies.py), run each through construct -> allocate -> invoke ->
invoke in a forked, resource-limited child, and print the outcomes by type.

    python tools/fuzz_graphs.py [--graphs 500] [--seed 0] [--show CAUSE]

``--show TypeError`` prints the first message of each distinct case whose outcome or wrapped cause is that
type (``--show internal``: every wrapped exception but ValueError, and every undocumented one), for triage;
``--save DIR`` also writes those models (input values: ``input_values(details, seed)``).
``--compare`` runs each graph in ai-edge-litert BUILTIN_REF too (tests/fuzz/graph_check.py) and prints the
outcomes by kind, with the first case of each distinct message of the kinds that need triage.
Run from the repository root (it imports tests.fuzz).
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import sys

# the repository root, after any PYTHONPATH entries (so PYTHONPATH=<other litert_py> measures that one)
_extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
sys.path.insert(1 + len(_extra), str(pathlib.Path(__file__).resolve().parents[1]))


def main() -> int:
    from hypothesis import HealthCheck, given, seed, settings

    from tests.fuzz.runner import run_isolated, summary
    from tests.fuzz.strategies import graphs

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", default="")
    ap.add_argument("--save", default="", help="directory: write each shown case's model there")
    ap.add_argument("--compare", action="store_true", help="differential: litert_py against BUILTIN_REF")
    a = ap.parse_args()
    outcomes, shown = [], collections.Counter()

    @seed(a.seed)
    @settings(
        max_examples=a.graphs,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=["generate"],
    )
    @given(graphs())
    def collect(g):
        if a.compare:
            return compare(g)
        o = run_isolated(g.model, g.seed)
        outcomes.append(o)
        internal = (o.cause not in (None, "ValueError")) or not o.documented
        if a.show and (a.show in (o.outcome, o.cause) or (a.show == "internal" and internal)) and shown[o.message] < 1:
            shown[o.message] += 1
            print(f"[{o.stage}] {o.outcome} <- {o.cause}: {o.message}  ops={g.ops}")
            save(g, f"{a.show}_{len(shown)}")
        for w in o.runtime_warnings:
            if a.show == "RuntimeWarning" and shown[w] < 1:
                shown[w] += 1
                print(f"[{o.stage}] {w}  ops={g.ops}")

    kinds = collections.Counter()

    def save(g, label: str) -> None:
        if a.save:
            path = pathlib.Path(a.save) / f"{label}_seed{g.seed}.tflite"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(g.model)
            print(f"  saved {path} (input seed {g.seed})")

    def compare(g):
        from tests.fuzz.graph_check import compare_graph_isolated

        r = compare_graph_isolated(g.model, g.seed, g.ops)
        kinds[r.kind] += 1
        key = (r.kind, r.message.split(":")[0] if r.kind == "float" else r.message[:160])
        if r.kind not in ("ok", "rejected", "refused", "ref-wrong", "litert-wrong") and shown[key] < 1:
            shown[key] += 1
            print(f"[{r.kind}] {r.message[:400]}  ops={g.ops}")
            save(g, f"{r.kind}_{sum(shown.values())}")

    collect()
    if a.compare:
        print(f"{sum(kinds.values())} graphs: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
        return 0
    print(summary(outcomes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
