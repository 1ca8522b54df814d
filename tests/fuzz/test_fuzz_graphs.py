"""Random small graphs (tests/fuzz/strategies.py): every outcome of construct -> allocate -> invoke -> invoke is a
value or a documented litert_py error, without numpy RuntimeWarnings, and at least half of the graphs reach
invoke. Each graph runs in a forked child with a CPU alarm and an address-space limit (tests/fuzz/runner.py),
so a hang or a runaway allocation fails the case instead of CI.

The CI and dev profiles run a few hundred graphs; LITERT_PY_HYPOTHESIS_PROFILE=long runs thousands.
``python tools/fuzz_graphs.py --graphs N`` prints the outcome counts.
"""

from __future__ import annotations

import os

from hypothesis import given, settings

from tests.fuzz.runner import run_isolated, summary
from tests.fuzz.strategies import graphs

LONG = os.environ.get("LITERT_PY_HYPOTHESIS_PROFILE") == "long"
GRAPHS = 5000 if LONG else 250


def test_random_graphs_give_a_value_or_a_documented_error():
    outcomes = []

    @settings(max_examples=GRAPHS)
    @given(graphs())
    def case(g):
        o = run_isolated(g.model, g.seed)
        outcomes.append(o)
        assert o.documented, f"undocumented outcome {o}"
        assert not o.runtime_warnings, f"numpy warnings leaked: {o.runtime_warnings}"

    case()
    reached = sum(o.reached_invoke for o in outcomes)
    assert reached >= len(outcomes) / 2, summary(outcomes)
