"""Random small graphs (tests/fuzz/strategies.py) against ai-edge-litert BUILTIN_REF (tests/fuzz/graph_check.py):
where both runtimes run a graph, every integer, bool and string output of both invokes is equal and no litert_py
run raises an undocumented exception. Float differences beyond the tolerance ("float") and one-sided refusals
("ours-only" / "litert-only") are counted for triage, not failed: random graphs chain transcendental ops on
extreme values, and give kernels operands no converter writes (``python tools/fuzz_graphs.py --compare`` prints
each distinct case). Outputs LiteRT leaves uninitialized or computes from a zero scale are classified apart
(``graph_check.litert_wrong``).

The CI profile draws a fixed sequence of 150 graphs (hypothesis derandomized), LITERT_PY_HYPOTHESIS_PROFILE=long
3000.
"""

from __future__ import annotations

import os

from hypothesis import event, given, settings

from tests.fuzz.graph_check import compare_graph_isolated
from tests.fuzz.strategies import graphs

LONG = os.environ.get("LITERT_PY_HYPOTHESIS_PROFILE") == "long"
GRAPHS = 3000 if LONG else 150
FAILING = ("mismatch", "exception")


def test_random_graphs_equal_builtin_ref():
    kinds = []

    @settings(max_examples=GRAPHS)
    @given(graphs())
    def case(g):
        r = compare_graph_isolated(g.model, g.seed, g.ops)
        event(r.kind)
        kinds.append(r.kind)
        assert r.kind not in FAILING, f"{r.kind}: {r.message}\nops: {g.ops}"

    case()
    assert kinds.count("ok") >= len(kinds) // 4, f"too few graphs compared: {sorted(set(kinds))}"
