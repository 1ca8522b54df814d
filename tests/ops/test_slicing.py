"""STRIDED_SLICE, SPLIT, SPLIT_V, GATHER, SLICE (litert_py/ops/slicing.py, strided_slice_logic.py) against the
oracle (all registered by BUILTIN_REF): one table (CASES) drives the differential test, each entry drawing a model
and its inputs with hypothesis; data movement is exact for every dtype. Error paths: what both reject."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import InvokeError, PrepareError
from tests.ops._diff import ALL_DTYPES, check_both
from tests.ops._movement import OUT_OF_BOUNDS_REFUSED, WIDE_DTYPES, _i32, _q, check_rejected, seeds, shapes
from tests.oracle import T, run_litert, run_ours, single_op_model
from tests.values import values

#: Models litert_py refuses at prepare where LiteRT reads or writes out of bounds (uninitialized output).
STRIDED_SLICE_REFUSED = ("selects nothing", "selects ", "needs one end value per effective dimension")


@st.composite
def strided_slice(draw, masks=True):
    name = draw(st.sampled_from(list(ALL_DTYPES)))
    dt = ALL_DTYPES[name]
    shape = draw(shapes(max_rank=4, min_side=0, max_side=5))
    rank = len(shape)
    n = draw(st.integers(1, rank + (1 if masks else 0)))
    index = st.integers(-7, 7) | st.sampled_from([-(2**31), 2**31 - 1])  # extremes clamp like any other
    begin = draw(st.lists(index, min_size=n, max_size=n))
    end = draw(st.lists(index, min_size=n, max_size=n))
    strides = draw(st.lists(st.sampled_from([1, 1, 2, 3, -1, -2, -3]), min_size=n, max_size=n))
    full = (1 << n) - 1
    opts = {
        "begin_mask": draw(st.integers(0, full)),
        "end_mask": draw(st.integers(0, full)),
        "shrink_axis_mask": draw(st.integers(0, full)) if draw(st.booleans()) else 0,
    }
    if masks:
        opts["new_axis_mask"] = draw(st.integers(0, full)) if draw(st.booleans()) else 0
        opts["ellipsis_mask"] = (1 << draw(st.integers(0, n - 1))) if draw(st.booleans()) else 0
        opts["offset"] = draw(st.booleans()) and not opts["ellipsis_mask"] and not opts["new_axis_mask"]
        if opts["offset"]:  # end is a size there: keep begin + end inside int32
            begin = [min(abs(b), 7) for b in begin]
            end = [min(abs(e), 7) for e in end]
    ins = [
        T(shape, dt),
        T.const(np.array(begin, np.int32)),
        T.const(np.array(end, np.int32)),
        T.const(np.array(strides, np.int32)),
    ]
    model = single_op_model("STRIDED_SLICE", ins, [T((1,), dt)], opts)
    rng = np.random.default_rng(draw(seeds))
    return model, [values(rng, shape, dt)], STRIDED_SLICE_REFUSED


@st.composite
def split(draw, v=False):
    name = draw(st.sampled_from(["float32", "uint8", "int8", "int16", "int32", "int64"]))
    dt = ALL_DTYPES[name]
    shape = list(draw(shapes(max_rank=4, max_side=6)))
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    n = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(seeds))
    if v:
        sizes = [draw(st.integers(0, 3)) for _ in range(n)]
        shape[axis] = sum(sizes)
        outs = list(sizes)
        if draw(st.booleans()):
            sizes[draw(st.integers(0, n - 1))] = -1
        sdt = draw(st.sampled_from([np.int32, np.int64]))
        ins = [T(shape, dt), T.const(np.array(sizes, sdt)), T.const(np.array([axis], np.int32))]
        op = "SPLIT_V"
    else:
        size = draw(st.integers(0, 3))
        shape[axis] = size * n
        outs = [size] * n
        ins = [T.const(np.array(axis, np.int32)), T(shape, dt)]
        op = "SPLIT"
    out_shapes = [tuple(s if k != axis % rank else o for k, s in enumerate(shape)) for o in outs]
    model = single_op_model(op, ins, [T(s, dt) for s in out_shapes], {"num_splits": n})
    return model, [values(rng, shape, dt)], ()


@st.composite
def gather(draw):
    name = draw(st.sampled_from(list(ALL_DTYPES)))
    dt = ALL_DTYPES[name]
    shape = draw(shapes(min_rank=1, max_rank=1 if name == "string" else 4, max_side=4))
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    bd = draw(st.integers(0, axis))
    pshape = shape[:bd] + draw(shapes(min_rank=0, max_rank=2, max_side=3))
    idt = draw(st.sampled_from([np.int16, np.int32, np.int64]))
    rng = np.random.default_rng(draw(seeds))
    idx = rng.integers(0, shape[axis], pshape).astype(idt)
    opts = {
        "axis": axis - rank if draw(st.booleans()) else axis,
        "batch_dims": bd - len(pshape) if bd and draw(st.booleans()) else bd,
    }
    out = shape[:axis] + pshape[bd:] + shape[axis + 1 :]
    const_idx = draw(st.booleans())
    ins = [T(shape, dt), T.const(idx) if const_idx else T(pshape, idt)]
    model = single_op_model("GATHER", ins, [T(out, dt)], opts)
    data = [values(rng, shape, dt)] + ([] if const_idx else [idx])
    return model, data, ()


@st.composite
def slice_(draw):
    name = draw(st.sampled_from(list(WIDE_DTYPES)))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(min_rank=1, max_rank=6, min_side=0 if draw(st.booleans()) else 1, max_side=3))
    begin = [draw(st.integers(0, d)) for d in shape]
    size = [draw(st.sampled_from([-1, draw(st.integers(0, d - b))])) for d, b in zip(shape, begin)]
    if draw(st.integers(0, 5)) == 0:  # out of range: both refuse
        k = draw(st.integers(0, len(shape) - 1))
        begin[k], size[k] = draw(st.sampled_from([(shape[k], 1), (0, shape[k] + 1), (0, -2), (-1, 1)]))
    idt = draw(st.sampled_from([np.int32, np.int64]))
    b, z = np.array(begin, idt), np.array(size, idt)
    q = _q(name, draw)
    rng = np.random.default_rng(draw(seeds))
    x = values(rng, shape, dt)
    if draw(st.booleans()) or name == "string":
        out = tuple(d - a if n == -1 else n for d, a, n in zip(shape, begin, size))
        if draw(st.integers(0, 5)) == 0:  # a declared ranked shape that differs: both refuse
            out = out[:-1] + (out[-1] + 1,)
        model = single_op_model(
            "SLICE", [T(shape, dt, q=q), T.const(b), T.const(z)], [T(out if draw(st.booleans()) else (), dt, q=q)]
        )
        return model, [x], OUT_OF_BOUNDS_REFUSED
    # LiteRT keeps a declared ranked output shape of a SLICE with non-constant begin/size and checks the
    # result against it at eval; a rank-0 declaration (as converters write for unknown shapes) makes it
    # dynamic there too, which is what litert_py always does for this case.
    out = tuple(d - a if n == -1 else n for d, a, n in zip(shape, begin, size))
    out = draw(st.sampled_from([(), out, (1,) * len(shape)]))
    model = single_op_model("SLICE", [T(shape, dt, q=q), T(b.shape, idt), T(z.shape, idt)], [T(out, dt, q=q)])
    return model, [x, b, z], OUT_OF_BOUNDS_REFUSED


CASES = {
    "strided_slice-basic": strided_slice(masks=False),
    "strided_slice-masks": strided_slice(),
    "split-any": split(),
    "split_v-any": split(v=True),
    "gather-any": gather(),
    "slice-any": slice_(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_movement(case, data):
    model, inputs, skip = data.draw(CASES[case])
    check_both(model, inputs, skip_ours=skip)


@pytest.mark.parametrize("bad", [4, -1, 100])
def test_gather_out_of_range_raises(bad):
    model = single_op_model("GATHER", [T((4, 3)), T((2,), np.int32)], [T((2, 3))], {"axis": 0})
    inputs = [np.zeros((4, 3), np.float32), np.array([1, bad], np.int32)]
    with pytest.raises(RuntimeError, match="gather index out of bounds"):
        run_litert(model, inputs)
    with pytest.raises(InvokeError, match="gather index out of bounds"):
        run_ours(model, inputs)


@pytest.mark.parametrize("pshape", [(), (1,), (1, 1)])
@pytest.mark.parametrize(
    ("shape", "axis", "dtype"),
    [((20, 1, 16), 0, np.float32), ((2, 5, 3), 1, np.int8), ((3, 4), -1, np.int64), ((6,), 0, np.bool_)],
)
def test_gather_one_index_every_position(shape, axis, dtype, pshape):
    """One non-constant index (an RNN step the converter unrolls into a WHILE body: GATHER(sequence, step)):
    GatherOne equals BUILTIN_REF at every position of the axis and fails the invoke as it does past either end."""
    from tests.ops._single_step import both_with_step, invoke_both

    out = tuple(shape[: axis % len(shape)]) + pshape + tuple(shape[axis % len(shape) + 1 :])
    model = single_op_model("GATHER", [T(shape, dtype), T(pshape, np.int32)], [T(out, dtype)], {"axis": axis})
    theirs, ours, step = both_with_step(model)
    assert type(step).__name__ == "GatherOne"
    x = values(np.random.default_rng(0), shape, np.dtype(dtype))
    for i in range(shape[axis]):
        got, want = invoke_both(theirs, ours, [x, np.full(pshape, i, np.int32)])
        assert np.array_equal(got, want), i
    for bad in (-1, shape[axis]):
        with pytest.raises(RuntimeError, match="gather index out of bounds"):
            invoke_both(theirs, ours, [x, np.full(pshape, bad, np.int32)])
        with pytest.raises(InvokeError, match="gather index out of bounds"):
            ours.set_tensor(ours.get_input_details()[1]["index"], np.full(pshape, bad, np.int32))
            ours.invoke()
        got, want = invoke_both(theirs, ours, [x, np.full(pshape, 0, np.int32)])  # both still usable
        assert np.array_equal(got, want)


@pytest.mark.parametrize(
    ("shape", "pshape", "axis", "batch_dims", "idx", "ok"),
    [
        ((0, 4, 3), (2,), 1, 0, [1, 7], True),  # empty outer size: the copy loop never tests the upper end
        ((0, 4, 3), (2,), 1, 0, [1, -1], False),  # a negative index fails first, whatever the shapes
        ((4, 0), (2,), 0, 0, [1, 7], False),  # empty inner size: the loop still runs over the indices
        ((0, 3), (1,), 0, 0, [0], False),  # an empty gathered axis
        ((2, 0, 4), (2, 2), 2, 1, [[1, 9], [0, 1]], True),  # batch_dims: empty outer size
        ((2, 0, 4), (2, 2), 2, 1, [[1, -1], [0, 1]], False),
    ],
)
def test_gather_empty_sizes_and_bad_indices(shape, pshape, axis, batch_dims, idx, ok):
    """Indices past the end of a gather with an empty outer size: LiteRT returns the empty result (reference_ops
    Gather tests the upper end inside its copy loop, gather.cc the negatives before it); both agree either way."""
    out = shape[:axis] + pshape[batch_dims:] + shape[axis + 1 :]
    model = single_op_model(
        "GATHER", [T(shape), T(pshape, np.int32)], [T(out)], {"axis": axis, "batch_dims": batch_dims}
    )
    inputs = [np.zeros(shape, np.float32), np.array(idx, np.int32)]
    if ok:
        (want,), (got,) = run_litert(model, inputs), run_ours(model, inputs)
        assert got.shape == want.shape == out
    else:
        with pytest.raises(RuntimeError, match="gather index out of bounds"):
            run_litert(model, inputs)
        with pytest.raises(InvokeError, match="gather index out of bounds"):
            run_ours(model, inputs)


def test_gather_constant_out_of_range_fails_at_prepare():
    """All inputs constant: both runtimes gather at prepare, so the bad index fails allocate_tensors."""
    model = single_op_model(
        "GATHER", [T.const(np.zeros((4, 3), np.float32)), T.const(np.array([5], np.int32))], [T((1, 3))], {"axis": 0}
    )
    with pytest.raises(RuntimeError, match="gather index out of bounds"):
        run_litert(model, [])
    with pytest.raises(PrepareError, match="gather index out of bounds"):
        run_ours(model, [])


REJECTED = {
    "strided_slice-zero-stride": (
        "STRIDED_SLICE",
        [T((4,)), T.const(np.array([0], np.int32)), T.const(np.array([4], np.int32)), T.const(np.array([0], np.int32))],
        [T((4,))],
        None,
    ),
    "strided_slice-int64-begin": (
        "STRIDED_SLICE",
        [T((4,)), T.const(np.array([0], np.int64)), T.const(np.array([4], np.int32)), T.const(np.array([1], np.int32))],
        [T((4,))],
        None,
    ),
    "split-uneven": ("SPLIT", [T.const(np.array(0, np.int32)), T((5,))], [T((2,)), T((2,))], {"num_splits": 2}),
    "split-bool": (
        "SPLIT",
        [T.const(np.array(0, np.int32)), T((4,), np.bool_)],
        [T((2,), np.bool_)] * 2,
        {"num_splits": 2},
    ),
    "split-axis": ("SPLIT", [T.const(np.array(2, np.int32)), T((4,))], [T((4,))], {"num_splits": 1}),
    "split_v-two-minus-one": (
        "SPLIT_V",
        [T((4,)), T.const(np.array([-1, -1], np.int32)), T.const(np.array([0], np.int32))],
        [T((2,)), T((2,))],
        {"num_splits": 2},
    ),
    "split_v-sum": (
        "SPLIT_V",
        [T((4,)), T.const(np.array([1, 2], np.int32)), T.const(np.array([0], np.int32))],
        [T((1,)), T((2,))],
        {"num_splits": 2},
    ),
    "split_v-sum-minus-one": (
        "SPLIT_V",
        [T((4,)), T.const(np.array([5, -1], np.int32)), T.const(np.array([0], np.int32))],
        [T((4,)), T((1,))],
        {"num_splits": 2},
    ),
    "gather-float-indices": ("GATHER", [T((4,)), T((2,), np.float32)], [T((2,))], {"axis": 0}),
    "gather-axis": ("GATHER", [T((4,)), T((2,), np.int32)], [T((2,))], {"axis": 1}),
    "gather-batch-dims": ("GATHER", [T((2, 4)), T((3, 1), np.int32)], [T((2, 3))], {"axis": 1, "batch_dims": 1}),
    "gather-string-2d": ("GATHER", [T((2, 2), np.bytes_), T((1,), np.int32)], [T((1, 2), np.bytes_)], {"axis": 0}),
    "slice-past-end": ("SLICE", [T((2, 3)), _i32([1, 1]), _i32([2, 1])], [T((2, 1))], None),
    "slice-size-minus-two": ("SLICE", [T((2, 3)), _i32([0, 0]), _i32([1, -2])], [T((1, 1))], None),
    "slice-negative-begin": ("SLICE", [T((2, 3)), _i32([-1, 0]), _i32([1, 1])], [T((1, 1))], None),
    "slice-mixed-types": ("SLICE", [T((2, 3)), _i32([0, 0]), T.const(np.array([1, 1], np.int64))], [T((1, 1))], None),
    "slice-declared-shape": ("SLICE", [T((2, 3)), _i32([0, 0]), _i32([1, 2])], [T((2, 2))], None),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_movement_rejected_at_prepare(case):
    check_rejected(*REJECTED[case])
