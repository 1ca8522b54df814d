"""HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE against the oracle (its default resolver:
BUILTIN_REF does not register them). Tables are filled by a CALL_ONCE init subgraph and looked up by the
main graph, across invokes and reset_all_variables (all results exact)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import litert_py
from litert_py import PrepareError
from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import oracle

RESOURCE = dtypes.TensorType.RESOURCE
INT64, STRING = dtypes.TensorType.INT64, dtypes.TensorType.STRING
#: Float tolerance per op: none of them computes (lookups copy values).
TOLERANCE = {"HASHTABLE_FIND": 0.0, "HASHTABLE_SIZE": 0.0}


def _arr(values, string: bool) -> np.ndarray:
    return np.array(list(values), dtype=object) if string else np.array(list(values), np.int64)


def _model(keys, values, default, query_shape, key_string: bool, imports=1, handle_shape=(1,)) -> bytes:
    """Init subgraph (CALL_ONCE): HASHTABLE + ``imports`` x HASHTABLE_IMPORT(keys, values) (later imports
    use the values reversed: LiteRT ignores them). Main graph: FIND(query, default), SIZE."""
    kt, vt = (np.bytes_, np.int64) if key_string else (np.int64, np.bytes_)
    opts = dict(table_id=7, key_dtype=STRING if key_string else INT64, value_dtype=INT64 if key_string else STRING)
    b = ModelBuilder()
    q = b.input("q", query_shape, kt)
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    h = b.tensor("h", handle_shape, None, tensor_type=RESOURCE)
    b.op("HASHTABLE", [], [h], opts)
    found, size = b.tensor("found", query_shape, vt), b.tensor("size", (1,), np.int64)
    b.op("HASHTABLE_FIND", [h, q, b.tensor("default", np.shape(default), vt, data=default)], [found])
    b.op("HASHTABLE_SIZE", [h], [size])
    b.output(found, size)
    b.subgraph("init")
    h1 = b.tensor("h", handle_shape, None, tensor_type=RESOURCE)
    b.op("HASHTABLE", [], [h1], opts)
    for k in range(imports):
        vals = values if k == 0 else values[::-1]
        b.op(
            "HASHTABLE_IMPORT",
            [h1, b.tensor(f"k{k}", (len(keys),), kt, data=keys), b.tensor(f"v{k}", (len(vals),), vt, data=vals)],
            [],
        )
    return b.build()


def _run(I, model, queries, reset_at=None):
    kw = {} if I is litert_py.Interpreter else {"num_threads": 1}
    it = I(model_content=model, **kw)
    it.allocate_tensors()
    outs = []
    for k, q in enumerate(queries):
        if k == reset_at:
            it.reset_all_variables()
        it.set_tensor(it.get_input_details()[0]["index"], q)
        it.invoke()
        outs.append([it.get_tensor(d["index"]) for d in it.get_output_details()])
    return outs


words = st.binary(min_size=0, max_size=4)
ints = st.integers(-(2**40), 2**40)


@st.composite
def tables(draw):
    key_string = draw(st.booleans())
    key = words if key_string else ints
    value = ints if key_string else words
    keys = draw(st.lists(key, min_size=1, max_size=6))  # repeated keys: the first value wins
    values = draw(st.lists(value, min_size=len(keys), max_size=len(keys)))
    default = draw(st.lists(value, min_size=1, max_size=2))  # only the first element is the default
    query_shape = draw(st.sampled_from([(4,), (2, 3), (1,)]))
    n = int(np.prod(query_shape))
    queries = [draw(st.lists(st.one_of(st.sampled_from(keys), key), min_size=n, max_size=n)) for _ in range(2)]
    imports = draw(st.integers(1, 2))
    return key_string, keys, values, default, query_shape, queries, imports


@given(case=tables(), reset=st.booleans(), handle_shape=st.sampled_from([(1,), ()]))
def test_hashtable_lookup_matches_oracle(case, reset, handle_shape):
    key_string, keys, values, default, query_shape, queries, imports = case
    model = _model(
        _arr(keys, key_string),
        _arr(values, not key_string),
        _arr(default, not key_string),
        query_shape,
        key_string,
        imports,
        handle_shape,
    )
    qs = [_arr(q, key_string).reshape(query_shape) for q in queries]
    LiteRT, _ = oracle()
    theirs = _run(LiteRT, model, qs, reset_at=1 if reset else None)
    ours = _run(litert_py.Interpreter, model, qs, reset_at=1 if reset else None)
    for a, b in zip(ours, theirs):  # the table survives reset_all_variables in both
        assert_close(a, b, rtol=0, atol=0)
        assert a[0].dtype == (np.int64 if key_string else object)


@pytest.mark.parametrize(
    "key_type,value_type",
    [(INT64, INT64), (dtypes.TensorType.INT32, STRING), (STRING, dtypes.TensorType.FLOAT32), (STRING, STRING)],
    ids=["int64-int64", "int32-string", "string-float32", "string-string"],
)
def test_unsupported_key_value_types_rejected(key_type, value_type):
    b = ModelBuilder()
    h = b.tensor("h", (1,), None, tensor_type=RESOURCE)
    b.op("HASHTABLE", [], [h], dict(table_id=1, key_dtype=key_type, value_dtype=value_type))
    size = b.tensor("size", (1,), np.int64)
    b.op("HASHTABLE_SIZE", [h], [size])
    b.output(size)
    model = b.build()
    LiteRT, _ = oracle()
    with pytest.raises(RuntimeError, match="key_dtype"):
        LiteRT(model_content=model).allocate_tensors()
    with pytest.raises(PrepareError, match="int64 keys with string values"):
        litert_py.Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("case", ["int64-default-for-string-values", "string-query-on-int64-keys", "int32-query"])
def test_find_type_mismatch_rejected(case):
    """LiteRT prepares nodes after a resource-producing node late (at the first invoke) and fails there;
    litert_py refuses the model at allocate_tensors: both raise a RuntimeError before computing anything."""
    b = ModelBuilder()
    qt = {"string-query-on-int64-keys": np.bytes_, "int32-query": np.int32}.get(case, np.int64)
    q = b.input("q", (2,), qt)
    h = b.tensor("h", (1,), None, tensor_type=RESOURCE)
    b.op("HASHTABLE", [], [h], dict(table_id=1, key_dtype=INT64, value_dtype=STRING))
    b.op(
        "HASHTABLE_IMPORT",
        [
            h,
            b.const("k", np.array([1, 2], np.int64)),
            b.tensor("v", (2,), np.bytes_, data=np.array([b"a", b"b"], dtype=object)),
        ],
        [],
    )
    found = b.tensor("found", (2,), np.bytes_)
    default = (
        b.const("d", np.int64(0))
        if case.startswith("int64")
        else b.tensor("d", (1,), np.bytes_, data=np.array([b"?"], dtype=object))
    )
    b.op("HASHTABLE_FIND", [h, q, default], [found])
    b.output(found)
    model = b.build()
    LiteRT, _ = oracle()
    query = np.array([b"a", b"b"], dtype=object) if qt is np.bytes_ else np.array([1, 5], qt)
    it = LiteRT(model_content=model)
    it.allocate_tensors()
    it.set_tensor(0, query)
    with pytest.raises(RuntimeError, match="HASHTABLE_FIND"):
        it.invoke()
    with pytest.raises(PrepareError, match="HASHTABLE_FIND"):
        litert_py.Interpreter(model_content=model).allocate_tensors()
