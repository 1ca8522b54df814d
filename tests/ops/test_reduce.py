"""MEAN and SUM against the oracle: every dtype path (quantized int8 / uint8 / int16 included); constant and
non-constant axes; keep_dims; odd axis lists."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._values import qparams, regimes, shapes
from tests.oracle import T, litert_fails, oracle, quant, run_both, single_op_model
from tests.values import values

#: float tolerance per op, relative to the largest input magnitude and multiplied by the reduction length.
#: MEAN is exact: we add in float32 in the reference kernel's order (row-major over the reduced elements) and
#: divide once, so the project's usual 1e-5 x length for accumulations is not needed.
TOLERANCE = {"MEAN": 0.0}

DTYPES = [np.float32, np.int32, np.int64]


@st.composite
def axes_for(draw, rank: int):
    """Axis lists LiteRT accepts: any length (repeats and negatives included), possibly empty."""
    if rank == 0:
        return draw(st.lists(st.integers(-1, 0), max_size=2))
    return draw(st.lists(st.integers(-rank, rank - 1), max_size=rank + 1))


def _expected_shape(shape, axes, keep):
    resolved = {a % len(shape) for a in axes} if shape else set()
    if keep:
        return tuple(1 if i in resolved else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in resolved)


def _check_mean(dtype, data, shape, keep, axis_const, seed):
    axes = data.draw(axes_for(len(shape)), label="axes")
    if not axes and 0 in shape:
        axes = [0]  # the oracle's set_tensor fails on an empty input when the axis list is empty too
    x = values(np.random.default_rng(seed), shape, dtype, data.draw(regimes(dtype), label="regime"))
    ax = np.array(axes, np.int32)
    axis_t = T.const(ax) if axis_const else T(ax.shape, np.int32)
    model = single_op_model(
        "MEAN", [T(shape, dtype), axis_t], [T(_expected_shape(shape, axes, keep), dtype)], {"keep_dims": keep}
    )
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    finite = np.abs(x[np.isfinite(x)]) if np.dtype(dtype).kind == "f" else np.zeros(0)
    n = max(x.size // max(theirs[0].size, 1), 1)
    atol = TOLERANCE["MEAN"] * n * (float(finite.max()) if finite.size else 0.0)
    assert_close(ours, theirs, rtol_each=TOLERANCE["MEAN"] if atol else 0.0, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: f"mean-{np.dtype(d).name}")
@given(data=st.data(), shape=shapes(0, 6, max_dim=5), keep=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_mean(dtype, data, shape, keep, seed):
    _check_mean(dtype, data, shape, keep, True, seed)


@given(data=st.data(), shape=shapes(1, 4, max_dim=4), keep=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_mean_axes_not_constant(data, shape, keep, seed):
    assume(0 not in shape)  # LiteRT's get_tensor fails ("Invalid tensor size") on an empty dynamic output
    _check_mean(np.float32, data, shape, keep, False, seed)


@pytest.mark.parametrize(
    "case",
    [
        ((2, 3, 4), [1], False),
        ((2, 3, 4), [-1, 2, 0], True),
        ((2, 3, 4), [], False),
        ((), [0], False),
        ((2, 0, 4), [1], False),
        ((2, 0, 4), [2], True),
        ((1, 7, 7, 16), [1, 2], True),
        ((5,), [0, 0, -1], False),
        ((3, 6, 7), [1, 2], False),
        ((8, 7, 4, 8), [1, 2, 3], True),
        ((3, 300), [1], False),
        ((300,), [0], False),
    ],
    ids=lambda c: f"{c[0]}-{c[1]}-{'keep' if c[2] else 'drop'}",
)
def test_mean_shapes(case):
    shape, axes, keep = case
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    model = single_op_model(
        "MEAN",
        [T(shape), T.const(np.array(axes, np.int32))],
        [T(_expected_shape(shape, axes, keep))],
        {"keep_dims": keep},
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)  # same order of float32 additions: exact


def test_mean_int_truncates_toward_zero():
    x = np.array([[-1, -1, -2], [1, 1, 2], [-7, 0, 0]], np.int32)
    model = single_op_model(
        "MEAN", [T((3, 3), np.int32), T.const(np.array([1], np.int32))], [T((3,), np.int32)], {"keep_dims": False}
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)
    np.testing.assert_array_equal(ours[0], [-1, 1, -2])


# -- what LiteRT rejects ----------------------------------------------------------------------------
REJECTS = [  # (id, input, axis, output)
    ("axis-out-of-range", T((2, 3)), T.const(np.array([2], np.int32)), T((2,))),
    ("axis-below-range", T((2, 3)), T.const(np.array([-3], np.int32)), T((2,))),
    ("axis-int64", T((2, 3)), T.const(np.array([1], np.int64)), T((2,))),
    ("float16", T((2, 3), np.float16), T.const(np.array([1], np.int32)), T((2,), np.float16)),
    ("bool", T((2, 3), np.bool_), T.const(np.array([1], np.int32)), T((2,), np.bool_)),
]


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: c[0])
def test_rejected(case):
    _, x, axis, out = case
    model = single_op_model("MEAN", [x, axis], [out], {"keep_dims": False})
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    litert_fails(model, [np.zeros(x.shape, x.dtype)])


# -- quantized MEAN and SUM; SUM of every type ------------------------------------------------------
QDTYPES = [np.int8, np.uint8, np.int16]

#: which LiteRT kernels each quantized SUM is compared with: uint8 against the reference; int8 and int16 against
#: the optimized kernels (the reference reads their bytes as uint8, see test_sum_int8_against_reference)
SUM_RESOLVER = {
    np.int8: "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    np.uint8: "BUILTIN_REF",
    np.int16: "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
}


def _check_quantized(op, dtype, data, shape, keep, seed, axis_const=True):
    axes = data.draw(axes_for(len(shape)), label="axes")
    if not axes and 0 in shape:
        axes = [0]
    symmetric = dtype == np.int16
    q_in = quant(*data.draw(qparams(dtype, -4, 2, symmetric=symmetric), label="q_in"))
    q_out = (
        q_in
        if data.draw(st.booleans(), label="same_q")
        else quant(*data.draw(qparams(dtype, -4, 2, symmetric=symmetric), label="q_out"))
    )
    x = values(np.random.default_rng(seed), shape, dtype, data.draw(regimes(dtype), label="regime"))
    ax = np.array(axes, np.int32)
    axis_t = T.const(ax) if axis_const else T(ax.shape, np.int32)
    out = T(_expected_shape(shape, axes, keep), dtype, q=q_out)
    model = single_op_model(op, [T(shape, dtype, q=q_in), axis_t], [out], {"keep_dims": keep})
    resolver = SUM_RESOLVER[dtype] if op == "SUM" else "BUILTIN_REF"
    ours, theirs = run_both(model, [x] if axis_const else [x, ax], resolver)
    assert_close(ours, theirs)


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
@pytest.mark.parametrize("dtype", QDTYPES, ids=lambda d: np.dtype(d).name)
@given(data=st.data(), shape=shapes(0, 6, max_dim=5), keep=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_quantized(op, dtype, data, shape, keep, seed):
    """Exact: negative and repeated axes, keep_dims, rank 0-6, zero points at the ends of the range."""
    if op == "SUM" and dtype != np.uint8:
        assume(0 not in shape)  # LiteRT's optimized SUM leaves the output of an empty input uninitialized
    _check_quantized(op, dtype, data, shape, keep, seed)


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
@given(
    data=st.data(), shape=shapes(1, 4, max_dim=4, allow_empty=False), keep=st.booleans(), seed=st.integers(0, 2**31 - 1)
)
def test_quantized_axes_not_constant(op, data, shape, keep, seed):
    _check_quantized(op, data.draw(st.sampled_from(QDTYPES), label="dtype"), data, shape, keep, seed, axis_const=False)


@pytest.mark.parametrize(
    "case",
    [  # (shape, axes, keep_dims): 4-D spatial means (global average pooling)
        ((1, 24, 24, 32), [1, 2], True),
        ((2, 5, 3, 4), [2, 1], True),
        ((1, 7, 7, 16), [1, 2], False),
        ((3, 4, 5, 6), [-3, -2], True),
        ((1, 1, 1, 8), [1, 2], True),
        ((2, 9, 9, 3), [1, 2, 3], True),
    ],
    ids=lambda c: f"{c[0]}-{c[1]}-{'keep' if c[2] else 'drop'}",
)
@pytest.mark.parametrize("dtype", QDTYPES, ids=lambda d: np.dtype(d).name)
def test_mean_quantized_spatial(case, dtype):
    """BUILTIN_REF takes its general integer path (QuantizedMeanOrSum) for these too; only LiteRT's optimized
    kernels have a separate 4-D int8 / uint8 path (optimized_integer_ops::Mean), which can differ by 1."""
    shape, axes, keep = case
    info = np.iinfo(dtype)
    x = np.random.default_rng(1).integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    zi, zo = (0, 0) if dtype == np.int16 else (int(info.min) + 3, int(info.max) - 20)
    model = single_op_model(
        "MEAN",
        [T(shape, dtype, q=quant(0.0473, zi)), T.const(np.array(axes, np.int32))],
        [T(_expected_shape(shape, axes, keep), dtype, q=quant(0.0311, zo))],
        {"keep_dims": keep},
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


SUM_DTYPES = [np.float32, np.int32, np.int64, np.bool_]

#: SUM of float32 adds in the reference kernel's order, as MEAN does: exact
TOLERANCE["SUM"] = 0.0


@pytest.mark.parametrize("dtype", SUM_DTYPES, ids=lambda d: f"sum-{np.dtype(d).name}")
@given(data=st.data(), shape=shapes(0, 6, max_dim=5), keep=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_sum(dtype, data, shape, keep, seed):
    axes = data.draw(axes_for(len(shape)), label="axes")
    if not axes and 0 in shape:
        axes = [0]
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        x = rng.random(shape) < data.draw(st.sampled_from([0.0, 0.1, 0.5]), label="p_true")
    else:
        x = values(rng, shape, dtype, data.draw(regimes(dtype), label="regime"))
    model = single_op_model(
        "SUM",
        [T(shape, dtype), T.const(np.array(axes, np.int32))],
        [T(_expected_shape(shape, axes, keep), dtype)],
        {"keep_dims": keep},
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs, rtol_each=TOLERANCE["SUM"])


def _sum_int8_model():
    q = quant(0.05, -3)
    return single_op_model(
        "SUM",
        [T((2, 3), np.int8, q=q), T.const(np.array([1], np.int32))],
        [T((2,), np.int8, q=q)],
        {"keep_dims": False},
    )


SUM_INT8_INPUT = np.array([[-5, 3, -1], [20, -2, 2]], np.int8)


def test_sum_int8_matches_default_kernels():
    ours, theirs = run_both(_sum_int8_model(), [SUM_INT8_INPUT], "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    assert_close(ours, theirs)
    np.testing.assert_array_equal(ours[0], [3, 26])  # (x - zp) summed, plus zp: [-3 + 9, 20 + 9] - 3


@pytest.mark.xfail(strict=True, reason="LiteRT reference SUM reinterprets int8 as uint8")
def test_sum_int8_against_reference():
    ours, theirs = run_both(_sum_int8_model(), [SUM_INT8_INPUT])
    assert_close(ours, theirs)


QREJECTS = [  # (id, op, input, output, does LiteRT fail cleanly (else it runs on garbage multipliers))
    (
        "mean-int16-input-zero-point",
        "MEAN",
        T((2, 3), np.int16, q=quant(0.1, 4)),
        T((2,), np.int16, q=quant(0.1, 0)),
        True,
    ),
    (
        "sum-int16-output-zero-point",
        "SUM",
        T((2, 3), np.int16, q=quant(0.1, 0)),
        T((2,), np.int16, q=quant(0.1, 1)),
        True,
    ),
    ("mean-int8-not-quantized", "MEAN", T((2, 3), np.int8), T((2,), np.int8), False),
    ("sum-uint8-output-not-quantized", "SUM", T((2, 3), np.uint8, q=quant(0.1, 3)), T((2,), np.uint8), False),
    ("sum-float16", "SUM", T((2, 3), np.float16), T((2,), np.float16), True),
    ("mean-bool", "MEAN", T((2, 3), np.bool_), T((2,), np.bool_), True),
]


@pytest.mark.parametrize("case", QREJECTS, ids=lambda c: c[0])
def test_quantized_rejected(case):
    _, op, x, out, oracle_check = case
    model = single_op_model(op, [x, T.const(np.array([1], np.int32))], [out], {"keep_dims": False})
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    if oracle_check:
        litert_fails(model, [np.zeros(x.shape, x.dtype)])


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
def test_quantized_int32_sum_wraps(op):
    """70000 int16 values near 32767 sum past INT32_MAX: LiteRT's int32 accumulator wraps, and so do we."""
    x = np.full((70000,), 32767, np.int16)
    x[::7] = 30000
    model = single_op_model(
        op,
        [T(x.shape, np.int16, q=quant(0.001, 0)), T.const(np.array([0], np.int32))],
        [T((), np.int16, q=quant(0.002, 0))],
        {"keep_dims": False},
    )
    ours, theirs = run_both(model, [x], "BUILTIN_REF" if op == "MEAN" else SUM_RESOLVER[np.int16])
    assert_close(ours, theirs)


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
TOLERANCE.update({"REDUCE_MAX": 0.0, "REDUCE_MIN": 0.0, "REDUCE_PROD": 0.0})


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


