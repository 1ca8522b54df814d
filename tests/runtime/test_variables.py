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
