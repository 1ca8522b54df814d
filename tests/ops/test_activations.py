"""RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LOGISTIC, TANH, SOFTMAX, PRELU, LEAKY_RELU, HARD_SWISH vs the oracle.

Float paths within TOLERANCE; quantized paths (the QUANTIZED table: every uint8 / int8 / int16 path LiteRT runs)
equal to ai-edge-litert BUILTIN_REF, with hypothesis drawing shapes, scales (1e-9 .. 1e4), zero points (type ends
included), betas, alphas and values; the elementwise ones also over every input value of the type at once. REJECTS
lists what LiteRT refuses (and the few undefined-behaviour cases litert_py refuses on its own: oracle_check False).
DEFAULT_DIFFERS pins where LiteRT's default kernels differ from BUILTIN_REF, which litert_py follows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._values import qparams, regimes, shapes
from tests.oracle import T, litert_fails, oracle, quant, run_both, run_litert, run_ours, single_op_model
from tests.values import values

I8, U8, I16 = np.int8, np.uint8, np.int16


def _f32(v: float) -> float:
    return float(np.float32(v))


#: float tolerance (rtol, elementwise) per case. Clamps and HARD_SWISH / LEAKY_RELU / PRELU are exact IEEE
#: arithmetic; LOGISTIC / TANH / SOFTMAX use float32 exp / tanh (glibc vs NumPy: an ulp or two); SOFTMAX also
#: sums the last axis (rtol is multiplied by its length); float16 results may differ by one half ulp.
TOLERANCE = {
    "relu-float32": 0.0,
    "relu6-float32": 0.0,
    "relu_n1_to_1-float32": 0.0,
    "hard_swish-float32": 0.0,
    "leaky_relu-float32": 0.0,
    "prelu-float32": 0.0,
    "logistic-float32": 1e-6,
    "tanh-float32": 1e-6,
    "softmax-float32": 1e-6,
    "logistic-float16": 1e-3,
    "tanh-float16": 1e-3,
    "softmax-float16": 1e-3,
}

CASES = [
    ("RELU", np.float32),
    ("RELU6", np.float32),
    ("RELU_N1_TO_1", np.float32),
    ("HARD_SWISH", np.float32),
    ("LEAKY_RELU", np.float32),
    ("LOGISTIC", np.float32),
    ("LOGISTIC", np.float16),
    ("TANH", np.float32),
    ("TANH", np.float16),
    ("SOFTMAX", np.float32),
    ("SOFTMAX", np.float16),
]


def _id(case) -> str:
    return f"{case[0].lower()}-{np.dtype(case[1]).name}"


def _options(op: str, data) -> dict | None:
    if op == "SOFTMAX":
        return {"beta": data.draw(st.sampled_from([1.0, 0.5, 2.0, 0.0, -1.0, 1e-3]), label="beta")}
    if op == "LEAKY_RELU":
        return {"alpha": data.draw(st.sampled_from([0.2, 0.0, 1.0, 2.5, -0.5, 1e-2]), label="alpha")}
    return None


def _empty_rows(shape) -> bool:
    """Rows of no element: shape (..., 0) with at least one row."""
    return shape[-1] == 0 and 0 not in shape[:-1]


def _assert_refused_empty_rows(model: bytes, x: np.ndarray) -> None:
    """float32 SOFTMAX / LOG_SOFTMAX over empty rows: LiteRT reads outside the input (in a fresh process it
    segfaults: tests/ops/test_degenerate_shapes.py runs it in a fork); litert_py refuses the model."""
    with pytest.raises(PrepareError, match="empty last dimension"):
        run_ours(model, [x])


@pytest.mark.parametrize("case", CASES, ids=_id)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_activation(case, data, seed):
    op, dtype = case
    shape = data.draw(shapes(1 if op == "SOFTMAX" else 0, 6), label="shape")
    x = values(np.random.default_rng(seed), shape, dtype, data.draw(regimes(dtype), label="regime"))
    model = single_op_model(op, [T(shape, dtype)], [T(shape, dtype)], _options(op, data))
    if op == "SOFTMAX" and dtype == np.float32 and _empty_rows(shape):
        _assert_refused_empty_rows(model, x)
        return
    ours, theirs = run_both(model, [x])
    rtol = TOLERANCE[_id(case)] * (max(shape[-1], 1) if op == "SOFTMAX" else 1)
    assert_close(ours, theirs, rtol_each=rtol, atol=0.0)


def _alphas(rng, shape, kind: str) -> np.ndarray:
    """PRELU alphas: "any" (mixed signs and sizes, zeros), or all in (0, 1], all negative, all above 1 (the
    kernel picks a different evaluation for each)."""
    if kind == "any":
        return values(rng, shape, np.float32, "unit")
    u = rng.uniform(1e-3, 1.0, shape)
    return np.asarray({"leaky": u, "negative": -3 * u, "steep": 1 + 3 * u}[kind], np.float32)


@given(data=st.data(), seed=st.integers(0, 2**31 - 1), alpha_const=st.booleans())
def test_prelu(data, seed, alpha_const):
    rng = np.random.default_rng(seed)
    shape = data.draw(shapes(0, 6), label="shape")
    rank = data.draw(st.integers(0, len(shape)), label="alpha_rank")  # alpha: a suffix of x's shape, some 1s
    alpha_shape = tuple(1 if data.draw(st.booleans()) else d for d in shape[len(shape) - rank :])
    x = values(rng, shape, np.float32, data.draw(regimes(np.float32), label="regime"))
    kind = data.draw(st.sampled_from(["any", "leaky", "negative", "steep"]), label="alpha_kind")
    alpha = _alphas(rng, alpha_shape, kind)
    a = T.const(alpha) if alpha_const else T(alpha_shape)
    model = single_op_model("PRELU", [T(shape), a], [T(shape)])
    ours, theirs = run_both(model, [x] if alpha_const else [x, alpha])
    assert_close(ours, theirs, rtol_each=TOLERANCE["prelu-float32"])


SPECIAL = np.array(
    [np.nan, np.inf, -np.inf, -0.0, 0.0, -3.0, 3.0, 1e30, -1e30, -9.5, -9.0, 16.6, 16.625, 16.7, 6.0], np.float32
)  # 16.625: above LOGISTIC's cutoff, where 1 / (1 + exp(-x)) is not yet 1


@pytest.mark.parametrize(
    "op",
    [
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "LOGISTIC",
        "TANH",
        "HARD_SWISH",
        "LEAKY_RELU-0.25",
        "LEAKY_RELU-0",
        "LEAKY_RELU-3",
        "LEAKY_RELU--0.5",
        "PRELU-0.25",
        "PRELU-0",
        "PRELU-3",
        "PRELU--0.5",
        "PRELU-mixed",
    ],
)
def test_ieee_special_values(op):
    op, _, alpha = op.partition("-")
    if op == "PRELU":
        a = (
            np.resize(np.float32([0.25, 0, 3, -0.5]), SPECIAL.shape)
            if alpha == "mixed"
            else np.full(SPECIAL.shape, float(alpha), np.float32)
        )
        model = single_op_model(op, [T(SPECIAL.shape), T.const(a)], [T(SPECIAL.shape)])
    else:
        opts = {"alpha": float(alpha)} if op == "LEAKY_RELU" else None
        model = single_op_model(op, [T(SPECIAL.shape)], [T(SPECIAL.shape)], opts)
    ours, theirs = run_both(model, [SPECIAL])
    assert_close(ours, theirs, rtol_each=TOLERANCE[f"{op.lower()}-float32"])
    signed = ~np.isnan(theirs[0])  # -0.0 where LiteRT gives -0.0 (a NaN's sign bit means nothing)
    np.testing.assert_array_equal(np.signbit(ours[0][signed]), np.signbit(theirs[0][signed]))


@pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "leaky"])
@pytest.mark.parametrize(
    ("alpha_shape", "tiled"), [((3,), (6, 3)), ((1, 1, 3), (6, 3)), ((1, 6, 1), (6, 3)), ((5, 1, 1), (5, 1, 1))]
)
def test_prelu_constant_alpha_rows(alpha_shape, tiled, mixed):
    """A constant alpha not varying along x's leading axes is tiled over its last two (W, C) at prepare
    (whole-row inner loops): the same values as LiteRT, exactly."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((2, 5, 6, 3)) * 3).astype(np.float32)
    x.reshape(-1)[:4] = [0.0, -0.0, np.inf, -np.inf]
    a = rng.uniform(0.1, 0.9, alpha_shape).astype(np.float32)
    if mixed:
        a.reshape(-1)[0] = 2.5
    model = single_op_model("PRELU", [T(x.shape), T.const(a)], [T(x.shape)])
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert (prepared.sign if mixed else prepared.alpha).shape == tiled
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(theirs[0]))


