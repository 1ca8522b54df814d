"""ARG_MAX, ARG_MIN and CUMSUM against the oracle (litert_py/ops/reduce_axis.py): one-axis reductions and scans,
NaN rows, constant and non-constant axes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.compare import assert_close
from tests.ops._values import regimes, shapes
from tests.oracle import T, run_both, single_op_model
from tests.values import values

# -- ARG_MAX, ARG_MIN ------------------------------------------------------------------------------------
ARG_CASES = [
    (op, dt, out)
    for op in ("ARG_MAX", "ARG_MIN")
    for dt in (np.float32, np.uint8, np.int8, np.int32, np.bool_)
    for out in (np.int32, np.int64)
]


@pytest.mark.parametrize("case", ARG_CASES, ids=lambda c: f"{c[0].lower()}-{np.dtype(c[1]).name}-{np.dtype(c[2]).name}")
@given(
    data=st.data(),
    shape=shapes(1, 5, max_dim=4, allow_empty=False),
    axis_const=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_arg_max_min(case, data, shape, axis_const, seed):
    """Ties give the first index; float NaN / inf / -0.0 on every axis (see test_arg_max_min_nan); negative
    axes; int32 or int64 axis."""
    op, dtype, out_dtype = case
    rng = np.random.default_rng(seed)
    a = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    if dtype == np.bool_:
        x = rng.random(shape) < 0.5
    else:
        x = values(rng, shape, dtype, data.draw(regimes(dtype), label="regime"))
        if data.draw(st.booleans(), label="coarse"):  # many ties
            x = (x % 3).astype(dtype) if dtype != np.float32 else np.where(np.isfinite(x), np.sign(x), x)
    ax = np.array([a], data.draw(st.sampled_from([np.int32, np.int64]), label="axis_dtype"))
    out_shape = tuple(d for i, d in enumerate(shape) if i != a % len(shape))
    model = single_op_model(
        op,
        [T(shape, dtype), T.const(ax) if axis_const else T(ax.shape, ax.dtype)],
        [T(out_shape, out_dtype)],
        {"output_type": 2 if out_dtype == np.int32 else 4},
    )
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    assert_close(ours, theirs)


NAN_ROWS = [
    [np.nan, 1, 2],
    [1, np.nan, 0.5],
    [0, 5, np.nan, 7, np.nan, 9],
    [np.nan, np.nan, 1],
    [np.nan, np.nan, np.nan],
    [np.nan, -np.inf, np.inf, 2, np.nan],
    [-0.0, 0.0, np.nan],
    [np.nan, 0.0, -0.0, np.nan, -1.0],
    [1, 2, np.nan, 3],
    [np.nan, np.nan, 5, 8, 2],
    [np.nan, np.nan, 5, 8],
    [3, np.nan, 1, 2, 9, 9, 9, 9],
    [1, 5, np.nan, 9, 0, 6, np.nan, 2, np.nan],
    [np.nan, 1, 2, 3, np.nan, 4, 5, 6, 7],
    [1, 2, 3, 4, np.nan, 0, 0, 0],
]


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("last", [False, True], ids=["axis0", "last-axis"])
@pytest.mark.parametrize("row", NAN_ROWS, ids=str)
def test_arg_max_min_nan(op, last, row):
    """Along a non-last axis NaN never wins and a leading NaN is replaced (reference/arg_min_max.h). Along the
    last axis (inner size 1) the x86 wheel's NEON_2_SSE-vectorized kernel folds 4 lanes: ARG_MAX [1, 2, NaN, 3]
    gives 1 there, [NaN, NaN, 5, 8, 2] gives 4 (see ArgMaxMin)."""
    x = np.array([row, row[::-1]], np.float32)
    x, axis = (x, 1) if last else (x.T, 0)
    model = single_op_model(
        op, [T(x.shape), T.const(np.array([axis], np.int32))], [T((2,), np.int32)], {"output_type": 2}
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


NAN_POOL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 3.0e38, -3.0e38], np.float32)


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("out_dtype", [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
@given(
    n=st.integers(1, 13),
    rows=st.integers(1, 300),
    trailing=st.integers(0, 2),
    axis_const=st.booleans(),
    nan_rate=st.sampled_from([0.1, 0.3, 0.6, 0.9]),
    seed=st.integers(0, 2**31 - 1),
)
def test_arg_max_min_nan_last_axis(op, out_dtype, n, rows, trailing, axis_const, nan_rate, seed):
    """Inner size 1 (last axis, or only size-1 axes after it): many rows of NaN / inf / -0.0 / ties per model,
    axis lengths below 4, exactly 4k and with a tail, so every lane / fold / tail case meets the oracle."""
    rng = np.random.default_rng(seed)
    x = rng.choice(NAN_POOL, size=(rows, n))
    x[rng.random(x.shape) < nan_rate] = np.nan
    x = x.reshape((rows, n) + (1,) * trailing)
    ax = np.array([1], np.int32)
    model = single_op_model(
        op,
        [T(x.shape), T.const(ax) if axis_const else T(ax.shape, np.int32)],
        [T((rows,) + (1,) * trailing, out_dtype)],
        {"output_type": 2 if out_dtype == np.int32 else 4},
    )
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    assert_close(ours, theirs)


# -- CUMSUM ------------------------------------------------------------------------------------------------
TOLERANCE = {"CUMSUM": 0.0}  # added one after the other in the kernel's order: exact


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64], ids=lambda d: f"cumsum-{np.dtype(d).name}")
@given(
    data=st.data(),
    shape=shapes(1, 5, max_dim=5),
    exclusive=st.booleans(),
    reverse=st.booleans(),
    axis_const=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_cumsum(dtype, data, shape, exclusive, reverse, axis_const, seed):
    if not axis_const:
        assume(0 not in shape)
    x = values(np.random.default_rng(seed), shape, dtype, data.draw(regimes(dtype), label="regime"))
    ax = np.array(data.draw(st.integers(-len(shape), len(shape) - 1), label="axis"), np.int32)
    model = single_op_model(
        "CUMSUM",
        [T(shape, dtype), T.const(ax) if axis_const else T((), np.int32)],
        [T(shape, dtype)],
        {"exclusive": exclusive, "reverse": reverse},
    )
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    assert_close(ours, theirs, rtol_each=TOLERANCE["CUMSUM"])
