"""RESHAPE, SQUEEZE, EXPAND_DIMS, SHAPE, RANK, FILL, RANGE, BROADCAST_TO, BROADCAST_ARGS against the oracle,
for every dtype LiteRT accepts (strings included).

One table (CASES) drives the differential test; every op copies bytes or writes integers, and float RANGE
accumulates exactly as LiteRT does, so every comparison is exact. Every op here is registered by
ai-edge-litert's BUILTIN_REF resolver (BROADCAST_TO from version 2), so no comparison needs the
BUILTIN_WITHOUT_DEFAULT_DELEGATES fallback.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from tests.ops._diff import ALL_DTYPES, chain_model, check_both
from tests.oracle import T, quant, run_litert, run_ours, single_op_model
from tests.values import values

#: Float tolerance per op: all exact (bytes are copied; RANGE adds in float32 in LiteRT's order).
TOLERANCE = {
    "RESHAPE": 0.0,
    "SQUEEZE": 0.0,
    "EXPAND_DIMS": 0.0,
    "SHAPE": 0.0,
    "RANK": 0.0,
    "FILL": 0.0,
    "RANGE": 0.0,
    "BROADCAST_TO": 0.0,
    "BROADCAST_ARGS": 0.0,
}

seeds = st.integers(0, 2**32 - 1)
dtype_names = st.sampled_from(list(ALL_DTYPES))
WIDE_DTYPES = {**ALL_DTYPES, "uint16": np.uint16, "uint32": np.uint32, "float64": np.float64}


def shapes(min_rank=0, max_rank=4, min_side=1, max_side=4):
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def _quant(name, draw):
    if name in ("int8", "uint8") and draw(st.booleans()):
        return quant(0.5, 3)
    if name == "int16" and draw(st.booleans()):
        return quant(0.25, 0)
    return None


def _factor(draw, n: int) -> list[int]:
    """A random shape with ``n`` elements."""
    dims = []
    while n > 1:
        divisors = [d for d in range(2, n + 1) if n % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        n //= d
    dims += [1] * draw(st.integers(0, 2))
    return draw(st.permutations(dims)) if dims else []


@st.composite
def reshape(draw):
    name = draw(dtype_names)
    dt = ALL_DTYPES[name]
    shape = draw(shapes(min_side=0 if draw(st.booleans()) else 1))
    n = int(np.prod(shape))
    new = list(_factor(draw, n)) if n else [0] + list(draw(shapes(max_rank=2)))
    if new and draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    q = _quant(name, draw)
    source = draw(st.sampled_from(["tensor", "options", "int64-tensor-falls-back-to-options"]))
    if source == "tensor":
        ins = [T(shape, dt, q=q), T.const(np.array(new, np.int32))]
        opts = None
    elif source == "options":
        ins = [T(shape, dt, q=q)]
        opts = {"new_shape": new}
    else:
        ins = [T(shape, dt, q=q), T.const(np.array(new, np.int64))]
        opts = {"new_shape": new}
    model = single_op_model("RESHAPE", ins, [T((1,), dt, q=q)], opts)
    return model, [values(np.random.default_rng(draw(seeds)), shape, dt)]


@st.composite
def squeeze(draw):
    name = draw(dtype_names)
    dt = ALL_DTYPES[name]
    shape = draw(st.lists(st.sampled_from([1, 1, 2, 3]), min_size=1, max_size=6).map(tuple))
    ones = [i for i, d in enumerate(shape) if d == 1]
    dims = []
    if ones and draw(st.booleans()):
        dims = draw(st.lists(st.sampled_from(ones), min_size=1, max_size=len(ones)))
        dims = [d - len(shape) if draw(st.booleans()) else d for d in dims]
    q = _quant(name, draw)
    model = single_op_model("SQUEEZE", [T(shape, dt, q=q)], [T((1,), dt, q=q)], {"squeeze_dims": dims})
    return model, [values(np.random.default_rng(draw(seeds)), shape, dt)]


@st.composite
def expand_dims(draw):
    name = draw(dtype_names)
    dt = ALL_DTYPES[name]
    shape = draw(shapes(max_rank=4))
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    adt = draw(st.sampled_from([np.int32, np.int64]))
    q = _quant(name, draw)
    model = single_op_model("EXPAND_DIMS", [T(shape, dt, q=q), T.const(np.array([axis], adt))], [T((1,), dt, q=q)])
    return model, [values(np.random.default_rng(draw(seeds)), shape, dt)]


@st.composite
def dynamic(draw):
    """The shape / axis is a graph input: the output shape is only known at invoke."""
    rng = np.random.default_rng(draw(seeds))
    name = draw(st.sampled_from([k for k in ALL_DTYPES if k != "string"]))
    dt = ALL_DTYPES[name]
    shape = draw(shapes(min_rank=1))
    x = values(rng, shape, dt)
    if draw(st.booleans()):
        new = np.array(_factor(draw, int(np.prod(shape))) or [1], np.int32)
        if draw(st.booleans()):
            new[0] = -1
        return chain_model("RESHAPE", [T(shape, dt), T(new.shape, np.int32)], 1), [x, new]
    axis = np.array([draw(st.integers(-len(shape) - 1, len(shape)))], np.int32)
    return chain_model("EXPAND_DIMS", [T(shape, dt), T((1,), np.int32)], 1), [x, axis]


@st.composite
def shape_rank(draw):
    name = draw(st.sampled_from(list(WIDE_DTYPES)))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(min_side=0))
    x = values(np.random.default_rng(draw(seeds)), shape, dt)
    if draw(st.booleans()):
        return single_op_model("RANK", [T(shape, dt)], [T((), np.int32)]), [x]
    out = draw(st.sampled_from([np.int32, np.int64]))
    opts = {"out_type": 2 if out is np.int32 else 4}
    return single_op_model("SHAPE", [T(shape, dt)], [T((len(shape),), out)], opts), [x]


@st.composite
def fill(draw):
    name = draw(st.sampled_from(list(WIDE_DTYPES)))
    dt = WIDE_DTYPES[name]
    rng = np.random.default_rng(draw(seeds))
    dims = np.array(draw(shapes(min_side=0)), draw(st.sampled_from([np.int32, np.int64])))
    q = _quant(name, draw)
    v = values(rng, (), dt)
    if name == "string":  # ai-edge-litert's set_tensor garbles a rank-0 string input: a constant value
        return chain_model("FILL", [T(dims.shape, dims.dtype), T.const(v, dtype=dt)], 1, out_dtype=dt), [dims]
    if draw(st.booleans()):  # constant dims: static shape
        out_q = q if draw(st.integers(0, 4)) else quant(0.5, 3)  # sometimes differing params: both refuse
        return single_op_model("FILL", [T.const(dims), T((), dt, q=q)], [T(tuple(dims), dt, q=out_q)]), [v]
    return chain_model("FILL", [T(dims.shape, dims.dtype), T((), dt, q=q)], 1, out_dtype=dt, out_q=q), [dims, v]


@st.composite
def range_(draw):
    dt = draw(st.sampled_from([np.int32, np.int64, np.float32]))
    if dt is np.float32:
        num = st.floats(-50, 50).map(np.float32)
        delta = np.float32(draw(st.floats(0.05, 7)) * draw(st.sampled_from([1, -1])))
    else:
        num = st.integers(-50, 50)
        delta = draw(st.integers(1, 7)) * draw(st.sampled_from([1, -1]))
    start, limit = draw(num), draw(num)
    if (limit - start) * delta < 0:
        start, limit = limit, start
    vals = [np.array(v, dt) for v in (start, limit, delta)]
    const = draw(st.lists(st.booleans(), min_size=3, max_size=3))
    ins = [T.const(v) if c else T((), dt) for v, c in zip(vals, const)]
    feeds = [v for v, c in zip(vals, const) if not c]
    if all(const):  # constant-folded: still compare
        return single_op_model("RANGE", ins, [T((1,), dt)]), feeds
    return chain_model("RANGE", ins, 1, out_dtype=dt), feeds


@st.composite
def broadcast_to(draw):
    name = draw(st.sampled_from([k for k in WIDE_DTYPES if k != "string"]))
    dt = WIDE_DTYPES[name]
    target = draw(shapes(min_rank=0, max_rank=5, min_side=0 if draw(st.booleans()) else 1))
    k = draw(st.integers(0, len(target)))
    shape = tuple(d if draw(st.booleans()) else 1 for d in target[len(target) - k :])
    sdt = draw(st.sampled_from([np.int32, np.int64]))
    q = _quant(name, draw)
    x = values(np.random.default_rng(draw(seeds)), shape, dt)
    tv = np.array(target, sdt)
    if draw(st.booleans()):
        return single_op_model("BROADCAST_TO", [T(shape, dt, q=q), T.const(tv)], [T(target, dt, q=q)], version=2), [x]
    return single_op_model("BROADCAST_TO", [T(shape, dt, q=q), T(tv.shape, sdt)], [T((1,), dt, q=q)], version=2), [
        x,
        tv,
    ]


@st.composite
def broadcast_args(draw):
    sdt = draw(st.sampled_from([np.int32, np.int64]))
    target = draw(shapes(min_rank=0, max_rank=5, min_side=0 if draw(st.booleans()) else 1))
    a = [d if draw(st.booleans()) else 1 for d in target[len(target) - draw(st.integers(0, len(target))) :]]
    b = [d if draw(st.booleans()) else 1 for d in target[len(target) - draw(st.integers(0, len(target))) :]]
    a, b = np.array(a, sdt), np.array(b, sdt)
    model = single_op_model("BROADCAST_ARGS", [T(a.shape, sdt), T(b.shape, sdt)], [T((max(a.size, b.size),), sdt)])
    return model, [a, b]


CASES = {
    "shape_rank-any": shape_rank(),
    "fill-any": fill(),
    "range-int32-int64-float32": range_(),
    "broadcast_to-any": broadcast_to(),
    "broadcast_args-int32-int64": broadcast_args(),
    "reshape-any": reshape(),
    "squeeze-any": squeeze(),
    "expand_dims-any": expand_dims(),
    "dynamic-reshape-expand_dims": dynamic(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_shape_ops(case, data):
    model, inputs = data.draw(CASES[case])
    check_both(model, inputs)


def test_reshape_legacy_scalar_new_shape():
    """new_shape [0] in the options means a scalar (legacy converters)."""
    model = single_op_model("RESHAPE", [T((1, 1))], [T(())], {"new_shape": [0]})
    out = check_both(model, [np.array([[3.5]], np.float32)])
    assert out is not None and out[0].shape == ()


REJECTED = {
    "reshape-two-minus-one": ("RESHAPE", [T((2, 3)), T.const(np.array([-1, -1], np.int32))], None),
    "reshape-size-mismatch": ("RESHAPE", [T((2, 3)), T.const(np.array([4, 2], np.int32))], None),
    "reshape-negative": ("RESHAPE", [T((2, 3)), T.const(np.array([-2, -3], np.int32))], None),
    "reshape-options-mismatch": ("RESHAPE", [T((2, 3))], {"new_shape": [5]}),
    "squeeze-not-one": ("SQUEEZE", [T((2, 1))], {"squeeze_dims": [0]}),
    "squeeze-out-of-range": ("SQUEEZE", [T((2, 1))], {"squeeze_dims": [2]}),
    "squeeze-rank9": ("SQUEEZE", [T((1,) * 9)], None),
    "expand_dims-axis": ("EXPAND_DIMS", [T((2, 3)), T.const(np.array([3], np.int32))], None),
    "expand_dims-negative-axis": ("EXPAND_DIMS", [T((2, 3)), T.const(np.array([-4], np.int32))], None),
    "expand_dims-two-axes": ("EXPAND_DIMS", [T((2, 3)), T.const(np.array([0, 1], np.int32))], None),
    "expand_dims-float-axis": ("EXPAND_DIMS", [T((2, 3)), T.const(np.array([0], np.float32))], None),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_shape_ops_rejected_at_prepare(case):
    op, ins, opts = REJECTED[case]
    model = single_op_model(op, ins, [T((1,))], opts)
    feeds = [np.zeros(t.shape, t.dtype) for t in ins if t.data is None]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)


def test_expand_dims_requires_same_quantization():
    model = single_op_model(
        "EXPAND_DIMS",
        [T((2,), np.int8, q=quant(0.5, 1)), T.const(np.array([0], np.int32))],
        [T((1, 2), np.int8, q=quant(0.25, 1))],
    )
    feeds = [np.zeros(2, np.int8)]
    with pytest.raises(RuntimeError, match="scale"):
        run_litert(model, feeds)
    with pytest.raises(PrepareError, match="scale"):
        run_ours(model, feeds)


def test_dynamic_output_shapes_reported_after_each_invoke():
    """RANGE / FILL with graph-input operands: get_output_details() follows each invoke's shape."""
    from litert_py import Interpreter

    model = single_op_model("RANGE", [T((), np.int32), T((), np.int32), T((), np.int32)], [T((1,), np.int32)])
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    for start, limit, delta in [(0, 5, 1), (10, 0, -3), (2, 2, 1)]:
        for d, v in zip(it.get_input_details(), (start, limit, delta)):
            it.set_tensor(d["index"], np.array(v, np.int32))
        it.invoke()
        expected = np.arange(start, limit, delta, dtype=np.int32)
        assert list(it.get_output_details()[0]["shape"]) == [expected.size]
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), expected)
    model = single_op_model("FILL", [T((3,), np.int64), T((), np.bool_)], [T((1,), np.bool_)])
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    for dims in ([2, 0, 3], [1, 4, 2]):
        it.set_tensor(it.get_input_details()[0]["index"], np.array(dims, np.int64))
        it.set_tensor(it.get_input_details()[1]["index"], np.array(True))
        it.invoke()
        assert list(it.get_output_details()[0]["shape"]) == dims


