"""LOG, SQRT, RSQRT, EXP, ABS, NEG, SQUARE, SIN, COS, FLOOR, CEIL against the oracle, every plain dtype path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.ops._values import assert_matches, regimes, shapes, values
from tests.oracle import T, oracle, quant, run_both, single_op_model

# CEIL is not registered by BUILTIN_REF; BUILTIN_WITHOUT_DEFAULT_DELEGATES runs its builtin kernel (AUTO would
# hand it to XNNPACK).
RESOLVER = {"CEIL": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}

#: float tolerance (rtol, elementwise) per case: correctly rounded IEEE operations are exact; transcendentals
#: in float32 differ from glibc by an ulp or two; float16 sin/cos are float32 results rounded once more.
TOLERANCE = {
    "log-float32": 1e-6, "sqrt-float32": 0.0, "rsqrt-float32": 0.0, "exp-float32": 1e-6, "abs-float32": 0.0,
    "neg-float32": 0.0, "neg-float16": 0.0, "square-float32": 0.0, "sin-float32": 1e-6, "sin-float16": 1e-3,
    "cos-float32": 1e-6, "cos-float16": 1e-3, "floor-float32": 0.0, "floor-float16": 0.0, "ceil-float32": 0.0,
}

CASES = [
    ("LOG", np.float32), ("SQRT", np.float32), ("RSQRT", np.float32), ("EXP", np.float32),
    ("ABS", np.float32), ("ABS", np.int32), ("ABS", np.int16),
    ("NEG", np.float32), ("NEG", np.float16), ("NEG", np.int8), ("NEG", np.int16), ("NEG", np.int32),
    ("NEG", np.int64),
    ("SQUARE", np.float32), ("SIN", np.float32), ("SIN", np.float16), ("COS", np.float32), ("COS", np.float16),
    ("FLOOR", np.float32), ("FLOOR", np.float16), ("CEIL", np.float32),
]


def _id(case) -> str:
    return f"{case[0].lower()}-{np.dtype(case[1]).name}"


@pytest.mark.parametrize("case", CASES, ids=_id)
@given(data=st.data(), shape=shapes(0, 6), seed=st.integers(0, 2**31 - 1))
def test_unary(case, data, shape, seed):
    op, dtype = case
    x = values(np.random.default_rng(seed), shape, dtype, data.draw(regimes(dtype), label="regime"))
    model = single_op_model(op, [T(shape, dtype)], [T(shape, dtype)])
    ours, theirs = run_both(model, [x], resolver=RESOLVER.get(op, "BUILTIN_REF"))
    assert_matches(ours, theirs, rtol=TOLERANCE.get(_id(case), 0.0))


def test_neg_int8_is_raw_negation_even_when_quantized():
    x = np.array([-128, -1, 0, 5, 127], np.int8)
    model = single_op_model("NEG", [T((5,), np.int8, q=quant(0.5, 3))], [T((5,), np.int8, q=quant(0.5, 3))])
    ours, theirs = run_both(model, [x])
    assert_matches(ours, theirs)


SPECIAL = np.array([0.0, -0.0, -1.0, 1.0, np.inf, -np.inf, np.nan, 1e-45, 3e38, -3e38], np.float32)
EXPECTED = {  # what LiteRT computes, written out: a test of the IEEE corner cases that cannot pass by accident
    "LOG": [-np.inf, -np.inf, np.nan, 0.0, np.inf, np.nan, np.nan, None, None, np.nan],
    "SQRT": [0.0, -0.0, np.nan, 1.0, np.inf, np.nan, np.nan, None, None, np.nan],
    "RSQRT": [np.inf, -np.inf, np.nan, 1.0, 0.0, np.nan, np.nan, None, None, np.nan],
    "EXP": [1.0, 1.0, None, None, np.inf, 0.0, np.nan, 1.0, np.inf, 0.0],
}


@pytest.mark.parametrize("op", ["LOG", "SQRT", "RSQRT", "EXP", "ABS", "NEG", "SQUARE", "SIN", "COS", "FLOOR",
                                "CEIL"])
def test_ieee_special_values(op):
    model = single_op_model(op, [T((10,))], [T((10,))])
    ours, theirs = run_both(model, [SPECIAL], resolver=RESOLVER.get(op, "BUILTIN_REF"))
    assert_matches(ours, theirs, rtol=TOLERANCE[f"{op.lower()}-float32"])
    signed = ~np.isnan(theirs[0])  # -0.0 where LiteRT gives -0.0 (a NaN's sign bit means nothing)
    np.testing.assert_array_equal(np.signbit(ours[0][signed]), np.signbit(theirs[0][signed]))
    for got, want in zip(ours[0], EXPECTED.get(op, [])):
        if want is not None:
            np.testing.assert_equal(got, np.float32(want))


# -- what LiteRT rejects ----------------------------------------------------------------------------
REJECTS = [  # (op, dtype, oracle_check): oracle_check False where LiteRT crashes instead of failing
    ("LOG", np.int32, True), ("LOG", np.float16, True), ("LOG", np.int16, False), ("SQRT", np.int16, False),
    ("RSQRT", np.int16, False), ("RSQRT", np.int64, True), ("EXP", np.int32, True), ("EXP", np.float16, True),
    ("ABS", np.int64, True), ("ABS", np.float16, True), ("ABS", np.uint8, True), ("NEG", np.uint8, True),
    ("NEG", np.bool_, True), ("SQUARE", np.int32, True), ("SIN", np.int32, True), ("COS", np.bool_, True),
    ("FLOOR", np.int32, True), ("CEIL", np.float16, True), ("CEIL", np.int32, True),
]


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: f"{c[0].lower()}-{np.dtype(c[1]).name}")
def test_rejected(case):
    op, dtype, oracle_check = case
    model = single_op_model(op, [T((3,), dtype)], [T((3,), dtype)])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    if oracle_check:
        LiteRT, OpResolverType = oracle()
        ref = LiteRT(model_content=model,
                     experimental_op_resolver_type=getattr(OpResolverType, RESOLVER.get(op, "BUILTIN_REF")))
        with pytest.raises(RuntimeError):
            ref.allocate_tensors()
            ref.set_tensor(ref.get_input_details()[0]["index"], np.zeros(3, dtype))
            ref.invoke()
