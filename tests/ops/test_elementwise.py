"""ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM against the oracle (BUILTIN_REF), every non-quantized dtype path."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, InvokeError, PrepareError
from tests.compare import assert_close
from tests.ops._values import broadcast_pair, qparams, regimes, shapes
from tests.oracle import T, litert_fails, oracle, ours_fails, quant, run_both, single_op_model
from tests.values import values

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
    *(
        Case(op, dt, activation=False)
        for op in ("MAXIMUM", "MINIMUM")
        for dt in (np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64)
    ),
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
    model = single_op_model(
        case.op, [T(sa, case.dtype, q=qa), T(sb, case.dtype, q=qb)], [T(out_shape, case.dtype, q=qo)], options
    )
    ours, theirs = run_both(model, [a, b])
    assert_close(ours, theirs, rtol_each=TOLERANCE[case.op])


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV"])
def test_float_overflow_and_division_by_zero_clamp_to_flt_max(op):
    """The reference kernels clamp every float result to [-FLT_MAX, FLT_MAX]: inf never comes out."""
    a = np.array([3e38, -3e38, np.inf, -np.inf, 1.0, -1.0, 0.0, np.nan], np.float32)
    b = np.array([3e38, 3e38, 1.0, 1.0, 0.0, -0.0, 0.0, 1.0], np.float32)
    model = single_op_model(op, [T((8,)), T((8,))], [T((8,))])
    ours, theirs = run_both(model, [a, b])
    assert not np.isinf(theirs[0]).any()
    assert_close(ours, theirs)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV"])
@pytest.mark.parametrize("gate_first", [False, True], ids=["x-gate", "gate-x"])
@pytest.mark.parametrize(
    ("shape", "gate", "row"),
    [
        ((1, 32, 32, 16), (1, 1, 1, 16), True),
        ((2, 64, 64, 3), (3,), True),
        ((300, 63), (1, 63), True),
        ((1, 6, 5, 16), (1, 1, 1, 16), False),  # too small: plain broadcasting
        ((1, 32, 32, 64), (1, 1, 1, 64), False),  # C >= 64: inner loops long enough already
    ],
)
def test_float_channel_row(op, gate_first, shape, gate, row):
    """One value per channel against a full tensor (an SE block's gate): the row kernel
    (elementwise.ArithmeticChannelRow) on large outputs with C < 64, with RELU6, infinities, NaN and zeros in
    both operands; exact."""
    rng = np.random.default_rng(len(shape) * 10 + gate_first)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    g = (rng.standard_normal(gate) * 4).astype(np.float32)
    x.reshape(-1)[:4] = [np.inf, -np.inf, np.nan, 0.0]
    g.reshape(-1)[:3] = [0.0, -np.inf, 3e38]
    ins, feeds = ([T(gate), T(shape)], [g, x]) if gate_first else ([T(shape), T(gate)], [x, g])
    model = single_op_model(op, ins, [T(shape)], {"fused_activation_function": 3})
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert (type(prepared).__name__ == "ArithmeticChannelRow") == row
    ours, theirs = run_both(model, feeds)
    assert_close(ours, theirs)


def test_maximum_minimum_nan_follows_the_comparison():
    a = np.array([np.nan, 1.0, np.nan, -0.0, 0.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, 0.0, -0.0], np.float32)
    for op in ("MAXIMUM", "MINIMUM"):
        model = single_op_model(op, [T((5,)), T((5,))], [T((5,))])
        ours, theirs = run_both(model, [a, b])
        assert_close(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(theirs[0]))


def test_div_int32_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, -(2**31), 2**31 - 1, 0, 1], np.int32)
    b = np.array([2, 2, -2, -2, -1, -1, 5, -3], np.int32)
    model = single_op_model("DIV", [T((8,), np.int32), T((8,), np.int32)], [T((8,), np.int32)])
    ours, theirs = run_both(model, [a, b])
    assert_close(ours, theirs)


def test_div_int32_by_zero_fails_at_invoke():
    model = single_op_model("DIV", [T((3,), np.int32), T((3,), np.int32)], [T((3,), np.int32)])
    feed = [np.array([1, 2, 3], np.int32), np.array([1, 0, 1], np.int32)]
    litert_fails(model, feed, at="invoke")
    ours_fails(model, feed, at="invoke", match="zero")


def test_constant_operands_fold():
    """All-constant inputs are folded at prepare; the folded value is the oracle's."""
    a = np.array([[1.5, -2.0, 3.0]], np.float32)
    model = single_op_model("MUL", [T((2, 3)), T.const(a)], [T((2, 3))], {"fused_activation_function": 1})
    x = np.array([[1, 2, 3], [-1, -2, -3]], np.float32)
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


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
    Reject("add-output-type", "ADD", ((3,), (3,)), (np.float32, np.float32), out_dtype=np.int32, oracle_retypes=True),
    Reject("add-bool", "ADD", ((3,), (3,)), (np.bool_, np.bool_)),
    Reject("add-float64", "ADD", ((3,), (3,)), (np.float64, np.float64)),
    Reject("add-uint32", "ADD", ((3,), (3,)), (np.uint32, np.uint32)),
    Reject("sub-float16", "SUB", ((3,), (3,)), (np.float16, np.float16)),
    Reject("sub-int16", "SUB", ((3,), (3,)), (np.int16, np.int16), oracle_crashes=True),
    Reject("mul-bool", "MUL", ((3,), (3,)), (np.bool_, np.bool_)),
    Reject(
        "mul-complex64-activation", "MUL", ((3,), (3,)), (np.complex64, np.complex64), {"fused_activation_function": 1}
    ),
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
    out_shape = (
        np.broadcast_shapes(*case.shapes)
        if case.id not in ("add-not-broadcastable", "add-empty-vs-2")
        else case.shapes[0]
    )
    out_dtype = case.out_dtype or case.dtypes[0]
    model = single_op_model(
        case.op, [T(s, dt) for s, dt in zip(case.shapes, case.dtypes)], [T(out_shape, out_dtype)], case.options
    )
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    if not (case.oracle_crashes or case.oracle_retypes):
        feed = [np.zeros(s, dt) for s, dt in zip(case.shapes, case.dtypes)]
        assert _oracle_fails(model, feed), "the oracle accepts this model: it should not be rejected"


# -- quantized ADD, SUB, MUL, DIV -------------------------------------------------------------------
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3


@dataclass(frozen=True)
class QCase:
    op: str
    dtype: type
    out_dtype: type | None = None  # MUL int16 x int16 -> int8 / uint8 (the LSTM legacy path)
    pot: bool = False  # int16 power-of-two scales, zero points 0 (the LSTM path of ADD / SUB)
    broadcast: bool = True  # LiteRT aborts on broadcasting in the int16 POT ADD and the legacy MUL

    @property
    def id(self) -> str:
        out = f"-{np.dtype(self.out_dtype).name}" if self.out_dtype else ""
        return f"{self.op.lower()}-{np.dtype(self.dtype).name}{out}" + ("-pot" if self.pot else "")


QCASES = [
    *(QCase(op, dt) for op in ("ADD", "SUB", "MUL", "DIV") for dt in (np.int8, np.uint8, np.int16)),
    QCase("ADD", np.int16, pot=True, broadcast=False),
    QCase("SUB", np.int16, pot=True),
    QCase("MUL", np.int16, np.int8, broadcast=False),
    QCase("MUL", np.int16, np.uint8, broadcast=False),
]


def _pot_scales(data):
    """Power-of-two scales the POT path accepts: the output's, and inputs at or below it (one of them equal)."""
    so = 2.0 ** -data.draw(st.integers(0, 20), label="log2_out")
    other = so * 2.0 ** -data.draw(st.integers(0, 20), label="input_shift")
    return (so, other) if data.draw(st.booleans(), label="shift_input2") else (other, so)


def _draw_quantization(case: QCase, data):
    """(q1, q2, qo, options) for one case; discards draws that LiteRT aborts on (see test_quantized_rejected)."""
    op, dt = case.op, case.dtype
    symmetric = dt == np.int16 and op != "DIV"
    options = {"fused_activation_function": data.draw(st.sampled_from(ACTIVATIONS), label="activation")}
    if case.pot:
        s1, s2 = _pot_scales(data)
        so = max(s1, s2)
        return quant(s1, 0), quant(s2, 0), quant(so, 0), options
    (s1, z1), (s2, z2) = (data.draw(qparams(dt, symmetric=symmetric), label=f"q{k}") for k in (1, 2))
    out_dt = case.out_dtype or dt
    so, zo = data.draw(qparams(out_dt, symmetric=symmetric and case.out_dtype is None), label="qo")
    if dt == np.int16 and op in ("ADD", "SUB") and data.draw(st.booleans(), label="pot_scales_general_path"):
        s1, s2 = _pot_scales(data)  # power-of-two scales with pot_scale_int16 = false: the general path
        so = 2.0 ** -data.draw(st.integers(0, 20), label="log2_out")
        options["pot_scale_int16"] = False
    elif (
        dt == np.int16
        and op in ("ADD", "SUB")
        and all(abs(np.log2(s) - np.round(np.log2(s))) < 2e-3 for s in (s1, s2, so))
    ):
        options["pot_scale_int16"] = False  # (nearly) power-of-two scales by chance: CheckedLog2 allows 1e-3
    f = np.float32
    if op in ("ADD", "SUB"):  # QuantizeMultiplierSmallerThanOneExp(2 max / (2**ls so)) must not abort
        ls = 15 if dt == np.int16 else 20
        assume(float(f(2) * max(f(s1), f(s2))) / float(f(2**ls) * f(so)) < 0.999)
    if op == "MUL" and case.out_dtype is None:
        assume(float(f(s1) * f(s2) / f(so)) < 2.0**30)  # the multiplier's left shift stays below 31
    return quant(s1, z1), quant(s2, z2), quant(so, zo), options


@pytest.mark.parametrize("case", QCASES, ids=lambda c: c.id)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_quantized(case: QCase, data, seed):
    """Bit-exact with BUILTIN_REF: scales spanning nine decades, zero points at the ends of the range, every
    fused activation, NumPy broadcasting up to rank 6."""
    rng = np.random.default_rng(seed)
    if case.broadcast:
        sa, sb = data.draw(broadcast_pair(max_rank=6), label="shapes")
    else:
        sa = sb = data.draw(shapes(0, 6), label="shape")
    q1, q2, qo, options = _draw_quantization(case, data)
    a = values(rng, sa, case.dtype, data.draw(regimes(case.dtype), label="regime_a"))
    b = values(rng, sb, case.dtype, data.draw(regimes(case.dtype), label="regime_b"))
    if case.op == "DIV":  # a divisor equal to its zero point fails the invoke (tested below)
        z2 = q2.zero_point[0]
        b[b == z2] = z2 + 1 if z2 < np.iinfo(case.dtype).max else z2 - 1
    out_dtype = case.out_dtype or case.dtype
    model = single_op_model(
        case.op,
        [T(sa, case.dtype, q=q1), T(sb, case.dtype, q=q2)],
        [T(np.broadcast_shapes(sa, sb), out_dtype, q=qo)],
        options,
    )
    ours, theirs = run_both(model, [a, b])
    assert_close(ours, theirs)


def _all_pairs(dtype):
    v = np.arange(256).astype(np.uint8).view(dtype)
    return np.repeat(v, 256), np.tile(v, 256)


EXHAUSTIVE = [  # (op, dtype, (s1, z1), (s2, z2), (so, zo), activation): every one of the 65536 input pairs
    ("ADD", np.int8, (0.05, -3), (0.11, 20), (0.1, -128), RELU),
    ("ADD", np.uint8, (1e-3, 255), (7.5, 0), (0.07, 128), NONE),
    ("ADD", np.int8, (0.5, 0), (0.5, 0), (0.5, 0), RELU6),  # equal scales: exact ties of the rescaling
    ("SUB", np.int8, (0.02, 127), (0.3, -128), (0.25, 3), RELU_N1_TO_1),
    ("SUB", np.uint8, (3.0, 100), (2.9, 99), (1e-3, 0), NONE),
    ("MUL", np.int8, (0.5, 0), (0.125, 0), (1.0, 0), NONE),  # the tie probe of quantized-arithmetic.md 8.3
    ("MUL", np.uint8, (0.02, 128), (0.3, 7), (0.004, 255), RELU),
    ("DIV", np.int8, (0.1, 0), (0.1, 0), (0.05, 3), NONE),
    ("DIV", np.uint8, (0.03, 128), (0.07, 10), (0.2, 0), RELU6),
    # rescaling exponents outside [-31, 0]: LiteRT computes garbage (0 / 127 -> 1, 1 / 127 -> 127) and we
    # reproduce it (quantized-arithmetic.md 5.18; quant.gemmlowp.rounding_divide_by_pot_x86)
    ("DIV", np.int8, (1.0, 0), (1.0, 0), (1.0, 0), NONE),
    ("DIV", np.int8, (2.0**22, 0), (1.0, 5), (1.0, 5), NONE),
]


@pytest.mark.parametrize(
    "case", EXHAUSTIVE, ids=lambda c: f"{c[0].lower()}-{np.dtype(c[1]).name}-{c[2][0]}-{c[3][0]}-{c[4][0]}"
)
def test_quantized_all_pairs(case):
    op, dtype, q1, q2, qo, act = case
    a, b = _all_pairs(dtype)
    if op == "DIV":
        keep = b != np.array(q2[1]).astype(dtype)
        a, b = a[keep], b[keep]
    model = single_op_model(
        op,
        [T(a.shape, dtype, q=quant(*q1)), T(b.shape, dtype, q=quant(*q2))],
        [T(a.shape, dtype, q=quant(*qo))],
        {"fused_activation_function": act},
    )
    ours, theirs = run_both(model, [a, b])
    assert_close(ours, theirs)


def test_div_quantized_divisor_at_zero_point_fails_at_invoke():
    q = quant(0.1, 3)
    model = single_op_model("DIV", [T((3,), np.int8, q=q), T((3,), np.int8, q=q)], [T((3,), np.int8, q=q)])
    feed = [np.array([1, 2, 3], np.int8), np.array([5, 3, 7], np.int8)]
    litert_fails(model, feed, at="invoke")
    ours_fails(model, feed, at="invoke", match="zero point")


Q8, Q16 = quant(0.1, 3), quant(2.0**-10, 0)
QREJECTS = [  # (id, op, (dtype1, dtype2, out dtype), (q1, q2, qo), shapes, options, what LiteRT does)
    # "fails": a prepare / invoke error; "aborts": a CHECK kills the process; "ub": it runs into undefined behaviour
    ("add-int16-nonzero-zero-point", "ADD", (np.int16,) * 3, (quant(0.01, 3), Q16, Q16), None, None, "fails"),
    ("sub-int16-nonzero-zero-point", "SUB", (np.int16,) * 3, (Q16, Q16, quant(0.01, -1)), None, None, "fails"),
    ("mul-int16-nonzero-zero-point", "MUL", (np.int16,) * 3, (quant(0.01, 5), Q16, Q16), None, None, "fails"),
    ("sub-int8-zero-point-out-of-range", "SUB", (np.int8,) * 3, (quant(0.1, 200), Q8, Q8), None, None, "fails"),
    (
        "add-int16-pot-both-inputs-shifted",
        "ADD",
        (np.int16,) * 3,
        (quant(2.0**-12, 0), Q16, quant(2.0**-8, 0)),
        None,
        None,
        "fails",
    ),
    ("sub-int16-pot-input-above-output", "SUB", (np.int16,) * 3, (quant(2.0**-8, 0), Q16, Q16), None, None, "fails"),
    ("mul-int8-to-int16", "MUL", (np.int8, np.int8, np.int16), (Q8, Q8, Q16), None, None, "fails"),
    ("add-int8-output-multiplier-above-1", "ADD", (np.int8,) * 3, (Q8, Q8, quant(1e-9, 0)), None, None, "aborts"),
    ("sub-int8-output-multiplier-above-1", "SUB", (np.int8,) * 3, (Q8, Q8, quant(1e-9, 0)), None, None, "ub"),
    ("add-int8-not-quantized", "ADD", (np.int8,) * 3, (None, None, None), None, None, "aborts"),
    ("add-int16-pot-broadcast", "ADD", (np.int16,) * 3, (Q16, Q16, Q16), ((2, 3), (3,)), None, "aborts"),
    ("mul-int16-int8-broadcast", "MUL", (np.int16, np.int16, np.int8), (Q16, Q16, Q8), ((2, 3), (3,)), None, "aborts"),
    (
        "mul-int8-multiplier-1e15",
        "MUL",
        (np.int8,) * 3,
        (quant(1e6, 0), quant(1e6, 0), quant(1e-3, 0)),
        None,
        None,
        "ub",
    ),  # MultiplyByQuantizedMultiplier shifts left by 50 bits
]


@pytest.mark.parametrize("case", QREJECTS, ids=lambda c: c[0])
def test_quantized_rejected(case):
    _, op, dtypes, qs, shapes_, options, litert = case
    sa, sb = shapes_ or ((3,), (3,))
    model = single_op_model(
        op,
        [T(sa, dtypes[0], q=qs[0]), T(sb, dtypes[1], q=qs[1])],
        [T(np.broadcast_shapes(sa, sb), dtypes[2], q=qs[2])],
        options,
    )
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    if litert == "fails":
        assert _oracle_fails(model, [np.ones(sa, dtypes[0]), np.ones(sb, dtypes[1])]), (
            "the oracle accepts this model: it should not be rejected"
        )


# -- FLOOR_DIV, FLOOR_MOD, POW, SQUARED_DIFFERENCE, ATAN2, ADD_N: one table ----------------------------------
#: rtol per op: floor division / remainder / squared difference / sums are exact in IEEE arithmetic (FLOOR_DIV
#: divides in double then floors), POW and ATAN2 go through libm (powf / atan2f) where NumPy may differ by an ulp
TOLERANCE.update(
    {"FLOOR_DIV": 0.0, "FLOOR_MOD": 0.0, "SQUARED_DIFFERENCE": 0.0, "ADD_N": 0.0, "POW": 1e-6, "ATAN2": 1e-6}
)


@dataclass(frozen=True)
class MoreCase:
    op: str
    dtype: type
    quantized: bool = False
    broadcast: bool = True  # ATAN2 takes equal shapes only

    @property
    def id(self) -> str:
        return f"{self.op.lower()}-{np.dtype(self.dtype).name}" + ("-quantized" if self.quantized else "")


MORE_CASES = [
    *(MoreCase("FLOOR_DIV", dt) for dt in (np.float32, np.int32, np.int16, np.int8)),
    *(MoreCase("FLOOR_MOD", dt) for dt in (np.float32, np.int64, np.int32, np.int16, np.int8)),
    *(MoreCase("POW", dt) for dt in (np.float32, np.int32)),
    *(MoreCase("SQUARED_DIFFERENCE", dt) for dt in (np.float32, np.int32)),
    MoreCase("SQUARED_DIFFERENCE", np.int8, quantized=True),
    *(MoreCase("ATAN2", dt, broadcast=False) for dt in (np.float32, np.float16)),
    *(MoreCase("ADD_N", dt, broadcast=False) for dt in (np.float32, np.int32)),
]


def _operand(rng, data, shape, case: MoreCase, k: int):
    x = values(rng, shape, case.dtype, data.draw(regimes(case.dtype), label=f"regime{k}"))
    if (
        k == 1
        and case.op in ("FLOOR_DIV", "FLOOR_MOD")
        and case.dtype != np.float32
        or k == 1
        and case.op == "FLOOR_DIV"
    ):
        x[x == 0] = 1  # a zero divisor fails at invoke (tested below); float FLOOR_MOD gives NaN
    if k == 1 and case.op == "POW" and case.dtype == np.int32:
        x &= 0x7FFFFFFF  # a negative exponent fails at invoke (tested below)
    return x


@pytest.mark.parametrize("case", MORE_CASES, ids=lambda c: c.id)
@given(data=st.data(), pair=broadcast_pair(max_rank=6), seed=st.integers(0, 2**31 - 1))
def test_binary_more(case: MoreCase, data, pair, seed):
    """Broadcasting up to rank 6; NaN, inf, -0.0 and integer extremes (wrapping POW, SQUARED_DIFFERENCE)."""
    rng = np.random.default_rng(seed)
    sa, sb = pair if case.broadcast else (pair[0], pair[0])
    n = data.draw(st.integers(2, 4), label="n") if case.op == "ADD_N" else 2
    shapes_ = [sa, sb] + [sa] * (n - 2)
    xs = [_operand(rng, data, s, case, k) for k, s in enumerate(shapes_)]
    q = [None] * (n + 1)
    if case.quantized:
        q = [quant(*data.draw(qparams(case.dtype, -3, 1), label=f"q{k}")) for k in range(3)]
        assume(max(q[0].scale[0], q[1].scale[0]) ** 2 * 4 / 2**14 < q[2].scale[0])  # else LiteRT aborts
    out_shape = np.broadcast_shapes(sa, sb)
    model = single_op_model(
        case.op, [T(s, case.dtype, q=q[k]) for k, s in enumerate(shapes_)], [T(out_shape, case.dtype, q=q[-1])]
    )
    ours, theirs = run_both(model, xs)
    assert_close(ours, theirs, rtol_each=TOLERANCE[case.op])


@pytest.mark.parametrize(
    "op, dtype, a, b",
    [
        ("FLOOR_DIV", np.int32, [-(2**31), -(2**31), 7, -7, 7, -7, 0], [-1, 1, 2, 2, -2, -2, -5]),
        ("FLOOR_DIV", np.int8, [-128, -128, 127, -1], [-1, 3, -128, 127]),
        (
            "FLOOR_DIV",
            np.float32,
            [7.0, -7.0, np.inf, np.nan, -0.0, 1e30, 5.0],
            [2.0, 2.0, 3.0, 1.0, 3.0, 1e-30, -np.inf],
        ),
        # INT32_MIN % -1 traps (SIGFPE) inside LiteRT, so it is not compared; int8 / int16 promote and give 0
        ("FLOOR_MOD", np.int32, [-(2**31), 7, -7, 7, -7, 0, 2**31 - 1], [3, 3, 3, -3, -3, -5, -(2**31)]),
        ("FLOOR_MOD", np.int8, [-128, -128, 127, -1], [-1, 3, -128, 127]),
        (
            "FLOOR_MOD",
            np.float32,
            [7.5, -7.5, 7.5, -7.5, 1.0, np.inf, 3.0, -0.0],
            [2.0, 2.0, -2.0, -2.0, 0.0, 2.0, np.inf, 1.0],
        ),
        ("POW", np.int32, [2, -2, 3, 0, -1, 7], [31, 31, 40, 0, 2**31 - 1, 2**30]),
        ("POW", np.float32, [-8.0, 0.0, -0.0, 2.0, np.nan, 1.0, -1.0], [1 / 3, -1.0, -1.0, 128.0, 0.0, np.nan, np.inf]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_binary_more_edges(op, dtype, a, b):
    a, b = np.array(a, dtype), np.array(b, dtype)
    model = single_op_model(op, [T(a.shape, dtype), T(b.shape, dtype)], [T(a.shape, dtype)])
    ours, theirs = run_both(model, [a, b])
    assert_close(ours, theirs, rtol_each=TOLERANCE[op])


@pytest.mark.parametrize("exponent", [3.0, 2.0, 0.0, 2.5, -3.0, 1000.0, 2.0**31])
@pytest.mark.parametrize("exponent_shape", [(), (1,), (1, 1), (1, 4), (2, 1), (2, 4)])
def test_pow_float_overflow_by_exponent_shape(exponent_shape, exponent):
    """float32 POW overflowing: a single broadcast exponent that is a whole number >= 0 (BroadcastPow4D's scalar
    path) gives +-FLT_MAX, every other exponent or shape pair +-inf (found by the long hypothesis profile); NaN
    and -0.0 pass either way. Values compared with the float tolerance (that path's last bits are not powf's)."""
    a = np.array([[1e30, -1e30, np.nan, -0.0], [np.inf, -3.0, 1e-30, 1e20]], np.float32)
    b = np.full(exponent_shape, exponent, np.float32)
    model = single_op_model("POW", [T(a.shape), T(b.shape)], [T(a.shape)])
    ours, theirs = run_both(model, [a, b])
    assert_close(ours, theirs, rtol_each=TOLERANCE["POW"])
    clamped = exponent_shape in ((), (1,), (1, 1)) and 0 <= exponent < 2**31 and exponent.is_integer()
    assert np.isinf(ours[0][0, 0]) == (exponent > 1 and not clamped)  # 1e30 ** exponent overflows from 2 on


@pytest.mark.parametrize(
    "op, dtype, b",
    [
        ("FLOOR_DIV", np.int32, [1, 0, 1]),
        ("FLOOR_DIV", np.float32, [1.0, -0.0, 1.0]),
        ("FLOOR_MOD", np.int8, [1, 0, 1]),
        ("FLOOR_MOD", np.int64, [0, 1, 1]),
        ("POW", np.int32, [1, -1, 2]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_binary_more_fails_at_invoke(op, dtype, b):
    """Zero divisors (float ones too for FLOOR_DIV) and negative integer exponents fail the invoke in both."""
    model = single_op_model(op, [T((3,), dtype), T((3,), dtype)], [T((3,), dtype)])
    feed = [np.array([3, 4, 5], dtype), np.array(b, dtype)]
    LiteRT, OpResolverType = oracle()
    for it, error in (
        (LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF), RuntimeError),
        (Interpreter(model_content=model), RuntimeError),
    ):
        it.allocate_tensors()
        for d, x in zip(it.get_input_details(), feed):
            it.set_tensor(d["index"], x)
        with pytest.raises(error):
            it.invoke()


#: (op, dtype, a divisor / exponent LiteRT's Eval refuses, one it accepts, quantization): div.cc CheckNonZero
#: (int32) and its ``data[i] != zero_point`` (quantized: the divisor's zero point), floor_div.cc / floor_mod.cc's
#: zero check (floor_mod: integers only), pow.cc CheckValue (int32)
CHECKED_AT_EVAL = [
    ("POW", np.int32, -1, 2, None),
    ("FLOOR_DIV", np.int32, 0, -3, None),
    ("FLOOR_DIV", np.float32, -0.0, 2.0, None),
    ("FLOOR_MOD", np.int32, 0, -3, None),
    ("DIV", np.int32, 0, -3, None),
    ("DIV", np.int8, 3, 5, quant(0.5, 3)),
    ("DIV", np.uint8, 128, 131, quant(0.5, 128)),
    ("DIV", np.int16, 0, -3, quant(0.5, 0)),
]


@pytest.mark.parametrize("layout", ["empty-x-constant-y", "empty-x-input-y", "empty-constants", "constants"])
@pytest.mark.parametrize(
    "op, dtype, bad, good, q",
    CHECKED_AT_EVAL,
    ids=lambda v: v if isinstance(v, str) else np.dtype(v).name if isinstance(v, type) else None,
)
def test_checked_at_eval_whatever_the_output(op, dtype, bad, good, q, layout):
    """LiteRT checks the divisor / exponent values at eval, before it looks at the output: an empty output
    (x of shape [0, 3]) fails the invoke too, with the values constant or fed, and a node of constants fails at
    invoke, not at allocate_tensors. litert_py runs such nodes (``checks_values_at_eval``) instead of skipping or
    folding them. With an accepted value both run and agree."""
    x = np.ones((3,) if layout == "constants" else (0, 3), dtype)
    for value, fails in ((bad, True), (good, False)):
        y = np.array([1, value, 1], dtype)
        x_t = T(x.shape, dtype, q=q) if layout in ("empty-x-constant-y", "empty-x-input-y") else T.const(x, q=q)
        y_t = T(y.shape, dtype, q=q) if layout == "empty-x-input-y" else T.const(y, q=q)
        feeds = [a for a, t in ((x, x_t), (y, y_t)) if t.data is None]
        model = single_op_model(op, [x_t, y_t], [T(x.shape, dtype, q=q)])
        if fails:
            litert_fails(model, feeds, at="invoke")
            ours_fails(model, feeds, errors=InvokeError, at="invoke", match=rf"Node number 0 \({op}\) failed to invoke")
        else:
            ours, theirs = run_both(model, feeds)
            assert ours[0].shape == x.shape
            assert_close(ours, theirs, rtol_each=0.0)


MORE_REJECTS = [  # (id, op, inputs, output)
    ("floor-div-int64", "FLOOR_DIV", [T((2,), np.int64), T((2,), np.int64)], T((2,), np.int64)),
    ("floor-div-types-differ", "FLOOR_DIV", [T((2,)), T((2,), np.int32)], T((2,))),
    ("floor-mod-uint8", "FLOOR_MOD", [T((2,), np.uint8), T((2,), np.uint8)], T((2,), np.uint8)),
    ("pow-int8", "POW", [T((2,), np.int8), T((2,), np.int8)], T((2,), np.int8)),
    ("pow-int64", "POW", [T((2,), np.int64), T((2,), np.int64)], T((2,), np.int64)),
    ("pow-not-broadcastable", "POW", [T((2, 3)), T((4,))], T((2, 3))),
    ("squared-difference-int16", "SQUARED_DIFFERENCE", [T((2,), np.int16), T((2,), np.int16)], T((2,), np.int16)),
    ("squared-difference-int64", "SQUARED_DIFFERENCE", [T((2,), np.int64), T((2,), np.int64)], T((2,), np.int64)),
    ("atan2-int32", "ATAN2", [T((2,), np.int32), T((2,), np.int32)], T((2,), np.int32)),
    ("atan2-ranks-differ", "ATAN2", [T((2, 3)), T((3,))], T((2, 3))),
    ("add-n-one-input", "ADD_N", [T((2,))], T((2,))),
    ("add-n-shapes-differ", "ADD_N", [T((2,)), T((2,)), T((1,))], T((2,))),
    ("add-n-int64", "ADD_N", [T((2,), np.int64), T((2,), np.int64)], T((2,), np.int64)),
    ("add-n-int8", "ADD_N", [T((2,), np.int8), T((2,), np.int8)], T((2,), np.int8)),
]


@pytest.mark.parametrize("case", MORE_REJECTS, ids=lambda c: c[0])
def test_more_rejected(case):
    _, op, inputs, out = case
    model = single_op_model(op, inputs, [out])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    litert_fails(model, [np.ones(t.shape, t.dtype) for t in inputs], (RuntimeError, ValueError))


def test_atan2_same_rank_other_dims_rejected():
    """LiteRT checks only the ranks and then reads past the smaller input; we reject unequal shapes."""
    model = single_op_model("ATAN2", [T((2, 3)), T((2, 1))], [T((2, 3))])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