@pytest.mark.parametrize("alphas", ["mixed", "mixed-denormal", "inf", "-inf", "nan", "steep-inf", "leaky-inf"])
def test_prelu_alpha_mixes(alphas):
    """Constant alphas mixing <= 1 and > 1 (the sign-flip path: s * max(s*alpha*x, s*x)), against every special
    input (+-0, +-inf, NaN, denormals, huge) on every alpha; with an infinite or NaN alpha the masked select
    (0 * inf would be NaN where the reference returns x). Exact, signs of zeros included."""
    tiny = np.float32(1e-45)
    xs = np.concatenate([SPECIAL, np.float32([tiny, -tiny, 1e-39, -1e-39, 3.4e38, -3.4e38, 1.0, -1.0])])
    a = {
        "mixed": [0.25, 3.0, -0.5, 1.0, 1.0000001, -7.0, 1e-30, 2e30],
        "mixed-denormal": [1e-40, 1.5, -1e-42, 0.999999, 100.0, -1e-45, 1.0, 2.0],
        "inf": [0.25, np.inf, 3.0],
        "-inf": [-np.inf, 0.5, 2.0],
        "nan": [np.nan, 0.5, 2.0],
        "steep-inf": [np.inf, 2.0],
        "leaky-inf": [-np.inf, 0.5],
    }[alphas]
    a = np.float32(a)
    x = np.repeat(xs, a.size).reshape(-1, a.size)  # every x against every alpha
    model = single_op_model("PRELU", [T(x.shape), T.const(a)], [T(x.shape)])
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    signed = ~np.isnan(theirs[0])
    np.testing.assert_array_equal(np.signbit(ours[0][signed]), np.signbit(theirs[0][signed]))
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == ("PreluFloatSigned" if alphas.startswith("mixed") else "PreluFloat")


def test_logistic_cutoffs():
    """Below -9 the reference returns exp(x) (1.2e-4 relative away from 1 / (1 + exp(-x)) at -9.5); above
    16.619047 it returns exactly 1, where 1 / (1 + exp(-x)) still rounds to 1 - 2**-23 (up to 16.6355)."""
    x = np.array([-9.5, -12.0, -30.0, 16.625, 16.63], np.float32)
    model = single_op_model("LOGISTIC", [T((5,))], [T((5,))])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs, rtol_each=TOLERANCE["logistic-float32"])
    np.testing.assert_allclose(ours[0][:3], np.exp(x[:3]), rtol=1e-6)
    np.testing.assert_array_equal(ours[0][3:], theirs[0][3:])
    np.testing.assert_array_equal(theirs[0][3:], [1.0, 1.0])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("low_share", [0.0, 0.01, 0.5, 0.99])
def test_logistic_low_branch_forms(low_share, dtype):
    """The x < -9 branch, gathered (fewer than 1/32 low) or over the whole array, with subnormal results
    (-104 < x < -87.3), zeros (x <= -104, -inf), NaN and the upper cutoff in the same tensor: as LiteRT within the
    float tolerance, and exp(x) correctly rounded from float64 where low."""
    rng = np.random.default_rng(int(low_share * 100))
    n = 4096
    x = rng.uniform(-6, 20, n)
    lows = rng.random(n) < low_share
    x[lows] = np.where(rng.random(lows.sum()) < 0.9, rng.uniform(-120, -9, lows.sum()), -1e4)
    x = x.astype(dtype)
    if low_share:
        x[:3] = [-np.inf, np.nan, -100.0]
    model = single_op_model("LOGISTIC", [T((n,), dtype)], [T((n,), dtype)])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs, rtol_each=TOLERANCE[f"logistic-{dtype}"])
    low = x < -9
    want = np.exp(x[low].astype(np.float64)).astype(np.float32).astype(dtype)
    np.testing.assert_array_equal(ours[0][low], want)
    if low_share >= 0.5 and dtype == "float32":
        assert np.count_nonzero(ours[0][low] == 0) > 0 and np.count_nonzero((ours[0] > 0) & (ours[0] < 1e-38)) > 0


