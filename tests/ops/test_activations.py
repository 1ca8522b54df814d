"""RELU, RELU6, RELU_N1_TO_1, LOGISTIC, TANH, SOFTMAX, PRELU, LEAKY_RELU, HARD_SWISH float paths vs the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.ops._values import assert_matches, regimes, shapes, values
from tests.oracle import T, oracle, run_both, single_op_model

#: float tolerance (rtol, elementwise) per case. Clamps and HARD_SWISH / LEAKY_RELU / PRELU are exact IEEE
#: arithmetic; LOGISTIC / TANH / SOFTMAX use float32 exp / tanh (glibc vs NumPy: an ulp or two); SOFTMAX also
#: sums the last axis (rtol is multiplied by its length); float16 results may differ by one half ulp.
TOLERANCE = {
    "relu-float32": 0.0, "relu6-float32": 0.0, "relu_n1_to_1-float32": 0.0, "hard_swish-float32": 0.0,
    "leaky_relu-float32": 0.0, "prelu-float32": 0.0,
    "logistic-float32": 1e-6, "tanh-float32": 1e-6, "softmax-float32": 1e-6,
    "logistic-float16": 1e-3, "tanh-float16": 1e-3, "softmax-float16": 1e-3,
}

CASES = [
    ("RELU", np.float32), ("RELU6", np.float32), ("RELU_N1_TO_1", np.float32), ("HARD_SWISH", np.float32),
    ("LEAKY_RELU", np.float32), ("LOGISTIC", np.float32), ("LOGISTIC", np.float16), ("TANH", np.float32),
    ("TANH", np.float16), ("SOFTMAX", np.float32), ("SOFTMAX", np.float16),
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
    ours, theirs = run_both(model, [x])
    rtol = TOLERANCE[_id(case)] * (max(shape[-1], 1) if op == "SOFTMAX" else 1)
    assert_matches(ours, theirs, rtol=rtol, atol=0.0)


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
    alpha_shape = tuple(1 if data.draw(st.booleans()) else d for d in shape[len(shape) - rank:])
    x = values(rng, shape, np.float32, data.draw(regimes(np.float32), label="regime"))
    kind = data.draw(st.sampled_from(["any", "leaky", "negative", "steep"]), label="alpha_kind")
    alpha = _alphas(rng, alpha_shape, kind)
    a = T.const(alpha) if alpha_const else T(alpha_shape)
    model = single_op_model("PRELU", [T(shape), a], [T(shape)])
    ours, theirs = run_both(model, [x] if alpha_const else [x, alpha])
    assert_matches(ours, theirs, rtol=TOLERANCE["prelu-float32"])


SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -3.0, 3.0, 1e30, -1e30, -9.5, -9.0, 16.6, 16.625, 16.7, 6.0],
                   np.float32)  # 16.625: above LOGISTIC's cutoff, where 1 / (1 + exp(-x)) is not yet 1


@pytest.mark.parametrize("op", ["RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "HARD_SWISH",
                                "LEAKY_RELU-0.25", "LEAKY_RELU-0", "LEAKY_RELU-3", "LEAKY_RELU--0.5",
                                "PRELU-0.25", "PRELU-0", "PRELU-3", "PRELU--0.5", "PRELU-mixed"])
def test_ieee_special_values(op):
    op, _, alpha = op.partition("-")
    if op == "PRELU":
        a = np.resize(np.float32([0.25, 0, 3, -0.5]), SPECIAL.shape) if alpha == "mixed" else \
            np.full(SPECIAL.shape, float(alpha), np.float32)
        model = single_op_model(op, [T(SPECIAL.shape), T.const(a)], [T(SPECIAL.shape)])
    else:
        opts = {"alpha": float(alpha)} if op == "LEAKY_RELU" else None
        model = single_op_model(op, [T(SPECIAL.shape)], [T(SPECIAL.shape)], opts)
    ours, theirs = run_both(model, [SPECIAL])
    assert_matches(ours, theirs, rtol=TOLERANCE[f"{op.lower()}-float32"])
    signed = ~np.isnan(theirs[0])  # -0.0 where LiteRT gives -0.0 (a NaN's sign bit means nothing)
    np.testing.assert_array_equal(np.signbit(ours[0][signed]), np.signbit(theirs[0][signed]))


def test_logistic_cutoffs():
    """Below -9 the reference returns exp(x) (1.2e-4 relative away from 1 / (1 + exp(-x)) at -9.5); above
    16.619047 it returns exactly 1, where 1 / (1 + exp(-x)) still rounds to 1 - 2**-23 (up to 16.6355)."""
    x = np.array([-9.5, -12.0, -30.0, 16.625, 16.63], np.float32)
    model = single_op_model("LOGISTIC", [T((5,))], [T((5,))])
    ours, theirs = run_both(model, [x])
    assert_matches(ours, theirs, rtol=TOLERANCE["logistic-float32"])
    np.testing.assert_allclose(ours[0][:3], np.exp(x[:3]), rtol=1e-6)
    np.testing.assert_array_equal(ours[0][3:], theirs[0][3:])
    np.testing.assert_array_equal(theirs[0][3:], [1.0, 1.0])


def test_softmax_without_options_has_beta_zero():
    model = single_op_model("SOFTMAX", [T((2, 3))], [T((2, 3))])
    x = np.array([[5, 1, 2], [-1, 0, 7]], np.float32)
    ours, theirs = run_both(model, [x])
    assert_matches(ours, theirs, rtol=TOLERANCE["softmax-float32"])
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
    ("prelu-alpha-expands-input", "PRELU", [T((2, 3)), T.const(np.ones((2, 2, 3), np.float32))], T((2, 2, 3)),
     None, True),
    ("prelu-not-broadcastable", "PRELU", [T((2, 3)), T.const(np.ones((2,), np.float32))], T((2, 3)), None, True),
    ("prelu-rank9-broadcast", "PRELU", [T((2,) * 9), T.const(np.ones((2,), np.float32))], T((2,) * 9), None,
     False),  # LiteRT aborts
    ("prelu-int32", "PRELU", [T((3,), np.int32), T.const(np.ones((3,), np.int32))], T((3,), np.int32), None, True),
]


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: c[0])
def test_rejected(case):
    _, op, ins, out, opts, oracle_check = case
    model = single_op_model(op, ins, [out], opts)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    if oracle_check:
        LiteRT, OpResolverType = oracle()
        ref = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        with pytest.raises(RuntimeError):
            ref.allocate_tensors()
            for d, t in zip(ref.get_input_details(), [t for t in ins if t.data is None]):
                ref.set_tensor(d["index"], np.zeros(t.shape, t.dtype))
            ref.invoke()


# -- quantized paths ----------------------------------------------------------------------------------
# Every (op, input type, output type) LiteRT 2.3.0 runs quantized. Integer outputs must equal BUILTIN_REF's; a
# model LiteRT rejects must raise PrepareError here. Scales are drawn from 1e-9 to 1e4 (input/output ratios up
# to 1e6 either way), zero points at the ends of the type range, inputs over the whole range.
I8, U8, I16 = np.int8, np.uint8, np.int16
QUANTIZED = [
    ("RELU", I8, I8), ("RELU", U8, U8), ("RELU", I16, I16),
    ("RELU6", I8, I8), ("RELU6", U8, U8), ("RELU6", I16, I16),
    ("RELU_N1_TO_1", I8, I8), ("RELU_N1_TO_1", U8, U8), ("RELU_0_TO_1", I8, I8), ("RELU_0_TO_1", U8, U8),
    ("LEAKY_RELU", I8, I8), ("LEAKY_RELU", U8, U8), ("LEAKY_RELU", I16, I16),
    ("HARD_SWISH", I8, I8), ("HARD_SWISH", U8, U8),
    ("LOGISTIC", I8, I8), ("LOGISTIC", U8, U8), ("LOGISTIC", I16, I16),
    ("TANH", I8, I8), ("TANH", U8, U8), ("TANH", I16, I16),
    ("SOFTMAX", I8, I8), ("SOFTMAX", I8, I16), ("SOFTMAX", U8, U8), ("SOFTMAX", U8, I16), ("SOFTMAX", I16, I16),
    ("PRELU", I8, I8), ("PRELU", U8, U8), ("PRELU", I16, I16),  # int16 input takes an int8 alpha
]
ELEMENTWISE = [c for c in QUANTIZED if c[0] not in ("SOFTMAX", "PRELU")]
#: int16 paths that require zero points 0
ZERO_POINT_0 = {("RELU", I16), ("RELU6", I16), ("LEAKY_RELU", I16), ("LOGISTIC", I16), ("TANH", I16),
                ("SOFTMAX", I16)}
SOFTMAX_BETAS = [1.0, 0.5, 2.0, 1e-3, 10.0, 1e3, -1.0]
LEAKY_ALPHAS = [0.2, 0.01, 0.0, 1.0, 2.5, -0.5, -0.75, -3.0]


def _qid(case) -> str:
    op, tin, tout = case
    name = f"{op.lower()}-{np.dtype(tin).name}"
    return name if tin == tout else f"{name}-to-{np.dtype(tout).name}"


def _f32(v: float) -> float:
    return float(np.float32(v))


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


def _qvalues(rng: np.random.Generator, shape, dtype, regime: str) -> np.ndarray:
    """Integers over the whole type ("full"), in a narrow window ("narrow": softmax rows with near-equal values),
    or mostly the type's ends and zero ("ends")."""
    info = np.iinfo(dtype)
    if regime == "narrow":
        c = int(rng.integers(info.min, info.max, endpoint=True))
        x = c + rng.integers(-8, 9, shape)
    elif regime == "ends":
        x = rng.choice([info.min, info.min + 1, 0, info.max - 1, info.max], shape)
    else:
        x = rng.integers(info.min, info.max, shape, endpoint=True)
    return np.clip(x, info.min, info.max).astype(dtype)


