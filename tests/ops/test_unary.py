"""Unary ops against the oracle: LOG, SQRT, RSQRT, EXP, ABS, NEG, SQUARE, SIN, COS, FLOOR, CEIL, ROUND, SIGN,
LOGICAL_NOT, ZEROS_LIKE, REAL, IMAG, COMPLEX_ABS, every plain dtype path and the quantized int8 / int16 ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._values import regimes, shapes
from tests.oracle import T, litert_fails, oracle, ours_fails, quant, run_both, single_op_model
from tests.values import values

# CEIL and ROUND are not registered by BUILTIN_REF; BUILTIN_WITHOUT_DEFAULT_DELEGATES runs their builtin kernels
# (AUTO would hand them to XNNPACK).
RESOLVER = {"CEIL": "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "ROUND": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}

#: float tolerance (rtol, elementwise) per case: correctly rounded IEEE operations are exact; transcendentals
#: in float32 differ from glibc by an ulp or two; float16 sin/cos are float32 results rounded once more.
TOLERANCE = {
    "log-float32": 1e-6,
    "sqrt-float32": 0.0,
    "rsqrt-float32": 0.0,
    "exp-float32": 1e-6,
    "abs-float32": 0.0,
    "neg-float32": 0.0,
    "neg-float16": 0.0,
    "square-float32": 0.0,
    "sin-float32": 1e-6,
    "sin-float16": 1e-3,
    "cos-float32": 1e-6,
    "cos-float16": 1e-3,
    "floor-float32": 0.0,
    "floor-float16": 0.0,
    "ceil-float32": 0.0,
    "round-float32": 0.0,
    "round-float16": 0.0,
    "sign-float32": 0.0,
    "sign-float64": 0.0,
    "real-complex64": 0.0,
    "imag-complex64": 0.0,
    "real-complex128": 0.0,
    "imag-complex128": 0.0,
    "complex_abs-complex64": 1e-6,
    "complex_abs-complex128": 1e-15,  # hypot: glibc vs NumPy's own
}

CASES = [
    ("LOG", np.float32),
    ("SQRT", np.float32),
    ("RSQRT", np.float32),
    ("EXP", np.float32),
    ("ABS", np.float32),
    ("ABS", np.int32),
    ("ABS", np.int16),
    ("NEG", np.float32),
    ("NEG", np.float16),
    ("NEG", np.int8),
    ("NEG", np.int16),
    ("NEG", np.int32),
    ("NEG", np.int64),
    ("SQUARE", np.float32),
    ("SIN", np.float32),
    ("SIN", np.float16),
    ("COS", np.float32),
    ("COS", np.float16),
    ("FLOOR", np.float32),
    ("FLOOR", np.float16),
    ("CEIL", np.float32),
    ("ROUND", np.float32),
    ("ROUND", np.float16),
    ("SIGN", np.float32),
    ("SIGN", np.float64),
    ("SIGN", np.int32),
    ("LOGICAL_NOT", np.bool_),
    ("ZEROS_LIKE", np.float32),
    ("ZEROS_LIKE", np.int32),
    ("ZEROS_LIKE", np.int64),
]


def _id(case) -> str:
    return f"{case[0].lower()}-{np.dtype(case[1]).name}"


@pytest.mark.parametrize("case", CASES, ids=_id)
@given(data=st.data(), shape=shapes(0, 6), seed=st.integers(0, 2**31 - 1))
def test_unary(case, data, shape, seed):
    op, dtype = case
    if dtype is np.bool_:
        x = np.random.default_rng(seed).random(shape) < 0.5
    else:
        x = values(np.random.default_rng(seed), shape, dtype, data.draw(regimes(dtype), label="regime"))
        if op == "ROUND" and data.draw(st.booleans(), label="halves"):
            x = (np.round(x.astype(np.float64) * 2) / 2).astype(dtype)  # many exact .5 ties
    model = single_op_model(op, [T(shape, dtype)], [T(shape, dtype)])
    ours, theirs = run_both(model, [x], resolver=RESOLVER.get(op, "BUILTIN_REF"))
    assert_close(ours, theirs, rtol_each=TOLERANCE.get(_id(case), 0.0))


def test_neg_int8_is_raw_negation_even_when_quantized():
    x = np.array([-128, -1, 0, 5, 127], np.int8)
    model = single_op_model("NEG", [T((5,), np.int8, q=quant(0.5, 3))], [T((5,), np.int8, q=quant(0.5, 3))])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


SPECIAL = np.array(
    [0.0, -0.0, -1.0, 1.0, np.inf, -np.inf, np.nan, 1e-45, 3e38, -3e38, -0.4, -0.5, 2.5, -1.5], np.float32
)
EXPECTED = {  # what LiteRT computes, written out: a test of the IEEE corner cases that cannot pass by accident
    "LOG": [-np.inf, -np.inf, np.nan, 0.0, np.inf, np.nan, np.nan, None, None, np.nan],
    "SQRT": [0.0, -0.0, np.nan, 1.0, np.inf, np.nan, np.nan, None, None, np.nan],
    "RSQRT": [np.inf, -np.inf, np.nan, 1.0, 0.0, np.nan, np.nan, None, None, np.nan],
    "EXP": [1.0, 1.0, None, None, np.inf, 0.0, np.nan, 1.0, np.inf, 0.0],
    "ROUND": [0.0, -0.0, -1.0, 1.0, np.inf, -np.inf, np.nan, 0.0, 3e38, -3e38, 0.0, 0.0, 2.0, -2.0],
    "SIGN": [0.0, 0.0, -1.0, 1.0, 1.0, -1.0, np.nan, 1.0, 1.0, -1.0, -1.0, -1.0, 1.0, -1.0],
}


@pytest.mark.parametrize(
    "op", ["LOG", "SQRT", "RSQRT", "EXP", "ABS", "NEG", "SQUARE", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "SIGN"]
)
def test_ieee_special_values(op):
    model = single_op_model(op, [T(SPECIAL.shape)], [T(SPECIAL.shape)])
    ours, theirs = run_both(model, [SPECIAL], resolver=RESOLVER.get(op, "BUILTIN_REF"))
    assert_close(ours, theirs, rtol_each=TOLERANCE[f"{op.lower()}-float32"])
    signed = ~np.isnan(theirs[0])  # -0.0 where LiteRT gives -0.0 (a NaN's sign bit means nothing)
    np.testing.assert_array_equal(np.signbit(ours[0][signed]), np.signbit(theirs[0][signed]))
    for got, want in zip(ours[0], EXPECTED.get(op, [])):
        if want is not None:
            np.testing.assert_equal(got, np.float32(want))
            if want == 0:
                assert np.signbit(got) == np.signbit(np.float32(want)), (op, got, want)


# -- complex parts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["REAL", "IMAG", "COMPLEX_ABS"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
@given(shape=shapes(0, 5), seed=st.integers(0, 2**31 - 1), regime=st.sampled_from(["unit", "wide", "special"]))
def test_complex_part(op, dtype, shape, seed, regime):
    x = values(np.random.default_rng(seed), shape, dtype, regime)
    real = np.float32 if dtype == np.complex64 else np.float64
    model = single_op_model(op, [T(shape, dtype)], [T(shape, real)])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs, rtol_each=TOLERANCE[f"{op.lower()}-{np.dtype(dtype).name}"])


# -- quantized int8 / int16 paths (integers: exact) ---------------------------------------------------
QUANT_CASES = [(op, dt) for op in ("ABS", "SQRT", "RSQRT", "LOG", "EXP") for dt in (np.int8, np.int16)]


@st.composite
def unary_qparams(draw, op, dtype):
    """Input and output (scale, zero point): int16 zero points are 0 (LiteRT requires it); output scales
    sized to the op's range, sometimes equal to the input scale (ABS's no-rescale path)."""
    s_in = draw(st.sampled_from([0.5, 0.05, 1.0 / 128]) | st.floats(1e-3, 0.5))
    if dtype == np.int16:
        s_in /= 256
    ratio = {"ABS": 1.0, "SQRT": 0.1, "RSQRT": 1.0, "LOG": 0.05, "EXP": 0.5}[op]
    s_out = (
        s_in
        if op == "ABS" and draw(st.booleans())
        else ratio * draw(st.floats(0.05, 4.0)) * (1.0 if dtype == np.int8 else 1.0 / 256)
    )
    if op == "RSQRT":
        s_out = draw(st.floats(0.005, 0.5)) / (1.0 if dtype == np.int8 else 256)
    if dtype == np.int16:
        return (s_in, 0), (s_out, 0)
    return (s_in, draw(st.integers(-128, 127))), (s_out, draw(st.integers(-128, 127)))


@pytest.mark.parametrize("case", QUANT_CASES, ids=lambda c: f"{c[0].lower()}-{np.dtype(c[1]).name}-quant")
@given(data=st.data(), shape=shapes(0, 4), seed=st.integers(0, 2**31 - 1))
def test_unary_quantized(case, data, shape, seed):
    op, dtype = case
    qi, qo = data.draw(unary_qparams(op, dtype), label="qparams")
    info = np.iinfo(dtype)
    low = qi[1] if op in ("SQRT", "RSQRT") else info.min  # below the zero point LiteRT fails at invoke
    x = np.random.default_rng(seed).integers(low, info.max, size=shape, endpoint=True).astype(dtype)
    model = single_op_model(op, [T(shape, dtype, q=quant(*qi))], [T(shape, dtype, q=quant(*qo))])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


@pytest.mark.parametrize("op", ["ABS", "SQRT", "RSQRT", "LOG", "EXP"])
@pytest.mark.parametrize("dtype", [np.int8, np.int16], ids=lambda d: np.dtype(d).name)
def test_unary_quantized_every_input(op, dtype):
    """Every stored input value once (the whole table), one fixed parameter set per op."""
    info = np.iinfo(dtype)
    zi = 0 if dtype == np.int16 or op not in ("SQRT", "RSQRT") else -20
    x = np.arange(zi if op in ("SQRT", "RSQRT") else info.min, info.max + 1).astype(dtype)
    s = 1.0 if dtype == np.int8 else 1.0 / 256
    qi, qo = (
        quant(0.04 * s, zi),
        quant(
            {"ABS": 0.03, "SQRT": 0.01, "RSQRT": 0.05, "LOG": 0.02, "EXP": 0.3}[op] * s, 0 if dtype == np.int16 else 5
        ),
    )
    model = single_op_model(op, [T(x.shape, dtype, q=qi)], [T(x.shape, dtype, q=qo)])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


@pytest.mark.parametrize("dtype, s_in, s_out", [(np.int8, 0.5, 0.5), (np.int16, 0.01, 1e-3)], ids=["int8", "int16"])
def test_quantized_exp_overflow(dtype, s_in, s_out):
    """exp(large) beyond the output range: int8 saturates to 127, int16 tables hold NaN-derived zeros."""
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1).astype(dtype)
    model = single_op_model("EXP", [T(x.shape, dtype, q=quant(s_in, 0))], [T(x.shape, dtype, q=quant(s_out, 0))])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)


@pytest.mark.parametrize("op", ["SQRT", "RSQRT"])
def test_quantized_negative_input_fails_at_invoke(op):
    model = single_op_model(op, [T((3,), np.int8, q=quant(0.1, 2))], [T((3,), np.int8, q=quant(0.1, 0))])
    x = np.array([5, 1, 7], np.int8)  # 1 < zero point 2: a negative real value
    ours_fails(model, [x], at="invoke", match="only defined")
    litert_fails(model, [x], at="invoke")


# -- what LiteRT rejects ----------------------------------------------------------------------------
REJECTS = [  # (op, dtype, oracle_check): oracle_check False where LiteRT crashes instead of failing
    ("LOG", np.int32, True),
    ("LOG", np.float16, True),
    ("LOG", np.int16, False),
    ("SQRT", np.int16, False),
    ("RSQRT", np.int16, False),
    ("RSQRT", np.int64, True),
    ("EXP", np.int32, True),
    ("EXP", np.float16, True),
    ("ABS", np.int64, True),
    ("ABS", np.float16, True),
    ("ABS", np.uint8, True),
    ("NEG", np.uint8, True),
    ("NEG", np.bool_, True),
    ("SQUARE", np.int32, True),
    ("SIN", np.int32, True),
    ("COS", np.bool_, True),
    ("FLOOR", np.int32, True),
    ("CEIL", np.float16, True),
    ("CEIL", np.int32, True),
    ("ROUND", np.int32, True),
    ("ROUND", np.float64, True),
    ("SIGN", np.int64, True),
    ("SIGN", np.float16, True),
    ("SIGN", np.int8, True),
    ("LOGICAL_NOT", np.float32, True),
    ("LOGICAL_NOT", np.int32, True),
    ("ZEROS_LIKE", np.float16, True),
    ("ZEROS_LIKE", np.int8, True),
    ("ZEROS_LIKE", np.bool_, True),
    ("ABS", np.int8, True),  # int8 without quantization parameters
]


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: f"{c[0].lower()}-{np.dtype(c[1]).name}")
def test_rejected(case):
    op, dtype, oracle_check = case
    model = single_op_model(op, [T((3,), dtype)], [T((3,), dtype)])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    if oracle_check:
        LiteRT, OpResolverType = oracle()
        ref = LiteRT(
            model_content=model, experimental_op_resolver_type=getattr(OpResolverType, RESOLVER.get(op, "BUILTIN_REF"))
        )
        with pytest.raises(RuntimeError):
            ref.allocate_tensors()
            ref.set_tensor(ref.get_input_details()[0]["index"], np.zeros(3, dtype))
            ref.invoke()


COMPLEX_REJECTS = [
    ("REAL", np.float32, np.float32),
    ("IMAG", np.complex64, np.float64),
    ("COMPLEX_ABS", np.complex128, np.float32),
]


@pytest.mark.parametrize(
    "case", COMPLEX_REJECTS, ids=lambda c: f"{c[0].lower()}-{np.dtype(c[1]).name}-{np.dtype(c[2]).name}"
)
def test_complex_rejected(case):
    op, src, dst = case
    model = single_op_model(op, [T((3,), src)], [T((3,), dst)])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    litert_fails(model, at="allocate")


def test_quantized_int16_needs_zero_points_0():
    model = single_op_model("ABS", [T((3,), np.int16, q=quant(0.01, 1))], [T((3,), np.int16, q=quant(0.01, 0))])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    litert_fails(model, at="allocate")