def test_softmax_without_options_has_beta_zero():
    model = single_op_model("SOFTMAX", [T((2, 3))], [T((2, 3))])
    x = np.array([[5, 1, 2], [-1, 0, 7]], np.float32)
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs, rtol_each=TOLERANCE["softmax-float32"])
    np.testing.assert_allclose(ours[0], np.full((2, 3), 1 / 3, np.float32), rtol=1e-6)


# -- what LiteRT rejects ----------------------------------------------------------------------------
REJECTS = [  # (id, op, input specs, output spec, options, oracle_check)
    ("softmax-rank0", "SOFTMAX", [T(())], T(()), {"beta": 1.0}, True),
    ("relu-int32", "RELU", [T((3,), np.int32)], T((3,), np.int32), None, True),
    ("relu-float16", "RELU", [T((3,), np.float16)], T((3,), np.float16), None, True),
    ("relu_n1_to_1-int16", "RELU_N1_TO_1", [T((3,), np.int16)], T((3,), np.int16), None, True),
    ("tanh-int32", "TANH", [T((3,), np.int32)], T((3,), np.int32), None, True),
    ("logistic-int64", "LOGISTIC", [T((3,), np.int64)], T((3,), np.int64), None, True),
    ("hard_swish-int16", "HARD_SWISH", [T((3,), np.int16)], T((3,), np.int16), None, True),
    ("leaky_relu-float16", "LEAKY_RELU", [T((3,), np.float16)], T((3,), np.float16), {"alpha": 0.2}, True),
    ("softmax-int32", "SOFTMAX", [T((3,), np.int32)], T((3,), np.int32), {"beta": 1.0}, True),
    (
        "prelu-alpha-expands-input",
        "PRELU",
        [T((2, 3)), T.const(np.ones((2, 2, 3), np.float32))],
        T((2, 2, 3)),
        None,
        True,
    ),
    ("prelu-not-broadcastable", "PRELU", [T((2, 3)), T.const(np.ones((2,), np.float32))], T((2, 3)), None, True),
    (
        "prelu-rank9-broadcast",
        "PRELU",
        [T((2,) * 9), T.const(np.ones((2,), np.float32))],
        T((2,) * 9),
        None,
        False,
    ),  # LiteRT aborts
    ("prelu-int32", "PRELU", [T((3,), np.int32), T.const(np.ones((3,), np.int32))], T((3,), np.int32), None, True),
]
_Q8, _Q16 = quant(0.05, 3), quant(2**-12, 0)
REJECTS += [  # quantized paths: fixed output qparams, int16 zero points, types, multipliers
    ("logistic-int8-output-scale", "LOGISTIC", [T((3,), I8, q=_Q8)], T((3,), I8, q=quant(1 / 128, -128)), None, True),
    (
        "logistic-uint8-output-scale",
        "LOGISTIC",
        [T((3,), U8, q=_Q8)],
        T((3,), U8, q=quant(_f32(1 / 256 * 1.001))),
        None,
        True,
    ),
    ("logistic-int16-output-scale", "LOGISTIC", [T((3,), I16, q=_Q16)], T((3,), I16, q=quant(2**-14)), None, True),
    (
        "logistic-int16-input-zero-point",
        "LOGISTIC",
        [T((3,), I16, q=quant(2**-12, 1))],
        T((3,), I16, q=quant(2**-15)),
        None,
        True,
    ),
    (
        "logistic-int16-output-zero-point",
        "LOGISTIC",
        [T((3,), I16, q=_Q16)],
        T((3,), I16, q=quant(2**-15, 1)),
        None,
        True,
    ),
    (
        "tanh-int16-output-scale",
        "TANH",
        [T((3,), I16, q=_Q16)],
        T((3,), I16, q=quant(_f32(2**-15 * 1.002))),
        None,
        True,
    ),
    (
        "tanh-int16-input-zero-point",
        "TANH",
        [T((3,), I16, q=quant(2**-12, -1))],
        T((3,), I16, q=quant(2**-15)),
        None,
        True,
    ),
    ("tanh-int8-to-uint8", "TANH", [T((3,), I8, q=_Q8)], T((3,), U8, q=_Q8), None, True),
    (
        "softmax-int8-output-zero-point",
        "SOFTMAX",
        [T((3,), I8, q=_Q8)],
        T((3,), I8, q=quant(1 / 256, -127)),
        {"beta": 1.0},
        True,
    ),
    (
        "softmax-int8-output-scale",
        "SOFTMAX",
        [T((3,), I8, q=_Q8)],
        T((3,), I8, q=quant(_f32(1 / 256 * 1.0011), -128)),
        {"beta": 1.0},
        True,
    ),
    ("softmax-int8-to-uint8", "SOFTMAX", [T((3,), I8, q=_Q8)], T((3,), U8, q=quant(1 / 256)), {"beta": 1.0}, True),
    (
        "softmax-uint8-to-int8",
        "SOFTMAX",
        [T((3,), U8, q=_Q8)],
        T((3,), I8, q=quant(1 / 256, -128)),
        {"beta": 1.0},
        True,
    ),
    (
        "softmax-int16-output-scale",
        "SOFTMAX",
        [T((3,), I16, q=_Q16)],
        T((3,), I16, q=quant(2**-14)),
        {"beta": 1.0},
        True,
    ),
    (
        "softmax-int16-input-zero-point",
        "SOFTMAX",
        [T((3,), I16, q=quant(2**-12, 5))],
        T((3,), I16, q=quant(2**-15)),
        {"beta": 1.0},
        True,
    ),
    # LiteRT writes int16 results into the int8 buffer (out of bounds): refused without asking it
    (
        "softmax-int16-to-int8",
        "SOFTMAX",
        [T((3,), I16, q=_Q16)],
        T((3,), I8, q=quant(1 / 256, -128)),
        {"beta": 1.0},
        False,
    ),
    # beta * s_in * 2^26 <= 1: QuantizeMultiplierGreaterThanOne aborts LiteRT
    (
        "softmax-int8-tiny-beta",
        "SOFTMAX",
        [T((3,), I8, q=_Q8)],
        T((3,), I8, q=quant(1 / 256, -128)),
        {"beta": 1e-7},
        False,
    ),
    (
        "softmax-uint8-negative-beta",
        "SOFTMAX",
        [T((3,), U8, q=_Q8)],
        T((3,), U8, q=quant(1 / 256)),
        {"beta": -1.0},
        False,
    ),
    ("relu-int16-zero-point", "RELU", [T((3,), I16, q=quant(0.01, 2))], T((3,), I16, q=quant(0.01)), None, True),
    (
        "relu6-int16-output-zero-point",
        "RELU6",
        [T((3,), I16, q=quant(0.01))],
        T((3,), I16, q=quant(0.01, -2)),
        None,
        True,
    ),
    ("relu-int8-to-uint8", "RELU", [T((3,), I8, q=_Q8)], T((3,), U8, q=_Q8), None, True),
    ("relu_0_to_1-int16", "RELU_0_TO_1", [T((3,), I16, q=_Q16)], T((3,), I16, q=_Q16), None, True),
    (
        "leaky_relu-int16-zero-point",
        "LEAKY_RELU",
        [T((3,), I16, q=quant(0.01, 1))],
        T((3,), I16, q=quant(0.01)),
        {"alpha": 0.2},
        True,
    ),
    (
        "hard_swish-output-multiplier-above-1",
        "HARD_SWISH",
        [T((3,), I8, q=quant(1.0))],
        T((3,), I8, q=quant(1 / 256)),
        None,
        True,
    ),
    ("hard_swish-int8-to-uint8", "HARD_SWISH", [T((3,), I8, q=_Q8)], T((3,), U8, q=_Q8), None, True),
    # a multiplier shift past 31 is undefined behaviour in LiteRT
    ("relu-int8-huge-scale-ratio", "RELU", [T((3,), I8, q=quant(1e4))], T((3,), I8, q=quant(1e-7)), None, False),
    ("relu-int8-zero-output-scale", "RELU", [T((3,), I8, q=_Q8)], T((3,), I8, q=quant(0.0)), None, False),
    # LiteRT reads an int16 alpha as int8 bytes (and a uint8 alpha of int8 input as int8): refused
    (
        "prelu-int16-int16-alpha",
        "PRELU",
        [T((3,), I16, q=_Q16), T.const(np.ones((3,), I16), q=_Q16)],
        T((3,), I16, q=_Q16),
        None,
        False,
    ),
    (
        "prelu-int8-uint8-alpha",
        "PRELU",
        [T((3,), I8, q=_Q8), T.const(np.ones((3,), U8), q=_Q8)],
        T((3,), I8, q=_Q8),
        None,
        False,
    ),
]


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: c[0])
def test_rejected(case):
    _, op, ins, out, opts, oracle_check = case
    model = single_op_model(op, ins, [out], opts)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    if oracle_check:
        litert_fails(model, [np.zeros(t.shape, t.dtype) for t in ins if t.data is None])


