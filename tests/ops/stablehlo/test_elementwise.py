"""StableHLO elementwise ops (litert_py/ops/stablehlo/elementwise.py): the binary ops ai-edge-litert registers
against the oracle (exact: single IEEE operations), the rest against NumPy / Python formulations written here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.oracle import T, run_ours, single_op_model

from ._models import _beyond_values, _name, _shape, _values, _wrap, check_oracle

BINARY_DTYPES = {
    "STABLEHLO_ADD": (np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_MULTIPLY": (np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_MAXIMUM": (np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_MINIMUM": (np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_AND": (np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_SHIFT_LEFT": (np.int8, np.int16, np.int32),
}


def binary_case(op, dtype, any_count=False):
    def build(data):
        shape = _shape(data, max_dim=9 if any_count else 4)  # sizes around 8: LiteRT's vector body and tail
        x = _values(data, shape, dtype)
        if op == "STABLEHLO_SHIFT_LEFT" and not any_count:  # counts in [0, bits), defined in C++
            y = np.random.default_rng(x.size).integers(0, np.iinfo(dtype).bits, shape).astype(dtype)
        else:
            y = _values(data, shape, dtype)
        return single_op_model(op, [T(shape, dtype), T(shape, dtype)], [T(shape, dtype)]), [x, y]

    return build


CASES = [(f"{op[10:].lower()}-{_name(dt)}", op, binary_case(op, dt)) for op, dts in BINARY_DTYPES.items() for dt in dts]
CASES += [
    (f"shift_left-{_name(dt)}-any-count", "STABLEHLO_SHIFT_LEFT", binary_case("STABLEHLO_SHIFT_LEFT", dt, True))
    for dt in BINARY_DTYPES["STABLEHLO_SHIFT_LEFT"]
]  # undefined in C++: what LiteRT's build computes


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@given(data=st.data())
def test_stablehlo(case, data):
    check_oracle(case, data)


# --------------------------------------------------------------------------------------------------------
# Error paths: LiteRT rejects these at prepare, litert_py too
# --------------------------------------------------------------------------------------------------------

REJECTED = [
    (
        "and-float32",
        single_op_model("STABLEHLO_AND", [T((3,), np.float32), T((3,), np.float32)], [T((3,), np.float32)]),
    ),
    (
        "add-shape-mismatch",
        single_op_model("STABLEHLO_ADD", [T((3,), np.float32), T((1,), np.float32)], [T((3,), np.float32)]),
    ),
    (
        "add-type-mismatch",
        single_op_model("STABLEHLO_ADD", [T((3,), np.float32), T((3,), np.int32)], [T((3,), np.float32)]),
    ),
    (
        "shift_left-uint8",
        single_op_model("STABLEHLO_SHIFT_LEFT", [T((3,), np.uint8), T((3,), np.uint8)], [T((3,), np.uint8)]),
    ),
]


@pytest.mark.parametrize("model", [m for _, m in REJECTED], ids=[n for n, _ in REJECTED])
def test_rejected(model):
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()


# --------------------------------------------------------------------------------------------------------
# Beyond LiteRT (no oracle): StableHLO elementwise ops against NumPy / Python formulations written here
# --------------------------------------------------------------------------------------------------------


def _int_div(a: int, b: int) -> int:
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_rem(a: int, b: int) -> int:
    return a if b == 0 else a - b * _int_div(a, b)


def _int_pow(a: int, b: int) -> int:
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return a**b


def _scalar_ref(fn):
    """Elementwise over Python ints, wrapped to the dtype."""

    def ref(a, b):
        out = [_wrap(fn(int(x), int(y)), a.dtype) for x, y in zip(a.ravel(), b.ravel())]
        return np.array(out, dtype=np.int64).astype(a.dtype).reshape(a.shape)

    return ref


def _f64(fn):
    """A float reference computed in float64 and rounded once to the input's type."""
    return lambda x: fn(x.astype(np.float64)).astype(x.dtype)


UNARY_REF = {
    "STABLEHLO_LOGISTIC": _f64(lambda x: np.exp(-np.logaddexp(0, -x))),
    "STABLEHLO_COSINE": _f64(np.cos),
    "STABLEHLO_EXPONENTIAL": _f64(np.exp),
    "STABLEHLO_LOG": _f64(np.log),
    "STABLEHLO_RSQRT": _f64(lambda x: np.sqrt(1 / x)),
    "STABLEHLO_TANH": _f64(np.tanh),
    "STABLEHLO_CBRT": _f64(lambda x: np.sign(x) * np.abs(x) ** (1 / 3)),
    "STABLEHLO_FLOOR": _f64(np.floor),
}
BEYOND_TOLERANCE = {  # rtol against a float64 reference rounded once: an ulp or two of the input's type
    np.dtype(np.float32): 3e-7,
    np.dtype(np.float16): 1e-3,
    np.dtype(np.float64): 1e-15,
}

