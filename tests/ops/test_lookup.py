"""EMBEDDING_LOOKUP (copy and hybrid), EMBEDDING_LOOKUP_SPARSE (SUM / MEAN / SQRTN), HASHTABLE_LOOKUP,
SKIP_GRAM and LSH_PROJECTION (sparse and dense) against the oracle (BUILTIN_REF registers all of them).

Copies are exact; the hybrid path is one float32 product per element and the sparse combiners the same
float32 sums and divisions in the same order as LiteRT; LSH bits come from exact 64-bit hashes and the
same double sums: every tolerance is 0.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import InvokeError, PrepareError
from litert_py.ops.lookup import fingerprint64
from litert_py.schema.builder import ModelBuilder
from litert_py.schema.model import QuantizationParameters
from tests.ops._diff import ALL_DTYPES, check_both
from tests.oracle import T, litert_fails, ours_fails, quant, run_litert, run_ours, single_op_model
from tests.values import values

TOLERANCE = {
    "EMBEDDING_LOOKUP": 0.0,
    "EMBEDDING_LOOKUP_SPARSE": 0.0,
    "HASHTABLE_LOOKUP": 0.0,
    "SKIP_GRAM": 0.0,
    "LSH_PROJECTION": 0.0,
}

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
        q = QuantizationParameters(
            scale=tuple(float(s) for s in rng.uniform(0.001, 2.0, rows)), zero_point=(0,) * rows, quantized_dimension=0
        )
    else:
        q = quant(float(rng.uniform(0.001, 2.0)), 0)  # LiteRT requires zero point 0
    model = single_op_model(
        "EMBEDDING_LOOKUP", [T((n,), np.int32), T(table.shape, dt, table, q)], [T((n,) + inner, np.float32)]
    )
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


WORDS = [b"a", b"bb", b"ccc", b"the", b"x y", b"", b" ", b"\t", b"  ", b"q\nr"]


@st.composite
def skip_gram(draw):
    words = draw(st.lists(st.sampled_from(WORDS), max_size=8))
    sentence = draw(st.sampled_from([b" ", b"", b"\t"])) + b" ".join(words)
    options = {
        "ngram_size": draw(st.integers(0, 4)),
        "max_skip_size": draw(st.integers(0, 3)),
        "include_all_ngrams": draw(st.booleans()),
    }
    b = ModelBuilder()
    x = b.input("x", (1,), np.bytes_)
    y = b.tensor("y", (1,), np.bytes_)
    b.op("SKIP_GRAM", [x], [y], options)
    b.output(y)
    arr = np.empty(1, dtype=object)
    arr[0] = sentence
    return b.build(), [arr]


@st.composite
def lsh_projection(draw):
    name = draw(st.sampled_from(["float32", "int8", "uint8", "int16", "int32", "int64", "bool", "string"]))
    dt = ALL_DTYPES[name]
    rows = draw(st.integers(1, 4))
    # row widths up to 40 elements: hash keys of 4..324 bytes reach every branch of Fingerprint64
    inner = () if name == "string" else (draw(st.integers(0, 40)),)
    num_hash, num_bits = draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, 5, 8, 31, 32]))
    kind = draw(st.sampled_from([1, 2]))
    rng = np.random.default_rng(draw(seeds))
    hashes = rng.standard_normal((num_hash, num_bits)).astype(np.float32)
    x = values(rng, (rows,) + inner, dt)
    weighted = draw(st.booleans())
    w = rng.standard_normal(rows).astype(np.float32)
    n_out = num_hash if kind == 1 else num_hash * num_bits
    ins = [T.const(hashes), T(x.shape, dt)] + ([T((rows,))] if weighted else [])
    model = single_op_model("LSH_PROJECTION", ins, [T((n_out,), np.int32)], {"type": kind})
    return model, [x] + ([w] if weighted else [])


CASES = {
    "embedding_lookup-any": embedding_lookup(),
    "embedding_lookup-hybrid": embedding_lookup_hybrid(),
    "embedding_lookup_sparse-float32": embedding_lookup_sparse(),
    "hashtable_lookup-any": hashtable_lookup(),
    "skip_gram-string": skip_gram(),
    "lsh_projection-any": lsh_projection(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_lookup(case, data):
    model, inputs = data.draw(CASES[case])
    check_both(model, inputs)


def test_skip_gram_known_output():
    b = ModelBuilder()
    x = b.input("x", (1,), np.bytes_)
    y = b.tensor("y", (1,), np.bytes_)
    b.op("SKIP_GRAM", [x], [y], {"ngram_size": 2, "max_skip_size": 1, "include_all_ngrams": False})
    b.output(y)
    arr = np.empty(1, dtype=object)
    arr[0] = b"a b c"
    ours = check_both(b.build(), [arr])
    assert list(ours[0]) == [b"a b", b"a c", b"b c"]


def test_fingerprint64_known_value():
    """farmhash Fingerprint64 of the empty string is k2 (farmhashna::HashLen0to16)."""
    assert fingerprint64(b"") == 0x9AE16A3B2F90404F


def test_hashtable_lookup_hits():
    model = single_op_model(
        "HASHTABLE_LOOKUP",
        [
            T((3,), np.int32),
            T.const(np.array([1, 5, 9], np.int32)),
            T.const(np.array([[1.0], [2.0], [3.0]], np.float32)),
        ],
        [T((3, 1)), T((3,), np.uint8)],
    )
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
    ins = [
        T((2,), np.int32),
        T((2, 2), np.int32),
        T.const(np.array([2, 4], np.int32)),
        T((2,)),
        T.const(np.ones((3, 2), np.float32)),
    ]
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
    ins = [
        T((1,), np.int32),
        T((1, 1), np.int32),
        T.const(np.array([2], np.int32)),
        T((1,)),
        T.const(np.ones((2, 2), np.int8)),
    ]
    model = single_op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T((2,))], {"combiner": 0})
    with pytest.raises(PrepareError, match="unsupported"):
        run_ours(model, [np.zeros(1, np.int32), np.zeros((1, 1), np.int32), np.ones(1, np.float32)])


ERRORS = {
    "embedding_lookup-int64-ids": ("EMBEDDING_LOOKUP", [T((2,), np.int64), T((3, 2))], [T((2, 2))], None),
    "embedding_lookup-rank1-table": ("EMBEDDING_LOOKUP", [T((2,), np.int32), T((3,))], [T((2,))], None),
    "embedding_lookup-hybrid-zero-point": (
        "EMBEDDING_LOOKUP",
        [T((2,), np.int32), T.const(np.ones((3, 2), np.uint8), q=quant(0.5, 128))],
        [T((2, 2))],
        None,
    ),
    "lsh_projection-rank1-hash": (
        "LSH_PROJECTION",
        [T.const(np.ones(3, np.float32)), T((2, 2))],
        [T((3,), np.int32)],
        {"type": 1},
    ),
    "lsh_projection-33-bits": (
        "LSH_PROJECTION",
        [T.const(np.ones((1, 33), np.float32)), T((2, 2))],
        [T((1,), np.int32)],
        {"type": 1},
    ),
    "hashtable_lookup-float-keys": (
        "HASHTABLE_LOOKUP",
        [T((2,), np.int32), T.const(np.array([1.0, 2.0])), T.const(np.ones((2,), np.float32))],
        [T((2,)), T((2,), np.uint8)],
        None,
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_prepare_errors(case):
    model = single_op_model(*ERRORS[case])
    ours_fails(model, errors=PrepareError)
    litert_fails(model, errors=(RuntimeError, ValueError))


def test_embedding_lookup_int4_table_hybrid():
    """An INT4 table (two values a byte, low nibble first) with a float32 output: value * scale."""
    from litert_py.schema import dtypes

    rng = np.random.default_rng(0)
    vals = rng.integers(-8, 8, (3, 4)).astype(np.int8)
    nib = vals.reshape(-1).astype(np.uint8) & 0xF
    packed = (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)
    b = ModelBuilder()
    ids = b.input("ids", (2,), np.int32)
    t = b.tensor(
        "t", (3, 4), np.int8, data=packed.tobytes(), quantization=quant(0.5, 0), tensor_type=dtypes.TensorType.INT4
    )
    o = b.tensor("o", (2, 4), np.float32)
    b.op("EMBEDDING_LOOKUP", [ids, t], [o])
    b.output(o)
    ours = check_both(b.build(), [np.array([2, 0], np.int32)])
    np.testing.assert_array_equal(ours[0], vals[[2, 0]] * np.float32(0.5))
