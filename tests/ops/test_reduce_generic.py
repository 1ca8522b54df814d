"""REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL against the oracle (litert_py/ops/reduce_generic.py):
every path of EvalGeneric, constant and non-constant axes, keep_dims, NaN / inf / -0.0, what LiteRT rejects."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._reduce import _expected_shape, axes_for
from tests.ops._values import qparams, regimes, shapes
from tests.oracle import T, oracle, quant, run_both, single_op_model
from tests.values import values

# -- REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL: one table --------------------------------
#: (op, dtype, quantized): every path of EvalGeneric that LiteRT's reference kernel runs
GENERIC_CASES = [
    *[
        (op, dt, False)
        for op in ("REDUCE_MAX", "REDUCE_MIN")
        for dt in (np.float32, np.int32, np.int64, np.uint8, np.int8, np.int16, np.bool_)
    ],
    *[(op, dt, True) for op in ("REDUCE_MAX", "REDUCE_MIN") for dt in (np.uint8, np.int8, np.int16)],
    *[("REDUCE_PROD", dt, False) for dt in (np.float32, np.int32, np.int64, np.uint8, np.int8, np.int16, np.bool_)],
    ("REDUCE_PROD", np.int8, True),
    ("REDUCE_PROD", np.int16, True),
    ("REDUCE_ANY", np.bool_, False),
    ("REDUCE_ALL", np.bool_, False),
]

#: MAX / MIN pick an input value; PROD multiplies in the reference kernel's order: all exact
TOLERANCE = {"REDUCE_MAX": 0.0, "REDUCE_MIN": 0.0, "REDUCE_PROD": 0.0}


def _generic_id(case):
    op, dt, q = case
    return f"{op.lower()}-{np.dtype(dt).name}{'-quantized' if q else ''}"


@pytest.mark.parametrize("case", GENERIC_CASES, ids=_generic_id)
@given(
    data=st.data(),
    shape=shapes(0, 5, max_dim=4),
    keep=st.booleans(),
    axis_const=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_reduce_generic(case, data, shape, keep, axis_const, seed):
    """Negative, repeated and empty axis lists, keep_dims, NaN / inf / -0.0, integer extremes (PROD wraps)."""
    op, dtype, quantized = case
    axes = data.draw(axes_for(len(shape)), label="axes")
    if not axes and 0 in shape:
        axes = [0]
    if not axis_const:
        assume(0 not in shape and axes)  # LiteRT's get_tensor fails on an empty dynamic output
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        x = rng.random(shape) < data.draw(st.sampled_from([0.0, 0.5, 0.9, 1.0]), label="p_true")
    else:
        x = values(rng, shape, dtype, data.draw(regimes(dtype), label="regime"))
    q = q_out = None
    if quantized:
        q = q_out = quant(*data.draw(qparams(dtype, -2, 0, symmetric=dtype == np.int16), label="q"))
        if op == "REDUCE_PROD":  # its own output scale (MAX / MIN need equal ones); LiteRT leaves the output
            # of an empty input unwritten
            assume(0 not in shape)
            q_out = quant(*data.draw(qparams(dtype, -2, 0, symmetric=dtype == np.int16), label="q_out"))
    ax = np.array(axes, np.int32)
    model = single_op_model(
        op,
        [T(shape, dtype, q=q), T.const(ax) if axis_const else T(ax.shape, np.int32)],
        [T(_expected_shape(shape, axes, keep), dtype, q=q_out)],
        {"keep_dims": keep},
    )
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    assert_close(ours, theirs, rtol_each=TOLERANCE.get(op, 0.0))


@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
@pytest.mark.parametrize(
    "x, axes",
    [
        ([np.nan, 1.0, 2.0], [0]),
        ([1.0, np.nan, -3.0], [0]),
        ([np.nan, np.nan], [0]),
        ([-np.inf, -np.inf], [0]),
        ([np.inf, np.inf], [0]),
        ([-0.0, 0.0], [0]),
        ([0.0, -0.0], [0]),
        ([[np.nan, 1.0], [-np.inf, np.inf]], [1]),
        ([[-0.0, 0.0], [0.0, -0.0]], [1]),
        ([[-np.inf, np.nan], [np.nan, np.inf]], [1]),
    ],
    ids=lambda v: str(v),
)
def test_reduce_max_min_specials(op, x, axes):
    """ReduceAllDims starts from the first element (a leading NaN sticks); ReduceGeneric from -+FLT_MAX."""
    x = np.array(x, np.float32)
    model = single_op_model(
        op,
        [T(x.shape), T.const(np.array(axes, np.int32))],
        [T(_expected_shape(x.shape, axes, False))],
        {"keep_dims": False},
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(theirs[0]))


GENERIC_REJECTS = [  # (id, op, input, axis, output)
    ("max-float16", "REDUCE_MAX", T((2, 3), np.float16), T.const(np.array([1], np.int32)), T((2,), np.float16)),
    ("max-axis-int64", "REDUCE_MAX", T((2, 3)), T.const(np.array([1], np.int64)), T((2,))),
    ("min-axis-out-of-range", "REDUCE_MIN", T((2, 3)), T.const(np.array([2], np.int32)), T((2,))),
    ("any-float32", "REDUCE_ANY", T((2, 3)), T.const(np.array([1], np.int32)), T((2,))),
    ("all-int32", "REDUCE_ALL", T((2, 3), np.int32), T.const(np.array([1], np.int32)), T((2,), np.int32)),
    (
        "max-int16-zero-point",
        "REDUCE_MAX",
        T((2, 3), np.int16, q=quant(0.1, 3)),
        T.const(np.array([1], np.int32)),
        T((2,), np.int16, q=quant(0.1, 3)),
    ),
    (
        "max-int8-scales-differ",
        "REDUCE_MAX",
        T((2, 3), np.int8, q=quant(0.1, 3)),
        T.const(np.array([1], np.int32)),
        T((2,), np.int8, q=quant(0.2, 3)),
    ),
    (
        "prod-uint8-quantized",
        "REDUCE_PROD",
        T((2, 3), np.uint8, q=quant(0.1, 3)),
        T.const(np.array([1], np.int32)),
        T((2,), np.uint8, q=quant(0.1, 3)),
    ),
    (
        "prod-int16-zero-point",
        "REDUCE_PROD",
        T((2, 3), np.int16, q=quant(0.1, 2)),
        T.const(np.array([1], np.int32)),
        T((2,), np.int16, q=quant(0.1, 0)),
    ),
    ("argmax-float16", "ARG_MAX", T((2, 3), np.float16), T.const(np.array([1], np.int32)), T((2,), np.int32)),
    ("argmin-int16", "ARG_MIN", T((2, 3), np.int16), T.const(np.array([1], np.int32)), T((2,), np.int32)),
    ("argmax-two-axes", "ARG_MAX", T((2, 3)), T.const(np.array([0, 1], np.int32)), T((2,), np.int32)),
    ("argmax-empty-axis", "ARG_MAX", T((2, 0)), T.const(np.array([1], np.int32)), T((2,), np.int32)),
    ("argmin-axis-out-of-range", "ARG_MIN", T((2, 3)), T.const(np.array([-3], np.int32)), T((2,), np.int32)),
    ("cumsum-int8", "CUMSUM", T((2, 3), np.int8), T.const(np.array(1, np.int32)), T((2, 3), np.int8)),
    ("cumsum-axis-int64", "CUMSUM", T((2, 3)), T.const(np.array(1, np.int64)), T((2, 3))),
    ("cumsum-rank0", "CUMSUM", T(()), T.const(np.array(0, np.int32)), T(())),
    ("cumsum-axis-out-of-range", "CUMSUM", T((2, 3)), T.const(np.array(2, np.int32)), T((2, 3))),
]


@pytest.mark.parametrize("case", GENERIC_REJECTS, ids=lambda c: c[0])
def test_generic_rejected(case):
    _, op, x, axis, out = case
    options = {"keep_dims": False} if op.startswith("REDUCE") else {}
    if op.startswith("ARG"):
        options = {"output_type": 2}  # INT32
    model = single_op_model(op, [x, axis], [out], options)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    LiteRT, OpResolverType = oracle()
    ref = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    with pytest.raises((RuntimeError, ValueError)):
        ref.allocate_tensors()
        ref.set_tensor(ref.get_input_details()[0]["index"], np.zeros(x.shape, x.dtype))
        ref.invoke()
