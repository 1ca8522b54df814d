"""SHAPE and RANK of a static-shape tensor are folded into constants at prepare, so the shape arithmetic after
them (STRIDED_SLICE, CONCATENATION, RESHAPE's shape input) folds too and the subgraph stays on the static
path. Results against the oracle (ai-edge-litert BUILTIN_REF)."""

from __future__ import annotations

import numpy as np

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder
from tests.oracle import run_litert, run_ours


def _model(shape_out_type=2) -> bytes:
    """y = RESHAPE(x, CONCATENATION([STRIDED_SLICE(SHAPE(x), [0], [1]), [-1]])) * 1 and r = RANK(x)."""
    b = ModelBuilder()
    x = b.input("x", (2, 3, 4), np.float32)
    s = b.tensor("s", (3,), np.int32 if shape_out_type == 2 else np.int64)
    b.op("SHAPE", [x], [s], {"out_type": shape_out_type})
    s32 = s
    if shape_out_type != 2:
        s32 = b.tensor("s32", (3,), np.int32)
        b.op("CAST", [s], [s32])
    begin = b.tensor("begin", (1,), np.int32, data=np.array([0], np.int32))
    end = b.tensor("end", (1,), np.int32, data=np.array([1], np.int32))
    strides = b.tensor("strides", (1,), np.int32, data=np.array([1], np.int32))
    n = b.tensor("n", (1,), np.int32)
    b.op("STRIDED_SLICE", [s32, begin, end, strides], [n], {})
    minus_one = b.tensor("m1", (1,), np.int32, data=np.array([-1], np.int32))
    new_shape = b.tensor("new_shape", (2,), np.int32)
    b.op("CONCATENATION", [n, minus_one], [new_shape], {"axis": 0})
    y = b.tensor("y", (2, 12), np.float32)
    b.op("RESHAPE", [x, new_shape], [y])
    r = b.tensor("r", (), np.int32)
    b.op("RANK", [x], [r])
    b.output(y, r)
    return b.build()


def test_shape_of_a_static_tensor_is_folded():
    for out_type in (2, 4):  # INT32, INT64
        model = _model(out_type)
        x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        ours, theirs = run_ours(model, [x]), run_litert(model, [x])
        for a, b in zip(ours, theirs):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        sub = it._subgraphs[0]
        assert not sub.deferred
        assert [node.name for node, _ in sub.steps_nodes] == ["RESHAPE"]  # SHAPE..CONCATENATION, RANK folded


def test_resized_input_refolds_the_shape():
    """The folded shape follows resize_tensor_input (prepare runs again)."""
    model = _model()
    it = Interpreter(model_content=model)
    it.resize_tensor_input(it.get_input_details()[0]["index"], [4, 3, 4])
    it.allocate_tensors()
    x = np.arange(48, dtype=np.float32).reshape(4, 3, 4)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    y = it.get_tensor(it.get_output_details()[0]["index"])
    np.testing.assert_array_equal(y, x.reshape(4, 12))