# -- quantized paths ----------------------------------------------------------------------------------
# Every (op, input type, output type) LiteRT 2.3.0 runs quantized. Integer outputs must equal BUILTIN_REF's; a
# model LiteRT rejects must raise PrepareError here. Scales are drawn from 1e-9 to 1e4 (input/output ratios up
# to 1e6 either way), zero points at the ends of the type range, inputs over the whole range.
QUANTIZED = [
    ("RELU", I8, I8),
    ("RELU", U8, U8),
    ("RELU", I16, I16),
    ("RELU6", I8, I8),
    ("RELU6", U8, U8),
    ("RELU6", I16, I16),
    ("RELU_N1_TO_1", I8, I8),
    ("RELU_N1_TO_1", U8, U8),
    ("RELU_0_TO_1", I8, I8),
    ("RELU_0_TO_1", U8, U8),
    ("LEAKY_RELU", I8, I8),
    ("LEAKY_RELU", U8, U8),
    ("LEAKY_RELU", I16, I16),
    ("HARD_SWISH", I8, I8),
    ("HARD_SWISH", U8, U8),
    ("LOGISTIC", I8, I8),
    ("LOGISTIC", U8, U8),
    ("LOGISTIC", I16, I16),
    ("TANH", I8, I8),
    ("TANH", U8, U8),
    ("TANH", I16, I16),
    ("SOFTMAX", I8, I8),
    ("SOFTMAX", I8, I16),
    ("SOFTMAX", U8, U8),
    ("SOFTMAX", U8, I16),
    ("SOFTMAX", I16, I16),
    ("PRELU", I8, I8),
    ("PRELU", U8, U8),
    ("PRELU", I16, I16),  # int16 input takes an int8 alpha
]
ELEMENTWISE = [c for c in QUANTIZED if c[0] not in ("SOFTMAX", "PRELU")]
#: int16 paths that require zero points 0
ZERO_POINT_0 = {("RELU", I16), ("RELU6", I16), ("LEAKY_RELU", I16), ("LOGISTIC", I16), ("TANH", I16), ("SOFTMAX", I16)}
SOFTMAX_BETAS = [1.0, 0.5, 2.0, 1e-3, 10.0, 1e3, -1.0]
LEAKY_ALPHAS = [0.2, 0.01, 0.0, 1.0, 2.5, -0.5, -0.75, -3.0]


def _qid(case) -> str:
    op, tin, tout = case
    name = f"{op.lower()}-{np.dtype(tin).name}"
    return name if tin == tout else f"{name}-to-{np.dtype(tout).name}"


