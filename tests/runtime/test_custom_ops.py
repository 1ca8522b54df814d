"""Python custom ops registered for one interpreter (InterpreterWithCustomOps) or globally (register_custom_op)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import litert_py
from litert_py import Interpreter, InterpreterWithCustomOps, UnsupportedOpError
from litert_py.schema.builder import ModelBuilder


@dataclass(frozen=True)
class Scale:
    factor: float

    def __call__(self, inputs, outputs):
        np.multiply(inputs[0], self.factor, out=outputs[0])


def _model(name: str) -> bytes:
    b = ModelBuilder()
    x = b.input("x", [3], np.float32)
    y = b.tensor("y", [3], np.float32)
    b.op("CUSTOM", [x], [y], custom_code=name)
    b.output(y)
    return b.build()


def _run(it) -> np.ndarray:
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.array([1, 2, 3], np.float32))
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _prepare(factor):
    def prepare(ctx):
        ctx.set_output_shape(0, ctx.input(0).shape)
        return Scale(factor)

    return prepare


def test_per_interpreter_op_is_seen_by_that_interpreter_only():
    model = _model("LitertPyTestPerInterpreter")
    it = InterpreterWithCustomOps(
        model_content=model, custom_op_registerers=[lambda add: add("LitertPyTestPerInterpreter", _prepare(3))]
    )
    np.testing.assert_array_equal(_run(it), [3, 6, 9])
    with pytest.raises(UnsupportedOpError, match="LitertPyTestPerInterpreter"):
        Interpreter(model_content=model)


def test_per_interpreter_op_comes_before_the_global_one():
    model = _model("LitertPyTestBoth")
    litert_py.register_custom_op("LitertPyTestBoth", _prepare(2))
    np.testing.assert_array_equal(_run(Interpreter(model_content=model)), [2, 4, 6])
    it = InterpreterWithCustomOps(
        model_content=model, custom_op_registerers=[lambda add: add("LitertPyTestBoth", _prepare(5))]
    )
    np.testing.assert_array_equal(_run(it), [5, 10, 15])


def test_symbol_name_registerer_raises_like_tflite():
    with pytest.raises(ValueError, match="Looking up symbol 'TF_Registerer' failed"):
        InterpreterWithCustomOps(model_content=_model("X"), custom_op_registerers=["TF_Registerer"])
