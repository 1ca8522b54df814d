"""MEAN against the oracle: float32, int32, int64; constant and non-constant axes; keep_dims; odd axis lists."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.ops._values import assert_matches, regimes, shapes, values
from tests.oracle import T, oracle, run_both, single_op_model

#: float tolerance per op, relative to the largest input magnitude and multiplied by the reduction length.
#: MEAN is exact: we add in float32 in the reference kernel's order (row-major over the reduced elements) and
#: divide once, so the project's usual 1e-5 x length for accumulations is not needed.
TOLERANCE = {"MEAN": 0.0}

DTYPES = [np.float32, np.int32, np.int64]


@st.composite
def axes_for(draw, rank: int):
    """Axis lists LiteRT accepts: any length (repeats and negatives included), possibly empty."""
    if rank == 0:
        return draw(st.lists(st.integers(-1, 0), max_size=2))
    return draw(st.lists(st.integers(-rank, rank - 1), max_size=rank + 1))


def _expected_shape(shape, axes, keep):
    resolved = {a % len(shape) for a in axes} if shape else set()
    if keep:
        return tuple(1 if i in resolved else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in resolved)


def _check_mean(dtype, data, shape, keep, axis_const, seed):
    axes = data.draw(axes_for(len(shape)), label="axes")
    if not axes and 0 in shape:
        axes = [0]  # the oracle's set_tensor fails on an empty input when the axis list is empty too
    x = values(np.random.default_rng(seed), shape, dtype, data.draw(regimes(dtype), label="regime"))
    ax = np.array(axes, np.int32)
    axis_t = T.const(ax) if axis_const else T(ax.shape, np.int32)
    model = single_op_model("MEAN", [T(shape, dtype), axis_t], [T(_expected_shape(shape, axes, keep), dtype)],
                            {"keep_dims": keep})
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    finite = np.abs(x[np.isfinite(x)]) if np.dtype(dtype).kind == "f" else np.zeros(0)
    n = max(x.size // max(theirs[0].size, 1), 1)
    atol = TOLERANCE["MEAN"] * n * (float(finite.max()) if finite.size else 0.0)
    assert_matches(ours, theirs, rtol=TOLERANCE["MEAN"] if atol else 0.0, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: f"mean-{np.dtype(d).name}")
@given(data=st.data(), shape=shapes(0, 6, max_dim=5), keep=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_mean(dtype, data, shape, keep, seed):
    _check_mean(dtype, data, shape, keep, True, seed)


@given(data=st.data(), shape=shapes(1, 4, max_dim=4), keep=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_mean_axes_not_constant(data, shape, keep, seed):
    assume(0 not in shape)  # LiteRT's get_tensor fails ("Invalid tensor size") on an empty dynamic output
    _check_mean(np.float32, data, shape, keep, False, seed)


@pytest.mark.parametrize("case", [
    ((2, 3, 4), [1], False), ((2, 3, 4), [-1, 2, 0], True), ((2, 3, 4), [], False), ((), [0], False),
    ((2, 0, 4), [1], False), ((2, 0, 4), [2], True), ((1, 7, 7, 16), [1, 2], True), ((5,), [0, 0, -1], False),
    ((3, 6, 7), [1, 2], False), ((8, 7, 4, 8), [1, 2, 3], True), ((3, 300), [1], False), ((300,), [0], False),
], ids=lambda c: f"{c[0]}-{c[1]}-{'keep' if c[2] else 'drop'}")
def test_mean_shapes(case):
    shape, axes, keep = case
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    model = single_op_model("MEAN", [T(shape), T.const(np.array(axes, np.int32))],
                            [T(_expected_shape(shape, axes, keep))], {"keep_dims": keep})
    ours, theirs = run_both(model, [x])
    assert_matches(ours, theirs)  # same order of float32 additions: exact


def test_mean_int_truncates_toward_zero():
    x = np.array([[-1, -1, -2], [1, 1, 2], [-7, 0, 0]], np.int32)
    model = single_op_model("MEAN", [T((3, 3), np.int32), T.const(np.array([1], np.int32))], [T((3,), np.int32)],
                            {"keep_dims": False})
    ours, theirs = run_both(model, [x])
    assert_matches(ours, theirs)
    np.testing.assert_array_equal(ours[0], [-1, 1, -2])


# -- what LiteRT rejects ----------------------------------------------------------------------------
REJECTS = [  # (id, input, axis, output)
    ("axis-out-of-range", T((2, 3)), T.const(np.array([2], np.int32)), T((2,))),
    ("axis-below-range", T((2, 3)), T.const(np.array([-3], np.int32)), T((2,))),
    ("axis-int64", T((2, 3)), T.const(np.array([1], np.int64)), T((2,))),
    ("float16", T((2, 3), np.float16), T.const(np.array([1], np.int32)), T((2,), np.float16)),
    ("bool", T((2, 3), np.bool_), T.const(np.array([1], np.int32)), T((2,), np.bool_)),
]


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: c[0])
def test_rejected(case):
    _, x, axis, out = case
    model = single_op_model("MEAN", [x, axis], [out], {"keep_dims": False})
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    LiteRT, OpResolverType = oracle()
    ref = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    with pytest.raises(RuntimeError):
        ref.allocate_tensors()
        ref.set_tensor(ref.get_input_details()[0]["index"], np.zeros(x.shape, x.dtype))
        ref.invoke()
