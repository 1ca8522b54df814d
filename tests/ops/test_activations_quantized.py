"""Quantized RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LOGISTIC, TANH, SOFTMAX, PRELU, LEAKY_RELU, HARD_SWISH vs the
oracle (litert_py/ops/activations_quantized.py, softmax.py).

The QUANTIZED table: every uint8 / int8 / int16 path LiteRT runs, equal to ai-edge-litert BUILTIN_REF, with
hypothesis drawing shapes, scales (1e-9 .. 1e4), zero points (type ends included), betas, alphas and values; the
elementwise ones also over every input value of the type at once. DEFAULT_DIFFERS pins where LiteRT's default
kernels differ from BUILTIN_REF, which litert_py follows. What LiteRT rejects is in test_activations.py (REJECTS).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._activations import I8, I16, U8, _f32
from tests.ops._values import shapes
from tests.oracle import T, oracle, quant, run_both, run_litert, run_ours, single_op_model
from tests.values import values

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


@pytest.mark.parametrize("op", ["TANH", "LOGISTIC"])
@pytest.mark.parametrize("zero", ["input", "output"])
def test_8bit_logistic_tanh_with_a_zero_scale_is_refused(op, zero):
    """A zero (missing) scale makes LiteRT's LUT convert NaN / inf to an integer (undefined behaviour: BUILTIN_REF
    gave 0 where an x86 conversion gives -128): refused at prepare, as the other quantized kernels refuse it
    (found by tools/fuzz_graphs.py --compare)."""
    s_in, s_out = (0.0, 1 / 256) if zero == "input" else (0.05, 0.0)
    model = single_op_model(op, [T((4,), np.int8, q=quant(s_in, 0))], [T((4,), np.int8, q=quant(s_out, -128))])
    it = Interpreter(model_content=model)
    with pytest.raises(PrepareError, match=f"{op} needs a quantized input and output with a positive scale"):
        it.allocate_tensors()
