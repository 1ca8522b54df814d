"""EMBEDDING_LOOKUP (copy and hybrid), EMBEDDING_LOOKUP_SPARSE (SUM / MEAN / SQRTN) and HASHTABLE_LOOKUP
against the oracle (BUILTIN_REF registers all three).

Copies are exact; the hybrid path is one float32 product per element and the sparse combiners the same
float32 sums and divisions in the same order as LiteRT, so every tolerance is 0.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import InvokeError, PrepareError
from litert_py.schema.model import QuantizationParameters
from tests.ops._diff import ALL_DTYPES, check_both, values
from tests.oracle import T, quant, run_litert, run_ours, single_op_model

TOLERANCE = {"EMBEDDING_LOOKUP": 0.0, "EMBEDDING_LOOKUP_SPARSE": 0.0, "HASHTABLE_LOOKUP": 0.0}

seeds = st.integers(0, 2**32 - 1)


@st.composite
def embedding_lookup(draw):
    name = draw(st.sampled_from(["float32", "float16", "int8", "uint8", "int16", "int32", "int64", "bool"]))
    dt = ALL_DTYPES[name]
    rows = draw(st.integers(1, 6))
    inner = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    n = draw(st.integers(0, 6))
    rng = np.random.default_rng(draw(seeds))
    ids = rng.integers(0, rows, n).astype(np.int32)
    table = values(rng, (rows,) + inner, dt)
    const = draw(st.booleans())
    tt = T.const(table) if const else T(table.shape, dt)
    model = single_op_model("EMBEDDING_LOOKUP", [T((n,), np.int32), tt], [T((n,) + inner, dt)])
    return model, [ids] + ([] if const else [table])


@st.composite
def embedding_lookup_hybrid(draw):
    dt = draw(st.sampled_from([np.int8, np.uint8]))
    rows = draw(st.integers(1, 6))
    inner = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    n = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(seeds))
    ids = rng.integers(0, rows, n).astype(np.int32)
    table = values(rng, (rows,) + inner, dt)
    if draw(st.booleans()) and dt == np.int8:
        q = QuantizationParameters(scale=tuple(float(s) for s in rng.uniform(0.001, 2.0, rows)),
                                   zero_point=(0,) * rows, quantized_dimension=0)
    else:
        q = quant(float(rng.uniform(0.001, 2.0)), 0)  # LiteRT requires zero point 0
    model = single_op_model("EMBEDDING_LOOKUP", [T((n,), np.int32), T(table.shape, dt, table, q)],
                            [T((n,) + inner, np.float32)])
    return model, [ids]


@st.composite
def embedding_lookup_sparse(draw):
    combiner = draw(st.sampled_from([0, 1, 2]))
    rows = draw(st.integers(1, 5))
    emb = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    n = draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(seeds))
    ids = rng.integers(0, rows, n).astype(np.int32)
    coords = [rng.integers(0, d, n) for d in lead]
    if draw(st.booleans()) and lead:  # sorted buckets (the usual case); otherwise revisits
        order = np.lexsort(coords[::-1])
        coords = [c[order] for c in coords]
    last = rng.integers(0, 4, n)
    indices = np.stack(coords + [last], axis=-1).astype(np.int32)
    dense_shape = np.array(lead + (4,), np.int32)
    weights = rng.uniform(0.1, 2.0, n).astype(np.float32)
    table = (rng.standard_normal((rows,) + emb) * 3).astype(np.float32)
    ins = [T((n,), np.int32), T(indices.shape, np.int32), T.const(dense_shape), T((n,)), T.const(table)]
    model = single_op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T(lead + emb)], {"combiner": combiner})
    return model, [ids, indices, weights]


@st.composite
def hashtable_lookup(draw):
    name = draw(st.sampled_from(["float32", "int8", "uint8", "int16", "int32", "int64", "bool", "string"]))
    dt = ALL_DTYPES[name]
    n_keys = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(seeds))
    keys = rng.choice(np.arange(-10, 10), n_keys, replace=False).astype(np.int32)
    if draw(st.integers(0, 3)):
        keys = np.sort(keys)  # otherwise unsorted: bsearch finds what it finds, in both runtimes
    inner = () if name == "string" else tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    vals = values(rng, (n_keys,) + inner, dt)
    n = draw(st.integers(1, 6))
    lookup = rng.integers(-10, 10, n).astype(np.int32)
    ins = [T((n,), np.int32), T.const(keys), T.const(vals) if name != "string" else T(vals.shape, dt)]
    model = single_op_model("HASHTABLE_LOOKUP", ins, [T((n,) + inner, dt), T((n,), np.uint8)])
    return model, [lookup] + ([vals] if name == "string" else [])


CASES = {
    "embedding_lookup-any": embedding_lookup(),
    "embedding_lookup-hybrid": embedding_lookup_hybrid(),
    "embedding_lookup_sparse-float32": embedding_lookup_sparse(),
    "hashtable_lookup-any": hashtable_lookup(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_lookup(case, data):
    model, inputs = data.draw(CASES[case])
    check_both(model, inputs)


def test_hashtable_lookup_hits():
    model = single_op_model("HASHTABLE_LOOKUP", [T((3,), np.int32), T.const(np.array([1, 5, 9], np.int32)),
                                                 T.const(np.array([[1.0], [2.0], [3.0]], np.float32))],
                            [T((3, 1)), T((3,), np.uint8)])
    ours = check_both(model, [np.array([5, 4, 9], np.int32)])
    np.testing.assert_array_equal(ours[0][:, 0], [2.0, 0.0, 3.0])
    np.testing.assert_array_equal(ours[1], [1, 0, 1])


@pytest.mark.parametrize("bad", [3, -1])
def test_embedding_lookup_out_of_range_raises(bad):
    model = single_op_model("EMBEDDING_LOOKUP", [T((2,), np.int32), T((3, 2))], [T((2, 2))])
    inputs = [np.array([0, bad], np.int32), np.zeros((3, 2), np.float32)]
    with pytest.raises(RuntimeError, match="index out of bounds"):
        run_litert(model, inputs)
    with pytest.raises(InvokeError, match="index out of bounds"):
        run_ours(model, inputs)


def test_embedding_lookup_sparse_out_of_range_raises():
    ins = [T((2,), np.int32), T((2, 2), np.int32), T.const(np.array([2, 4], np.int32)), T((2,)),
           T.const(np.ones((3, 2), np.float32))]
    model = single_op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T((2, 2))], {"combiner": 0})
    inputs = [np.array([0, 3], np.int32), np.array([[0, 0], [1, 0]], np.int32), np.ones(2, np.float32)]
    with pytest.raises(RuntimeError):
        run_litert(model, inputs)
    with pytest.raises(InvokeError, match="out of bounds"):
        run_ours(model, inputs)
    # An index past dense_shape: ai-edge-litert 2.3.0 writes outside its output; we fail the invoke.
    for idx in ([[0, 0], [2, 0]], [[0, 0], [-1, 0]]):
        inputs = [np.array([0, 1], np.int32), np.array(idx, np.int32), np.ones(2, np.float32)]
        with pytest.raises(InvokeError, match="out of bounds"):
            run_ours(model, inputs)


def test_embedding_lookup_sparse_non_float_table_refused():
    """LiteRT reads any table as float32 (out of bounds for int8): refused at prepare."""
    ins = [T((1,), np.int32), T((1, 1), np.int32), T.const(np.array([2], np.int32)), T((1,)),
           T.const(np.ones((2, 2), np.int8))]
    model = single_op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T((2,))], {"combiner": 0})
    with pytest.raises(PrepareError, match="unsupported"):
        run_ours(model, [np.zeros(1, np.int32), np.zeros((1, 1), np.int32), np.ones(1, np.float32)])


ERRORS = {
    "embedding_lookup-int64-ids": ("EMBEDDING_LOOKUP", [T((2,), np.int64), T((3, 2))], [T((2, 2))], None),
    "embedding_lookup-rank1-table": ("EMBEDDING_LOOKUP", [T((2,), np.int32), T((3,))], [T((2,))], None),
    "embedding_lookup-hybrid-zero-point": ("EMBEDDING_LOOKUP", [T((2,), np.int32), T.const(
        np.ones((3, 2), np.uint8), q=quant(0.5, 128))], [T((2, 2))], None),
    "hashtable_lookup-float-keys": ("HASHTABLE_LOOKUP", [T((2,), np.int32), T.const(np.array([1.0, 2.0])),
                                                         T.const(np.ones((2,), np.float32))],
                                    [T((2,)), T((2,), np.uint8)], None),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_prepare_errors(case):
    op, ins, outs, options = ERRORS[case]
    model = single_op_model(op, ins, outs, options)
    inputs = [np.zeros(t.shape, t.dtype) for t in ins if t.data is None]
    with pytest.raises(PrepareError):
        run_ours(model, inputs)
    with pytest.raises((RuntimeError, ValueError)):
        run_litert(model, inputs)
