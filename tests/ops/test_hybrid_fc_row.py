"""The one-row hybrid FULLY_CONNECTED (hybrid_fc.FullyConnectedHybridRow) against BUILTIN_REF, bit for bit,
symmetric and asymmetric inputs.

A case table: the 8-wide rounding and the roundf tail (the tie probes: ``x * inv`` at n + 0.5 and at
0.49999997, where the two roundings differ), the SSE -128 fix as extra product columns, the float64 product
past 2^24, per-channel scales, no bias (``0 + (-0.0)``), the fused activations, and the rows that fall back to
the general path (all zeros, a range below SYM_R_MIN)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.quant.hybrid import NONNEG_MAX_MIN, asymmetric_row_params, nonneg_row_params
from tests.ops.test_fully_connected import fc_model
from tests.oracle import quant, run_litert, run_ours

F32, I8 = np.float32, np.int8


def tie_row(depth: int) -> np.ndarray:
    """R = 127 (so inv = 1, x * inv = x): halves in both rounding regions and +-0.49999997 in both."""
    x = np.resize(np.array([2.5, -3.5, 0.49999997, -0.49999997, 1.5, -0.5, 0.0, 126.5], F32), depth)
    x[0] = 127.0
    if depth > 9:
        x[-2:] = [0.49999997, -0.49999997]  # the roundf tail (depth % 8 != 0): rounds to 0, the 8-wide part to 1
    return x


def weights(kind: str, units: int, depth: int, rng) -> np.ndarray:
    if kind == "symmetric":
        return rng.integers(-127, 128, (units, depth)).astype(I8)
    if kind == "full":  # -128 in the 16-wide blocks: the SSE fix
        return rng.integers(-128, 128, (units, depth)).astype(I8)
    if kind == "sparse-128":  # a few -128 columns: the fix on a gathered subset
        w = rng.integers(-127, 128, (units, depth)).astype(I8)
        w[0, [3, 17, 18]] = -128
        return w
    if kind == "mixed":  # large row sums: the zero-point column
        return rng.choice([-128, 127, -1, 64], (units, depth)).astype(I8)
    if kind == "zero-unit":  # unit 0's dot product is 0: times a negative scale -0.0, plus no bias +0.0
        w = rng.integers(-127, 128, (units, depth)).astype(I8)
        w[0] = 0
        return w
    if kind == "pos-unit":  # unit 0: 0 on column 0, positive elsewhere (every term of a tiny-negative row's dot -0.0)
        w = rng.integers(-127, 128, (units, depth)).astype(I8)
        w[0] = rng.integers(1, 128, depth)
        w[0, 0] = 0
        return w
    if kind == "pm127":  # +127, -127, ...: row sums 0 (or 127), sum|w| = 127 * depth
        return np.resize(np.array([127, -127], I8), (units, depth))
    return np.full((units, depth), int(kind), I8)  # "127", "-128": partial sums at the bound


#: id -> (depth, units, weights, per_channel, bias, activation, row kind, product dtype); "asym-": asymmetric inputs
CASES = {
    "sym-256-relu": (256, 128, "symmetric", False, True, 1, "normal", "float32"),
    "ties-13-tail": (13, 5, "symmetric", False, True, 0, "ties", "float32"),
    "ties-43-tail-per-channel": (43, 7, "symmetric", True, False, 0, "ties", "float32"),
    "ties-64-8-wide": (64, 3, "symmetric", False, False, 0, "ties", "float32"),
    "fix-full-40-relu6": (40, 9, "full", False, True, 3, "negative", "float32"),
    "fix-sparse-37-per-channel": (37, 4, "sparse-128", True, True, 0, "negative", "float32"),
    "f64-product-1100": (1100, 4, "127", False, False, 0, "plus-minus-2", "float64"),
    "f64-fix-512-per-channel": (512, 3, "-128", True, True, 0, "plus-minus-2", "float64"),
    "no-bias-negative-zero": (24, 6, "zero-unit", False, False, 0, "normal", "float32"),
    "relu-bias-negative-zero": (24, 6, "zero-unit", False, True, 1, "normal", "float32"),
    "tanh": (100, 10, "symmetric", False, True, 4, "normal", "float32"),
    "sign-bit": (16, 10, "full", False, True, 5, "normal", "float32"),
    "fallback-zero-row": (30, 5, "symmetric", False, True, 0, "zeros", "float32"),
    "fallback-tiny-range": (30, 5, "symmetric", True, True, 0, "tiny", "float32"),
    # asymmetric_quantize_inputs
    "asym-256-relu": (256, 128, "symmetric", False, True, 1, "normal", "float32"),
    "asym-13-tail-per-channel": (13, 5, "symmetric", True, True, 0, "normal", "float32"),
    "asym-positive": (40, 6, "symmetric", False, True, 0, "positive", "float32"),
    "asym-negative-fix": (40, 9, "full", False, True, 0, "negative", "float32"),
    "asym-clamp-high": (24, 5, "symmetric", False, True, 0, "clamp-high", "float32"),
    "asym-clamp-low": (24, 5, "symmetric", True, False, 0, "clamp-low", "float32"),
    "asym-constant-row": (17, 3, "symmetric", False, False, 0, "constant", "float32"),
    "asym-f64-mixed-1024": (1024, 4, "mixed", False, False, 0, "plus-minus-2", "float64"),
    "asym-f32-mixed-128": (128, 4, "mixed", True, True, 0, "plus-minus-2", "float32"),
    # float32 by the augmented product's own bound (q_max * sum|w_aug| <= 2^24) where product_bound asks float64
    "asym-f32-classifier-1280": (1280, 16, "symmetric", False, True, 0, "normal", "float32"),
    "asym-f32-at-bound-512": (512, 3, "127", False, False, 0, "plus-minus-2", "float32"),
    "asym-f32-at-bound-512-positive": (512, 3, "127", True, True, 0, "positive", "float32"),
    # the bound's q_max: 127 for symmetric inputs (a constant row: every q is +-127, partial sums up to 127 * 127 *
    # depth: within 2^24 up to depth 1040), 128 for asymmetric ones (a negative constant row: q = -128, zp = 127,
    # partial sums up to 255 * 127 * depth, bound 128 * 2 * 127 * depth: within 2^24 up to depth 516)
    "sym-f32-at-bound-1040": (1040, 3, "127", False, False, 0, "constant", "float32"),
    "sym-f64-past-bound-1041": (1041, 3, "127", True, False, 0, "constant", "float64"),
    "asym-f32-at-bound-516-q-128": (516, 3, "127", False, False, 0, "negative-constant", "float32"),
    "asym-f64-past-bound-517-q-128": (517, 3, "127", False, True, 0, "negative-constant", "float64"),
    # rows with min >= 0 (nonneg_calls: no abs, copysign or clamp), at n + 0.5 and 0.49999997 in the roundf tail
    # (range 255: inv 1), with +-0.0, the SSE fix, at the float32 bound; a min of -1e-30 takes the signed calls
    "asym-nonneg-ties-tail-13": (13, 5, "symmetric", False, True, 0, "nonneg-ties", "float32"),
    "asym-nonneg-ties-8-wide-64": (64, 4, "symmetric", True, False, 0, "nonneg-ties", "float32"),
    "asym-nonneg-zeros-fix": (40, 9, "full", False, True, 1, "nonneg-zeros", "float32"),
    "asym-nonneg-zeros-sparse-fix-per-channel": (37, 4, "sparse-128", True, True, 0, "nonneg-zeros", "float32"),
    "asym-min-just-negative": (40, 6, "full", False, True, 0, "min-just-negative", "float32"),
    # a row with min >= 0 multiplied as q + 128 with a zero point column of 0 (``shifted``) where 255 * sum|w| is
    # within the product's type: +-127 weights 518 deep (16,774,930 <= 2^24: float32) but not 519 (past it, while
    # the augmented product's own bound keeps float32), nor 1032; nor where an SSE int16 lane wraps (2100 x 127)
    "asym-shifted-at-bound-518": (518, 3, "pm127", False, True, 0, "positive", "float32"),
    "asym-unshifted-past-bound-519": (519, 3, "pm127", True, False, 0, "positive", "float32"),
    "asym-unshifted-1032": (1032, 3, "pm127", False, True, 0, "positive", "float32"),
    "asym-unshifted-lane-wrap-2100": (2100, 2, "127", False, True, 0, "positive", "float64"),
    # ties of a row with min >= 0 where the product runs in float64 (the rounding must stay in float32 scratch):
    # shifted (+-127 weights 1100 deep), unshifted (127 weights: the SSE row sums wrap), with the SSE fix
    "asym-nonneg-ties-f64-shifted-1100": (1100, 3, "pm127", False, False, 0, "nonneg-ties", "float64"),
    "asym-nonneg-ties-f64-603": (603, 3, "127", False, False, 0, "nonneg-ties", "float64"),
    "asym-nonneg-ties-f64-fix-603": (603, 3, "-128", True, True, 0, "nonneg-ties", "float64"),
    # the uint32 max of the row's bits: a max at NONNEG_MAX_MIN (inline nonneg scalars) and one float32 step below
    # it (the general path), at FLT_MAX; -0.0 with positives, a negative min among NaN-free values (its min)
    "asym-nonneg-at-max-min": (24, 5, "symmetric", True, True, 0, "nonneg-at-max-min", "float32"),
    "asym-nonneg-below-max-min": (24, 5, "symmetric", False, True, 0, "nonneg-below-max-min", "float32"),
    "asym-nonneg-flt-max": (24, 5, "symmetric", False, True, 0, "nonneg-flt-max", "float32"),
    "asym-signed-zero-and-positive": (19, 4, "symmetric", True, False, 0, "signed-zero-positive", "float32"),
    # a signed row multiplied shifted (clip(round(v), -128 - zp, 127 - zp)): q - zp = -0.0 where round(v) is, every
    # term of unit 0's dot product a zero (-0.0): + 0.0 without bias; a -0.0 bias element turns shifted off
    "asym-tiny-negative-shifted": (24, 4, "pos-unit", False, False, 0, "tiny-negative", "float32"),
    "asym-tiny-negative-bias-negative-zero": (24, 4, "pos-unit", True, True, 0, "tiny-negative", "float32"),
    "asym-fallback-zero-row": (30, 5, "symmetric", False, True, 0, "zeros", "float32"),
    "asym-fallback-tiny": (30, 5, "symmetric", False, True, 0, "tiny", "float32"),
}

UNSHIFTED = {
    "asym-unshifted-past-bound-519",
    "asym-unshifted-1032",
    "asym-unshifted-lane-wrap-2100",
    "asym-f32-classifier-1280",  # 255 * sum|w| past 2^24 with its float32 product
    "asym-tiny-negative-bias-negative-zero",
}


#: row kind -> the plan FullyConnectedHybridRow._scalars picks for an asymmetric row (4: nonneg_calls, 3: the signed
#: calls, None: the general path)
PLANS = {
    "positive": 4,
    "nonneg-ties": 4,
    "nonneg-zeros": 4,
    "min-just-negative": 3,
    "nonneg-at-max-min": 4,
    "nonneg-below-max-min": None,
    "nonneg-flt-max": 4,
    "signed-zero-positive": 4,
    "normal": 3,
    "tiny-negative": 3,
    "zeros": None,
}
_BELOW_MAX_MIN = float(np.nextafter(F32(NONNEG_MAX_MIN), F32(0)))


def row(kind: str, depth: int, rng) -> np.ndarray:
    if kind == "ties":
        return tie_row(depth)
    if kind == "nonneg-ties":  # max 255: scale 1, inv 1 (x * inv = x), zp -128
        x = np.resize(np.array([255.0, 0.5, 1.5, 2.5, 0.49999997, 0.0, -0.0, 126.5], F32), depth)
        x[-2:] = 0.49999997  # the roundf tail rounds it to 0, the 8-wide part to 1
        return x
    if kind == "zeros":
        return np.zeros(depth, F32)
    if kind == "tiny-negative":  # round(v) = -0.0 but at column 0 (the min): shifted, q - zp = -0.0
        x = np.full(depth, -1e-6, F32)
        x[0] = -5.0
        return x
    if kind == "plus-minus-2":
        return np.where(rng.random(depth) < 0.5, -2.0, 2.0).astype(F32)
    x = rng.standard_normal(depth).astype(F32)
    if kind == "negative":
        return -np.abs(x)
    if kind == "positive":
        return np.abs(x)
    if kind == "nonneg-zeros":
        x = np.abs(x)
        x[::3], x[1::3] = 0.0, -0.0
        return x
    if kind in ("nonneg-at-max-min", "nonneg-below-max-min", "nonneg-flt-max"):
        top = {"nonneg-at-max-min": NONNEG_MAX_MIN, "nonneg-below-max-min": _BELOW_MAX_MIN}.get(kind, 3.4028235e38)
        x = (np.abs(x) / np.abs(x).max() * F32(top)).astype(F32)
        x[[1, -1]] = F32(top)
        x[[2, -2]] = 0.0
        return x
    if kind == "signed-zero-positive":  # -0.0 among positives: a sign bit, min >= 0
        x = np.abs(x)
        x[::4] = -0.0
        return x
    if kind == "min-just-negative":
        x = np.abs(x)
        x[1] = -1e-30
        return x
    if kind in ("clamp-high", "clamp-low"):  # round(x * inv) + zp at 128 / -129 before the clamp
        lo, hi = (-1.0, 2.3333332538604736) if kind == "clamp-high" else (-52.0, 52.0)
        x = rng.uniform(lo, hi, depth).astype(F32)
        x[:2] = lo, hi
        return x
    if kind == "constant":
        return np.full(depth, x[0], F32)
    if kind == "negative-constant":
        return np.full(depth, -abs(x[0]) - 0.5, F32)
    if kind == "tiny":
        return (x * np.float32(1e-38)).astype(F32)
    return x


@pytest.mark.parametrize("case", list(CASES))
def test_hybrid_fc_row_bit_exact(case):
    asym = case.startswith("asym-")
    depth, units, kind, per_channel, with_bias, act, row_kind, gemm = CASES[case]
    rng = np.random.default_rng(depth * 31 + units)
    w = weights(kind, units, depth, rng)
    n = units if per_channel else 1
    s_w = rng.uniform(0.001, 0.1, n).astype(F32)
    if kind == "zero-unit":
        s_w = -s_w  # a negative product scale turns a 0 dot product into -0.0
    bias = rng.standard_normal(units).astype(F32) if with_bias else None
    if bias is not None and kind in ("zero-unit", "pos-unit"):
        bias[0] = -0.0  # -0.0 + -0.0: RELU (std::max(0.0f, -0.0f)) gives +0.0, RELU_N1_TO_1 keeps -0.0
    opts = {"fused_activation_function": act, "keep_num_dims": False, "asymmetric_quantize_inputs": asym}
    w_q = quant(s_w, np.zeros(n, int))
    model = fc_model((1, depth), F32, None, w, I8, w_q, bias, None, (1, units), F32, None, opts)
    x = row(row_kind, depth, rng).reshape(1, depth)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "FullyConnectedHybridRow"
    assert prepared.w_aug.dtype == gemm
    if asym:  # rows with min >= 0 are shifted without the SSE fix, within the bound
        has_fix = kind in ("full", "sparse-128", "mixed", "-128")  # -128 weights: the SSE fix reads q itself
        assert prepared.shifted == (not has_fix and case not in UNSHIFTED), prepared.shifted
    if asym and row_kind in PLANS:
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()  # binds the plans to the interpreter's arrays
        b = prepared._bound
        want = PLANS[row_kind]
        assert prepared._scalars(b) is (None if want is None else b[want])  # the plan __call__ takes
    (ours,) = run_ours(model, [x])
    (theirs,) = run_litert(model, [x])
    if act == 4:  # Eigen's tanh vs ours: a few ulp (as test_fully_connected's TOLERANCE)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6 * np.abs(theirs).max())
    else:
        assert np.array_equal(ours.view(np.int32), theirs.view(np.int32)), f"{ours} != {theirs}"


def test_hybrid_fc_row_only_for_one_row():
    """Two rows: the general FullyConnectedHybrid (symmetric) or FullyConnectedHybridRows (asymmetric)."""
    w = np.ones((3, 8), I8)
    for shape, asym in (((2, 8), False), ((2, 8), True)):
        opts = {"fused_activation_function": 0, "keep_num_dims": False, "asymmetric_quantize_inputs": asym}
        model = fc_model(shape, F32, None, w, I8, quant(0.5, 0), None, None, (shape[0], 3), F32, None, opts)
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (prepared,) = it._subgraphs[0].prepared_ops.values()
        assert type(prepared).__name__ == ("FullyConnectedHybridRows" if asym else "FullyConnectedHybrid")


@pytest.mark.parametrize("fmax_plus_zero", [True, False], ids=["fmax", "fmax-plus-zero"])
@pytest.mark.parametrize("code, hi", [(1, None), (3, 6.0)], ids=["RELU", "RELU6"])
def test_apply_activation_to_vector_relu_forms(monkeypatch, fmax_plus_zero, code, hi):
    """Both forms of ApplyRelu*ToVector (``std::max(0.0f, std::min(v, hi))``): -0.0 and NaN give +0.0, whichever
    form ops.common picked at import (the fallback adds +0.0 after fmax)."""
    from litert_py.ops import common

    if fmax_plus_zero and not common._fmax_gives_plus_zero():
        pytest.skip("this numpy's fmax keeps -0.0: the one-fmax form is never taken here")
    monkeypatch.setattr(common, "_FMAX_PLUS_ZERO", fmax_plus_zero)
    top = np.inf if hi is None else hi
    base = np.array([-0.0, np.nan, -1.5, 0.0, 2.5, 7.0, -np.inf, np.inf] * 5, F32)
    expect = np.array([0.0, 0.0, 0.0, 0.0, 2.5, min(7.0, top), 0.0, top] * 5, F32)
    for v in (base.copy(), np.repeat(base, 2)[::2]):  # contiguous and strided
        common.apply_activation_to_vector(code)(v)
        np.testing.assert_array_equal(v, expect)
        assert not np.signbit(v).any()


def test_nonneg_row_params_equal_asymmetric_row_params():
    """quant.hybrid.nonneg_row_params against asymmetric_row_params (zero point -128) for a min of +0.0 or -0.0
    and maxima over the whole float32 range, the edges where both decline among them."""
    rng = np.random.default_rng(5)
    tiny = np.finfo(F32).tiny
    maxima = np.concatenate(
        [
            (10.0 ** rng.uniform(-37, 38, 2000)).astype(F32),
            rng.random(500).astype(F32),
            np.array([tiny, tiny / 4, 1e-45, 1e-36, 2e-36, np.finfo(F32).max, 255.0, 1.0, 0.0, np.inf, np.nan], F32),
        ]
    )
    f = np.zeros((), F32)
    for mx in maxima.tolist():
        for mn in (0.0, -0.0):
            expect = asymmetric_row_params(mn, mx, f)
            got = nonneg_row_params(mx, f)
            if expect is None:
                assert got is None, mx
            else:
                assert expect[2] == -128.0 and got == expect[:2], mx


def test_nonneg_max_min_is_the_edge_of_nonneg_row_params():
    """NONNEG_MAX_MIN: the smallest float32 max asymmetric_row_params (min 0) takes, so FullyConnectedHybridRow's
    one comparison chain agrees with it on both sides of the edge."""
    f = np.zeros((), F32)
    assert F32(NONNEG_MAX_MIN) == NONNEG_MAX_MIN > 0
    assert asymmetric_row_params(0.0, NONNEG_MAX_MIN, f) is not None
    assert asymmetric_row_params(0.0, _BELOW_MAX_MIN, f) is None


@pytest.mark.parametrize(
    "values, plan",
    [
        ([np.nan, -1.0, 2.0], None),  # a positive NaN: the top is the min (-1.0), the float max NaN
        ([-np.nan, -1.0, 2.0], None),  # a negative NaN: the top is NaN
        ([np.nan, 1.0, 2.0], None),  # no sign bit: the top is the NaN
        ([np.inf, 1.0, 2.0], None),
        ([-np.inf, 1.0, 2.0], None),
        ([-0.0, 0.0, -0.0], None),  # the top is -0.0: the float reductions, min == max == 0
        ([-0.0, 0.5, 2.0], 4),  # the top is -0.0: the float reductions, min >= 0
        ([-3.0, 0.5, -7.0], 3),  # the top is the min, -7.0
    ],
    ids=["nan-neg", "negnan-pos", "nan-pos", "inf", "-inf", "zeros", "negzero-pos", "neg"],
)
def test_asymmetric_row_top_classification(values, plan):
    """FullyConnectedHybridRow._scalars' uint32 max of the row's bits on its edges: the plan it picks and its
    scalars equal asymmetric_row_params' on the float32 min and max (NaN, inf: the general path)."""
    depth = 11
    x = np.resize(np.array(values, F32), depth)
    opts = {"fused_activation_function": 0, "keep_num_dims": False, "asymmetric_quantize_inputs": True}
    w = np.resize(np.array([3, -5, 7], I8), (2, depth))
    model = fc_model((1, depth), F32, None, w, I8, quant(0.05, 0), None, None, (1, 2), F32, None, opts)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    it.set_tensor(it.get_input_details()[0]["index"], x.reshape(1, depth))
    it.invoke()
    b = prepared._bound
    assert prepared._scalars(b) is (None if plan is None else b[plan])
    expect = asymmetric_row_params(float(x.min()), float(x.max()), np.zeros((), F32))
    assert (expect is None) == (plan is None)
    if expect is not None:
        assert (float(prepared.row.sf), float(prepared.row.inv)) == expect[:2]
        assert prepared.shifted and prepared.qq[-1] == 0.0  # q - zp with a zero point column of 0
        if plan == 3:  # the signed calls' clamp: [-128 - zp, 127 - zp]
            assert (float(prepared.row.lo), float(prepared.row.hi)) == (-128.0 - expect[2], 127.0 - expect[2])


