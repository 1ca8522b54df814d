"""The folded requantization of the 8-bit quantized CONV_2D and DEPTHWISE_CONV_2D (litert_py/ops/conv/requant.py)
at its boundaries, against the oracle: the epilogue kinds, whole-input windows, mixed folding, the fold choice."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.conv import depthwise_rows
from litert_py.ops.conv.conv2d_quantized import TRUNC_MIN_VALUES
from litert_py.ops.conv.requant import SMALL_EPILOGUE_VALUES
from litert_py.ops.conv.requant_trunc import WRAP_MIN_VALUES
from litert_py.schema.builder import quant
from tests.ops.conv._quantized import I8, I32, U8, _prepared, _prepared_op, check_against_oracle, conv_model
from tests.values import int_range

# -- the folded requantization (ops/conv/requant.py) at its boundaries -------------------------------------

#: (activation, output scale, output zero point, the epilogue kind prepare must choose)
#: "relu": ReLU-like clamp (lo >= zp), sign correction dropped; "sign": copysign-corrected; "no-rs": no right
#: shift (multiplier >= 1/2), no correction whatever the clamp; "late-zp": the 2^53 bound fails with the zero
#: point in the constant (right shift ~20 with zero point -128), so zp is added after the floor.
FOLDED = [
    (1, 1.0, -5, "relu"),
    (3, 1.0, 7, "relu"),
    (0, 1.0, -5, "sign"),
    (2, 1.0, 3, "sign"),
    (0, 0.05, 2, "no-rs"),
    (1, 0.01, -3, "no-rs"),
    (0, 2.0**13, -128, "late-zp"),
    (1, 2.0**13, -128, "late-zp"),
]


@pytest.mark.parametrize("act, s_out, out_zp, kind", FOLDED, ids=[f"{k}-act{a}" for a, _, _, k in FOLDED])
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
@pytest.mark.parametrize("height", [8, 2])
def test_folded_requantization_boundaries(op, act, s_out, out_zp, kind, height, monkeypatch):
    """Random inputs and a ramp against a multiplier 1/16 * 1/s_out (every residue of the accumulator, so
    SRDHM's and RoundingDivideByPOT's ties for s_out 1), negative and positive accumulators, the bias and input
    zero point folded into the constant; the prepared path is the one the bound and the clamp select. Height 8
    gives 1024 output values (FoldedEpilogue), height 2 gives 256 (SmallFoldedEpilogue: at most
    SMALL_EPILOGUE_VALUES)."""
    monkeypatch.setattr(depthwise_rows, "SCALED_PATH", False)  # the depthwise on the folded path, not the rows
    x = np.random.default_rng(5).integers(-128, 128, (1, height, 64, 2)).astype(I8)
    x[0, 0, :, 0] = np.arange(-128, 128, 4)  # a ramp and its mirror
    x[0, 0, :, 1] = -x[0, 0, :, 0] - 1
    x[0, -1] = np.arange(128).reshape(64, 2) % 7 - 3  # small accumulators: outputs between the clamps
    if op == "CONV_2D":
        f, f_q = np.array([[[[1, 0]], [[2, -1]]], [[[-3, 1]], [[0, 2]]]], I8).reshape(2, 2, 1, 2), quant([0.125, 0.25])
        bias = np.array([37, -1000], I32)
    else:
        f, f_q = np.array([1, -2, 3, 1, 0, -1, 2, 1], I8).reshape(1, 2, 2, 2), quant([0.125, 0.25], 0, 3)
        bias = np.array([37, -1000], I32)
    if kind == "late-zp":  # outputs of a few units need accumulators of ~2^20
        bias += np.array([2**22, 2**20], I32)
    case = {
        "op": op,
        "x": x,
        "x_q": quant(0.5, 3),
        "f": f,
        "f_type": I8,
        "f_q": f_q,
        "bias": bias,
        "b_q": quant([0.0625, 0.125]),
        "out_q": quant(s_out, out_zp),
        "options": {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": act},
        "const": (True, True),
    }
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 2 - (kind == "late-zp")  # not all clamped
    prepared = _prepared(case)
    lo = out_zp if act in (1, 3) else -128  # RELU, RELU6 (outputs below 6 / s_out); NONE
    trunc = x.size >= TRUNC_MIN_VALUES or kind == "late-zp"  # test_truncating_folded_epilogue
    if op == "CONV_2D" and x.size > SMALL_EPILOGUE_VALUES and lo >= out_zp and trunc:
        assert type(prepared.epilogue).__name__ == "PlainTruncEpilogue"  # requant_trunc's, ReLU-like
        return
    if kind == "late-zp":
        small = x.size <= SMALL_EPILOGUE_VALUES  # SAME padding, as many outputs as inputs
        assert type(prepared.epilogue).__name__ == ("Small" if small else "") + "LateZeroPointEpilogue"
        assert prepared.epilogue.half is None  # lo >= zp = -128 for NONE and RELU: ReLU-like
    else:
        assert (prepared.epilogue.half is None) == (kind != "sign")
        small = x.size <= SMALL_EPILOGUE_VALUES  # SAME padding, as many outputs as inputs
        assert type(prepared.epilogue).__name__ == ("SmallFoldedEpilogue" if small else "FoldedEpilogue")


@pytest.mark.parametrize("act, s_out, out_zp, kind", FOLDED, ids=[f"{k}-act{a}" for a, _, _, k in FOLDED])
@pytest.mark.parametrize("dtype", [I8, U8])
def test_truncating_folded_epilogue(act, s_out, out_zp, kind, dtype):
    """The FOLDED layers as CONV_2D with TRUNC_MIN_VALUES outputs, int8 and uint8: ReLU-like ones (lo >= zp, the
    late-zp channels included) take requant_trunc.TruncEpilogue (zero point added after the truncation, modulo
    256), the others its sign path (the ties-away term by copysign); exact against the oracle over
    the ramp's ties."""
    x = np.random.default_rng(6).integers(-128, 128, (1, TRUNC_MIN_VALUES // 128 + 1, 65, 2)).astype(I8)  # VALID
    x[0, 0, :64, 0] = np.arange(-128, 128, 4)
    x[0, 0, :64, 1] = -x[0, 0, :64, 0] - 1
    x[0, -1, :64] = np.arange(128).reshape(64, 2) % 7 - 3
    bias = np.array([37, -1000], I32) + (np.array([2**22, 2**20], I32) if kind == "late-zp" else 0)
    zp = out_zp if dtype == I8 else out_zp + 128
    if dtype == U8:
        x = (x.astype(np.int16) + 128).astype(U8)
    case = {
        "op": "CONV_2D",
        "x": x,
        "x_q": quant(0.5, 3 if dtype == I8 else 131),
        "f": np.array([[[[1, 0]], [[2, -1]]], [[[-3, 1]], [[0, 2]]]], I8).reshape(2, 2, 1, 2),
        "f_type": I8,
        "f_q": quant([0.125, 0.25]) if dtype == I8 else quant(0.125, 0),
        "bias": bias,
        "b_q": quant([0.0625, 0.125]) if dtype == I8 else quant(0.0625),
        "out_q": quant(s_out, zp),
        "options": {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": act},
        "const": (True, True),
    }
    if dtype == U8:
        case["f"] = (case["f"].astype(np.int16) + 128).astype(U8)
        case["f_type"] = U8
        case["f_q"] = quant(0.125, 128)
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 2 - (kind == "late-zp")
    lo = zp if act in (1, 3) else int_range(dtype)[0]
    prepared = _prepared(case)
    assert type(prepared).__name__ == "ConvQuantizedFolded"
    relu_like = lo >= zp or kind == "no-rs"  # else the sign path (h = 0: none)
    assert type(prepared.epilogue).__name__ == ("PlainTruncEpilogue" if relu_like else "TruncEpilogue")
    assert (prepared.epilogue.half is None) == relu_like


@pytest.mark.parametrize("dtype", [I8, U8])
def test_conv_window_covering_the_whole_input(dtype):
    """One output pixel whose window is the whole unpadded input (a streaming model's conv over its ring
    buffer): the im2col rows are the input's rows (ConvQuantizedFoldedRows), two batches."""
    rng = np.random.default_rng(11)
    lo, hi = int_range(dtype)
    x = rng.integers(lo, hi + 1, (2, 5, 1, 40)).astype(dtype)
    f = rng.integers(lo if dtype == U8 else -127, hi + 1, (16, 5, 1, 40)).astype(dtype)
    case = {
        "op": "CONV_2D",
        "x": x,
        "x_q": quant(0.05, 3),
        "f": f,
        "f_type": dtype,
        "f_q": quant(0.002, 128 if dtype == U8 else 0),
        "bias": rng.integers(-3000, 3000, 16).astype(I32),
        "b_q": quant(np.float32(0.05) * np.float32(0.002)),
        "out_q": quant(0.08, -2 if dtype == I8 else 100),
        "options": {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": 1},
        "const": (True, True),
    }
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 3
    prepared = _prepared(case)
    assert type(prepared).__name__ == "ConvQuantizedFoldedRows"


@pytest.mark.parametrize("act", [0, 1])
@pytest.mark.parametrize("dtype", [I8, U8])
def test_depthwise_window_covering_the_whole_input(dtype, act):
    """One output pixel whose window is the whole unpadded input (DepthwiseConvWholeFolded), both epilogues
    (ReLU-like and sign-corrected), two batches."""
    rng = np.random.default_rng(12)
    lo, hi = int_range(dtype)
    x = rng.integers(lo, hi + 1, (2, 5, 1, 24)).astype(dtype)
    f = rng.integers(lo if dtype == U8 else -127, hi + 1, (1, 5, 1, 24)).astype(dtype)
    case = {
        "op": "DEPTHWISE_CONV_2D",
        "x": x,
        "x_q": quant(0.05, 3),
        "f": f,
        "f_type": dtype,
        "f_q": quant(0.01, 128, 3) if dtype == U8 else quant(rng.uniform(0.005, 0.02, 24), 0, 3),
        "bias": rng.integers(-300, 300, 24).astype(I32),
        "b_q": quant(0.0005),
        "out_q": quant(0.03, -2 if dtype == I8 else 100),
        "options": {
            "padding": 1,
            "stride_h": 1,
            "stride_w": 1,
            "fused_activation_function": act,
            "depth_multiplier": 1,
        },
        "const": (True, True),
    }
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 3
    prepared = _prepared(case)
    assert type(prepared).__name__ == "DepthwiseConvWholeFolded"
    assert (prepared.epilogue.half is None) == (act == 1)


#: (op, input shape, kernel, activation, output zero point): layers whose near-dead channels (weight scale 1000x
#: smaller: right shifts of 17-20) fail the fold's bound with zero point -128 while the others fold.
MIXED = [
    ("CONV_2D", (1, 9, 9, 8), 3, 1, -128),  # im2col GEMM, ReLU-like, FoldedEpilogue
    ("CONV_2D", (1, 6, 6, 16), 1, 3, -128),  # 1x1: the input's rows (ConvQuantizedFoldedRows), ReLU6
    ("CONV_2D", (1, 9, 9, 8), 3, 0, -100),  # no activation: the copysign epilogue
    ("CONV_2D", (2, 1, 1, 24), 1, 1, -128),  # a streaming layer: the small epilogues
    ("CONV_2D", (2, 1, 1, 24), 1, 0, -100),  # the same with the copysign term
    ("DEPTHWISE_CONV_2D", (1, 9, 9, 16), 3, 1, -128),  # tap sums
    ("DEPTHWISE_CONV_2D", (1, 7, 7, 64), 3, 0, -100),  # einsum tap sums, copysign epilogue
    ("DEPTHWISE_CONV_2D", (1, 5, 1, 32), 5, 1, -128),  # one window over the input (DepthwiseConvWholeFolded)
]


@pytest.mark.parametrize("op, shape, k, act, zp", MIXED, ids=[f"{m[0]}-{m[2]}x{m[2]}-act{m[3]}" for m in MIXED])
def test_mixed_folding(op, shape, k, act, zp):
    """Some channels fold, some only with the zero point added after the floor (multipliers 1000x smaller), the
    others (10^6x smaller) are requantized apart by the MixedEpilogue (DEPTHWISE_CONV_2D) or rescaled from their
    raw accumulators by requant_trunc.RescaledTruncEpilogue, proven by the step check (CONV_2D): exact against the
    oracle, the dead channels' outputs included (they are not all at the zero point)."""
    rng = np.random.default_rng(sum(shape) + k + act)
    n, h, w, c = shape
    out_c = c if op == "DEPTHWISE_CONV_2D" else 24
    kw = 1 if shape[2] == 1 else k
    x = rng.integers(-128, 128, shape).astype(I8)
    f_shape = (1, k, kw, out_c) if op == "DEPTHWISE_CONV_2D" else (out_c, k, kw, c)
    f = rng.integers(-127, 128, f_shape).astype(I8)
    s_w = rng.uniform(0.5, 1.5, out_c) * 0.01
    dead = np.arange(out_c) % 5 == 2  # zp added after the floor (LateZeroPointEpilogue)
    very_dead = np.arange(out_c) % 7 == 3  # not even then: requantized apart (MixedEpilogue)
    dead &= ~very_dead
    s_w[dead] *= 1e-3
    s_w[very_dead] *= 1e-6
    s_in = 0.05
    terms = k * kw * (1 if op == "DEPTHWISE_CONV_2D" else c)
    s_out = s_in * 0.01 * 73 * 60 * np.sqrt(terms) / 60
    bias = rng.integers(-20000, 20000, out_c).astype(I32)
    bias[dead] = rng.integers(2**19, 2**20, int(dead.sum()))  # the dead channels' outputs move (about +1 unit)
    bias[very_dead] = rng.integers(-(2**30), 2**30, int(very_dead.sum()))
    case = {
        "op": op,
        "x": x,
        "x_q": quant(s_in, 3),
        "f": f,
        "f_type": I8,
        "f_q": quant(s_w, 0, 3 if op == "DEPTHWISE_CONV_2D" else 0),
        "bias": bias,
        "b_q": quant(np.float32(s_in) * np.float32(s_w).astype(np.float64)),
        "out_q": quant(s_out, zp),
        "options": {
            "padding": 1 if (h, w) == (k, kw) else 0,
            "stride_h": 1,
            "stride_w": 1,
            "fused_activation_function": act,
        },
        "const": (True, True),
    }
    if op == "DEPTHWISE_CONV_2D":
        case["options"]["depth_multiplier"] = 1
    out = check_against_oracle(case)
    assert len(np.unique(out[..., dead])) > 1 and len(np.unique(out[..., ~dead & ~very_dead])) > 2
    model = conv_model(
        *(case[k] for k in ("op", "x", "x_q", "f", "f_type", "f_q", "bias", "b_q")), I8, case["out_q"], case["options"]
    )
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    if op == "CONV_2D":  # requant_trunc.fold_truncating_proven: the very dead channels' raw accumulators rescaled
        small = out.size <= SMALL_EPILOGUE_VALUES  # streaming layers: SmallRescaledEpilogue (per-value operands)
        assert type(prepared.epilogue).__name__ == ("SmallRescaledEpilogue" if small else "RescaledTruncEpilogue")
        assert (prepared.epilogue.scale.reshape(-1, out_c)[0] != 1).tolist() == very_dead.tolist()
        return
    assert type(prepared.epilogue).__name__ == "MixedEpilogue"  # biases of 2^30: no exact float32 GEMM
    assert prepared.epilogue.channels.tolist() == np.flatnonzero(very_dead).tolist()
    small = out.size <= SMALL_EPILOGUE_VALUES
    assert type(prepared.epilogue.folded).__name__ == ("Small" if small else "") + "LateZeroPointEpilogue"
    assert prepared.epilogue.folded.late_zp.reshape(-1, out_c)[0].tolist() == np.where(dead, zp, 0).tolist()


@pytest.mark.parametrize(
    "shape, k, out_c, expected",
    [
        ((1, 16, 16, 32), 3, 32, "ConvQuantizedScaled"),  # K = 288 >= 4 * O, 73k im2col values: float32 GEMM
        ((1, 6, 6, 24), 3, 24, "ConvQuantizedScaled"),  # only 7.8k im2col values but K = 216 >= SCALED_MIN_K
        ((1, 16, 16, 4), 3, 32, "ConvQuantizedFolded"),  # K = 36 < 4 * O and < SCALED_MIN_K
        ((1, 16, 16, 32), 1, 32, "ConvQuantizedFoldedRows"),  # 1x1, K = 32: the input's rows, folded
        ((1, 6, 6, 128), 1, 64, "ConvQuantizedScaled"),  # 1x1, K = 128 >= POINTWISE_SCALED_MIN_K
        ((1, 25, 5, 64), 1, 64, "ConvQuantizedFoldedRows"),  # 1x1, K = 64 < POINTWISE_SCALED_MIN_K: folded rows
        ((1, 12, 12, 8), 3, 32, "ConvQuantizedScaled"),  # 3x3, K = 72 < 4 * O but >= SCALED_MIN_K (not 1x1)
        ((1, 2, 2, 128), 1, 64, "ConvQuantizedFoldedRows"),  # 256 outputs: the small epilogues (streaming layers)
    ],
)
def test_conv_fold_choice(shape, k, out_c, expected):
    """FOLD_MAX_IM2COL_VALUES / FOLD_MAX_K_PER_OUTPUT / SCALED_MIN_K / POINTWISE_SCALED_MIN_K: large im2col
    matrices against the output and long dot products take the float32 GEMM and the ScaledEpilogue
    (ConvQuantizedScaled), the others the folded float64 GEMM; exact against the oracle."""
    rng = np.random.default_rng(k + out_c)
    x = rng.integers(-128, 128, shape).astype(I8)
    f = rng.integers(-127, 128, (out_c, k, k, shape[3])).astype(I8)
    s_w = rng.uniform(0.005, 0.02, out_c)
    case = {
        "op": "CONV_2D",
        "x": x,
        "x_q": quant(0.05, -3),
        "f": f,
        "f_type": I8,
        "f_q": quant(s_w),
        "bias": rng.integers(-5000, 5000, out_c).astype(I32),
        "b_q": quant(np.float32(0.05) * np.float32(s_w).astype(np.float64)),
        "out_q": quant(0.05 * 0.01 * 73 * np.sqrt(k * k * shape[3]), -128),
        "options": {"padding": 0, "stride_h": 1, "stride_w": 1, "fused_activation_function": 1},
        "const": (True, True),
    }
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 2
    prepared = _prepared_op(case)
    assert type(prepared).__name__ == expected
    trunc = getattr(prepared.epilogue, "epilogue", prepared.epilogue)  # (a ScaledEpilogue's TruncEpilogue)
    if out.size >= WRAP_MIN_VALUES:  # int8, 9-18K values: the wrapped base -256, no final uint8 add
        assert (trunc.base, trunc.add, int(trunc.hi16)) == (-256, None, 127 + 256) and trunc.wide is not None


#: (input shape, output channels, activation, output zero point, output type): 1x1 layers whose near-dead
#: channels (right shifts of 17-20) fail fold_truncating's bound only through the (|zp - b| + 1) * 2^(31+rs-ls) term
#: (no activation, zp far above b = lo): before, requant.py's LateZeroPointEpilogue.
LATE = [
    ((1, 16, 16, 24), 96, 0, -100, I8),  # a MobileNet-v3 expansion before HARD_SWISH
    ((1, 8, 8, 40), 120, 0, 5, I8),
    ((2, 6, 6, 16), 40, 0, 90, U8),
]


@pytest.mark.parametrize("shape, out_c, act, zp, out_dtype", LATE, ids=[f"{m[0][3]}to{m[1]}-zp{m[3]}" for m in LATE])
def test_proven_truncating_fold(shape, out_c, act, zp, out_dtype):
    """requant_trunc.fold_truncating_proven on the folded 1x1 GEMM: the near-dead channels' values less zp - b are
    exact in the GEMM, the epilogue's rounded additions are checked by the monotone step proof; exact against the
    oracle (the near-dead channels' outputs included) and the TruncEpilogue's sign path is chosen."""
    rng = np.random.default_rng(sum(shape) + out_c)
    c = shape[3]
    u8 = out_dtype == U8
    x = rng.integers(0 if u8 else -128, 256 if u8 else 128, shape).astype(out_dtype)
    f = rng.integers(1 if u8 else -127, 256 if u8 else 128, (out_c, 1, 1, c)).astype(out_dtype)
    s_w = rng.uniform(0.5, 1.5, out_c) * 0.01
    dead = np.arange(out_c) % 5 == 2
    s_w[dead] *= 1e-3
    bias = rng.integers(-20000, 20000, out_c).astype(I32)
    bias[dead] = rng.integers(2**19, 2**20, int(dead.sum()))  # the dead channels' outputs move (about +1 unit)
    s_out = 0.05 * 0.01 * 73 * np.sqrt(c) / 60 * 60
    case = {
        "op": "CONV_2D",
        "x": x,
        "x_q": quant(0.05, 131 if u8 else 3),
        "f": f,
        "f_type": out_dtype,
        "f_q": quant(0.01, 128) if u8 else quant(s_w, 0, 0),
        "bias": bias,
        "b_q": quant(np.float32(0.05) * np.float32(0.01 if u8 else s_w).astype(np.float64)),
        "out_q": quant(s_out * (1e3 if u8 else 1), zp),
        "options": {"padding": 0, "stride_h": 1, "stride_w": 1, "fused_activation_function": act},
        "const": (True, True),
    }
    if u8:  # per-tensor: the near-dead layer as a whole (right shift about 17)
        case["bias"] = rng.integers(2**19, 2**20, out_c).astype(I32)
    out = check_against_oracle(case)
    assert len(np.unique(out)) > 1 and (u8 or len(np.unique(out[..., dead])) > 1)
    prepared = _prepared_op(case)
    assert type(prepared).__name__ == "ConvQuantizedFoldedRows"
    assert type(prepared.epilogue).__name__ == "TruncEpilogue" and prepared.epilogue.half is not None


def test_truncating_fold_proof_with_raw_channels_over_many_points():
    """A 1x3 dilated stride-2 int8 CONV_2D of 235 channels (found by a random-layer fuzzer) whose truncating fold's
    proof checks more points than its full constants hold, with raw channels: the probe's rescaling took the
    full-constant (1, 1, 1, N) layout over the probe's (1, N), and allocate_tensors failed with a broadcast
    ValueError where LiteRT runs the layer. Now bit-exact with BUILTIN_REF."""
    import pathlib

    from tests.oracle import run_both

    model = (pathlib.Path(__file__).resolve().parent / "data" / "conv_trunc_probe_layout.tflite").read_bytes()
    rng = np.random.default_rng(28)
    for _ in range(3):
        x = rng.integers(-128, 128, (1, 5, 5, 24)).astype(I8)
        ours, theirs = run_both(model, [x])
        np.testing.assert_array_equal(ours[0], theirs[0])
