"""SEGMENT_SUM and UNSORTED_SEGMENT_SUM / PROD / MAX / MIN against the oracle.

BUILTIN_REF does not register SEGMENT_SUM, so it is compared with the default kernels
(BUILTIN_WITHOUT_DEFAULT_DELEGATES); the unsorted ones run under BUILTIN_REF. Both reduce rows in id order,
so every result is exact (floats included).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import InvokeError, PrepareError
from tests.ops._diff import chain_model, check_both
from tests.oracle import T, run_litert, run_ours, single_op_model
from tests.values import values

TOLERANCE = {
    "SEGMENT_SUM": 0.0,
    "UNSORTED_SEGMENT_SUM": 0.0,
    "UNSORTED_SEGMENT_PROD": 0.0,
    "UNSORTED_SEGMENT_MAX": 0.0,
    "UNSORTED_SEGMENT_MIN": 0.0,
}
RESOLVER = {"SEGMENT_SUM": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}

seeds = st.integers(0, 2**32 - 1)


def _data(draw, rng, shape):
    dt = draw(st.sampled_from([np.float32, np.int32]))
    x = values(rng, shape, dt)
    if dt == np.int32 and draw(st.booleans()):
        x = (x % 7 - 3).astype(np.int32)  # small values: products stay meaningful
    return dt, x


@st.composite
def segment_sum(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 8))
    inner = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    dt, x = _data(draw, rng, (n,) + inner)
    ids = np.cumsum(np.r_[0, rng.integers(0, 2, n - 1)]).astype(np.int32)
    const_ids = draw(st.booleans())
    ins = [T(x.shape, dt), T.const(ids) if const_ids else T(ids.shape, np.int32)]
    out = (int(ids[-1]) + 1,) + inner
    model = (
        single_op_model("SEGMENT_SUM", ins, [T(out, dt)])
        if const_ids
        else chain_model("SEGMENT_SUM", ins, 1, out_dtype=dt)
    )
    return model, [x] + ([] if const_ids else [ids]), RESOLVER["SEGMENT_SUM"]


@st.composite
def unsorted(draw, op):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 8))
    inner = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    dt, x = _data(draw, rng, (n,) + inner)
    num = draw(st.integers(1, 6))
    ids = rng.integers(-1 if draw(st.booleans()) else 0, num, n).astype(np.int32)  # -1: skipped; some empty
    kind = draw(st.sampled_from(["const", "ids-input", "num-input"]))
    num_arr = np.array(num, np.int32) if draw(st.booleans()) else np.array([num], np.int32)
    ins = [
        T(x.shape, dt),
        T.const(ids) if kind != "ids-input" else T(ids.shape, np.int32),
        T.const(num_arr) if kind != "num-input" else T(num_arr.shape, np.int32),
    ]
    inputs = [x] + ([ids] if kind == "ids-input" else []) + ([num_arr] if kind == "num-input" else [])
    model = (
        single_op_model(op, ins, [T((num,) + inner, dt)]) if kind == "const" else chain_model(op, ins, 1, out_dtype=dt)
    )
    return model, inputs, RESOLVER.get(op, "BUILTIN_REF")


CASES = {
    "segment_sum-any": segment_sum(),
    "unsorted_segment_sum-any": unsorted("UNSORTED_SEGMENT_SUM"),
    "unsorted_segment_prod-any": unsorted("UNSORTED_SEGMENT_PROD"),
    "unsorted_segment_max-any": unsorted("UNSORTED_SEGMENT_MAX"),
    "unsorted_segment_min-any": unsorted("UNSORTED_SEGMENT_MIN"),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_segment(case, data):
    model, inputs, resolver = data.draw(CASES[case])
    check_both(model, inputs, resolver=resolver)


@pytest.mark.parametrize(
    "op,identity",
    [
        ("UNSORTED_SEGMENT_SUM", 0.0),
        ("UNSORTED_SEGMENT_PROD", 1.0),
        ("UNSORTED_SEGMENT_MAX", -np.finfo(np.float32).max),
        ("UNSORTED_SEGMENT_MIN", np.finfo(np.float32).max),
    ],
)
def test_unsorted_empty_segment_identity(op, identity):
    model = single_op_model(op, [T((2,)), T.const(np.array([0, 0], np.int32)), T.const(np.int32(3))], [T((3,))])
    ours = check_both(model, [np.array([2.0, 3.0], np.float32)])
    assert ours[0][1] == identity and ours[0][2] == identity


# -- errors ----------------------------------------------------------------------------------------------------


ERRORS = {
    "segment_sum-not-from-zero": ("SEGMENT_SUM", [T((2,)), T.const(np.array([1, 1], np.int32))], [T((2,))]),
    "segment_sum-gap": ("SEGMENT_SUM", [T((3,)), T.const(np.array([0, 2, 2], np.int32))], [T((3,))]),
    "segment_sum-int8": ("SEGMENT_SUM", [T((2,), np.int8), T.const(np.array([0, 1], np.int32))], [T((2,), np.int8)]),
    "unsorted-id-too-big": (
        "UNSORTED_SEGMENT_SUM",
        [T((2,)), T.const(np.array([0, 3], np.int32)), T.const(np.int32(3))],
        [T((3,))],
    ),
    "unsorted-int64-ids": (
        "UNSORTED_SEGMENT_MAX",
        [T((2,)), T.const(np.array([0, 1], np.int64)), T.const(np.int32(3))],
        [T((3,))],
    ),
    "unsorted-num-vector": (
        "UNSORTED_SEGMENT_MIN",
        [T((2,)), T.const(np.array([0, 1], np.int32)), T.const(np.array([3, 3], np.int32))],
        [T((3,))],
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_prepare_errors(case):
    op, ins, outs = ERRORS[case]
    model = single_op_model(op, ins, outs)
    inputs = [np.zeros(t.shape, t.dtype) for t in ins if t.data is None]
    with pytest.raises(PrepareError):
        run_ours(model, inputs)
    with pytest.raises((RuntimeError, ValueError)):
        run_litert(model, inputs, RESOLVER.get(op, "BUILTIN_REF"))


def test_dynamic_ids_checked_at_eval():
    model = chain_model("UNSORTED_SEGMENT_SUM", [T((2,)), T((2,), np.int32), T.const(np.int32(2))], 1)
    inputs = [np.ones(2, np.float32), np.array([0, 2], np.int32)]
    with pytest.raises(RuntimeError):
        run_litert(model, inputs)
    with pytest.raises(InvokeError, match="not below num_segments"):
        run_ours(model, inputs)


@pytest.mark.parametrize(
    "op", ["UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN", "UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_PROD"]
)
def test_unsorted_nan_data(op):
    """std::max / std::min never take a NaN operand (the comparison is false); sums and products do."""
    model = single_op_model(op, [T((4,)), T.const(np.array([0, 0, 1, 1], np.int32)), T.const(np.int32(3))], [T((3,))])
    ours = check_both(model, [np.array([np.nan, 2.0, 1.0, np.nan], np.float32)])
    assert ours is not None
