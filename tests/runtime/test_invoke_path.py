"""Interpreter.invoke without a deadline (guard.begin/end inlined for a tiny model's
fixed cost): a node that fails is named and leaves nothing running behind it, a kernel may call back into its
interpreter on the invoking thread, and each invoke is numbered anew (cancel() reaches the running one only)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from litert_py import InterpreterWithCustomOps
from litert_py.errors import CancelledError, InvokeError
from litert_py.schema.builder import ModelBuilder


@dataclass(frozen=True)
class Probe:
    """Copies its input; per invoke records what the interpreter shows from inside (its guard's running invoke
    number, a get_tensor of the model input), then cancels or raises when ``state`` says so."""

    state: dict

    def __call__(self, inputs, outputs):
        it = self.state["interpreter"]
        self.state["seen"].append((it._guard._invoke, it.get_tensor(0).tolist()))  # a call back into it
        outputs[0][...] = inputs[0]
        if self.state.get("cancel"):
            assert it.cancel() is True
        if self.state.get("fail"):
            raise ValueError("asked to fail")


def _interpreter() -> tuple[InterpreterWithCustomOps, dict]:
    state: dict = {"seen": []}

    def prepare(ctx):
        ctx.set_output_shape(0, ctx.input(0).shape)
        return Probe(state)

    b = ModelBuilder()
    x = b.input("x", [2], np.float32)
    t = b.tensor("t", [2], np.float32)
    y = b.tensor("y", [2], np.float32)
    b.op("RELU", [x], [t])
    b.op("CUSTOM", [t], [y], custom_code="LitertPyTestProbe")
    b.output(y)
    it = InterpreterWithCustomOps(
        model_content=b.build(), custom_op_registerers=[lambda add: add("LitertPyTestProbe", prepare)]
    )
    it.allocate_tensors()
    state["interpreter"] = it
    return it, state


def test_reentrant_call_and_invoke_numbers():
    it, state = _interpreter()
    it.set_tensor(0, np.array([1.0, -2.0], np.float32))
    it.invoke()
    it.invoke()
    (n1, x1), (n2, x2) = state["seen"]
    assert x1 == x2 == [1.0, -2.0]  # get_tensor from inside the invoke, same thread: no ConcurrentUseError
    assert n1 > 0 and n2 == n1 + 1  # running and numbered anew each invoke
    assert it._guard._invoke == 0 and it.cancel() is False  # nothing left running
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), [1.0, 0.0])


def test_failing_node_is_named_and_nothing_stays_running():
    it, state = _interpreter()
    it.set_tensor(0, np.array([3.0, 4.0], np.float32))
    state["fail"] = True
    with pytest.raises(InvokeError, match=r"ValueError: asked to fail\nNode number 1 \(LitertPyTestProbe\)"):
        it.invoke()
    assert it._guard._invoke == 0 and it._guard.requested is None
    assert it.cancel() is False  # a cancel now has no invoke to stop and does not reach the next one
    state["fail"] = False
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), [3.0, 4.0])


def test_cancel_inside_is_undone_for_the_next_invoke():
    it, state = _interpreter()
    it.set_tensor(0, np.array([5.0, 6.0], np.float32))
    state["cancel"] = True
    it.invoke()  # the last node cancels: no node after it, so the invoke completes
    assert it._guard._saved is None and it._guard.requested is None  # swapped steps restored by the end
    state["cancel"] = False
    it.invoke()
    assert len(state["seen"]) == 2  # the probe ran again: its step was not left swapped for a stop
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), [5.0, 6.0])


def test_cancel_stops_at_the_next_node_without_a_deadline():
    it, state = _interpreter()
    it.set_tensor(0, np.array([1.0, 1.0], np.float32))
    order = []
    sub = it._subgraphs[0]
    relu = sub.steps[0][0]

    def relu_then_cancel(inputs, outputs):  # the first node cancels the running invoke
        order.append("relu")
        relu(inputs, outputs)
        assert it.cancel() is True

    sub.steps[0] = (relu_then_cancel, *sub.steps[0][1:])
    with pytest.raises(CancelledError, match=r"Node number 1 \(LitertPyTestProbe\)"):
        it.invoke()
    assert order == ["relu"] and state["seen"] == []  # the probe (node 1) never ran
