"""The multi-row asymmetric hybrid FULLY_CONNECTED (hybrid_fc_rows.FullyConnectedHybridRows) against BUILTIN_REF, bit
for bit, and its quantizer (quant.hybrid.AsymmetricRowsQuantizer) against batch_quantize_floats value for value.

Cases: per-tensor and per-channel scales, the 8-wide rounding and the roundf tail, the SSE -128 fix and the zero
point as extra product columns, the float32 product at its bound and float64 past it, the zero-point clamps, the
fused activations, no bias, and rows the quantizer declines (AsymmetricRowsQuantizer.finite: an all-zero row, a
range just below NONNEG_MAX_MIN, where ``1 / f32(range / 255)`` overflows float32; a range at it is taken)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.quant.hybrid import NONNEG_MAX_MIN, AsymmetricRowsQuantizer, batch_quantize_floats
from tests.ops.test_fully_connected import fc_model
from tests.ops.test_hybrid_fc_row import row, tie_row, weights
from tests.oracle import oracle, quant, run_litert, run_ours

F32, I8 = np.float32, np.int8
#: a float32 range just below / at NONNEG_MAX_MIN (the smallest range whose ``1 / f32(range / 255)`` is finite)
BELOW, ABOVE = np.nextafter(F32(NONNEG_MAX_MIN), F32(0)), F32(NONNEG_MAX_MIN)

#: id -> (rows, depth, units, weights, per_channel, bias, activation, row kinds, product dtype)
CASES = {
    "32x64-transformer": (32, 64, 64, "symmetric", False, False, 0, ("normal",), "float32"),
    "5x13-tail-per-channel": (5, 13, 7, "symmetric", True, True, 0, ("normal", "positive", "negative"), "float32"),
    "4x40-fix-relu": (4, 40, 9, "full", False, True, 1, ("negative", "normal"), "float32"),
    "3x37-sparse-fix-per-channel": (3, 37, 4, "sparse-128", True, True, 0, ("negative", "ties"), "float32"),
    "2x43-ties-tail": (2, 43, 6, "symmetric", False, True, 0, ("ties",), "float32"),
    "2x64-ties-8-wide": (2, 64, 5, "symmetric", True, False, 0, ("ties", "normal"), "float32"),
    "6x24-clamps-relu6": (6, 24, 5, "symmetric", False, True, 3, ("clamp-high", "clamp-low", "constant"), "float32"),
    "2x24-no-bias-negative-zero": (2, 24, 6, "zero-unit", False, False, 0, ("normal",), "float32"),
    "3x512-f32-at-bound": (3, 512, 3, "127", False, False, 0, ("plus-minus-2", "positive"), "float32"),
    "3x1024-f64-mixed": (3, 1024, 4, "mixed", True, True, 0, ("plus-minus-2", "normal"), "float64"),
    "4x30-fallback-zero-row": (4, 30, 5, "symmetric", False, True, 0, ("normal", "zeros"), "float32"),
    "3x30-fallback-below-nonneg-max-min": (3, 30, 5, "symmetric", True, True, 0, ("normal", "below"), "float32"),
    "3x30-at-nonneg-max-min": (3, 30, 5, "symmetric", False, True, 0, ("normal", "above"), "float32"),
}


def rows_input(kinds, n: int, depth: int, rng) -> np.ndarray:
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "ties":  # min -128, max 127: sf = 1, inv = 1, zp = 0, so q = round(x): the tie probes
            x = tie_row(depth)
            x[1] = -128.0
        elif kind in ("below", "above"):  # range = max - min exactly BELOW / ABOVE
            x = np.zeros(depth, F32)
            x[1] = BELOW if kind == "below" else ABOVE
        else:
            x = row(kind, depth, rng)
        out.append(x)
    return np.stack(out)


def model_for(case, rng):
    n, depth, units, kind, per_channel, with_bias, act, kinds, gemm = CASES[case]
    w = weights(kind, units, depth, rng)
    k = units if per_channel else 1
    s_w = rng.uniform(0.001, 0.1, k).astype(F32)
    if kind == "zero-unit":
        s_w = -s_w  # a 0 dot product times a negative scale is -0.0; + 0 (no bias) is +0.0
    bias = rng.standard_normal(units).astype(F32) if with_bias else None
    opts = {"fused_activation_function": act, "keep_num_dims": False, "asymmetric_quantize_inputs": True}
    return fc_model((n, depth), F32, None, w, I8, quant(s_w, np.zeros(k, int)), bias, None, (n, units), F32, None, opts)


@pytest.mark.parametrize("case", list(CASES))
def test_hybrid_fc_rows_bit_exact(case):
    n, depth, units, kind, per_channel, with_bias, act, kinds, gemm = CASES[case]
    rng = np.random.default_rng(n * 1000 + depth)
    model = model_for(case, rng)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "FullyConnectedHybridRows"
    assert prepared.w_aug_t.dtype == gemm
    x = rows_input(kinds, n, depth, rng)
    quantizer = prepared.quantize  # the op's own (SSE -128 columns), else a quantizer of the shared operand's layout
    if quantizer is None:
        qq = np.zeros((n, depth + 1), gemm)
        quantizer = AsymmetricRowsQuantizer.build(qq[:, :-1], qq[:, -1:])
    accepted = quantizer(x)
    assert accepted == (not {"zeros", "below"} & set(kinds))
    (ours,) = run_ours(model, [x])
    (theirs,) = run_litert(model, [x])
    assert np.array_equal(ours.view(np.int32), theirs.view(np.int32)), f"{ours} != {theirs}"


def test_hybrid_fc_rows_resized_input():
    """An input resized to another row count: prepared again for it, still equal to BUILTIN_REF."""
    rng = np.random.default_rng(7)
    model = model_for("5x13-tail-per-channel", rng)
    x = rows_input(("normal", "negative"), 3, 13, rng)
    LiteRT, OpResolverType = oracle()
    results = []
    for it in (
        Interpreter(model_content=model),
        LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF),
    ):
        it.resize_tensor_input(it.get_input_details()[0]["index"], [3, 13])
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        if isinstance(it, Interpreter):
            (prepared,) = it._subgraphs[0].prepared_ops.values()
            assert type(prepared).__name__ == "FullyConnectedHybridRows" and prepared.rows == 3
        results.append(it.get_tensor(it.get_output_details()[0]["index"]))
    ours, theirs = results
    assert ours.shape == (3, 7)
    assert np.array_equal(ours.view(np.int32), theirs.view(np.int32)), f"{ours} != {theirs}"


def test_asymmetric_rows_quantizer_equals_batch_quantize_floats():
    """Value for value (q, sf, zp, sign bits included) over random rows of many magnitudes and the edges."""
    rng = np.random.default_rng(3)
    for trial in range(400):
        n, depth = int(rng.integers(1, 9)), int(rng.integers(1, 70))
        x = (rng.standard_normal((n, depth)) * 10.0 ** rng.integers(-20, 30)).astype(F32)
        if trial % 4 == 1:
            x = np.abs(x)
        elif trial % 4 == 2:
            x = -np.abs(x)
        elif trial % 4 == 3:
            x = np.round(x * 4) / 4 + F32(0.25)  # ties at q = n + 0.5
        for dtype in (np.float32, np.float64):
            qq = np.zeros((n, depth + 2), dtype)
            quantize = AsymmetricRowsQuantizer.build(qq[:, :depth], qq[:, -1:])
            assert quantize(x)
            q, sf, zp = batch_quantize_floats(x, True)
            assert np.array_equal(qq[:, :depth].astype(F32).view(np.int32), q.view(np.int32))
            assert np.array_equal(quantize.sf.view(np.int32), sf.view(np.int32))
            assert np.array_equal(qq[:, -1].astype(F32).view(np.int32), zp.view(np.int32))


@pytest.mark.parametrize("bad", [0.0, BELOW, np.inf, np.nan])
def test_asymmetric_rows_quantizer_declines(bad):
    x = np.ones((2, 9), F32)
    x[1] = 0
    x[1, 3] = bad
    qq = np.zeros((2, 9), F32)
    assert not AsymmetricRowsQuantizer.build(qq, np.zeros((2, 1), F32))(x)
    x[1, 3] = ABOVE
    quantize = AsymmetricRowsQuantizer.build(qq, np.zeros((2, 1), F32))
    assert quantize(x)
    q, sf, zp = batch_quantize_floats(x, True)
    assert qq.tobytes() == q.tobytes() and quantize.sf.tobytes() == sf.tobytes()
    assert quantize.zp[:, 0].tobytes() == zp.tobytes()


def test_hybrid_fc_rows_bound_plan_across_invokes():
    """One interpreter (its plan bound once), inputs in and out of the quantizer's range in turn, each equal to
    BUILTIN_REF."""
    rng = np.random.default_rng(11)
    model = model_for("4x40-fix-relu", rng)
    LiteRT, OpResolverType = oracle()
    ours_it = Interpreter(model_content=model)
    ref_it = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    for it in (ours_it, ref_it):
        it.allocate_tensors()
    for kinds in (("normal",), ("normal", "zeros"), ("negative", "normal"), ("below", "positive"), ("ties",)):
        x = rows_input(kinds, 4, 40, rng)
        results = []
        for it in (ours_it, ref_it):
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            results.append(it.get_tensor(it.get_output_details()[0]["index"]))
        assert np.array_equal(results[0].view(np.int32), results[1].view(np.int32)), kinds


#: (max, min) pairs whose two zero-point candidates, ``round(-128 - rmin / scale)`` and ``round(127 - rmax / scale)``
#: (clamped), differ by one: which bound NeonAsymmetricQuantizeFloats takes it from shows in the result (found by a
#: search over ranges whose zmin / zmax land near half-integers; negated, the other bound is the nearer one)
ZP_CHOICE_ROWS = [
    ("0x1.85b4e4p+2", "-0x1.209f4ep+2"),
    ("0x1.801d5ep+5", "-0x1.8dbf48p+1"),
    ("0x1.e36f72p+4", "-0x1.6271ccp+2"),
    ("0x1.879760p+12", "-0x1.e4e73ap+7"),
    ("0x1.2330e4p+9", "-0x1.41506ep+4"),
    ("0x1.185218p+11", "-0x1.5ee0aap+8"),
    ("0x1.404832p-1", "-0x1.105808p-4"),
    ("0x1.16d75ep+8", "-0x1.f0b41cp+1"),
]


def zero_point_candidates(x: np.ndarray) -> tuple[float, float, bool]:
    """Both candidates of the nudged zero point in Python doubles, and whether the min bound's error is smaller."""
    rmin, rmax = float(min(x.min(), F32(0))), float(max(x.max(), F32(0)))
    scale = float(F32(rmax - rmin)) / 255.0
    zmin, zmax = rmin / scale, rmax / scale

    def nudge(z: float) -> float:
        z = min(max(z, -128.0), 127.0)
        return float(np.sign(z) * np.floor(abs(z) + 0.5))

    return nudge(-128.0 - zmin), nudge(127.0 - zmax), 128.0 + abs(zmin) < 127.0 + abs(zmax)