@st.composite
def _scales(draw, lo: float = -9.0, hi: float = 4.0) -> float:
    """A float32 scale: log-uniform over [10^lo, 10^hi], a power of two, or a common one."""
    kind = draw(st.sampled_from(["log", "log", "pot", "common"]))
    if kind == "log":
        return _f32(10 ** draw(st.floats(lo, hi)))
    if kind == "pot":
        return 2.0 ** draw(st.integers(int(lo * 3.32), int(hi * 3.32)))
    return draw(st.sampled_from([1 / 256, 1 / 128, 0.1, 1.0, 2**-12, 2**-15, 0.0078125, 0.05]))


@st.composite
def _ratio_scale(draw, s_in: float) -> float:
    """An output scale s_in / r with r log-uniform in [1e-6, 1e6] (or exactly 1)."""
    if draw(st.integers(0, 4)) == 0:
        return s_in
    return _f32(s_in / 10 ** draw(st.floats(-6, 6)))


def _zero_points(dtype) -> st.SearchStrategy[int]:
    lo, hi = (int(v) for v in (np.iinfo(dtype).min, np.iinfo(dtype).max))
    return st.one_of(st.sampled_from([lo, hi, 0, lo + 1, hi - 1]), st.integers(lo, hi))


def _all_values(dtype, rng: np.random.Generator) -> np.ndarray:
    """Every value of the type once, shuffled, as a 2-d tensor."""
    info = np.iinfo(dtype)
    x = rng.permutation(np.arange(int(info.min), int(info.max) + 1)).astype(dtype)
    return x.reshape(16, -1)


def _check_against_ref(model: bytes, inputs: list[np.ndarray], record: bool = True) -> bool:
    """Exact equality with BUILTIN_REF, or a PrepareError here where LiteRT fails; True if it ran. ``record``:
    count both outcomes as hypothesis events."""
    LiteRT, OpResolverType = oracle()
    ref = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    try:
        ref.allocate_tensors()
        for d, x in zip(ref.get_input_details(), inputs):
            ref.set_tensor(d["index"], x)
        ref.invoke()
    except RuntimeError:
        with pytest.raises(PrepareError):
            Interpreter(model_content=model).allocate_tensors()
        if record:
            event("rejected by LiteRT")
        return False
    theirs = [ref.get_tensor(d["index"]) for d in ref.get_output_details()]
    assert_close(run_ours(model, inputs), theirs)
    if record:
        event("ran")
    return True


@st.composite
def _quantized_model(draw, case, shape):
    """(input spec, output spec, options) for one quantized path, with qparams LiteRT accepts most of the time."""
    op, tin, tout = case
    zp0 = (op, tin) in ZERO_POINT_0
    s_in = draw(_scales(), label="s_in")
    z_in = 0 if zp0 else draw(_zero_points(tin), label="z_in")
    z_out = 0 if zp0 else draw(_zero_points(tout), label="z_out")
    options = None
    if op == "LOGISTIC" or (op == "TANH" and tin == I16):
        if tin == I16:
            s_in = draw(
                st.sampled_from([s_in, 2**-12, 2**-11, _f32(2**-12 * 1.0007), _f32(2**-12 * 1.002)]),
                label="s_in (pot?)",
            )
        s_out = 1 / 256 if tin != I16 else 2**-15
    elif op == "SOFTMAX":
        beta = draw(st.sampled_from(SOFTMAX_BETAS), label="beta")
        options = {"beta": beta}
        if tin != I16:  # LiteRT aborts unless beta * s_in * 2^26 > 1
            assume(np.float64(np.float32(beta)) * s_in * 2**26 > 1)
        else:  # a multiplier shift past 31 is undefined behaviour in LiteRT (litert_py refuses it: REJECTS)
            assume(abs(float(np.float32(np.float32(s_in) * np.float32(beta)))) / (10 / 65535) < 2**31 - 64)
        if tout == I8:
            s_out, z_out = draw(st.sampled_from([1 / 256, _f32(1 / 256 * 1.0009)]), label="s_out"), -128
        elif tin == tout == I16:
            s_out = draw(st.sampled_from([1 / 32768, _f32(1 / 32768 * 0.9992)]), label="s_out")
        else:  # not checked by LiteRT (nor used by the reference kernel)
            s_out = draw(_scales(), label="s_out")
    else:
        s_out = draw(_ratio_scale(s_in), label="s_out")
        if op == "LEAKY_RELU":
            options = {"alpha": draw(st.sampled_from(LEAKY_ALPHAS), label="alpha")}
    return T(shape, tin, q=quant(s_in, z_in)), T(shape, tout, q=quant(s_out, z_out)), options


@pytest.mark.parametrize("case", [c for c in QUANTIZED if c[0] != "PRELU"], ids=_qid)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_quantized_activation(case, data, seed):
    """Drawn shapes, qparams, options and values (softmax: the last axis up to 40 long, so that no row sums to
    LiteRT's CHECK limit)."""
    op, tin, _ = case
    shape = data.draw(shapes(1 if op == "SOFTMAX" else 0, 4, max_dim=6 if op != "SOFTMAX" else 4), label="shape")
    if op == "SOFTMAX":  # an empty last axis makes LiteRT's 8-bit kernel abort (a CHECK on GetReciprocal(0))
        long_rows = data.draw(st.booleans(), label="long rows")
        shape = shape[:-1] + (data.draw(st.integers(1, 40 if long_rows else 4), label="depth"),)
    x_spec, y_spec, options = data.draw(_quantized_model(case, shape))
    regime = data.draw(st.sampled_from(["full", "narrow", "ends"]), label="regime")
    x = values(np.random.default_rng(seed), shape, tin, regime)
    _check_against_ref(single_op_model(op, [x_spec], [y_spec], options), [x])


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_qid)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_quantized_elementwise_every_input(case, data, seed):
    """Every input value of the type at once, under drawn qparams: the whole table these ops compute."""
    op, tin, _ = case
    x = _all_values(tin, np.random.default_rng(seed))
    x_spec, y_spec, options = data.draw(_quantized_model(case, x.shape))
    _check_against_ref(single_op_model(op, [x_spec], [y_spec], options), [x])


