"""MEAN and SUM against the oracle: every dtype path (quantized int8 / uint8 / int16 included); constant and
non-constant axes; keep_dims; odd axis lists. REDUCE_MAX / MIN / PROD / ANY / ALL are in
test_reduce_generic.py, ARG_MAX / ARG_MIN / CUMSUM in test_reduce_axis.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._reduce import _expected_shape, axes_for
from tests.ops._values import qparams, regimes, shapes
from tests.oracle import T, litert_fails, quant, run_both, single_op_model
from tests.values import values

#: float tolerance per op, relative to the largest input magnitude and multiplied by the reduction length.
#: MEAN is exact: we add in float32 in the reference kernel's order (row-major over the reduced elements) and
#: divide once, so the project's usual 1e-5 x length for accumulations is not needed.
TOLERANCE = {"MEAN": 0.0}

DTYPES = [np.float32, np.int32, np.int64]


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


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
@pytest.mark.parametrize(
    "shape, axes, columns",
    [
        ((1, 72, 128, 16), [1, 2], True),  # selfie_segmentation_landscape's global pools
        ((2, 40, 9, 3), [1, 2], True),  # reduced axes not leading: the rows are copied
        ((300, 4), [0], True),
        ((3, 300), [0, 1], False),  # one output: np.add.accumulate
    ],
)
def test_float_columns(op, shape, axes, columns):
    """MEAN / SUM float32 with several outputs sum with np.einsum in the reference's row-major order
    (MeanFloatColumns, SumColumns): bit-exact with BUILTIN_REF on inputs whose sums differ by order (wide
    magnitudes), and from +0.0 (outputs of -0.0 inputs are +0.0, as the reference's 0 init gives)."""
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-12, 12, shape))).astype(np.float32)
    x[..., 0] = -0.0
    model = single_op_model(
        op, [T(shape), T.const(np.array(axes, np.int32))], [T(_expected_shape(shape, axes, True))], {"keep_dims": True}
    )
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    names = {"MEAN": ("MeanFloatColumns", "MeanFloat"), "SUM": ("SumColumns", "SumInOrder")}[op]
    assert type(prepared).__name__ == names[0 if columns else 1]
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(theirs[0]))
    if columns:
        last = np.ascontiguousarray(np.moveaxis(x, axes, range(-len(axes), 0)))
        pairwise = last.reshape(*last.shape[: x.ndim - len(axes)], -1).sum(axis=-1)  # numpy's pairwise inner sum
        if op == "MEAN":
            pairwise /= np.float32(x.size // ours[0].size)
        assert (pairwise != theirs[0].reshape(pairwise.shape)).any()  # the data tells the orders apart


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
