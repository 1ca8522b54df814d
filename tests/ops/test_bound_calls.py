"""ops/bound_plan.BoundCalls's default ``general``: an op called with arrays other than the ones it was bound to
binds to them and runs their plan (one path, no hand copy of the calls)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from litert_py.ops.bound_plan import BoundCalls


@dataclass(frozen=True, eq=False)
class AddThenScale(BoundCalls):
    """(x + offset) * scale into out, as two numpy calls."""

    offset: np.ndarray
    scale: float

    def bound_calls(self, x, out):
        return ((np.add, (x, self.offset), {"out": out}), (np.multiply, (out, self.scale), {"out": out}))


def test_general_binds_to_new_arrays_and_runs_their_plan():
    op = AddThenScale(np.arange(4.0), 2.0)
    x, out = np.ones(4), np.empty(4)
    op.bind([x], [out])
    op([x], [out])
    assert np.array_equal(out, [2.0, 4.0, 6.0, 8.0])
    y, other = np.full(4, 3.0), np.empty(4)
    op([y], [other])  # other arrays: bound to them, their plan
    assert np.array_equal(other, [6.0, 8.0, 10.0, 12.0])
    assert op._bound[0] is y and op._bound[1] is other
    x[...] = 0.0
    op([x], [out])  # the first arrays again: rebound, their current values
    assert np.array_equal(out, [0.0, 2.0, 4.0, 6.0])


def test_general_without_arrays_raises():
    op = AddThenScale(np.arange(4.0), 2.0)
    with pytest.raises(ValueError, match="AddThenScale needs its input and output arrays"):
        op([None], [np.empty(4)])