@pytest.mark.parametrize("case", [c for c in QUANTIZED if c[0] == "PRELU"], ids=_qid)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1), alpha_const=st.booleans())
def test_quantized_prelu(case, data, seed, alpha_const):
    """Alpha quantized with its own scale and zero point (int8 for int16 input), broadcast from a suffix of the
    input's shape with some 1s, constant or an input."""
    _, tin, _ = case
    tal = I8 if tin == I16 else tin
    rng = np.random.default_rng(seed)
    shape = data.draw(shapes(0, 5, max_dim=5), label="shape")
    rank = data.draw(st.integers(0, len(shape)), label="alpha_rank")
    alpha_shape = tuple(1 if data.draw(st.booleans()) else d for d in shape[len(shape) - rank :])
    s_in = data.draw(_scales(), label="s_in")
    s_out = data.draw(_ratio_scale(s_in), label="s_out")
    s_a = data.draw(_scales(-6, 1), label="s_alpha")
    z_in, z_out = data.draw(_zero_points(tin), label="z_in"), data.draw(_zero_points(tin), label="z_out")
    z_a = data.draw(_zero_points(tal), label="z_alpha")
    x = values(rng, shape, tin, data.draw(st.sampled_from(["full", "ends"]), label="regime"))
    alpha = values(rng, alpha_shape, tal, "full")
    a_spec = T.const(alpha, q=quant(s_a, z_a)) if alpha_const else T(alpha_shape, tal, q=quant(s_a, z_a))
    model = single_op_model(
        "PRELU", [T(shape, tin, q=quant(s_in, z_in)), a_spec], [T(shape, tin, q=quant(s_out, z_out))]
    )
    _check_against_ref(model, [x] if alpha_const else [x, alpha])


@pytest.mark.parametrize(
    "depth, tout, oracle_runs",
    [(300, I8, True), (600, I16, True), (600, I8, False)],
    ids=["int8-300", "int8-to-int16-600", "int8-600"],
)
def test_quantized_softmax_long_flat_rows(depth, tout, oracle_runs):
    """Rows of equal values: LiteRT's 8-bit-output kernel CHECKs that the row sum stays below 512 maxima
    (exponent <= 31) and aborts past it; there litert_py still gives the rounded probability, 0 + type minimum
    (1/600 * 256 = 0.43)."""
    x = np.full((2, depth), 7, I8)
    y = T(x.shape, tout, q=quant(1 / 256, -128) if tout == I8 else quant(1 / 65536, -32768))
    model = single_op_model("SOFTMAX", [T(x.shape, I8, q=quant(0.1, 0))], [y], {"beta": 1.0})
    if oracle_runs:
        assert _check_against_ref(model, [x], record=False)
    else:
        np.testing.assert_array_equal(run_ours(model, [x])[0], np.full(x.shape, -128, I8))


def test_quantized_hard_swish_tiny_scale_ratio():
    """s_in / s_out < 2^-9 makes the output exponent <= -16, where gemmlowp's int16 RoundingDivideByPOT turns every
    result into +-1: LiteRT outputs zo - 1 or zo + 1 for every input, and so must we."""
    x = np.arange(-128, 128, dtype=I8).reshape(16, 16)
    model = single_op_model("HARD_SWISH", [T(x.shape, I8, q=quant(1e-4, 3))], [T(x.shape, I8, q=quant(1.0, -5))])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)
    assert set(np.unique(theirs[0]).tolist()) == {-6, -4}


