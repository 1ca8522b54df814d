"""RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LOGISTIC, TANH, SOFTMAX, PRELU, LEAKY_RELU, HARD_SWISH vs the oracle.

Float paths within TOLERANCE (quantized paths: test_activations_quantized.py; LOG_SOFTMAX / ELU / GELU:
test_log_softmax_elu_gelu.py). REJECTS lists what LiteRT refuses, float and quantized (and the few
undefined-behaviour cases litert_py refuses on its own: oracle_check False).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._activations import I8, I16, U8, _assert_refused_empty_rows, _empty_rows, _f32
from tests.ops._values import regimes, shapes
from tests.oracle import T, litert_fails, quant, run_both, run_litert, run_ours, single_op_model
from tests.values import values

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
@pytest.mark.parametrize("low_share", [0.0, 0.01, 0.3, 0.7, 0.99])
def test_logistic_low_branch_forms(low_share, dtype):
    """The x < -9 branch, gathered (fewer than half low) or over the whole array, with subnormal results
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


@pytest.mark.parametrize("n_low", [2047, 2048])
def test_logistic_low_branch_gather_bound(n_low):
    """Just inside (2047 of 4096 low: gathered) and at (2048: the whole-array form) LogisticFloat's gather bound,
    low values just below -9 as a swish's inputs have them: LiteRT's values within the float tolerance and,
    bit for bit, exp(x) rounded once from float64 where low (the documented formula everywhere)."""
    from litert_py.ops.activations import LOW_GATHER_MAX

    n = 4096
    assert n_low - 1 < n * LOW_GATHER_MAX <= n_low + 1  # the two cases straddle the bound
    rng = np.random.default_rng(n_low)
    x = rng.uniform(-9, 20, n)
    x[rng.permutation(n)[:n_low]] = rng.uniform(-12, -9.0001, n_low)
    x = x.astype(np.float32)
    model = single_op_model("LOGISTIC", [T((n,))], [T((n,))])
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs, rtol_each=TOLERANCE["logistic-float32"])
    np.testing.assert_array_equal(ours[0], _logistic_formula(x))


def test_logistic_gathered_branch_into_a_strided_output():
    """The gathered low branch writes a direct call's non-contiguous output too (a flattening reshape of it would
    be a copy): the same bytes as into a contiguous one, the documented formula."""
    from litert_py.ops.activations import LogisticFloat

    rng = np.random.default_rng(1)
    x = rng.uniform(-8, 8, (64, 64)).astype(np.float32)
    x.reshape(-1)[rng.permutation(x.size)[: x.size // 10]] = -20  # 10 % low: the gathered form
    op = LogisticFloat(np.empty(x.shape, bool), np.empty(x.shape, np.float32), np.empty(x.shape, np.float64), None)
    out = np.full((64, 128), 7, np.float32)[:, :64]
    op((x,), (out,))
    np.testing.assert_array_equal(out, _logistic_formula(x))


def _logistic_formula(x: np.ndarray) -> np.ndarray:
    """LogisticFloat's documented values in plain numpy over the whole array: ``1 / (1 + exp(-clip(x, -9, 87)))``
    in float32, ``exp(x)`` from float64 where x < -9, 1 where x > 16.619047; rounded once to x's type."""
    x32 = x.astype(np.float32)
    with np.errstate(over="ignore", under="ignore"):
        main = np.float32(1) / (np.float32(1) + np.exp(-np.clip(x32, np.float32(-9), np.float32(87))))
        low = np.exp(np.maximum(x32.astype(np.float64), -104.0)).astype(np.float32)
    out = np.where(x32 < np.float32(-9), low, np.where(x32 > np.float32(16.619047164916992188), np.float32(1), main))
    return out.astype(x.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("regime", ["all-low", "all-low-few", "in-range", "high", "low-and-nan"])
def test_logistic_skipped_branches_keep_the_values(regime, dtype):
    """The passes of a branch no value takes are skipped (all low: no main branch, no masked copies; none above
    the upper cutoff: no masked copy of the ones): bit for bit the documented formula, and LiteRT's values within
    the float tolerance."""
    rng = np.random.default_rng(len(regime))
    n = 1024 if regime != "all-low-few" else 16
    x = {
        "all-low": lambda: rng.uniform(-150, -9.001, n),
        "all-low-few": lambda: rng.uniform(-30, -9.001, n),
        "in-range": lambda: rng.uniform(-9, 16.6, n),
        "high": lambda: np.where(rng.random(n) < 0.1, rng.uniform(16.62, 40, n), rng.uniform(-9, 16, n)),
        "low-and-nan": lambda: np.where(rng.random(n) < 0.5, rng.uniform(-50, -9.5, n), np.nan),
    }[regime]().astype(dtype)
    if regime == "all-low":
        x[:2] = [-np.inf, -1e4]
    model = single_op_model("LOGISTIC", [T((n,), dtype)], [T((n,), dtype)])
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], _logistic_formula(x))
    assert_close(ours, theirs, rtol_each=TOLERANCE[f"logistic-{dtype}"])
    if regime == "high":
        assert (ours[0] == 1).any() and (ours[0] < 1).any()


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