def test_zero_point_from_the_nearer_bound():
    """Rows whose zero point differs by the bound it comes from, against BUILTIN_REF through the rows path (all
    rows at once) and the one-row path (each row alone)."""
    pairs = [(F32(float.fromhex(a)), F32(float.fromhex(b))) for a, b in ZP_CHOICE_ROWS]
    x = np.zeros((2 * len(pairs), 16), F32)
    for i, (hi, lo) in enumerate(pairs):
        x[2 * i, :2] = hi, lo
        x[2 * i + 1, :2] = -hi, -lo
    choices = set()
    for r in x:
        from_min, from_max, nearer_min = zero_point_candidates(r)
        assert from_min != from_max
        choices.add(nearer_min)
    assert choices == {True, False}
    w = np.zeros((3, 16), I8)
    w[0, 0], w[1, 1], w[2] = 100, 100, 1  # the row sum (zero-point column) in unit 2
    opts = {"fused_activation_function": 0, "keep_num_dims": False, "asymmetric_quantize_inputs": True}
    for n in (len(x), 1):
        model = fc_model((n, 16), F32, None, w, I8, quant(F32(1.0), 0), None, None, (n, 3), F32, None, opts)
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (prepared,) = it._subgraphs[0].prepared_ops.values()
        assert type(prepared).__name__ == ("FullyConnectedHybridRows" if n > 1 else "FullyConnectedHybridRow")
        for start in range(0, len(x), n):
            xs = x[start : start + n]
            (ours,) = run_ours(model, [xs])
            (theirs,) = run_litert(model, [xs])
            assert np.array_equal(ours.view(np.int32), theirs.view(np.int32)), (start, ours, theirs)
    _, _, zp = batch_quantize_floats(x, True)  # the general path too
    qq = np.zeros((len(x), 17), F32)
    assert AsymmetricRowsQuantizer.build(qq[:, :16], qq[:, -1:])(x)
    assert np.array_equal(qq[:, -1], zp)


def test_no_rows_op_for_an_empty_batch():
    """A (0, depth) input: the general op (FullyConnectedHybridRows needs at least two rows), an empty output."""
    opts = {"fused_activation_function": 0, "keep_num_dims": False, "asymmetric_quantize_inputs": True}
    model = fc_model(
        (0, 8), F32, None, np.ones((3, 8), I8), I8, quant(F32(0.5), 0), None, None, (0, 3), F32, None, opts
    )
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "FullyConnectedHybrid"
    (ours,) = run_ours(model, [np.zeros((0, 8), F32)])
    assert ours.shape == (0, 3)
