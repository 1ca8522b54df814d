"""Variable tensors (is_variable) start where LiteRT starts them and reset_all_variables returns them there."""

from __future__ import annotations

import numpy as np

import litert_py
from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import oracle


def test_int8_variable_starts_at_its_zero_point():
    b = ModelBuilder()
    q = quant(0.5, 5)
    x = b.input("x", [4], np.int8, quantization=q)
    v = b.tensor("state", [4], np.int8, quantization=q, is_variable=True)
    y = b.tensor("y", [4], np.int8, quantization=q)
    b.op("ADD", [x, v], [y])
    b.output(y)
    model = b.build()
    x0 = np.array([5, 7, -3, 100], np.int8)
    outs = []
    for I in (oracle()[0], litert_py.Interpreter):
        it = I(model_content=model)
        it.allocate_tensors()
        it.set_tensor(0, x0)
        it.invoke()
        it.reset_all_variables()
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[1], x0)  # x + a zero-valued state (stored as its zero point) is x


def test_reallocation_after_a_resize_resets_variables():
    """Subgraph::AllocateTensors ends with ResetVariableTensors when it (re)allocates: a resize to a new shape then
    allocate_tensors starts the states over; a resize to the same shape allocates nothing and keeps them."""
    from tests.ops.recurrent.test_rnn_hybrid_edges import _rnn_model

    model, _ = _rnn_model("UNIDIRECTIONAL_SEQUENCE_RNN", False, False, [0.5, -0.25, 0.125], 1, 2, 4, 3)
    runs = []
    for I in (oracle()[0], litert_py.Interpreter):
        it = I(model_content=model)
        it.allocate_tensors()
        states = []
        for shape in ((1, 2, 4), (1, 2, 4), (1, 3, 4), (1, 3, 4)):
            inp = it.get_input_details()[0]["index"]
            it.resize_tensor_input(inp, shape)
            it.allocate_tensors()
            h = next(d["index"] for d in it.get_tensor_details() if d["name"] == "fw_h")
            states.append(it.get_tensor(h).copy())  # after allocate_tensors, before the invoke
            it.set_tensor(inp, np.full(shape, 0.75, np.float32))
            it.invoke()
        runs.append(states)
    for theirs, ours in zip(*runs):
        np.testing.assert_array_equal(ours, theirs)
    assert runs[1][1].any() and not runs[1][2].any()  # kept over a same-shape resize, reset by a new shape
