"""STRING tensors end to end against the oracle: what set_tensor accepts (and how it refuses), what
get_tensor returns (object arrays of bytes), strings through RESHAPE, GATHER, IF and hashtables, and the
string paths LiteRT lacks (CONCATENATION, GATHER from 2-D)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import litert_py
from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder
from tests.oracle import oracle

RESOURCE = dtypes.TensorType.RESOURCE


def _identity_model(shape) -> bytes:
    b = ModelBuilder()
    x = b.input("x", shape, np.bytes_)
    y = b.tensor("y", shape, np.bytes_)
    b.op("RESHAPE", [x, b.const("s", np.array(shape, np.int32))], [y])
    b.output(y)
    return b.build()


def _set_get(I, model, value):
    it = I(model_content=model)
    it.allocate_tensors()
    try:
        it.set_tensor(0, value)
    except ValueError as e:
        return f"ValueError: {e}"
    it.invoke()
    return [it.get_tensor(0), it.get_tensor(it.get_output_details()[0]["index"])]


#: value given to set_tensor of a [3] (or, for 0-d values, a []) STRING input
SET_CASES = {
    "bytes-array": np.array([b"a", b"bc", b""]),
    "bytes-with-nul-and-high-bytes": np.array([b"a\x00b", b"\xff\xfe", b"z"]),
    "unicode-array-utf8": np.array(["é", "日本", "x"]),
    "bytes-array-trailing-nul-dropped": np.array([b"ab\x00", b"c", b"\x00"]),
    "object-nul-kept": np.array([b"\x00", b"", b"a\x00"], dtype=object),
    "object-bytes": np.array([b"a", b"b", b"c"], dtype=object),
    "object-str": np.array(["a", "é", "c"], dtype=object),
    "object-mixed-bytes-str": np.array([b"a", "b", b"c"], dtype=object),
    "object-with-int": np.array([b"a", 3, b"c"], dtype=object),
    "object-with-none": np.array([b"a", None, b"c"], dtype=object),
    "object-with-bytearray": np.array([b"a", bytearray(b"b"), b"c"], dtype=object),
    "int-array": np.array([1, 2, 3]),
    "float-array": np.array([1.0, 2.0, 3.0]),
    "bool-array": np.array([True, False, True]),
    "list": [b"a", b"b", b"c"],
    "tuple": (b"a", b"b", b"c"),
    "wrong-length": np.array([b"a", b"b"]),
    "wrong-rank": np.array([[b"a"], [b"b"], [b"c"]]),
    "scalar-bytes": b"hi",
    "scalar-str": "hi",
    "scalar-np-bytes": np.bytes_(b"hi"),
    "0d-bytes-array": np.array(b"hi"),
    "0d-unicode-array-raw-ucs4": np.array("hé"),
}


@pytest.mark.parametrize("case", list(SET_CASES), ids=list(SET_CASES))
def test_set_and_get_string_tensor_match_oracle(case):
    value = SET_CASES[case]
    shape = () if np.ndim(value) == 0 else (3,)
    model = _identity_model(shape)
    LiteRT, _ = oracle()
    theirs = _set_get(LiteRT, model, value)
    ours = _set_get(litert_py.Interpreter, model, value)
    if isinstance(theirs, str):
        assert ours == theirs
        return
    assert not isinstance(ours, str), ours
    for a, b in zip(ours, theirs):
        assert type(a) is type(b) and a.dtype == b.dtype == object and a.shape == b.shape
        assert [type(v) for v in a.reshape(-1)] == [type(v) for v in b.reshape(-1)]
        np.testing.assert_array_equal(a, b)


def _run(I, model, inputs):
    it = I(model_content=model)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def _check(model, inputs):
    LiteRT, _ = oracle()
    theirs = _run(LiteRT, model, inputs)
    ours = _run(litert_py.Interpreter, model, inputs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


strings = st.binary(min_size=0, max_size=5)


def _strings(draw, shape):
    n = int(np.prod(shape))
    return np.array(draw(st.lists(strings, min_size=n, max_size=n)) + [b""], dtype=object)[:n].reshape(shape)


@given(data=st.data(), n=st.integers(1, 6), cols=st.integers(1, 3))
def test_strings_through_gather_and_reshape(data, n, cols):
    """x [n] -> GATHER(idx [k, cols]) -> RESHAPE to [-1] (LiteRT gathers strings from 1-D inputs only)."""
    x = _strings(data.draw, (n,))
    k = data.draw(st.integers(1, 3))
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=k * cols, max_size=k * cols)), np.int32).reshape(
        k, cols
    )
    b = ModelBuilder()
    xi, ii = b.input("x", (n,), np.bytes_), b.input("idx", idx.shape, np.int32)
    g = b.tensor("g", idx.shape, np.bytes_)
    b.op("GATHER", [xi, ii], [g], dict(axis=0))
    r = b.tensor("r", (idx.size,), np.bytes_)
    b.op("RESHAPE", [g, b.const("s", np.array([-1], np.int32))], [r])
    b.output(g, r)
    _check(b.build(), [x, idx])


@pytest.mark.parametrize("op", ["CONCATENATION", "GATHER-2d"])
def test_string_ops_litert_rejects(op):
    """CONCATENATION has no string path in LiteRT and GATHER takes strings only from 1-D inputs."""
    b = ModelBuilder()
    x = b.input("x", (2, 2), np.bytes_)
    if op == "CONCATENATION":
        y = b.tensor("y", (4, 2), np.bytes_)
        b.op("CONCATENATION", [x, x], [y], dict(axis=0))
    else:
        y = b.tensor("y", (1, 2), np.bytes_)
        b.op("GATHER", [x, b.const("i", np.array([1], np.int32))], [y], dict(axis=0))
    b.output(y)
    model = b.build()
    LiteRT, _ = oracle()
    with pytest.raises(RuntimeError):
        LiteRT(model_content=model).allocate_tensors()
    with pytest.raises(litert_py.PrepareError):
        litert_py.Interpreter(model_content=model).allocate_tensors()


@given(data=st.data(), cond=st.booleans())
def test_strings_through_if_branches(data, cond):
    """IF c: then reshape(x, [-1]) else gather(reshape(x, [-1]), [3, 2, 1, 0]): strings cross subgraphs."""
    x = _strings(data.draw, (2, 2))
    b = ModelBuilder()
    c, xi = b.input("c", (), np.bool_), b.input("x", (2, 2), np.bytes_)
    out = b.tensor("out", (4,), np.bytes_)
    b.op("IF", [c, xi], [out], dict(then_subgraph_index=1, else_subgraph_index=2))
    b.output(out)
    for name in ("then", "else"):
        b.subgraph(name)
        bx = b.input("x", (2, 2), np.bytes_)
        r = b.tensor("r", (4,), np.bytes_)
        b.op("RESHAPE", [bx, b.const("s", np.array([-1], np.int32))], [r])
        if name == "else":
            g = b.tensor("g", (4,), np.bytes_)
            b.op("GATHER", [r, b.const("rev", np.array([3, 2, 1, 0], np.int32))], [g], dict(axis=0))
            r = g
        b.output(r)
    _check(b.build(), [np.bool_(cond), x])


@given(data=st.data())
def test_string_lookup_then_gather(data):
    """Look string keys up in a table (int64 values), then GATHER the keys by the found ids: hashtable
    outputs feeding ordinary kernels, strings on both sides."""
    vocab = [b"zero", b"one", b"two", b"three"]
    q = np.array(data.draw(st.lists(st.sampled_from(vocab + [b"none"]), min_size=3, max_size=3)), dtype=object)
    b = ModelBuilder()
    qi = b.input("q", (3,), np.bytes_)
    h = b.tensor("h", (1,), None, tensor_type=RESOURCE)
    opts = dict(table_id=3, key_dtype=dtypes.TensorType.STRING, value_dtype=dtypes.TensorType.INT64)
    b.op("HASHTABLE", [], [h], opts)
    b.op(
        "HASHTABLE_IMPORT",
        [
            h,
            b.tensor("k", (4,), np.bytes_, data=np.array(vocab, dtype=object)),
            b.const("v", np.arange(4, dtype=np.int64)),
        ],
        [],
    )
    ids = b.tensor("ids", (3,), np.int64)
    b.op("HASHTABLE_FIND", [h, qi, b.const("d", np.array([0], np.int64))], [ids])
    back = b.tensor("back", (3,), np.bytes_)
    b.op("GATHER", [b.tensor("vocab", (4,), np.bytes_, data=np.array(vocab, dtype=object)), ids], [back], dict(axis=0))
    b.output(ids, back)
    _check(b.build(), [q])
