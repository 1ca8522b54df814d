"""elementwise.Arithmetic bound to its step's arrays (``bind``: the ufunc and the clamp as a bound plan, 1-d views
where no operand broadcasts): inside two invokes (the second with special float values) it gives the bytes the
same op gives on fresh copies of its arrays (the unbound calls) and on Fortran-ordered copies
(tests/ops/_bound.check_bound), and BUILTIN_REF's outputs exactly (the arithmetic is exactly rounded in both)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops.elementwise import Arithmetic
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