def test_range_float_accumulates_like_litert():
    """Float RANGE adds delta one step at a time: start + i * delta would differ in the last bits."""
    ins = [T.const(np.float32(0.1)), T.const(np.float32(1000.0)), T((), np.float32)]
    model = single_op_model("RANGE", ins, [T((1,))])
    ours, theirs = run_ours(model, [np.float32(0.7)]), run_litert(model, [np.float32(0.7)])
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert not np.array_equal(ours[0], np.float32(0.1) + np.arange(ours[0].size, dtype=np.float32) * np.float32(0.7))


def test_broadcast_args_incompatible_fails_at_invoke():
    """LiteRT aborts the process on incompatible shapes (no oracle to compare): litert_py fails the invoke."""
    from litert_py import InvokeError

    model = single_op_model("BROADCAST_ARGS", [T((2,), np.int32), T((2,), np.int32)], [T((2,), np.int32)])
    with pytest.raises(InvokeError, match="not broadcastable"):
        run_ours(model, [np.array([2, 3], np.int32), np.array([4, 3], np.int32)])


SHAPE_REJECTED = {
    "shape-float-out-type": ("SHAPE", [T((2, 3))], [T((2,))], {"out_type": 0}, 1, []),
    "fill-negative-dims": ("FILL", [T.const(np.array([2, -1], np.int32)), T(())], [T((1,))], None, 1, []),
    "fill-float-dims": ("FILL", [T.const(np.array([2.0], np.float32)), T(())], [T((1,))], None, 1, []),
    "fill-vector-value": ("FILL", [T.const(np.array([2], np.int32)), T((1,))], [T((2,))], None, 1, []),
    "range-wrong-sign": (
        "RANGE",
        [T.const(np.int32(0)), T.const(np.int32(5)), T.const(np.int32(-1))],
        [T((1,), np.int32)],
        None,
        1,
        [],
    ),
    "range-zero-delta": (
        "RANGE",
        [T.const(np.int32(0)), T.const(np.int32(5)), T.const(np.int32(0))],
        [T((1,), np.int32)],
        None,
        1,
        [],
    ),
    "range-int16": (
        "RANGE",
        [T.const(np.int16(0)), T.const(np.int16(5)), T.const(np.int16(1))],
        [T((1,), np.int16)],
        None,
        1,
        [],
    ),
    "broadcast_to-incompatible": (
        "BROADCAST_TO",
        [T((2, 3)), T.const(np.array([4, 3], np.int32))],
        [T((4, 3))],
        None,
        2,
        [],
    ),
    "broadcast_to-shorter": ("BROADCAST_TO", [T((2, 3)), T.const(np.array([3], np.int32))], [T((3,))], None, 2, []),
    "broadcast_to-rank9": ("BROADCAST_TO", [T((2,)), T.const(np.ones(9, np.int32))], [T((1,))], None, 2, []),
    "broadcast_to-string": (
        "BROADCAST_TO",
        [T((1,), np.bytes_), T.const(np.array([2], np.int32))],
        [T((2,), np.bytes_)],
        None,
        2,
        [],
    ),
    "broadcast_args-mixed-types": (
        "BROADCAST_ARGS",
        [T((2,), np.int32), T((2,), np.int64)],
        [T((2,), np.int32)],
        None,
        1,
        [],
    ),
}


@pytest.mark.parametrize("case", list(SHAPE_REJECTED))
def test_shape_family_rejected_at_prepare(case):
    op, ins, outs, opts, version, _ = SHAPE_REJECTED[case]
    model = single_op_model(op, ins, outs, opts, version=version)
    feeds = [
        np.zeros(t.shape, t.dtype) if t.dtype is not np.bytes_ else np.full(t.shape, b"", object)
        for t in ins
        if t.data is None
    ]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)


def test_broadcast_to_version_1_is_not_registered():
    model = single_op_model("BROADCAST_TO", [T((1, 3)), T.const(np.array([2, 3], np.int32))], [T((2, 3))])
    with pytest.raises((RuntimeError, ValueError), match="version '1'"):
        run_litert(model, [np.ones((1, 3), np.float32)])
    with pytest.raises(PrepareError, match="version '1'"):
        run_ours(model, [np.ones((1, 3), np.float32)])
