"""tests/ops/_diff.py: check_both tallies what it compared, so that a test in which both runtimes rejected every
case fails (tests/ops/conftest.py) instead of passing having compared nothing."""

import numpy as np
import pytest

from tests.ops._diff import RUNS, check_both
from tests.oracle import T, litert_fails, ours_fails, single_op_model


def test_check_both_counts_rejections_and_comparisons():
    bad = single_op_model("ADD", [T((2,)), T((3,))], [T((3,))])  # not broadcastable: both runtimes refuse
    assert check_both(bad, [np.zeros(2, np.float32), np.zeros(3, np.float32)]) is None
    assert (RUNS.rejected, RUNS.compared) == (1, 0)  # alone, this test would fail at teardown
    good = single_op_model("ADD", [T((3,)), T((3,))], [T((3,))])
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(check_both(good, [x, x])[0], 2 * x)
    assert (RUNS.rejected, RUNS.compared) == (1, 1)


def test_a_test_in_which_neither_runtime_ran_fails():
    """What the autouse fixture of tests/ops/conftest.py checks at teardown: rejections only is a failure."""
    bad = single_op_model("ADD", [T((2,)), T((3,))], [T((3,))])
    for _ in range(2):
        assert check_both(bad, [np.zeros(2, np.float32), np.zeros(3, np.float32)]) is None
    with pytest.raises(AssertionError, match="both runtimes rejected all 2 case.s. of this test; it compared nothing"):
        RUNS.check()
    RUNS.reset()  # this test itself passes
    RUNS.check()


def test_fails_helpers_fail_when_the_runtime_runs():
    """litert_fails / ours_fails (tests/oracle.py) are assertions: a model both runtimes run fails them."""
    good = single_op_model("ADD", [T((3,)), T((3,))], [T((3,))])
    for at in ("allocate", "invoke", "any"):
        with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
            litert_fails(good, at=at)
        with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
            ours_fails(good, at=at)
    bad = single_op_model("ADD", [T((2,)), T((3,))], [T((3,))])  # refused at prepare by both
    litert_fails(bad, at="allocate")
    ours_fails(bad, at="allocate", match="")
    with pytest.raises(RuntimeError):  # "invoke" wants allocate_tensors to succeed
        litert_fails(bad, at="invoke")