BINARY_REF = {
    "STABLEHLO_SUBTRACT": (lambda a, b: (a.astype(np.float64) - b).astype(a.dtype), _scalar_ref(lambda x, y: x - y)),
    "STABLEHLO_DIVIDE": (lambda a, b: (a.astype(np.float64) / b).astype(a.dtype), _scalar_ref(_int_div)),
    "STABLEHLO_REMAINDER": (lambda a, b: np.fmod(a.astype(np.float64), b).astype(a.dtype), _scalar_ref(_int_rem)),
    "STABLEHLO_POWER": (lambda a, b: (a.astype(np.float64) ** b).astype(a.dtype), _scalar_ref(_int_pow)),
    "STABLEHLO_OR": (None, _scalar_ref(lambda x, y: x | y)),
}


def _assert_float(ours, ref, rtol):
    assert_close([ours.astype(np.float64)], [ref.astype(np.float64)], rtol_each=rtol)


BEYOND_UNARY = [(op, dt) for op in UNARY_REF for dt in (np.float32, np.float16)] + [
    ("STABLEHLO_ABS", np.int8),
    ("STABLEHLO_ABS", np.int32),
    ("STABLEHLO_ABS", np.float32),
    ("STABLEHLO_NEGATE", np.int16),
    ("STABLEHLO_NEGATE", np.int64),
    ("STABLEHLO_NEGATE", np.float32),
]


@pytest.mark.parametrize("case", BEYOND_UNARY, ids=[f"{o[10:].lower()}-{_name(d)}" for o, d in BEYOND_UNARY])
@given(data=st.data())
def test_beyond_unary(case, data):
    op, dtype = case
    shape = _shape(data, 0, 3)
    x = _beyond_values(data, shape, dtype)
    if op in ("STABLEHLO_LOG", "STABLEHLO_RSQRT"):
        x = np.abs(x)
    (out,) = run_ours(single_op_model(op, [T(shape, dtype)], [T(shape, dtype)]), [x])
    if op in UNARY_REF:
        with np.errstate(all="ignore"):
            _assert_float(out, UNARY_REF[op](x), BEYOND_TOLERANCE[np.dtype(dtype)])
    else:
        fn = abs if op == "STABLEHLO_ABS" else (lambda v: -v)
        expected = [_wrap(fn(int(v)), dtype) if np.dtype(dtype).kind == "i" else fn(v) for v in x.ravel()]
        np.testing.assert_array_equal(out, np.array(expected, dtype=dtype).reshape(shape))


BEYOND_BINARY = [
    (op, dt)
    for op in BINARY_REF
    for dt in (np.float32, np.int8, np.int32, np.int64, np.uint8)
    if not (op == "STABLEHLO_OR" and dt is np.float32)
] + [("STABLEHLO_OR", np.bool_)]


@pytest.mark.parametrize("case", BEYOND_BINARY, ids=[f"{o[10:].lower()}-{_name(d)}" for o, d in BEYOND_BINARY])
@given(data=st.data())
def test_beyond_binary(case, data):
    op, dtype = case
    shape = _shape(data, 0, 3)
    a, b = _beyond_values(data, shape, dtype, op), _beyond_values(data, shape, dtype, op)
    (out,) = run_ours(single_op_model(op, [T(shape, dtype), T(shape, dtype)], [T(shape, dtype)]), [a, b])
    float_ref, int_ref = BINARY_REF[op]
    if np.dtype(dtype).kind == "f":
        with np.errstate(all="ignore"):
            _assert_float(out, float_ref(a, b), 0.0 if op != "STABLEHLO_POWER" else 3e-7)
    elif dtype is np.bool_:
        np.testing.assert_array_equal(out, a | b)
    else:
        np.testing.assert_array_equal(out, int_ref(a, b))


def test_beyond_integer_division_corner_cases():
    a = np.array([7, -7, 7, -7, -128, -128, 5, 0], np.int8)
    b = np.array([2, 2, -2, -2, -1, 0, 0, 3], np.int8)
    div = single_op_model("STABLEHLO_DIVIDE", [T((8,), np.int8)] * 2, [T((8,), np.int8)])
    rem = single_op_model("STABLEHLO_REMAINDER", [T((8,), np.int8)] * 2, [T((8,), np.int8)])
    np.testing.assert_array_equal(run_ours(div, [a, b])[0], [3, -3, -3, 3, -128, -1, -1, 0])
    np.testing.assert_array_equal(run_ours(rem, [a, b])[0], [1, -1, 1, -1, 0, -128, 5, 0])


COMPARE_DIRECTIONS = {0: "==", 1: "!=", 2: ">=", 3: ">", 4: "<=", 5: "<"}


def _total_key(v: float) -> tuple:
    """FLOAT_TOTAL_ORDER key: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN."""
    neg = np.signbit(v)
    rank = 2 if np.isnan(v) else 1
    return (-rank, -abs(v) if not np.isnan(v) else 0) if neg else (rank, v if not np.isnan(v) else 0)


COMPARE_CASES = [
    (np.float32, 1),
    (np.float32, 2),
    (np.int8, 3),
    (np.int8, 4),
    (np.int32, 0),
    (np.uint8, 4),
    (np.bool_, 0),
]