def _all_values(dtype, rng: np.random.Generator) -> np.ndarray:
    """Every value of the type once, shuffled, as a 2-d tensor."""
    info = np.iinfo(dtype)
    x = rng.permutation(np.arange(int(info.min), int(info.max) + 1)).astype(dtype)
    return x.reshape(16, -1)


def _check_against_ref(model: bytes, inputs: list[np.ndarray]) -> bool:
    """Exact equality with BUILTIN_REF, or a PrepareError here where LiteRT fails; True if it ran."""
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
        event("rejected by LiteRT")
        return False
    theirs = [ref.get_tensor(d["index"]) for d in ref.get_output_details()]
    assert_matches(run_ours(model, inputs), theirs)
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
            s_in = draw(st.sampled_from([s_in, 2**-12, 2**-11, _f32(2**-12 * 1.0007), _f32(2**-12 * 1.002)]),
                        label="s_in (pot?)")
        s_out = 1 / 256 if tin != I16 else 2**-15
    elif op == "SOFTMAX":
        beta = draw(st.sampled_from(SOFTMAX_BETAS), label="beta")
        options = {"beta": beta}
        if tin != I16:  # LiteRT aborts unless beta * s_in * 2^26 > 1
            assume(np.float64(np.float32(beta)) * s_in * 2**26 > 1)
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
    if op == "SOFTMAX" and shape and data.draw(st.booleans(), label="long rows"):
        shape = shape[:-1] + (data.draw(st.integers(1, 40), label="depth"),)
    x_spec, y_spec, options = data.draw(_quantized_model(case, shape))
    regime = data.draw(st.sampled_from(["full", "narrow", "ends"]), label="regime")
    x = _qvalues(np.random.default_rng(seed), shape, tin, regime)
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
    alpha_shape = tuple(1 if data.draw(st.booleans()) else d for d in shape[len(shape) - rank:])
    s_in = data.draw(_scales(), label="s_in")
    s_out = data.draw(_ratio_scale(s_in), label="s_out")
    s_a = data.draw(_scales(-6, 1), label="s_alpha")
    z_in, z_out = data.draw(_zero_points(tin), label="z_in"), data.draw(_zero_points(tin), label="z_out")
    z_a = data.draw(_zero_points(tal), label="z_alpha")
    x = _qvalues(rng, shape, tin, data.draw(st.sampled_from(["full", "ends"]), label="regime"))
    alpha = _qvalues(rng, alpha_shape, tal, "full")
    a_spec = T.const(alpha, q=quant(s_a, z_a)) if alpha_const else T(alpha_shape, tal, q=quant(s_a, z_a))
    model = single_op_model("PRELU", [T(shape, tin, q=quant(s_in, z_in)), a_spec], [T(shape, tin, q=quant(s_out, z_out))])
    _check_against_ref(model, [x] if alpha_const else [x, alpha])
