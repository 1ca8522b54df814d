"""SOFTMAX over many short 8-bit rows as a bound plan (softmax.SoftmaxQuantizedColumns and, fed by an attention's
scale lookup, SoftmaxQuantizedColumnsLookup; ops/bound_plan.BoundCalls): the plan made at prepare gives inside
invokes the bytes of the op bound to fresh copies and to non-contiguous copies of its arrays (check_bound), every
call of the plan is needed (check_each_call_needed: the per-row reciprocal's calls, quant.gemmlowp.
SoftmaxRowReciprocals, included), and a direct call on arrays of another shape gives BUILTIN_REF's values for
that shape. Exactness against BUILTIN_REF over many inputs: tests/ops/test_small_rows.py and
tests/ops/test_scalar_lookup_feeding.py; the reciprocal over every total of its bound: tests/quant/
test_gemmlowp.py."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.softmax import QUANTIZED_COLUMNS_MAX_ROW, ROW_MAX, SoftmaxQuantizedColumns
from litert_py.ops.softmax import SoftmaxQuantizedColumnsLookup as Lookup
from litert_py.quant.gemmlowp import SoftmaxRowReciprocals
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops._bound import check_bound
from tests.ops._bound_int8 import check_bound_int8, feeds_of
from tests.oracle import T, oracle, run_litert, single_op_model

I8, U8, I16 = np.int8, np.uint8, np.int16


def _softmax(tin, tout, shape, s_in: float = 0.06, zi: int = 3, beta: float = 1.0) -> bytes:
    q_out = quant(1.0 / 65536, -32768) if tout == I16 else quant(1.0 / 256, -128 if tout == I8 else 0)
    return single_op_model("SOFTMAX", [T(shape, tin, q=quant(s_in, zi))], [T(shape, tout, q=q_out)], {"beta": beta})


def _scaled_softmax(shape, reshaped, const_first: bool = False) -> bytes:
    """x (int8) -> MUL by a one-value constant -> [RESHAPE to ``reshaped``] -> SOFTMAX (one fused step)."""
    b = ModelBuilder()
    x = b.input("x", shape, I8, quantization=quant(0.05, -3))
    c = b.const("c", np.array([-100], I8), quantization=quant(0.7 / 100, 0))
    y = b.tensor("y", shape, I8, quantization=quant(0.06, 4))
    b.op("MUL", [c, x] if const_first else [x, c], [y], {"fused_activation_function": 0})
    if reshaped is not None:
        r = b.tensor("r", reshaped, I8, quantization=quant(0.06, 4))
        b.op("RESHAPE", [y, b.const("shape", np.array(reshaped, np.int32))], [r])
        y = r
    z = b.tensor("z", reshaped or shape, I8, quantization=quant(1 / 256, -128))
    b.op("SOFTMAX", [y], [z], {"beta": 1.0})
    b.output(z)
    return b.build()


@pytest.mark.parametrize(
    ("tin", "tout", "shape"), [(I8, I8, (1, 4, 32, 32)), (U8, U8, (64, 4)), (I8, I16, (40, 10)), (U8, I16, (8, 8, 7))]
)
def test_columns_bound_plan(tin, tout, shape):
    """Many rows: the rounding add of a Newton step of the reciprocal changes its result for a few totals only."""
    check_bound_int8(_softmax(tin, tout, shape), SoftmaxQuantizedColumns)


@pytest.mark.parametrize(("tin", "tout", "shape"), [(I8, I8, (2, 1)), (U8, U8, (3, 25)), (I8, I16, (2, 3, 7))])
def test_columns_bound_plan_few_rows(tin, tout, shape):
    model = _softmax(tin, tout, shape)
    check_bound(model, feeds_of(model), SoftmaxQuantizedColumns)


@pytest.mark.parametrize(
    ("shape", "reshaped", "const_first"), [((1, 4, 32, 32), None, False), ((4, 256), (32, 32), True)]
)
def test_lookup_bound_plan(shape, reshaped, const_first):
    """The reciprocal's saturation (np.fmin of the doubled scale) acts only on a total that is a power of two,
    which the lookup's narrow range of values (every difference within the exp table) does not reach here: it is
    exempt (tests/quant/test_gemmlowp.py's test_softmax_row_reciprocals_are_softmax_reciprocal shows it is needed;
    test_row_bound_and_longest_rows_against_litert runs a saturating total against BUILTIN_REF)."""

    def saturation(op, calls):
        return tuple(i for i, c in enumerate(calls) if c.func is np.fmin)

    check_bound_int8(_scaled_softmax(shape, reshaped, const_first), Lookup, saturation)


def test_direct_calls_on_other_shapes():
    """Arrays of another shape than prepared (a direct call): the columns op runs SoftmaxQuantized, the lookup op
    its lookup then SoftmaxQuantized, both BUILTIN_REF's values for that shape; the prepared arrays after."""
    rng = np.random.default_rng(4)
    it = Interpreter(model_content=_softmax(I8, I8, (4, 16)))
    it.allocate_tensors()
    ((op, ins, outs),) = it._subgraphs[0].steps
    assert type(op) is SoftmaxQuantizedColumns
    x = rng.integers(-128, 128, (3, 40)).astype(I8)
    got = np.empty((3, 40), I8)
    op([x], [got])
    np.testing.assert_array_equal(got, run_litert(_softmax(I8, I8, (3, 40)), [x])[0])
    it2 = Interpreter(model_content=_scaled_softmax((1, 4, 32, 32), None))
    it2.allocate_tensors()
    ((step, _, _),) = it2._subgraphs[0].steps
    assert type(step) is Lookup
    x = rng.integers(-128, 128, (6, 10)).astype(I8)
    got = np.empty((6, 10), I8)
    step([x, np.array([-100], I8)], [got])
    np.testing.assert_array_equal(got, run_litert(_scaled_softmax((6, 10), None), [x])[0])
    for model, interp in ((_softmax(I8, I8, (4, 16)), it), (_scaled_softmax((1, 4, 32, 32), None), it2)):
        (feed,) = feeds_of(model, 7)
        interp.set_tensor(interp.get_input_details()[0]["index"], feed)
        interp.invoke()
        want = run_litert(model, [feed])[0]
        np.testing.assert_array_equal(interp.get_tensor(interp.get_output_details()[0]["index"]), want)


