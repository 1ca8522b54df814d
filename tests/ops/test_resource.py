"""Resource variables and CALL_ONCE: state carried across invokes, compared with the oracle step by step."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.schema import dtypes
from litert_py.schema.writer import ModelBuilder
from tests.oracle import oracle

RESOURCE = dtypes.TensorType.RESOURCE


def _delay_line_model(shape=(2, 3), init=None) -> bytes:
    """y = var; var = x. Subgraph 1 (run once by CALL_ONCE) assigns the initial value to var."""
    b = ModelBuilder()
    x = b.input("x", shape, np.float32)
    h = b.tensor("handle", (), None, tensor_type=RESOURCE)
    y = b.tensor("y", shape, np.float32)
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": "state"})
    b.op("READ_VARIABLE", [h], [y])
    b.op("ASSIGN_VARIABLE", [h, x], [])
    b.output(y)
    b.subgraph("init")
    h1 = b.tensor("handle", (), None, tensor_type=RESOURCE)
    c = b.const("init", np.full(shape, 7.0, np.float32) if init is None else init)
    b.op("VAR_HANDLE", [], [h1], {"container": "", "shared_name": "state"})
    b.op("ASSIGN_VARIABLE", [h1, c], [])
    b.signature("serving_default", {"x": x}, {"y": y})
    return b.build()


def _stream(I, model, xs, reset_at=None):
    it = I(model_content=model)
    it.allocate_tensors()
    outs = []
    for k, x in enumerate(xs):
        if k == reset_at:
            it.reset_all_variables()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
    return outs


@pytest.mark.parametrize("reset_at", [None, 2], ids=["stream", "reset-midway"])
def test_variable_state_across_invokes_matches_oracle(reset_at):
    LiteRT, _ = oracle()
    model = _delay_line_model()
    xs = [np.full((2, 3), k, np.float32) for k in range(1, 5)]
    theirs = _stream(LiteRT, model, xs, reset_at)
    ours = _stream(litert_py.Interpreter, model, xs, reset_at)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_array_equal(a, b, err_msg=f"invoke {k}")
    assert np.all(ours[0] == 7.0) and np.all(ours[1] == 1.0)  # the init value, then the previous input


def test_call_once_survives_reallocation():
    it = litert_py.Interpreter(model_content=_delay_line_model())
    it.allocate_tensors()
    it.set_tensor(0, np.ones((2, 3), np.float32))
    it.invoke()
    it.allocate_tensors()
    it.set_tensor(0, np.zeros((2, 3), np.float32))
    it.invoke()
    assert np.all(it.get_tensor(it.get_output_details()[0]["index"]) == 1.0)


def test_signature_runner_on_stateful_model():
    LiteRT, _ = oracle()
    model = _delay_line_model()
    xs = [np.full((2, 3), k, np.float32) for k in range(3)]
    runs = []
    for I in (LiteRT, litert_py.Interpreter):
        runner = I(model_content=model).get_signature_runner()
        runs.append([runner(x=x)["y"] for x in xs])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
