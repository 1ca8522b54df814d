"""Kernels that refuse their input values at invoke raise InputValueError (an InvokeError and a ValueError) with
the kernel's own message, not a wrapped "ValueError: ..." (issue 15, item 8: the random graphs' remaining
wrapped causes). LiteRT fails the same invokes with a RuntimeError; the interpreter stays usable."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.errors import InputValueError
from tests.oracle import T, run_litert, single_op_model

F32, I32 = np.float32, np.int32
ONES = np.ones((2, 3), F32)

# op, input tensors, good values, bad values, the message the refusal starts with
CASES = {
    "tile-negative": (
        "TILE",
        [T((2, 3)), T((2,), I32)],
        [ONES, I32([1, 2])],
        [ONES, I32([-1, 1])],
        "TILE multipliers must be non-negative",
    ),
    "reshape-count": (
        "RESHAPE",
        [T((2, 3)), T((2,), I32)],
        [ONES, I32([3, 2])],
        [ONES, I32([4, 2])],
        "num_input_elements != num_output_elements (6 != 8)",
    ),
    "fill-negative": (
        "FILL",
        [T((2,), I32), T((), F32)],
        [I32([2, 2]), F32(1)],
        [I32([-1, 2]), F32(1)],
        "Fill dimensions must be >= 0",
    ),
}


def _feed(it: Interpreter, values) -> None:
    for d, v in zip(it.get_input_details(), values):
        it.set_tensor(d["index"], v)


@pytest.mark.parametrize("case", list(CASES))
def test_refusal_keeps_the_kernels_message_and_type(case):
    op, ins, good, bad, message = CASES[case]
    model = single_op_model(op, ins, [T((2, 2))])  # the output's real shape comes from the values at invoke
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    _feed(it, bad)
    with pytest.raises(InputValueError) as info:
        it.invoke()
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
    text = str(info.value)
    assert text.startswith(message) and "ValueError" not in text
    assert text.endswith(f"Node number 0 ({op}) failed to invoke.")
    with pytest.raises(RuntimeError):  # LiteRT refuses the same invoke
        run_litert(model, bad)
    _feed(it, good)  # still usable: the good values run and agree with LiteRT
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), run_litert(model, good)[0])
