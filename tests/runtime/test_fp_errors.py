"""An invoke runs with numpy's floating-point errors ignored (runtime/fp_errors.py) and gives the caller's error
state back unchanged, also when a node fails; inside, the caller's bufsize and error callback carry over, as
with ``np.errstate(all="ignore")``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest

from litert_py import InterpreterWithCustomOps
from litert_py.errors import InvokeError
from litert_py.runtime import fp_errors
from litert_py.schema.builder import ModelBuilder

IGNORE_ALL = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}


@dataclass(frozen=True)
class Observe:
    """Divides by zero (inf, NaN) and records the error state it ran under; ``fail`` raises afterwards."""

    seen: list
    fail: bool

    def __call__(self, inputs, outputs):
        np.divide(inputs[0], np.float32(0.0), out=outputs[0])
        self.seen.append((np.geterr(), np.getbufsize(), np.geterrcall()))
        if self.fail:
            raise ValueError("asked to fail")


def _interpreter(fail: bool = False):
    seen: list = []

    def prepare(ctx):
        ctx.set_output_shape(0, ctx.input(0).shape)
        return Observe(seen, fail)

    b = ModelBuilder()
    x = b.input("x", [3], np.float32)
    y = b.tensor("y", [3], np.float32)
    b.op("CUSTOM", [x], [y], custom_code="LitertPyTestObserveFp")
    b.output(y)
    it = InterpreterWithCustomOps(
        model_content=b.build(), custom_op_registerers=[lambda add: add("LitertPyTestObserveFp", prepare)]
    )
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.array([1.0, 0.0, -1.0], np.float32))
    return it, seen


def test_invoke_ignores_fp_errors_and_restores_the_callers_state():
    it, seen = _interpreter()
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        it.invoke()  # 1/0 and 0/0 would raise FloatingPointError under the caller's state
        assert np.geterr() == {"divide": "raise", "over": "raise", "under": "raise", "invalid": "raise"}
    y = it.get_tensor(it.get_output_details()[0]["index"])
    np.testing.assert_array_equal(y, [np.inf, np.nan, -np.inf])
    assert seen[0][0] == IGNORE_ALL


def test_the_callers_bufsize_and_callback_carry_over_and_changes_are_seen():
    it, seen = _interpreter()

    def callback(kind, flag):  # pragma: no cover (never called: errors are ignored inside)
        raise AssertionError(kind)

    with np.errstate(call=callback):
        it.invoke()
        old = np.getbufsize()
        np.setbufsize(old * 2)
        try:
            it.invoke()  # a changed caller state: the cached quiet state must follow it
        finally:
            np.setbufsize(old)
    assert seen[0] == (IGNORE_ALL, old, callback)
    assert seen[1] == (IGNORE_ALL, old * 2, callback)
    it.invoke()
    assert seen[2] == (IGNORE_ALL, old, None)


def test_a_failing_node_gives_the_callers_state_back():
    it, _ = _interpreter(fail=True)
    with np.errstate(all="warn", under="raise"):
        before = np.geterr()
        with pytest.raises(InvokeError, match="asked to fail"):
            it.invoke()
        assert np.geterr() == before
    before = np.geterr()
    with pytest.raises(InvokeError, match="asked to fail"):  # the interpreter stays usable
        it.invoke()
    assert np.geterr() == before


def test_quiet_and_restore_nest():
    before = np.geterr()
    outer = fp_errors.quiet()
    inner = fp_errors.quiet()
    assert np.geterr() == IGNORE_ALL
    fp_errors.restore(inner)
    assert np.geterr() == IGNORE_ALL
    fp_errors.restore(outer)
    assert np.geterr() == before