# -- ARG_MAX, ARG_MIN ------------------------------------------------------------------------------------
ARG_CASES = [
    (op, dt, out)
    for op in ("ARG_MAX", "ARG_MIN")
    for dt in (np.float32, np.uint8, np.int8, np.int32, np.bool_)
    for out in (np.int32, np.int64)
]


@pytest.mark.parametrize("case", ARG_CASES, ids=lambda c: f"{c[0].lower()}-{np.dtype(c[1]).name}-{np.dtype(c[2]).name}")
@given(
    data=st.data(),
    shape=shapes(1, 5, max_dim=4, allow_empty=False),
    axis_const=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_arg_max_min(case, data, shape, axis_const, seed):
    """Ties give the first index; float NaN / inf / -0.0 on every axis (see test_arg_max_min_nan); negative
    axes; int32 or int64 axis."""
    op, dtype, out_dtype = case
    rng = np.random.default_rng(seed)
    a = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    if dtype == np.bool_:
        x = rng.random(shape) < 0.5
    else:
        x = values(rng, shape, dtype, data.draw(regimes(dtype), label="regime"))
        if data.draw(st.booleans(), label="coarse"):  # many ties
            x = (x % 3).astype(dtype) if dtype != np.float32 else np.where(np.isfinite(x), np.sign(x), x)
    ax = np.array([a], data.draw(st.sampled_from([np.int32, np.int64]), label="axis_dtype"))
    out_shape = tuple(d for i, d in enumerate(shape) if i != a % len(shape))
    model = single_op_model(
        op,
        [T(shape, dtype), T.const(ax) if axis_const else T(ax.shape, ax.dtype)],
        [T(out_shape, out_dtype)],
        {"output_type": 2 if out_dtype == np.int32 else 4},
    )
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    assert_close(ours, theirs)


NAN_ROWS = [
    [np.nan, 1, 2],
    [1, np.nan, 0.5],
    [0, 5, np.nan, 7, np.nan, 9],
    [np.nan, np.nan, 1],
    [np.nan, np.nan, np.nan],
    [np.nan, -np.inf, np.inf, 2, np.nan],
    [-0.0, 0.0, np.nan],
    [np.nan, 0.0, -0.0, np.nan, -1.0],
    [1, 2, np.nan, 3],
    [np.nan, np.nan, 5, 8, 2],
    [np.nan, np.nan, 5, 8],
    [3, np.nan, 1, 2, 9, 9, 9, 9],
    [1, 5, np.nan, 9, 0, 6, np.nan, 2, np.nan],
    [np.nan, 1, 2, 3, np.nan, 4, 5, 6, 7],
    [1, 2, 3, 4, np.nan, 0, 0, 0],
]


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("last", [False, True], ids=["axis0", "last-axis"])
@pytest.mark.parametrize("row", NAN_ROWS, ids=str)
def test_arg_max_min_nan(op, last, row):
    """Along a non-last axis NaN never wins and a leading NaN is replaced (reference/arg_min_max.h). Along the
    last axis (inner size 1) the x86 wheel's NEON_2_SSE-vectorized kernel folds 4 lanes: ARG_MAX [1, 2, NaN, 3]
    gives 1 there, [NaN, NaN, 5, 8, 2] gives 4 (see ArgMaxMin)."""
    x = np.array([row, row[::-1]], np.float32)
    x, axis = (x, 1) if last else (x.T, 0)
    model = single_op_model(
        op, [T(x.shape), T.const(np.array([axis], np.int32))], [T((2,), np.int32)], {"output_type": 2}
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


NAN_POOL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 3.0e38, -3.0e38], np.float32)


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("out_dtype", [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
@given(
    n=st.integers(1, 13),
    rows=st.integers(1, 300),
    trailing=st.integers(0, 2),
    axis_const=st.booleans(),
    nan_rate=st.sampled_from([0.1, 0.3, 0.6, 0.9]),
    seed=st.integers(0, 2**31 - 1),
)
def test_arg_max_min_nan_last_axis(op, out_dtype, n, rows, trailing, axis_const, nan_rate, seed):
    """Inner size 1 (last axis, or only size-1 axes after it): many rows of NaN / inf / -0.0 / ties per model,
    axis lengths below 4, exactly 4k and with a tail, so every lane / fold / tail case meets the oracle."""
    rng = np.random.default_rng(seed)
    x = rng.choice(NAN_POOL, size=(rows, n))
    x[rng.random(x.shape) < nan_rate] = np.nan
    x = x.reshape((rows, n) + (1,) * trailing)
    ax = np.array([1], np.int32)
    model = single_op_model(
        op,
        [T(x.shape), T.const(ax) if axis_const else T(ax.shape, np.int32)],
        [T((rows,) + (1,) * trailing, out_dtype)],
        {"output_type": 2 if out_dtype == np.int32 else 4},
    )
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    assert_close(ours, theirs)


# -- CUMSUM ------------------------------------------------------------------------------------------------
TOLERANCE["CUMSUM"] = 0.0  # added one after the other in the kernel's order: exact


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64], ids=lambda d: f"cumsum-{np.dtype(d).name}")
@given(
    data=st.data(),
    shape=shapes(1, 5, max_dim=5),
    exclusive=st.booleans(),
    reverse=st.booleans(),
    axis_const=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_cumsum(dtype, data, shape, exclusive, reverse, axis_const, seed):
    if not axis_const:
        assume(0 not in shape)
    x = values(np.random.default_rng(seed), shape, dtype, data.draw(regimes(dtype), label="regime"))
    ax = np.array(data.draw(st.integers(-len(shape), len(shape) - 1), label="axis"), np.int32)
    model = single_op_model(
        "CUMSUM",
        [T(shape, dtype), T.const(ax) if axis_const else T((), np.int32)],
        [T(shape, dtype)],
        {"exclusive": exclusive, "reverse": reverse},
    )
    ours, theirs = run_both(model, [x] if axis_const else [x, ax])
    assert_close(ours, theirs, rtol_each=TOLERANCE["CUMSUM"])


@pytest.mark.parametrize(
    "dtype, shape, axes, expected",
    [
        (np.int8, (1, 2, 2, 384), [1, 2], "MeanQuantizedTable"),  # a MobileNetV2 head: n = 4
        (np.uint8, (2, 7, 7, 5), [1, 2], "MeanQuantizedTable"),
        (np.int8, (1, 32, 33, 3), [1, 2], "MeanQuantized"),  # n = 1056 > MEAN_TABLE_MAX_COUNT
        (np.int16, (1, 4, 4, 8), [1, 2], "MeanQuantized"),
    ],
)
def test_mean_quantized_table(dtype, shape, axes, expected):
    """8-bit MEAN over at most MEAN_TABLE_MAX_COUNT values reads a table of every sum (exact by construction),
    the type's extremes included; larger counts and int16 keep the int64 requantization."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    x.reshape(-1)[:5] = info.max
    x.reshape(-1)[-5:] = info.min
    mid = (int(info.min) + int(info.max) + 1) // 2
    zi, zo = (0, 0) if dtype == np.int16 else (mid - 3, mid + 5)
    model = single_op_model(
        "MEAN",
        [T(shape, dtype, q=quant(0.0473, zi)), T.const(np.array(axes, np.int32))],
        [T(_expected_shape(shape, axes, False), dtype, q=quant(0.0111, zo))],  # means spread 4x
        {"keep_dims": False},
    )
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)
    assert len(np.unique(ours[0])) > 2
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == expected
