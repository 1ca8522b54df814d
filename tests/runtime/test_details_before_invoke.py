"""Detail dicts of outputs whose shape depends on values, before and after the first invoke, against LiteRT's.

LiteRT prepares nodes in order and stops after the first node with a dynamic output (a value-dependent shape,
a string output, a HASHTABLE handle); later nodes are prepared during invoke. Until then ``get_output_details()``
shows those tensors with the shape the model declares, and ``shape_signature`` falls back to the current shape
when the model has none. litert_py reports the same (runtime/subgraph.py, ``SubgraphRuntime.reported``).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder
from tests.oracle import T, oracle, single_op_model

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


def _shapes(details) -> list[tuple[str, list[int], list[int]]]:
    return [(d["name"], d["shape"].tolist(), d["shape_signature"].tolist()) for d in details]


def _lifecycle(it, feeds: list[np.ndarray], resize: bool = False) -> dict:
    """Details after allocate_tensors, after invoke, the output arrays' shapes, and (``resize``) the details
    after resizing the inputs to the feeds' shapes and allocating again."""
    inputs = it.get_input_details()
    if resize:
        for d, x in zip(inputs, feeds):
            it.resize_tensor_input(d["index"], list(x.shape))
    it.allocate_tensors()
    got = {"allocated": _shapes(it.get_output_details()), "inputs": _shapes(it.get_input_details())}
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], x)
    it.invoke()
    got["invoked"] = _shapes(it.get_output_details())
    got["arrays"] = [list(it.get_tensor(d["index"]).shape) for d in it.get_output_details()]
    return got


def _both(model: bytes, feeds: list[np.ndarray], resolver: str = "BUILTIN_REF", resize: bool = False):
    LiteRT, OpResolverType = oracle()
    theirs = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=getattr(OpResolverType, resolver))
    return _lifecycle(Interpreter(model_content=model), feeds, resize), _lifecycle(theirs, feeds, resize)


def _segment_model(op: str = "UNSORTED_SEGMENT_SUM") -> bytes:
    """A segment op whose segment count is a graph input, its output fed to ABS, and an unrelated ABS after it:
    output shapes declared [1, 3] (signature [-1, 3]), [1, 3] and [2] (the last one is wrong on purpose: LiteRT
    shows it until the invoke, since it has not prepared that node yet)."""
    b = ModelBuilder()
    data = b.input("data", [4, 3], np.float32)
    ids = b.input("ids", [4], np.int32)
    num = b.input("num_segments", [1], np.int32)
    other = b.input("other", [5], np.float32)
    seg = b.tensor("segments", [1, 3], np.float32, shape_signature=[-1, 3])
    b.op(op, [data, ids, num], [seg])
    absd = b.tensor("abs_of_segments", [1, 3], np.float32)
    b.op("ABS", [seg], [absd])
    unrelated = b.tensor("unrelated", [2], np.float32)
    b.op("ABS", [other], [unrelated])
    b.output(seg, absd, unrelated)
    return b.build()


SEGMENT_FEEDS = [
    np.arange(12, dtype=np.float32).reshape(4, 3) - 5,
    np.array([0, 2, 2, 1], np.int32),
    np.array([4], np.int32),
    np.linspace(-1, 1, 5).astype(np.float32),
]


@pytest.mark.parametrize("op", ["UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_PROD"])
def test_segment_count_from_an_input(op):
    ours, theirs = _both(_segment_model(op), SEGMENT_FEEDS)
    assert ours == theirs
    # what LiteRT shows: the model's shapes (signature [-1, 3] kept) until the invoke, then the real ones
    assert theirs["allocated"] == [
        ("segments", [1, 3], [-1, 3]),
        ("abs_of_segments", [1, 3], [1, 3]),
        ("unrelated", [2], [2]),
    ]
    assert theirs["invoked"] == [
        ("segments", [4, 3], [-1, 3]),
        ("abs_of_segments", [4, 3], [4, 3]),
        ("unrelated", [5], [5]),
    ]


def test_segment_count_after_resize_and_second_allocate():
    """After an invoke, a resize and a new allocate_tensors, LiteRT shows the last invoke's shapes again for
    the nodes it has not prepared yet."""
    model = _segment_model()
    LiteRT, OpResolverType = oracle()
    runtimes = [
        Interpreter(model_content=model),
        LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF),
    ]
    seen = []
    for it in runtimes:
        first = _lifecycle(it, SEGMENT_FEEDS)
        feeds = [
            np.ones((6, 3), np.float32),
            np.array([0, 1, 1, 0, 2, 2], np.int32),
            np.array([3], np.int32),
            np.ones(7, np.float32),
        ]
        second = _lifecycle(it, feeds, resize=True)
        seen.append((first, second))
    assert seen[0] == seen[1]


def test_where_output_and_the_nodes_after_it():
    b = ModelBuilder()
    cond = b.input("cond", [2, 3], np.bool_)
    coords = b.tensor("coords", [1, 2], np.int64, shape_signature=[-1, 2])
    b.op("WHERE", [cond], [coords])
    cast = b.tensor("as_float", [1, 2], np.float32)
    b.op("CAST", [coords], [cast])
    b.output(coords, cast)
    mask = np.array([[True, False, True], [False, True, True]])
    ours, theirs = _both(b.build(), [mask])
    assert ours == theirs
    assert theirs["invoked"][0] == ("coords", [4, 2], [-1, 2])


def test_hashtable_find_in_a_tensorflow_model():
    """tf_hashtables.tflite: HASHTABLE handles (dynamic in LiteRT) stop its prepare; outputs declared with rank 0
    and no signature show [] until the invoke, then [1]."""
    model = (FIXTURES / "tf_hashtables.tflite").read_bytes()
    feeds = [np.array([b"hello"], dtype=object), np.array([3], np.int64)]
    ours, theirs = _both(model, feeds, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")  # REF lacks the hashtables
    assert ours == theirs
    assert [shape for _, shape, _ in theirs["allocated"]] == [[], [2], []]


def test_shape_signature_without_one_in_the_model_follows_resize():
    """No shape_signature in the model: LiteRT reports the current shape as the signature, after a resize too."""
    model = single_op_model("ADD", [T((1, 4)), T((1, 4))], [T((1, 4))])
    x = np.ones((3, 4), np.float32)
    ours, theirs = _both(model, [x, np.ones((1, 4), np.float32)], resize=True)
    assert ours == theirs
    assert theirs["inputs"][0][1:] == ([3, 4], [3, 4])
