"""The streaming ring buffer READ_VARIABLE -> CONCATENATION -> STRIDED_SLICE -> ASSIGN_VARIABLE fused into one step
at prepare (litert_py.ops.ring_buffer), against the oracle (ai-edge-litert BUILTIN_REF) over several invokes;
and the groups it must leave alone."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder
from tests.oracle import oracle

RESOURCE = dtypes.TensorType.RESOURCE


def _ring_model(dtype=np.int8, reread: bool = False, slice_out: bool = False, init_rows: int = 2) -> bytes:
    """state (1, 2, 1, 4), frame x (1, 1, 1, 4): c = concat(state, x) (the output), state = c[:, 1:3]. ``reread``:
    the state is also read by a second consumer (no fusion); ``slice_out``: the slice is an output too."""
    b = ModelBuilder()
    x = b.input("x", (1, 1, 1, 4), dtype)
    h = b.tensor("handle", (), None, tensor_type=RESOURCE)
    r = b.tensor("r", (1, 2, 1, 4), dtype)
    c = b.tensor("c", (1, 3, 1, 4), dtype)
    s = b.tensor("s", (1, 2, 1, 4), dtype)
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": "ring"})
    b.op("READ_VARIABLE", [h], [r])
    b.op("CONCATENATION", [r, x], [c], {"axis": 1})
    begin = b.const("begin", np.array([0, 1, 0, 0], np.int32))
    end = b.const("end", np.array([1, 3, 1, 4], np.int32))
    strides = b.const("strides", np.array([1, 1, 1, 1], np.int32))
    b.op("STRIDED_SLICE", [c, begin, end, strides], [s], {})
    b.op("ASSIGN_VARIABLE", [h, s], [])
    outs = [c]
    if reread:
        r2 = b.tensor("r2", (1, 2, 1, 4), dtype)
        b.op("ABS" if dtype == np.float32 else "NEG", [r], [r2])
        outs.append(r2)
    if slice_out:
        outs.append(s)
    b.output(*outs)
    b.subgraph("init")
    h1 = b.tensor("handle", (), None, tensor_type=RESOURCE)
    init = b.const("init", np.arange(4 * init_rows).reshape(1, init_rows, 1, 4).astype(dtype))
    b.op("VAR_HANDLE", [], [h1], {"container": "", "shared_name": "ring"})
    b.op("ASSIGN_VARIABLE", [h1, init], [])
    return b.build()


def _stream(interpreter_class, model, frames):
    it = interpreter_class(model_content=model)
    it.allocate_tensors()
    results = []
    for frame in frames:
        it.set_tensor(it.get_input_details()[0]["index"], frame)
        it.invoke()
        results.append([it.get_tensor(d["index"]).copy() for d in it.get_output_details()])
    return it, results


@pytest.mark.parametrize("variant", ["fused", "reread", "slice-output"])
@pytest.mark.parametrize("dtype", [np.int8, np.float32])
def test_ring_buffer_over_invokes(dtype, variant):
    reread, slice_out = variant == "reread", variant == "slice-output"
    model = _ring_model(dtype, reread, slice_out)
    frames = [np.full((1, 1, 1, 4), 10 + k, dtype) for k in range(5)]
    LiteRT, _ = oracle()
    _, theirs = _stream(LiteRT, model, frames)
    it, ours = _stream(litert_py.Interpreter, model, frames)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y, err_msg=f"invoke {k}")
    assert ours[3][0][0, :, 0, 0].tolist() == [11, 12, 13]  # the last three frames
    names = [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]
    assert ("RingBufferShift" in names) == (variant == "fused")  # the two-call shift (int8 and float32 alike)
    assert "RingBufferStep" not in names


def test_ring_buffer_not_fused_when_preserving_tensors():
    model = _ring_model()
    it = litert_py.Interpreter(model_content=model, experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    names = [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]
    assert "RingBufferStep" not in names and "RingBufferShift" not in names


def assert_refused(model: bytes, preserve: bool, fused: str, message: str) -> None:
    """The first invoke of ``model`` (fused into a ``fused`` step unless ``preserve``) fails with ``message``."""
    it = litert_py.Interpreter(model_content=model, experimental_preserve_all_tensors=preserve)
    it.allocate_tensors()
    names = [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]
    assert (fused in names) != preserve
    d = it.get_input_details()[0]
    it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    with pytest.raises(RuntimeError, match=message):
        it.invoke()


def test_ring_buffer_shift_refuses_a_variable_of_another_shape():
    """The init subgraph assigns 3 rows where the model reads 2: the fused shift takes RingBufferStep's path,
    which fails the invoke with READ_VARIABLE's error (as the unfused READ_VARIABLE does)."""
    for preserve in (False, True):  # fused, unfused
        message = r"holds shape \[1, 3, 1, 4\], the model reads \[1, 2, 1, 4\]"
        assert_refused(_ring_model(init_rows=3), preserve, "RingBufferShift", message)