def test_row_bound_and_longest_rows_against_litert():
    """The columns path's rows (at most QUANTIZED_COLUMNS_MAX_ROW values) are inside the reciprocal's bound (every
    total of a row of at most ROW_MAX values: 2^19 .. ROW_MAX * 2^19 <= TOTAL_MAX); at the longest row, rows of one
    maximum and the rest at the far end of the table (total 2^19, the scale's saturation) and rows of all-equal
    values (the largest total) give BUILTIN_REF's values."""
    assert QUANTIZED_COLUMNS_MAX_ROW <= ROW_MAX and ROW_MAX << 19 <= SoftmaxRowReciprocals.TOTAL_MAX
    n = QUANTIZED_COLUMNS_MAX_ROW
    model = _softmax(I8, I8, (4, n), 0.5, 0, 4.0)
    x = np.full((4, n), -128, I8)
    x[0, 5] = 127  # one maximum: every other term 0 (below diff_min), total 2^19
    x[1] = 127  # all equal: total n * 2^19
    x[2, ::3] = 120
    x[3] = np.random.default_rng(1).integers(-128, 128, n)
    LiteRT, resolver = oracle()
    ours = Interpreter(model_content=model)
    ours.allocate_tensors()
    assert type(ours._subgraphs[0].steps[0][0]) is SoftmaxQuantizedColumns
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    theirs.allocate_tensors()
    for it in (ours, theirs):
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
    out = [it.get_tensor(it.get_output_details()[0]["index"]) for it in (ours, theirs)]
    np.testing.assert_array_equal(out[0], out[1])
    assert out[0][0, 5] == 127 and (out[0][1] == out[0][1, 0]).all()


@pytest.mark.parametrize(("n", "columns"), [(300, True), (500, True), (501, False)])
def test_columns_path_up_to_500_values(n, columns):
    """Rows of up to 500 values take the columns path (QUANTIZED_COLUMNS_MAX_ROW, measured), longer ones the general
    SoftmaxQuantized: both BUILTIN_REF's values."""
    model = _softmax(I8, I8, (3, n), 0.1, -2, 1.0)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    assert (type(it._subgraphs[0].steps[0][0]) is SoftmaxQuantizedColumns) == columns
    x = np.random.default_rng(n).integers(-128, 128, (3, n)).astype(I8)
    x[1] = 100  # all equal: the largest total
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), run_litert(model, [x])[0])
