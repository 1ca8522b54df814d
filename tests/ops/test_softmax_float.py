"""Float SOFTMAX over short rows (SoftmaxFloatShortRows): numpy sums rows of at most IN_ORDER_SUM_MAX contiguous
values in order (the property the path relies on, checked on the installed numpy), the path is chosen for them
only, equals the in-order path (SoftmaxFloat) bit for bit and LiteRT's reference within the float tolerance. Several
longer rows (an attention's scores) take SoftmaxFloatColumns, also equal to SoftmaxFloat bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.common import Reduction
from litert_py.ops.softmax_float import (
    COLUMNS_MAX_ROW,
    IN_ORDER_SUM_MAX,
    SHORT_ROWS_COLUMNS_MIN,
    SoftmaxFloat,
    SoftmaxFloatColumns,
    SoftmaxFloatRow,
    SoftmaxFloatShortRows,
    prepare_softmax_float,
)
from tests.compare import assert_close
from tests.oracle import T, run_litert, single_op_model


def _rows(rng, shape) -> np.ndarray:
    """Values over many magnitudes (so that the order of a sum shows in its last bits)."""
    return (rng.standard_normal(shape) * rng.uniform(0.01, 1e4, shape)).astype(np.float32)


@pytest.mark.parametrize("depth", range(1, IN_ORDER_SUM_MAX + 1))
def test_numpy_sums_short_rows_in_order(depth):
    rng = np.random.default_rng(depth)
    x = _rows(rng, (2000, depth))
    ordered = np.add.accumulate(x, axis=-1)[:, -1:]
    np.testing.assert_array_equal(np.add.reduce(x, axis=-1, keepdims=True), ordered)


def _model(shape, beta):
    return single_op_model("SOFTMAX", [T(shape)], [T(shape)], {"beta": beta})


@pytest.mark.parametrize("shape", [(1, 3), (4, 7), (2, 3, 5), (5,), (1, 1)])
@pytest.mark.parametrize("beta", [1.0, 0.37])
def test_short_rows_equal_the_in_order_path_and_litert(shape, beta):
    rng = np.random.default_rng(len(shape) * 10 + shape[-1])
    x = _rows(rng, shape) * np.float32(1e-3)  # logits of a classifier's size, some rows saturating
    if x.size > 4:
        x.reshape(-1)[0] = np.nan  # a NaN row stays NaN
    it = Interpreter(model_content=_model(shape, beta))
    it.allocate_tensors()
    op = it._subgraphs[0].steps[0][0]
    assert type(op) is SoftmaxFloatShortRows
    assert (op.beta is None) == (beta == 1.0)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    ours = it.get_tensor(it.get_output_details()[0]["index"])
    in_order = np.empty_like(x)
    with np.errstate(all="ignore"):
        SoftmaxFloat(np.float32(beta), Reduction.of(shape, (len(shape) - 1,)))([x], [in_order])
    np.testing.assert_array_equal(ours.view(np.uint32), in_order.view(np.uint32))
    assert_close([ours], run_litert(_model(shape, beta), [x]), rtol_each=1e-6 * shape[-1])


def test_longer_rows_keep_the_in_order_path():
    assert type(prepare_softmax_float(1.0, (1, IN_ORDER_SUM_MAX + 1), False)) is SoftmaxFloatRow  # one row
    assert type(prepare_softmax_float(1.0, (1, 1, IN_ORDER_SUM_MAX + 1), False)) is SoftmaxFloatRow
    assert type(prepare_softmax_float(1.0, (IN_ORDER_SUM_MAX + 1,), False)) is SoftmaxFloatRow
    assert type(prepare_softmax_float(1.0, (1, IN_ORDER_SUM_MAX + 1), True)) is SoftmaxFloat  # float16
    assert type(prepare_softmax_float(1.0, (2, IN_ORDER_SUM_MAX + 1), False)) is SoftmaxFloatColumns  # two rows
    assert type(prepare_softmax_float(1.0, (2, IN_ORDER_SUM_MAX + 1), True)) is SoftmaxFloat  # float16
    rows = SHORT_ROWS_COLUMNS_MIN
    assert type(prepare_softmax_float(1.0, (rows - 1, IN_ORDER_SUM_MAX), False)) is SoftmaxFloatShortRows
    assert type(prepare_softmax_float(1.0, (rows, IN_ORDER_SUM_MAX), False)) is SoftmaxFloatColumns
    assert type(prepare_softmax_float(1.0, (rows, 1), False)) is SoftmaxFloatColumns
    assert type(prepare_softmax_float(1.0, (rows, 4), True)) is SoftmaxFloat
    assert type(prepare_softmax_float(1.0, (1, 3), True)) is SoftmaxFloat  # float16: its own rounding
    assert type(prepare_softmax_float(1.0, (8, COLUMNS_MAX_ROW), False)) is SoftmaxFloatColumns
    assert type(prepare_softmax_float(1.0, (8, COLUMNS_MAX_ROW + 1), False)) is SoftmaxFloat  # long rows


def _in_order(x, beta) -> np.ndarray:
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        SoftmaxFloat(np.float32(beta), Reduction.of(x.shape, (x.ndim - 1,)))([x], [out])
    return out


_COLUMNS_SHAPES = [
    (1, 4, 32, 32),
    (2, IN_ORDER_SUM_MAX + 1),
    (3, 5, 9),
    (1, 2, 3, 37),
    (17, 1, 101),
    (SHORT_ROWS_COLUMNS_MIN, IN_ORDER_SUM_MAX),
    (1, 64, 64, 4),
    (20, 1),
]


@pytest.mark.parametrize("shape", _COLUMNS_SHAPES)
@pytest.mark.parametrize("beta", [1.0, 0.37])
def test_several_rows_take_the_columns_path(shape, beta):
    """Rows (2 or more of more than IN_ORDER_SUM_MAX values, SHORT_ROWS_COLUMNS_MIN or more of fewer):
    SoftmaxFloatColumns, bit for bit SoftmaxFloat
    (the rows summed in order), with rows of +-inf, NaN and +-0 among them; LiteRT's reference within the float
    tolerance on the finite rows."""
    rng = np.random.default_rng(shape[-1] * 7 + len(shape))
    x = _rows(rng, shape) * np.float32(1e-3)
    flat = x.reshape(-1, shape[-1])
    if flat.shape[0] > 3:
        flat[1, ::3] = np.inf
        flat[2, -1] = np.nan
        flat[3, :] = 0.0
        flat[3, ::2] = -0.0
        flat[0, 0] = -np.inf
    it = Interpreter(model_content=_model(shape, beta))
    it.allocate_tensors()
    op = it._subgraphs[0].steps[0][0]
    assert type(op) is SoftmaxFloatColumns
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    ours = it.get_tensor(it.get_output_details()[0]["index"])
    np.testing.assert_array_equal(ours.view(np.uint32), _in_order(x, beta).view(np.uint32))
    finite = np.isfinite(x).all(axis=-1)
    theirs = run_litert(_model(shape, beta), [x])[0]
    assert_close([ours[finite]], [theirs[finite]], rtol_each=1e-6 * shape[-1])


def test_columns_path_other_shape_goes_to_the_general_path():
    op = prepare_softmax_float(0.5, (4, 16), False)
    rng = np.random.default_rng(5)
    for shape in [(4, 16), (3, 16), (4, 9)]:
        x = _rows(rng, shape) * np.float32(1e-3)
        out = np.empty_like(x)
        op([x], [out])
        np.testing.assert_array_equal(out.view(np.uint32), _in_order(x, 0.5).view(np.uint32))


@pytest.mark.parametrize("shape", [(1, IN_ORDER_SUM_MAX + 1), (12,), (1, 1, 1000), (1, 12)])
@pytest.mark.parametrize("beta", [1.0, 0.37])
@pytest.mark.parametrize("special", ["none", "inf", "-inf", "nan", "zeros"])
def test_one_row_takes_the_row_path(shape, beta, special):
    """One row of more than IN_ORDER_SUM_MAX values (a classifier's probabilities): SoftmaxFloatRow, bit for bit
    SoftmaxFloat (the row summed in order: a pairwise sum differs in the last bits at these magnitudes), also with
    +-inf, NaN and signed zeros in the row, and several invokes; LiteRT's reference within the float tolerance."""
    rng = np.random.default_rng(shape[-1] + len(shape))
    it = Interpreter(model_content=_model(shape, beta))
    it.allocate_tensors()
    op = it._subgraphs[0].steps[0][0]
    assert type(op) is SoftmaxFloatRow
    assert (op.beta is None) == (beta == 1.0)
    for _ in range(2):
        x = _rows(rng, shape) * np.float32(1e-2)
        flat = x.reshape(-1)
        if special == "inf":
            flat[::5] = np.inf
        elif special == "-inf":
            flat[1::3] = -np.inf
        elif special == "nan":
            flat[-1] = np.nan
        elif special == "zeros":
            flat[:] = 0.0
            flat[::2] = -0.0
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        ours = it.get_tensor(it.get_output_details()[0]["index"])
        np.testing.assert_array_equal(ours.view(np.uint32), _in_order(x, beta).view(np.uint32))
    if special in ("none", "zeros", "-inf"):
        assert_close([ours], run_litert(_model(shape, beta), [x]), rtol_each=1e-6 * shape[-1])


def test_row_path_other_shape_goes_to_the_general_path():
    op = prepare_softmax_float(0.5, (1, 16), False)
    assert type(op) is SoftmaxFloatRow
    rng = np.random.default_rng(6)
    for shape in [(1, 16), (3, 16), (1, 9)]:
        x = _rows(rng, shape) * np.float32(1e-3)
        out = np.empty_like(x)
        op([x], [out])
        np.testing.assert_array_equal(out.view(np.uint32), _in_order(x, 0.5).view(np.uint32))