@pytest.mark.parametrize("asym", [False, True], ids=["symmetric", "asymmetric"])
def test_hybrid_fc_row_direct_calls_on_other_arrays(asym):
    """The op called on arrays other than those its plans are bound to (bound anew to them, ops/bound_plan's
    contract): signed, nonneg (no sign bit), -0.0 among positives and declined rows each equal the general op's
    result byte for byte, and the interpreter's own arrays afterwards equal BUILTIN_REF."""
    rng = np.random.default_rng(7)
    depth, units = 21, 6
    w = weights("symmetric", units, depth, rng)
    bias = rng.standard_normal(units).astype(F32)
    opts = {"fused_activation_function": 0, "keep_num_dims": False, "asymmetric_quantize_inputs": asym}
    model = fc_model((1, depth), F32, None, w, I8, quant(0.02, 0), bias, None, (1, units), F32, None, opts)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    x0 = row("normal", depth, rng).reshape(1, depth)
    it.set_tensor(it.get_input_details()[0]["index"], x0)
    it.invoke()
    for kind in ("normal", "positive", "signed-zero-positive", "zeros", "tiny"):
        x = row(kind, depth, rng).reshape(1, depth)
        got, want = np.full((1, units), np.nan, F32), np.full((1, units), np.nan, F32)
        with np.errstate(all="ignore"):  # as an invoke runs it
            prepared([x], [got])
            prepared.general([x], [want])
        assert got.tobytes() == want.tobytes(), kind
    it.invoke()
    (theirs,) = run_litert(model, [x0])
    assert it.get_tensor(it.get_output_details()[0]["index"]).tobytes() == theirs.tobytes()
