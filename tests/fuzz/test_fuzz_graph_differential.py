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


def test_outputs_above_the_cap_are_not_compared(monkeypatch):
    """A graph whose output is above graph_check.MAX_COMPARED_BYTES (a RANGE to a drawn limit: up to 4 GB) is
    "too-large", its outputs neither kept nor compared (they took ~24 GB and more than the child's minute); below
    the cap the same graph is compared ("ok")."""
    import numpy as np

    from litert_py.schema.builder import ModelBuilder
    from tests.fuzz import graph_check

    b = ModelBuilder()
    limit = b.input("limit", (), np.int32)
    y = b.tensor("y", (1,), np.int32)
    b.op("RANGE", [b.const("start", np.int32(0)), limit, b.const("delta", np.int32(1))], [y])
    b.output(y)
    model = b.build()
    seed = 0
    (limit_value,) = graph_check_inputs(model, seed)
    nbytes = 4 * int(limit_value)
    assert nbytes > 0
    monkeypatch.setattr(graph_check, "MAX_COMPARED_BYTES", nbytes)
    assert graph_check.compare_graph(model, seed, ["RANGE"]).kind == "ok"
    monkeypatch.setattr(graph_check, "MAX_COMPARED_BYTES", nbytes - 1)
    assert graph_check.compare_graph(model, seed, ["RANGE"]).kind == "too-large"


def graph_check_inputs(model: bytes, seed: int) -> list:
    """The input values graph_check feeds ``model`` (strategies.input_values)."""
    from litert_py import Interpreter
    from tests.fuzz.strategies import input_values

    it = Interpreter(model_content=model)
    return [v.item() for v in input_values(it.get_input_details(), seed)]
