"""ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM against the oracle (BUILTIN_REF), every non-quantized dtype path."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.ops._values import assert_matches, broadcast_pair, regimes, values
from tests.oracle import T, oracle, quant, run_both, single_op_model

#: float tolerance per op (rtol): all of these are a single IEEE operation (or a comparison) per element
TOLERANCE = {"ADD": 0.0, "SUB": 0.0, "MUL": 0.0, "DIV": 0.0, "MAXIMUM": 0.0, "MINIMUM": 0.0}

ACTIVATIONS = [0, 1, 2, 3, 4, 5]  # NONE RELU RELU_N1_TO_1 RELU6 TANH SIGN_BIT (the last two are ignored)


@dataclass(frozen=True)
class Case:
    op: str
    dtype: type
    activation: bool = True  # the op has a fused activation option
    quantized: bool = False  # give the tensors quantization parameters (raw-value ops only)

    @property
    def id(self) -> str:
        return f"{self.op.lower()}-{np.dtype(self.dtype).name}" + ("-quantized" if self.quantized else "")


CASES = [
    *(Case("ADD", dt) for dt in (np.float32, np.float16, np.int32, np.int64, np.int16)),
    *(Case("SUB", dt) for dt in (np.float32, np.int32, np.int64)),
    *(Case("MUL", dt) for dt in (np.float32, np.float16, np.int32, np.int64, np.int16, np.uint32)),
    Case("MUL", np.complex64, activation=False),
    *(Case("DIV", dt) for dt in (np.float32, np.int32)),
    *(Case(op, dt, activation=False) for op in ("MAXIMUM", "MINIMUM")
      for dt in (np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64)),
    Case("MAXIMUM", np.int8, activation=False, quantized=True),
    Case("MINIMUM", np.uint8, activation=False, quantized=True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@given(data=st.data(), shapes=broadcast_pair(max_rank=6), seed=st.integers(0, 2**31 - 1))
def test_binary(case: Case, data, shapes, seed):
    rng = np.random.default_rng(seed)
    sa, sb = shapes
    regime_a = data.draw(regimes(case.dtype), label="regime_a")
    regime_b = data.draw(regimes(case.dtype), label="regime_b")
    a = values(rng, sa, case.dtype, regime_a)
    b = values(rng, sb, case.dtype, regime_b)
    if case.op == "DIV" and np.dtype(case.dtype).kind == "i":
        b[b == 0] = 1  # a zero divisor fails at invoke (tested below)
    options = None
    if case.activation:
        options = {"fused_activation_function": data.draw(st.sampled_from(ACTIVATIONS), label="activation")}
    qa = qb = qo = None
    if case.quantized:  # different scales on purpose: LiteRT compares the raw integers regardless
        qa, qb, qo = quant(0.5, 3), quant(0.25, -2 if case.dtype == np.int8 else 7), quant(0.125, 1)
    out_shape = np.broadcast_shapes(sa, sb)
    model = single_op_model(case.op, [T(sa, case.dtype, q=qa), T(sb, case.dtype, q=qb)],
                            [T(out_shape, case.dtype, q=qo)], options)
    ours, theirs = run_both(model, [a, b])
    assert_matches(ours, theirs, rtol=TOLERANCE[case.op])


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV"])
def test_float_overflow_and_division_by_zero_clamp_to_flt_max(op):
    """The reference kernels clamp every float result to [-FLT_MAX, FLT_MAX]: inf never comes out."""
    a = np.array([3e38, -3e38, np.inf, -np.inf, 1.0, -1.0, 0.0, np.nan], np.float32)
    b = np.array([3e38, 3e38, 1.0, 1.0, 0.0, -0.0, 0.0, 1.0], np.float32)
    model = single_op_model(op, [T((8,)), T((8,))], [T((8,))])
    ours, theirs = run_both(model, [a, b])
    assert not np.isinf(theirs[0]).any()
    assert_matches(ours, theirs)


def test_maximum_minimum_nan_follows_the_comparison():
    a = np.array([np.nan, 1.0, np.nan, -0.0, 0.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, 0.0, -0.0], np.float32)
    for op in ("MAXIMUM", "MINIMUM"):
        model = single_op_model(op, [T((5,)), T((5,))], [T((5,))])
        ours, theirs = run_both(model, [a, b])
        assert_matches(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(theirs[0]))


def test_div_int32_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, -(2**31), 2**31 - 1, 0, 1], np.int32)
    b = np.array([2, 2, -2, -2, -1, -1, 5, -3], np.int32)
    model = single_op_model("DIV", [T((8,), np.int32), T((8,), np.int32)], [T((8,), np.int32)])
    ours, theirs = run_both(model, [a, b])
    assert_matches(ours, theirs)


def test_div_int32_by_zero_fails_at_invoke():
    model = single_op_model("DIV", [T((3,), np.int32), T((3,), np.int32)], [T((3,), np.int32)])
    feed = [np.array([1, 2, 3], np.int32), np.array([1, 0, 1], np.int32)]
    LiteRT, OpResolverType = oracle()
    ref = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    ref.allocate_tensors()
    for d, x in zip(ref.get_input_details(), feed):
        ref.set_tensor(d["index"], x)
    with pytest.raises(RuntimeError):
        ref.invoke()
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feed):
        it.set_tensor(d["index"], x)
    with pytest.raises(RuntimeError, match="zero"):
        it.invoke()


def test_constant_operands_fold():
    """All-constant inputs are folded at prepare; the folded value is the oracle's."""
    a = np.array([[1.5, -2.0, 3.0]], np.float32)
    model = single_op_model("MUL", [T((2, 3)), T.const(a)], [T((2, 3))], {"fused_activation_function": 1})
    x = np.array([[1, 2, 3], [-1, -2, -3]], np.float32)
    ours, theirs = run_both(model, [x])
    assert_matches(ours, theirs)


