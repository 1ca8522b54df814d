"""elementwise.Arithmetic and activations.ArithmeticThenActivation bound to their step's arrays (``bind``: the
ufunc, the clamp and the activation as a bound plan): inside two invokes (the second with special float values) they
give the bytes the same op gives on fresh copies of its arrays (the unbound calls) and on Fortran-ordered copies
(tests/ops/_bound.check_bound); BUILTIN_REF's outputs exactly for the arithmetic, within exp / tanh's tolerance
after an activation."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops.activations import ArithmeticThenActivation
from litert_py.ops.elementwise import Arithmetic
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.ops._bound import check_bound
from tests.oracle import T, run_both, single_op_model

CASES = [
    ("ADD", np.float32, (2, 3, 4), (2, 3, 4), 0),
    ("SUB", np.float32, (2, 3, 4), (4,), 1),  # RELU: a narrower clamp; y broadcast
    ("MUL", np.float32, (1, 8), (1, 8), 0),  # a GRU body's gate product
    ("DIV", np.float32, (3, 1), (1, 5), 3),  # RELU6; both broadcast
    ("MUL", np.float32, (1,), (), 0),  # a 0-d operand
    ("ADD", np.int32, (2, 5), (2, 5), 1),  # an integer clamp (RELU)
    ("MUL", np.int32, (6,), (), 0),  # wrapping, no clamp
    ("MAXIMUM", np.int8, (2, 4), (4,), None),
]


@pytest.mark.parametrize(
    "op,dtype,xs,ys,act", CASES, ids=[f"{c[0].lower()}-{np.dtype(c[1]).name}-{k}" for k, c in enumerate(CASES)]
)
def test_arithmetic_bound_plan(op, dtype, xs, ys, act):
    rng = np.random.default_rng(len(xs) * 7 + len(ys))
    out_shape = np.broadcast_shapes(xs, ys)
    options = None if act is None else {"fused_activation_function": act}
    model = single_op_model(op, [T(xs, dtype), T(ys, dtype)], [T(out_shape, dtype)], options)
    if np.dtype(dtype).kind == "f":
        x, y = rng.uniform(-3, 3, xs).astype(dtype), rng.uniform(0.5, 3, ys).astype(dtype)
    else:
        x, y = rng.integers(-100, 100, xs).astype(dtype), rng.integers(1, 50, ys).astype(dtype)
    ours, theirs = run_both(model, [x, y])
    assert_close(ours, theirs, rtol=0, atol=0)
    check_bound(model, [x, y], Arithmetic)


ACT_CASES = [
    ("ADD", "LOGISTIC", (1, 32), (1, 32), 0),  # a GRU gate
    ("SUB", "TANH", (2, 3, 4), (4,), 0),
    ("MUL", "LOGISTIC", (3, 5), (5,), 1),  # a RELU on the product: its clamp kept
    ("DIV", "TANH", (1, 16), (1, 16), 0),
]


@pytest.mark.parametrize("op,act,xs,ys,fused", ACT_CASES, ids=[f"{c[0].lower()}-{c[1].lower()}" for c in ACT_CASES])
def test_arithmetic_then_activation_bound_plan(op, act, xs, ys, fused):
    """An ADD / SUB / MUL / DIV read only by a LOGISTIC / TANH (one ArithmeticThenActivation step) bound to its
    arrays: in and out of LOGISTIC's main branch (the second invoke's special values), the unbound call's bytes,
    and BUILTIN_REF's values within the float tolerance of exp / tanh."""
    rng = np.random.default_rng(len(xs) + len(op))
    b = ModelBuilder()
    x, y = b.input("x", xs, np.float32), b.input("y", ys, np.float32)
    shape = np.broadcast_shapes(xs, ys)
    t, out = b.tensor("t", shape, np.float32), b.tensor("out", shape, np.float32)
    b.op(op, [x, y], [t], {"fused_activation_function": fused})
    b.op(act, [t], [out])
    b.output(out)
    model = b.build()
    xv, yv = rng.uniform(-4, 4, xs).astype(np.float32), rng.uniform(0.5, 2, ys).astype(np.float32)
    xv.reshape(-1)[0] = 30.0  # one value past LOGISTIC's upper cutoff: its general call
    for feed in ([xv * 0.5, yv], [xv, yv]):
        ours, theirs = run_both(model, feed)
        assert_close(ours, theirs, rtol_each=1e-5, atol=1e-6)
    check_bound(model, [xv * 0.5, yv], ArithmeticThenActivation)