#: where LiteRT's default kernels differ from BUILTIN_REF (litert_py follows BUILTIN_REF): id -> (op, input
#: dtype, output dtype, s_in, z_in, s_out, z_out, options, resolver, largest |difference| seen)
DEFAULT_DIFFERS = {
    # the optimized int16 kernel uses gemmlowp's fixed-point logistic in POT mode (docs section 8.1)
    "logistic-int16-pot": ("LOGISTIC", I16, I16, 2**-12, 0, 2**-15, 0, None, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", 7),
    "tanh-int16-pot": ("TANH", I16, I16, 2**-11, 0, 2**-15, 0, None, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", 12),
    # XNNPACK requantizes LEAKY_RELU its own way (+-1)
    "leaky_relu-int8-xnnpack": ("LEAKY_RELU", I8, I8, 0.05, 3, 0.05, -2, {"alpha": 0.2}, "AUTO", 1),
    # the optimized softmax uses the output's own scale and zero point; the reference always 1/65536, -32768
    "softmax-int8-to-int16": (
        "SOFTMAX",
        I8,
        I16,
        0.05,
        0,
        1 / 32768,
        0,
        {"beta": 1.0},
        "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
        65536,
    ),
}


@pytest.mark.parametrize("case", DEFAULT_DIFFERS, ids=str)
def test_quantized_default_kernels_differ(case):
    op, tin, tout, s_in, z_in, s_out, z_out, options, resolver, bound = DEFAULT_DIFFERS[case]
    info = np.iinfo(tin)
    x = np.arange(int(info.min), int(info.max) + 1).astype(tin).reshape(-1, 64)
    model = single_op_model(
        op, [T(x.shape, tin, q=quant(s_in, z_in))], [T(x.shape, tout, q=quant(s_out, z_out))], options
    )
    ours, ref = run_both(model, [x])
    assert_close(ours, ref)
    default = run_litert(model, [x], resolver)[0]
    diff = np.abs(ours[0].astype(np.int64) - default.astype(np.int64))
    assert 0 < diff.max() <= bound


# -- LOG_SOFTMAX, ELU, GELU -----------------------------------------------------------------------
# ELU is not registered by LiteRT's reference resolver: it is compared with BUILTIN_WITHOUT_DEFAULT_DELEGATES
# (the builtin kernels, no XNNPACK). The others run against BUILTIN_REF.
#: float tolerance: (rtol, atol relative to |x|). LOG_SOFTMAX sums exp over the last axis (rtol times its length,
#: atol on top since results near 0 cancel); ELU float32 expm1; GELU: LiteRT's float kernel uses Eigen's tanh /
#: erfc (Eigen's float tanh saturates to +-1 early, so 1 + tanh differs by an ulp of 1 times |x|), ours NumPy's
#: tanh and a float64 erfc: error bounded by a few e-7 * |x|.
MORE_TOLERANCE = {
    "log_softmax-float32": (1e-6, 1e-6),
    "elu-float32": (1e-6, 0.0),
    "gelu-float32": (1e-5, 3e-7),
    "gelu-approximate-float32": (1e-6, 3e-7),
}
MORE_RESOLVER = {"ELU": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}
#: (op, options, dtype): every path LiteRT 2.3.0 accepts
MORE_CASES = [
    ("LOG_SOFTMAX", None, np.float32),
    ("LOG_SOFTMAX", None, I8),
    ("LOG_SOFTMAX", None, U8),
    ("ELU", None, np.float32),
    ("ELU", None, I8),
    ("GELU", {"approximate": False}, np.float32),
    ("GELU", {"approximate": True}, np.float32),
    ("GELU", {"approximate": False}, I8),
    ("GELU", {"approximate": True}, I8),
    ("GELU", {"approximate": False}, U8),
    ("GELU", {"approximate": True}, U8),
    ("GELU", {"approximate": False}, I16),
    ("GELU", {"approximate": True}, I16),
]


def _more_id(case) -> str:
    op, options, dtype = case
    approx = "-approximate" if options and options["approximate"] else ""
    return f"{op.lower()}{approx}-{np.dtype(dtype).name}"


def _assert_scaled(ours, theirs, x, rtol: float, xtol: float) -> None:
    """|ours - theirs| <= rtol * |theirs| + xtol * |x| elementwise, NaN and infinities in the same places."""
    a, b = ours[0], theirs[0]
    assert a.shape == b.shape and a.dtype == b.dtype
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(all="ignore"):
        ok = same | (np.abs(a - b) <= rtol * np.abs(b) + xtol * np.abs(x.astype(np.float64)))
    bad = np.flatnonzero(~ok)
    assert not bad.size, (
        f"{bad.size} mismatches, e.g. x={x.ravel()[bad[:4]]} ours={a.ravel()[bad[:4]]} theirs={b.ravel()[bad[:4]]}"
    )


@pytest.mark.parametrize("case", MORE_CASES, ids=_more_id)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_more_activations(case, data, seed):
    """Drawn shapes and values; quantized: drawn scales (1e-7 .. 1e3) and zero points (type ends included), with
    the output qparams LOG_SOFTMAX requires (16/256, zero point at the type maximum); GELU int16 symmetric."""
    op, options, dtype = case
    rng = np.random.default_rng(seed)
    resolver = MORE_RESOLVER.get(op, "BUILTIN_REF")
    shape = data.draw(shapes(1 if op == "LOG_SOFTMAX" else 0, 4, max_dim=6), label="shape")
    if np.dtype(dtype).kind == "f":
        x = values(rng, shape, dtype, data.draw(regimes(dtype), label="regime"))
        model = single_op_model(op, [T(shape, dtype)], [T(shape, dtype)], options)
        if op == "LOG_SOFTMAX" and _empty_rows(shape):
            _assert_refused_empty_rows(model, x)
            return
        ours, theirs = run_both(model, [x], resolver=resolver)
        rtol, xtol = MORE_TOLERANCE[_more_id(case)]
        if op == "LOG_SOFTMAX":
            rtol, xtol = rtol * max(shape[-1], 1), 0.0
            assert_close(ours, theirs, rtol_each=rtol, atol=1e-6 * max(shape[-1], 1))
        else:
            _assert_scaled(ours, theirs, x, rtol, xtol)
        return
    info = np.iinfo(dtype)
    symmetric = dtype == I16
    s_in, z_in = data.draw(qparams(dtype, -7.0 if op == "LOG_SOFTMAX" else -5.0, 3.0, symmetric), label="in")
    if op == "LOG_SOFTMAX":
        assume(s_in * 2**26 > 1.0001)  # below, LiteRT aborts the process (QuantizeMultiplierGreaterThanOne)
        s_out, z_out = 16 / 256, int(info.max)
    else:
        s_out, z_out = data.draw(qparams(dtype, -5.0, 2.0, symmetric), label="out")
    regime = data.draw(st.sampled_from(["full", "narrow", "max"]), label="regime")
    if regime == "max":  # rows of (near-)maximal values: the largest sums of exps
        x = rng.integers(int(info.max) - 2, int(info.max), size=shape, endpoint=True).astype(dtype)
    elif regime == "narrow":
        x = np.clip(z_in + rng.integers(-3, 4, size=shape), info.min, info.max).astype(dtype)
    else:
        x = rng.integers(int(info.min), int(info.max), size=shape, endpoint=True).astype(dtype)
    model = single_op_model(
        op, [T(shape, dtype, q=quant(s_in, z_in))], [T(shape, dtype, q=quant(s_out, z_out))], options
    )
    assert_close(*run_both(model, [x], resolver=resolver))


@pytest.mark.parametrize(
    "case", [c for c in MORE_CASES if c[0] != "LOG_SOFTMAX" and np.dtype(c[2]).kind != "f"], ids=_more_id
)
@given(data=st.data())
def test_more_activations_every_input(case, data):
    """The whole table: every input value of the type at once, under drawn qparams."""
    op, options, dtype = case
    info = np.iinfo(dtype)
    x = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    s_in, z_in = data.draw(qparams(dtype, -5.0, 1.0, dtype == I16), label="in")
    s_out, z_out = data.draw(qparams(dtype, -5.0, 1.0, dtype == I16), label="out")
    model = single_op_model(
        op, [T(x.shape, dtype, q=quant(s_in, z_in))], [T(x.shape, dtype, q=quant(s_out, z_out))], options
    )
    assert_close(*run_both(model, [x], resolver=MORE_RESOLVER.get(op, "BUILTIN_REF")))


@pytest.mark.parametrize("depth", [1, 300, 4095])
def test_log_softmax_quantized_long_equal_rows(depth):
    """Rows of equal values: the sum of exps is depth * 1.0 in Q12.19 (up to the 2^12 LiteRT can hold)."""
    for dtype in (U8, I8):
        x = np.full((2, depth), np.iinfo(dtype).max, dtype)
        x[1, ::2] = 0
        model = single_op_model(
            "LOG_SOFTMAX",
            [T(x.shape, dtype, q=quant(0.05, 3))],
            [T(x.shape, dtype, q=quant(16 / 256, int(np.iinfo(dtype).max)))],
        )
        assert_close(*run_both(model, [x]))


_QL = quant(0.1, 0)
MORE_REJECTS = [  # (id, op, input spec, output spec, options): LiteRT refuses these at prepare as well
    ("log_softmax-int16", "LOG_SOFTMAX", T((3,), I16, q=_QL), T((3,), I16, q=_QL), None, "BUILTIN_REF"),
    (
        "log_softmax-uint8-bad-zero-point",
        "LOG_SOFTMAX",
        T((3,), U8, q=_QL),
        T((3,), U8, q=quant(16 / 256, 0)),
        None,
        "BUILTIN_REF",
    ),
    (
        "log_softmax-int8-bad-scale",
        "LOG_SOFTMAX",
        T((3,), I8, q=_QL),
        T((3,), I8, q=quant(0.1, 127)),
        None,
        "BUILTIN_REF",
    ),
    ("log_softmax-type-mismatch", "LOG_SOFTMAX", T((3,), np.float32), T((3,), I8, q=_QL), None, "BUILTIN_REF"),
    ("elu-uint8", "ELU", T((3,), U8, q=_QL), T((3,), U8, q=_QL), None, "BUILTIN_WITHOUT_DEFAULT_DELEGATES"),
    ("elu-int16", "ELU", T((3,), I16, q=_QL), T((3,), I16, q=_QL), None, "BUILTIN_WITHOUT_DEFAULT_DELEGATES"),
    ("gelu-int32", "GELU", T((3,), np.int32), T((3,), np.int32), {"approximate": False}, "BUILTIN_REF"),
]


@pytest.mark.parametrize("case", MORE_REJECTS, ids=lambda c: c[0])
def test_more_rejected(case):
    _, op, x, y, options, resolver = case
    model = single_op_model(op, [x], [y], options)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    with pytest.raises((RuntimeError, ValueError)):
        run_litert(model, [np.zeros((3,), x.dtype)], resolver=resolver)


@pytest.mark.parametrize("op,options", [("GELU", {"approximate": False}), ("EXP", None)], ids=["gelu", "exp"])
def test_int8_lut_saturates_like_litert(op, options):
    """Found by hypothesis in CI: a table value beyond the int8 range saturates in LiteRT's LUT building
    (it is not the x86 cast's INT_MIN)."""
    qi, qo = quant(1000.0, -128), quant(1e-4, -128)
    model = single_op_model(op, [T((256,), np.int8, q=qi)], [T((256,), np.int8, q=qo)], options)
    x = np.arange(-128, 128, dtype=np.int8)
    ours, theirs = run_both(model, [x], resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    np.testing.assert_array_equal(ours[0], theirs[0])


@pytest.mark.parametrize("dtype,zero_point", [(np.uint8, 0), (np.uint8, 128), (np.int8, -128), (np.int8, 0)])
@pytest.mark.parametrize("out_scale", [1e-5, 1e-8])
def test_lut_entries_beyond_int32(dtype, zero_point, out_scale):
    """GELU of large inputs over a tiny output scale: the table's float -> int32 cast overflows. LiteRT's uint8
    tables get INT32_MIN there (then 0), its int8 tables saturate (litert_py.quant.lut_int8)."""
    info = np.iinfo(dtype)
    model = single_op_model(
        "GELU",
        inputs=[T((256,), dtype, q=quant(100.0, zero_point))],
        outputs=[T((256,), dtype, q=quant(out_scale, zero_point))],
        options={"approximate": False},
    )
    ours, theirs = run_both(model, [np.arange(info.min, info.max + 1).astype(dtype)])
    np.testing.assert_array_equal(ours[0], theirs[0])


def test_elu_int8_table_uses_expm1():
    """EluPrepare's LUT calls std::expm1: expf(x) - 1 differs by an ulp near 0, enough to move an entry
    (scale 0.000406, zero point 127: the entry of -53 steps). Found by the long hypothesis profile."""
    q = quant(0.0004066091787535697, 127)
    model = single_op_model("ELU", inputs=[T((256,), np.int8, q=q)], outputs=[T((256,), np.int8, q=q)])
    ours, theirs = run_both(model, [np.arange(-128, 128).astype(np.int8)], resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    np.testing.assert_array_equal(ours[0], theirs[0])


@pytest.mark.parametrize(
    "op, fn, worst_default", [("LOGISTIC", lambda v: 1 / (1 + np.exp(-v)), 6), ("TANH", np.tanh, 12)]
)
def test_int16_logistic_tanh_closer_to_the_definition_than_the_default_kernels(op, fn, worst_default):
    """docs/litert-differences.md: for int16 LOGISTIC / TANH (power-of-two scales) TensorFlow's definition, the real
    function, agrees with the reference kernel litert_py follows: within 1 LSB on all 65,536 inputs, where LiteRT's
    default (gemmlowp fixed-point) kernels are up to 6 / 12 LSB away."""
    x = np.arange(-32768, 32768, dtype=np.int16).reshape(1, -1)
    s_in, s_out = 2.0**-12, 2.0**-15
    model = single_op_model(op, [T(x.shape, I16, q=quant(s_in, 0))], [T(x.shape, I16, q=quant(s_out, 0))])
    exact = np.clip(np.round(fn(x.astype(np.float64) * s_in) / s_out), -32768, 32767)
    ours = run_ours(model, [x])[0].astype(np.float64)
    default = run_litert(model, [x], "BUILTIN_WITHOUT_DEFAULT_DELEGATES")[0].astype(np.float64)
    assert np.abs(ours - exact).max() <= 1
    assert np.abs(default - exact).max() == worst_default