# -- what LiteRT rejects ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Reject:
    id: str
    op: str
    shapes: tuple
    dtypes: tuple
    options: dict | None = None
    out_dtype: type | None = None
    oracle_crashes: bool = False  # LiteRT aborts the process instead of failing: not run
    oracle_retypes: bool = False  # LiteRT silently changes the output tensor's type; we cannot, so we reject


REJECTS = [
    Reject("add-not-broadcastable", "ADD", ((2, 3), (3, 2)), (np.float32, np.float32)),
    Reject("add-empty-vs-2", "ADD", ((0, 3), (2, 3)), (np.float32, np.float32)),
    Reject("add-rank9-broadcast", "ADD", ((2,) * 9, (2,)), (np.float32, np.float32), oracle_crashes=True),
    Reject("maximum-rank9-broadcast", "MAXIMUM", ((1,) * 9, (3,)), (np.int32, np.int32), oracle_crashes=True),
    Reject("add-mixed-types", "ADD", ((3,), (3,)), (np.float32, np.int32)),
    Reject("add-output-type", "ADD", ((3,), (3,)), (np.float32, np.float32), out_dtype=np.int32,
           oracle_retypes=True),
    Reject("add-bool", "ADD", ((3,), (3,)), (np.bool_, np.bool_)),
    Reject("add-float64", "ADD", ((3,), (3,)), (np.float64, np.float64)),
    Reject("add-uint32", "ADD", ((3,), (3,)), (np.uint32, np.uint32)),
    Reject("sub-float16", "SUB", ((3,), (3,)), (np.float16, np.float16)),
    Reject("sub-int16", "SUB", ((3,), (3,)), (np.int16, np.int16), oracle_crashes=True),
    Reject("mul-bool", "MUL", ((3,), (3,)), (np.bool_, np.bool_)),
    Reject("mul-complex64-activation", "MUL", ((3,), (3,)), (np.complex64, np.complex64),
           {"fused_activation_function": 1}),
    Reject("div-int64", "DIV", ((3,), (3,)), (np.int64, np.int64)),
    Reject("div-float16", "DIV", ((3,), (3,)), (np.float16, np.float16)),
    Reject("maximum-bool", "MAXIMUM", ((3,), (3,)), (np.bool_, np.bool_)),
    Reject("minimum-uint32", "MINIMUM", ((3,), (3,)), (np.uint32, np.uint32)),
]


def _oracle_fails(model: bytes, feed) -> bool:
    LiteRT, OpResolverType = oracle()
    try:
        it = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        for d, x in zip(it.get_input_details(), feed):
            it.set_tensor(d["index"], x)
        it.invoke()
    except (RuntimeError, ValueError):
        return True
    return False


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: c.id)
def test_rejected(case: Reject):
    out_shape = np.broadcast_shapes(*case.shapes) if case.id not in ("add-not-broadcastable", "add-empty-vs-2") \
        else case.shapes[0]
    out_dtype = case.out_dtype or case.dtypes[0]
    model = single_op_model(case.op, [T(s, dt) for s, dt in zip(case.shapes, case.dtypes)],
                            [T(out_shape, out_dtype)], case.options)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    if not (case.oracle_crashes or case.oracle_retypes):
        feed = [np.zeros(s, dt) for s, dt in zip(case.shapes, case.dtypes)]
        assert _oracle_fails(model, feed), "the oracle accepts this model: it should not be rejected"
