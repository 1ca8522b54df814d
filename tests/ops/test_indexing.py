"""GATHER_ND, SCATTER_ND, DYNAMIC_UPDATE_SLICE, MATRIX_DIAG, MATRIX_SET_DIAG, ONE_HOT, SPARSE_TO_DENSE, WHERE,
UNIQUE, TOPK_V2, BUCKETIZE against the oracle (BUILTIN_REF registers all of them).

One table (CASES) drives the differential test; every op here moves, counts or compares values, so all
tolerances are 0 (exact).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import InvokeError, PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.ops._diff import ALL_DTYPES, chain_model, check_both
from tests.oracle import T, litert_fails, ours_fails, run_litert, run_ours, single_op_model
from tests.values import values

TOLERANCE = {
    op: 0.0
    for op in (
        "GATHER_ND",
        "SCATTER_ND",
        "DYNAMIC_UPDATE_SLICE",
        "MATRIX_DIAG",
        "MATRIX_SET_DIAG",
        "ONE_HOT",
        "SPARSE_TO_DENSE",
        "WHERE",
        "UNIQUE",
        "TOPK_V2",
        "BUCKETIZE",
    )
}

seeds = st.integers(0, 2**32 - 1)


def shapes(min_rank=1, max_rank=4, min_side=1, max_side=4):
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def _dt(draw, names):
    return ALL_DTYPES[draw(st.sampled_from(names))]


@st.composite
def gather_nd(draw):
    dt = _dt(draw, ["float32", "int8", "uint8", "int16", "int32", "int64", "bool", "string"])
    it = draw(st.sampled_from([np.int16, np.int32, np.int64]))
    p = draw(shapes(max_rank=3))
    nd = draw(st.integers(1, len(p)))
    lead = draw(shapes(min_rank=0, max_rank=2))
    rng = np.random.default_rng(draw(seeds))
    # mostly in range; sometimes past one dimension (both runtimes fail at eval)
    hi = [s + (1 if draw(st.integers(0, 9)) == 0 else 0) for s in p[:nd]]
    idx = np.stack([rng.integers(0, h, lead) for h in hi], axis=-1).astype(it)
    constant = draw(st.booleans())
    model = single_op_model(
        "GATHER_ND", [T(p, dt), T.const(idx) if constant else T(idx.shape, it)], [T(lead + p[nd:], dt)]
    )
    return model, [values(rng, p, dt)] + ([] if constant else [idx]), "BUILTIN_REF"


@st.composite
def scatter_nd(draw):
    dt = _dt(draw, ["float32", "int8", "uint8", "int32", "int64", "bool"])
    it = np.int32
    shape = draw(shapes(max_rank=3))
    nd = draw(st.integers(1, len(shape)))
    n = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(seeds))
    idx = np.stack([rng.integers(0, s, n) for s in shape[:nd]], axis=-1).astype(it)
    upd_shape = (n,) + shape[nd:]
    upd = values(rng, upd_shape, dt)
    if dt == np.float32:
        upd = np.round(upd)  # sums of duplicates exact in any order; the order is still that of the loop
    dyn = draw(st.booleans())
    shp = np.array(shape, it)
    ins = [T(idx.shape, it), T(upd_shape, dt), T(shp.shape, it) if dyn else T.const(shp)]
    model = (
        chain_model("SCATTER_ND", ins, 1, out_dtype=dt) if dyn else single_op_model("SCATTER_ND", ins, [T(shape, dt)])
    )
    return model, [idx, upd] + ([shp] if dyn else []), "BUILTIN_REF"


@st.composite
def dynamic_update_slice(draw):
    dt = _dt(draw, ["float32", "float16", "int8", "uint8", "int16", "int32", "int64", "bool"])
    it = draw(st.sampled_from([np.int32, np.int64]))
    o = draw(shapes(max_rank=4))
    u = tuple(draw(st.integers(0, s)) for s in o)
    rng = np.random.default_rng(draw(seeds))
    start = rng.integers(-3, 6, len(o)).astype(it)  # clamped by both runtimes
    model = single_op_model("DYNAMIC_UPDATE_SLICE", [T(o, dt), T(u, dt), T((len(o),), it)], [T(o, dt)])
    return model, [values(rng, o, dt), values(rng, u, dt), start], "BUILTIN_REF"


@st.composite
def matrix_diag(draw):
    dt = _dt(draw, ["float32", "int8", "uint8", "int16", "int32", "int64"])
    s = draw(shapes(max_rank=3))
    rng = np.random.default_rng(draw(seeds))
    model = single_op_model("MATRIX_DIAG", [T(s, dt)], [T(s + (s[-1],), dt)])
    return model, [values(rng, s, dt)], "BUILTIN_REF"


@st.composite
def matrix_set_diag(draw):
    dt = _dt(draw, ["float32", "int8", "uint8", "int16", "int32", "int64"])
    s = draw(shapes(min_rank=2, max_rank=4))
    d = s[:-2] + (min(s[-2:]),)
    rng = np.random.default_rng(draw(seeds))
    model = single_op_model("MATRIX_SET_DIAG", [T(s, dt), T(d, dt)], [T(s, dt)])
    return model, [values(rng, s, dt), values(rng, d, dt)], "BUILTIN_REF"


@st.composite
def one_hot(draw):
    dt = _dt(draw, ["float32", "int8", "uint8", "int32", "int64", "bool"])
    it = draw(st.sampled_from([np.int32, np.int64]))
    s = draw(shapes(min_rank=0, max_rank=3))
    depth = draw(st.integers(0, 5))
    axis = draw(st.integers(-1, len(s)))
    rng = np.random.default_rng(draw(seeds))
    idx = rng.integers(-2, depth + 2, s).astype(it)  # out-of-range indices give all-off rows
    on, off = values(rng, (), dt), values(rng, (), dt)
    dyn = draw(st.booleans())
    ins = [T(s, it), T((), np.int32) if dyn else T.const(np.int32(depth)), T.const(on), T.const(off)]
    a = len(s) if axis == -1 else axis
    out = s[:a] + (depth,) + s[a:]
    model = (
        chain_model("ONE_HOT", ins, 1, {"axis": axis}, out_dtype=dt)
        if dyn
        else single_op_model("ONE_HOT", ins, [T(out, dt)], {"axis": axis})
    )
    return model, [idx] + ([np.int32(depth)] if dyn else []), "BUILTIN_REF"


@st.composite
def sparse_to_dense(draw):
    dt = _dt(draw, ["float32", "int8", "uint8", "int32", "int64"])
    it = draw(st.sampled_from([np.int32, np.int64]))
    shape = draw(shapes(max_rank=4))
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 5))
    flat = rng.choice(int(np.prod(shape)), min(n, int(np.prod(shape))), replace=False)
    idx = np.stack(np.unravel_index(flat, shape), axis=-1).astype(it)
    if len(shape) == 1 and draw(st.booleans()):
        idx = idx[:, 0]
    scalar = draw(st.integers(0, 3)) == 0  # one value written at every index
    vals = values(rng, () if scalar else (idx.shape[0],), dt)
    default = values(rng, (), dt)
    dyn = draw(st.booleans())
    shp = np.array(shape, it)
    ins = [T(idx.shape, it), T(shp.shape, it) if dyn else T.const(shp), T(vals.shape, dt), T.const(default)]
    model = (
        chain_model("SPARSE_TO_DENSE", ins, 1, {"validate_indices": False}, out_dtype=dt)
        if dyn
        else single_op_model("SPARSE_TO_DENSE", ins, [T(shape, dt)], {"validate_indices": False})
    )
    return model, [idx] + ([shp] if dyn else []) + [vals], "BUILTIN_REF"


@st.composite
def where(draw):
    dt = _dt(draw, ["bool", "float32", "int8", "uint8", "int32", "int64"])
    s = draw(shapes(max_rank=4))
    rng = np.random.default_rng(draw(seeds))
    x = values(rng, s, dt) * rng.integers(0, 2, s).astype(dt)  # plenty of zeros
    return chain_model("WHERE", [T(s, dt)], 1, out_dtype=np.int64), [x], "BUILTIN_REF"


@st.composite
def unique(draw):
    dt = _dt(draw, ["float32", "int8", "uint8", "int16", "int32", "int64"])
    idx_t = draw(st.sampled_from([np.int32, np.int64]))
    n = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(seeds))
    pool = values(rng, (draw(st.integers(1, 5)),), dt)
    x = pool[rng.integers(0, pool.size, n)]
    # UNIQUE then RESHAPE of its dynamic first output (chain_model gives every output the input dtype)
    b = ModelBuilder()
    i = b.input("x", (n,), dt)
    y = b.tensor("y", [1], dt)
    ix = b.tensor("idx", [n], idx_t)
    b.op("UNIQUE", [i], [y, ix], {"idx_out_type": 2 if idx_t == np.int32 else 4})
    flat = b.tensor("flat", [1], dt)
    b.op("RESHAPE", [y], [flat], {"new_shape": [-1]})
    b.output(y, ix, flat)
    return b.build(), [x], "BUILTIN_REF"


@st.composite
def topk_v2(draw):
    dt = _dt(draw, ["float32", "int8", "uint8", "int16", "int32", "int64"])
    s = draw(shapes(max_rank=3, max_side=6))
    k = draw(st.integers(0, s[-1]))
    rng = np.random.default_rng(draw(seeds))
    pool = values(rng, (3,), dt)
    x = pool[rng.integers(0, 3, s)] if draw(st.booleans()) else values(rng, s, dt)  # ties
    out = s[:-1] + (k,)
    kt, it = draw(st.sampled_from([np.int32, np.int16])), draw(st.sampled_from([np.int32, np.int16]))
    if draw(st.booleans()):
        model = single_op_model("TOPK_V2", [T(s, dt), T.const(kt(k))], [T(out, dt), T(out, it)])
        return model, [x], "BUILTIN_REF"
    # k as a graph input: both outputs dynamic, then a RESHAPE of the values
    b = ModelBuilder()
    xi, ki = b.input("x", s, dt), b.input("k", (), kt)
    v, i = b.tensor("v", [1], dt), b.tensor("i", [1], it)
    b.op("TOPK_V2", [xi, ki], [v, i])
    flat = b.tensor("flat", [1], dt)
    b.op("RESHAPE", [v], [flat], {"new_shape": [-1]})
    b.output(v, i, flat)
    return b.build(), [x, np.array(k, kt)], "BUILTIN_REF"


@st.composite
def bucketize(draw):
    dt = _dt(draw, ["float32", "int32", "int64"]) if draw(st.integers(0, 3)) else np.float64
    s = draw(shapes(max_rank=3))
    b = sorted(draw(st.lists(st.sampled_from([-1e9, -20.0, -3.5, -1.0, 0.0, 0.5, 2.0, 7.0, 1e9]), max_size=6)))
    rng = np.random.default_rng(draw(seeds))
    x = values(rng, s, dt) if dt != np.float64 else rng.standard_normal(s) * 10
    if dt in (np.int32, np.int64):
        x = (x // 2**24 if draw(st.booleans()) else x % 21 - 10).astype(dt)
    model = single_op_model("BUCKETIZE", [T(s, dt)], [T(s, np.int32)], {"boundaries": b})
    return model, [x], "BUILTIN_REF"


CASES = {
    "gather_nd-any": gather_nd(),
    "scatter_nd-any": scatter_nd(),
    "dynamic_update_slice-any": dynamic_update_slice(),
    "matrix_diag-any": matrix_diag(),
    "matrix_set_diag-any": matrix_set_diag(),
    "one_hot-any": one_hot(),
    "sparse_to_dense-any": sparse_to_dense(),
    "where-any": where(),
    "unique-any": unique(),
    "topk_v2-any": topk_v2(),
    "bucketize-any": bucketize(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_indexing(case, data):
    model, inputs, resolver = data.draw(CASES[case])
    check_both(model, inputs, resolver=resolver)


def test_topk_ties_lower_index_first():
    x = np.array([[3, 1, 3, 2, 3, 1]], np.int32)
    model = single_op_model(
        "TOPK_V2", [T((1, 6), np.int32), T.const(np.int32(4))], [T((1, 4), np.int32), T((1, 4), np.int32)]
    )
    ours = check_both(model, [x])
    np.testing.assert_array_equal(ours[1], [[0, 2, 4, 3]])


def test_unique_first_occurrence_order():
    x = np.array([5, 2, 5, 7, 2, 1], np.int32)
    b = ModelBuilder()
    i = b.input("x", (6,), np.int32)
    y, ix = b.tensor("y", [1], np.int32), b.tensor("idx", [6], np.int32)
    b.op("UNIQUE", [i], [y, ix], {"idx_out_type": 2})
    b.output(y, ix)
    ours = check_both(b.build(), [x])
    np.testing.assert_array_equal(ours[0], [5, 2, 7, 1])
    np.testing.assert_array_equal(ours[1], [0, 1, 0, 2, 1, 3])


# -- out-of-range indices ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["GATHER_ND", "SCATTER_ND"])
@pytest.mark.parametrize("bad", [[3, 0], [-1, 0], [0, 2], [1, -1]])
def test_nd_out_of_range_raises(op, bad):
    idx = np.array([[0, 1], bad], np.int32)
    if op == "GATHER_ND":
        model = single_op_model(op, [T((3, 2)), T((2, 2), np.int32)], [T((2,))])
        inputs = [np.arange(6, dtype=np.float32).reshape(3, 2), idx]
    else:
        model = single_op_model(op, [T((2, 2), np.int32), T((2,)), T.const(np.array([3, 2], np.int32))], [T((3, 2))])
        inputs = [idx, np.ones(2, np.float32)]
    with pytest.raises(RuntimeError):
        run_litert(model, inputs)
    with pytest.raises(InvokeError, match="index out of bounds"):
        run_ours(model, inputs)


def test_sparse_to_dense_out_of_range_raises():
    """LiteRT writes out of bounds here; litert_py refuses at eval."""
    model = single_op_model(
        "SPARSE_TO_DENSE",
        [T((2, 2), np.int32), T.const(np.array([2, 2], np.int32)), T((2,)), T.const(np.float32(0))],
        [T((2, 2))],
    )
    with pytest.raises(InvokeError, match="outside the output"):
        run_ours(model, [np.array([[0, 0], [2, 1]], np.int32), np.ones(2, np.float32)])


# -- prepare errors ------------------------------------------------------------------------------------------


ERRORS = {
    "gather_nd-float32-indices": ("GATHER_ND", [T((3, 2)), T((1, 2))], [T((1,))], None),
    "gather_nd-empty-index": ("GATHER_ND", [T((3, 2)), T((1, 0), np.int32)], [T((1, 3, 2))], None),
    "gather_nd-index-depth": ("GATHER_ND", [T((3, 2)), T((1, 3), np.int32)], [T((1,))], None),
    "scatter_nd-int16": (
        "SCATTER_ND",
        [T((1, 1), np.int32), T((1,), np.int16), T.const(np.array([3], np.int32))],
        [T((3,), np.int16)],
        None,
    ),
    "dynamic_update_slice-bigger-update": (
        "DYNAMIC_UPDATE_SLICE",
        [T((2, 2)), T((3, 2)), T((2,), np.int32)],
        [T((2, 2))],
        None,
    ),
    "matrix_set_diag-rank1": ("MATRIX_SET_DIAG", [T((3,)), T((3,))], [T((3,))], None),
    "one_hot-int16": (
        "ONE_HOT",
        [T((2,), np.int32), T.const(np.int32(3)), T.const(np.int16(1)), T.const(np.int16(0))],
        [T((2, 3), np.int16)],
        {"axis": -1},
    ),
    "sparse_to_dense-int16": (
        "SPARSE_TO_DENSE",
        [T((1, 1), np.int32), T.const(np.array([3], np.int32)), T((1,), np.int16), T.const(np.int16(0))],
        [T((3,), np.int16)],
        None,
    ),
    "unique-rank2": ("UNIQUE", [T((2, 2), np.int32)], [T((2,), np.int32), T((2, 2), np.int32)], {"idx_out_type": 2}),
    "topk-int64-indices": ("TOPK_V2", [T((2, 3)), T.const(np.int32(2))], [T((2, 2)), T((2, 2), np.int64)], None),
    "topk-int64-k": ("TOPK_V2", [T((2, 3)), T.const(np.int64(2))], [T((2, 2)), T((2, 2), np.int32)], None),
    "topk-k-too-big": ("TOPK_V2", [T((2, 3)), T.const(np.int32(4))], [T((2, 4)), T((2, 4), np.int32)], None),
    "bucketize-unsorted": ("BUCKETIZE", [T((3,))], [T((3,), np.int32)], {"boundaries": [1.0, 0.0]}),
    "bucketize-int8": ("BUCKETIZE", [T((3,), np.int8)], [T((3,), np.int32)], {"boundaries": [0.0]}),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_prepare_errors(case):
    model = single_op_model(*ERRORS[case])
    ours_fails(model, errors=PrepareError)
    litert_fails(model, errors=(RuntimeError, ValueError))


def test_matrix_diag_bool_refused():
    """LiteRT runs BOOL through its float32 branch (4-byte elements in a 1-byte buffer): we refuse it."""
    model = single_op_model("MATRIX_DIAG", [T((2, 3), np.bool_)], [T((2, 3, 3), np.bool_)])
    with pytest.raises(PrepareError, match="BOOL"):
        run_ours(model, [np.ones((2, 3), bool)])
