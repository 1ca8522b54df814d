"""tests/ops fixtures: a test that used check_both must have compared at least one case."""

import pytest

from tests.ops._diff import RUNS


@pytest.fixture(autouse=True)
def _check_both_compared_something():
    RUNS.reset()
    yield
    RUNS.check()