@pytest.mark.parametrize("case", COMPARE_CASES, ids=[f"compare-{_name(d)}-type{k}" for d, k in COMPARE_CASES])
@given(data=st.data(), direction=st.integers(0, 5))
def test_beyond_compare(case, data, direction):
    dtype, kind = case
    shape = _shape(data, 0, 3)
    a, b = _beyond_values(data, shape, dtype), _beyond_values(data, shape, dtype)
    if np.dtype(dtype).kind == "f" and a.size:
        a.ravel()[0] = np.nan
        a.ravel()[-1] = -0.0
        b.ravel()[-1] = 0.0
        b.ravel()[0] = -b.ravel()[0] if data.draw(st.booleans()) else np.float32(-np.nan)
    model = single_op_model(
        "STABLEHLO_COMPARE",
        [T(shape, dtype), T(shape, dtype)],
        [T(shape, np.bool_)],
        dict(comparison_direction=direction, compare_type=kind),
    )
    (out,) = run_ours(model, [a, b])
    sym = COMPARE_DIRECTIONS[direction]
    expected = []
    for x, y in zip(a.ravel(), b.ravel()):
        if kind == 2:
            x, y = _total_key(float(x)), _total_key(float(y))
        elif kind == 4 and np.dtype(dtype).kind == "i":
            x, y = int(x) % 2 ** np.iinfo(dtype).bits, int(y) % 2 ** np.iinfo(dtype).bits
        else:
            x, y = (float(x), float(y)) if np.dtype(dtype).kind == "f" else (int(x), int(y))
        expected.append(eval(f"x {sym} y"))  # noqa: S307 - a fixed operator from the table above
    np.testing.assert_array_equal(out, np.array(expected, bool).reshape(shape))


@given(data=st.data(), scalar_pred=st.booleans())
def test_beyond_select(data, scalar_pred):
    shape = _shape(data, 0, 3)
    pshape = () if scalar_pred else shape
    p = _beyond_values(data, pshape, np.bool_)
    t, f = _beyond_values(data, shape, np.int16), _beyond_values(data, shape, np.int16)
    model = single_op_model(
        "STABLEHLO_SELECT", [T(pshape, np.bool_), T(shape, np.int16), T(shape, np.int16)], [T(shape, np.int16)]
    )
    (out,) = run_ours(model, [p, t, f])
    pb = np.broadcast_to(p, shape)
    expected = [x if c else y for c, x, y in zip(pb.ravel(), t.ravel(), f.ravel())]
    np.testing.assert_array_equal(out, np.array(expected, np.int16).reshape(shape))


@given(data=st.data(), scalar_bounds=st.booleans(), dtype=st.sampled_from([np.float32, np.int32]))
def test_beyond_clamp(data, scalar_bounds, dtype):
    shape = _shape(data, 0, 3)
    bshape = () if scalar_bounds else shape
    lo, x, hi = (_beyond_values(data, s, dtype) for s in (bshape, shape, bshape))
    model = single_op_model("STABLEHLO_CLAMP", [T(bshape, dtype), T(shape, dtype), T(bshape, dtype)], [T(shape, dtype)])
    (out,) = run_ours(model, [lo, x, hi])
    los, his = np.broadcast_to(lo, shape).ravel(), np.broadcast_to(hi, shape).ravel()
    expected = [min(max(v, lo_), hi_) for v, lo_, hi_ in zip(x.ravel().tolist(), los.tolist(), his.tolist())]
    np.testing.assert_array_equal(out, np.array(expected, dtype).reshape(shape))


CONVERT_CASES = [
    (np.float32, np.int32),
    (np.float32, np.int8),
    (np.float32, np.bool_),
    (np.int32, np.float32),
    (np.int64, np.float16),
    (np.int32, np.int8),
    (np.uint8, np.int8),
    (np.bool_, np.float32),
    (np.float32, np.float16),
    (np.int8, np.uint16),
]


@pytest.mark.parametrize("case", CONVERT_CASES, ids=[f"convert-{_name(a)}-to-{_name(b)}" for a, b in CONVERT_CASES])
@given(data=st.data())
def test_beyond_convert(case, data):
    src, dst = case
    shape = _shape(data, 0, 3)
    x = _beyond_values(data, shape, src)
    if np.dtype(src).kind == "f":
        x = x * np.float32(30)
    (out,) = run_ours(single_op_model("STABLEHLO_CONVERT", [T(shape, src)], [T(shape, dst)]), [x])
    dk = np.dtype(dst).kind
    expected = []
    for v in x.ravel().tolist():
        if dk == "b":
            expected.append(v != 0)
        elif dk in "iu" and isinstance(v, float):
            info = np.iinfo(dst)
            expected.append(min(max(int(v), info.min), info.max))  # int() truncates toward zero
        elif dk in "iu":
            expected.append(_wrap(int(v), dst))
        else:
            expected.append(float(v))
    np.testing.assert_array_equal(
        out, np.array(expected, dtype=np.float64 if dk == "f" else object).astype(dst).reshape(shape)
    )
