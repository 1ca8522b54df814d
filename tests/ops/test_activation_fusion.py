"""Standalone float RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 fused into their producer (ops/activation_fusion.py).

Each case is a two-op model, producer -> activation, over inputs with NaN, +-inf, -0.0 and overflowing values.
Our fused run must be bit-identical (NaN positions, -0.0 signs, every other bit) to our unfused run (with
experimental_preserve_all_tensors every step runs) and, for the producers whose float sums follow the reference's
order (ADD / SUB / MUL / DIV, DEPTHWISE_CONV_2D), to LiteRT's BUILTIN_REF; the GEMM producers (CONV_2D,
FULLY_CONNECTED) are within the conv / FC tolerance of it. The steps are asserted: the activation step is gone
and the producer's prepared op is the expected one; with the intermediate a model output or read twice, nothing
is fused.
"""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.ops import activation_fusion
from litert_py.ops.conv import depthwise_einsum
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import run_litert

F32 = np.float32
ACTS = ["RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"]
SAME, VALID = 0, 1


def _conv(stride=1, padding=SAME, act=0):
    return {"padding": padding, "stride_h": stride, "stride_w": stride, "fused_activation_function": act}


def _depthwise(stride=1, mult=1, act=0):
    return {**_conv(stride, SAME, act), "depth_multiplier": mult}


def _w(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32)


# name: (producer op, input shape, constants (shape-or-array; None: omitted input), options, output shape,
#        expected prepared op, exact against BUILTIN_REF)
CASES = {
    "add": ("ADD", (1, 8, 8, 4), ["same"], {}, (1, 8, 8, 4), "Arithmetic", True),
    "sub-broadcast": ("SUB", (2, 5, 3), [(3,)], {}, (2, 5, 3), "Arithmetic", True),
    "mul": ("MUL", (4, 7), ["same"], {}, (4, 7), "Arithmetic", True),
    "div": ("DIV", (4, 7), ["same"], {}, (4, 7), "Arithmetic", True),
    "add-channel-row": ("ADD", (1, 64, 64, 8), [(1, 1, 1, 8)], {}, (1, 64, 64, 8), "ArithmeticChannelRow", True),
    "conv": ("CONV_2D", (1, 6, 6, 4), [(4, 1, 1, 4), (4,)], _conv(), (1, 6, 6, 4), "ConvFloat", False),
    "conv-pointwise": (
        "CONV_2D",
        (1, 128, 64, 4),
        [(8, 1, 1, 4), (8,)],
        _conv(),
        (1, 128, 64, 8),
        "ConvFloatPointwise",
        False,
    ),
    "conv-per-tap": (
        "CONV_2D",
        (1, 64, 64, 8),
        [(2, 3, 3, 8), (2,)],
        _conv(),
        (1, 64, 64, 2),
        "ConvFloatPerTap",
        False,
    ),
    "conv-bias-folded": (
        "CONV_2D",
        (1, 9, 9, 8),
        [(8, 3, 3, 8), (8,)],
        _conv(2, VALID),
        (1, 4, 4, 8),
        "ConvFloatBiasFolded",
        False,
    ),
    "conv-planes": ("CONV_2D", (1, 64, 64, 3), [(8, 3, 3, 3), (8,)], _conv(), (1, 64, 64, 8), "ConvFloatPlanes", False),
    "depthwise-einsum": (
        "DEPTHWISE_CONV_2D",
        (1, 10, 10, 8),
        [(1, 3, 3, 8), (8,)],
        _depthwise(),
        (1, 10, 10, 8),
        "DepthwiseConvFloatEinsum",
        True,
    ),
    "depthwise-taps": (
        "DEPTHWISE_CONV_2D",
        (1, 10, 10, 3),
        [(1, 3, 3, 6), (6,)],
        _depthwise(2, 2),
        (1, 5, 5, 6),
        "DepthwiseConvFloatBlocked",  # (one block)
        True,
    ),
    "depthwise-blocked": (
        "DEPTHWISE_CONV_2D",
        (1, 256, 256, 8),
        [(1, 3, 3, 16), (16,)],
        _depthwise(2, 2),
        (1, 128, 128, 16),
        "DepthwiseConvFloatBlocked",
        True,
    ),
    "fc": ("FULLY_CONNECTED", (3, 6), [(5, 6), (5,)], {}, (3, 5), "FullyConnectedFloat", False),
    "fc-row": ("FULLY_CONNECTED", (1, 6), [(5, 6), None], {}, (1, 5), "FullyConnectedFloatRow", False),
}
#: the producer's own fused activation: NONE, RELU, RELU_N1_TO_1, RELU6 (CONV/FC/ADD options)
PRODUCER_ACTS = (0, 1, 2, 3)


def _specials(rng, shape, scale: float) -> np.ndarray:
    """Normal values of about ``scale`` with NaN, +-inf, -0.0, +0.0 and +-3e38 at a few positions."""
    x = _w(rng, shape, scale)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=min(flat.size, 14), replace=False)
    flat[picks] = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, -0.0, 0.0, 3e38, -3e38, 3e38, -0.0, 1, 6, -1])[
        : picks.size
    ]
    return x


def _model(case: str, act: str, producer_act: int, *, seed: int = 0, t_out: bool = False, two_readers: bool = False):
    op, x_shape, consts, options, out_shape, _, _ = CASES[case]
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input("x", x_shape, F32)
    ins = [x]
    for k, c in enumerate(consts):
        if c is None:
            ins.append(-1)
            continue
        shape = x_shape if c == "same" else c
        data = _specials(rng, shape, 4.0) if op in ("ADD", "SUB", "MUL", "DIV") else _w(rng, shape, 0.5)
        if op == "DIV":
            data[np.abs(data) < 0.25] = 0.0  # x / 0 -> +-inf, 0 / 0 -> NaN, clamped by the producer
        if c == "same":  # -0.0 results at the first positions: -0.0 + -0.0, -0.0 * 5, -0.0 / 5
            data.reshape(-1)[:3] = [-0.0, -0.0, 5.0]
        ins.append(b.const(f"c{k}", data))
    t = b.tensor("t", out_shape, F32)
    b.op(op, ins, [t], {**options, "fused_activation_function": producer_act})
    y = b.tensor("y", out_shape, F32)
    b.op(act, [t], [y])
    outs = [y]
    if two_readers:
        z = b.tensor("z", out_shape, F32)
        b.op("NEG", [t], [z])
        outs.append(z)
    if t_out:
        outs.append(t)
    b.output(*outs)
    x_value = _specials(rng, x_shape, 4.0)
    if consts == ["same"]:
        x_value.reshape(-1)[:3] = -0.0
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
        x_value[np.isinf(x_value) | np.isnan(x_value)] = 1.0  # one inf would make most outputs inf or NaN
        x_value.reshape(-1)[:3] = [3e38, np.inf, np.nan]  # still some: an overflow to inf, inf, NaN
    return b.build(), x_value


def _run(model: bytes, x: np.ndarray, **kw):
    it = litert_py.Interpreter(model_content=model, **kw)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    names = [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]
    return names, [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def assert_bits_equal(ours: np.ndarray, ref: np.ndarray, what: str) -> None:
    """The same NaN positions and, elsewhere, the same float32 bits (so -0.0 is not +0.0)."""
    assert ours.shape == ref.shape and ours.dtype == ref.dtype == F32, what
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(ours), nan), f"{what}: NaN positions differ"
    diff = ours.view(np.uint32)[~nan] != ref.view(np.uint32)[~nan]
    assert not diff.any(), f"{what}: {int(diff.sum())} differ: {ours[~nan][diff][:4]} vs {ref[~nan][diff][:4]}"


def _check(case: str, act: str, producer_act: int) -> None:
    model, x = _model(case, act, producer_act)
    names, (fused,) = _run(model, x)
    unfused_names, (unfused,) = _run(model, x, experimental_preserve_all_tensors=True)
    expected = CASES[case][5]
    assert names == [expected], names
    assert unfused_names == [expected, "ReluFloat"], unfused_names
    assert_bits_equal(fused, unfused, "fused vs unfused")
    (lit,) = run_litert(model, [x], "BUILTIN_REF")
    if CASES[case][6]:
        assert_bits_equal(fused, lit, "fused vs BUILTIN_REF")
    else:
        depth = int(np.prod(CASES[case][2][0][1:]))
        assert_close([fused], [lit], rtol=1e-5 * depth)
    assert np.isnan(fused).any() or CASES[case][0] == "MUL" or not np.isnan(x).any()


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("case", list(CASES))
def test_fused_matches_unfused_and_litert(case, act):
    """Every producer with every activation; the producer's own fused activation cycles through its four."""
    producer_act = PRODUCER_ACTS[(list(CASES).index(case) + ACTS.index(act)) % 4]
    _check(case, act, producer_act)


@pytest.mark.parametrize("producer_act", PRODUCER_ACTS)
@pytest.mark.parametrize("act", ACTS)
def test_every_pair_of_ranges(act, producer_act):
    """Every (producer activation, standalone activation) pair on the exact ADD: the intersection's clamp."""
    _check("add", act, producer_act)


@pytest.mark.parametrize("case", ["add", "conv", "depthwise-einsum", "fc"])
@pytest.mark.parametrize("where", ["t_out", "two_readers"])
def test_not_fused_when_the_intermediate_is_needed(case, where):
    """The producer's output is a model output, or a second op reads it: both steps run, as LiteRT computes."""
    model, x = _model(case, "RELU6", 0, **{where: True})
    names, ours = _run(model, x)
    assert names[:2] == [CASES[case][5], "ReluFloat"], names
    lit = run_litert(model, [x], "BUILTIN_REF")
    if CASES[case][6]:
        for o, r in zip(ours, lit):
            assert_bits_equal(o, r, "vs BUILTIN_REF")
    else:
        assert_close(ours, lit, rtol=1e-4)


def test_model_input_is_not_rewritten():
    """A RELU reading the model's input has no producer step: it stays."""
    b = ModelBuilder()
    x = b.input("x", (4,), F32)
    y = b.tensor("y", (4,), F32)
    b.op("RELU", [x], [y])
    b.output(y)
    names, (out,) = _run(b.build(), np.array([-1, -0.0, np.nan, 2], F32))
    assert names == ["ReluFloat"]
    assert_bits_equal(out, np.array([0, -0.0, np.nan, 2], F32), "RELU")


def test_chained_activations_fold_into_one_clamp():
    """ADD -> RELU -> RELU6: both activations fold into the ADD (the second into the already narrowed clamp)."""
    b = ModelBuilder()
    x = b.input("x", (3, 5), F32)
    c = b.const("c", _specials(np.random.default_rng(1), (3, 5), 8.0))
    t, u, y = (b.tensor(n, (3, 5), F32) for n in "tuy")
    b.op("ADD", [x, c], [t], {"fused_activation_function": 2})
    b.op("RELU", [t], [u])
    b.op("RELU6", [u], [y])
    b.output(y)
    model = b.build()
    x_value = _specials(np.random.default_rng(2), (3, 5), 8.0)
    names, (fused,) = _run(model, x_value)
    assert names == ["Arithmetic"]
    assert_bits_equal(fused, run_litert(model, [x_value], "BUILTIN_REF")[0], "vs BUILTIN_REF")


def test_disjoint_ranges_are_not_fused():
    """intersect() refuses disjoint ranges (no two TFLite activations have them); the clamp is then kept."""
    assert activation_fusion.intersect(F32(-1), F32(1), F32(2), F32(3)) is None
    assert activation_fusion.intersect(F32(-3e38), F32(3e38), F32(0), F32(np.inf)) == (F32(0), F32(3e38))


def test_einsum_depthwise_is_known_to_clamp_last():
    """DepthwiseConvFloatEinsum clamps last, as the other float producers: it offers with_clamp (ClampLast)."""
    assert issubclass(depthwise_einsum.DepthwiseConvFloatEinsum, activation_fusion.ClampLast)


def test_row_fc_relu_row_fc_becomes_one_chain():
    """FC -> RELU -> FC over one row: the RELU folds into the first FC, which then feeds the second FC's row
    (fuse_feeding runs after this fusion): one step, close to LiteRT, bit-identical to our unfused run."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.input("x", (1, 6), F32)
    w0, b0 = b.const("w0", _w(rng, (8, 6))), b.const("b0", _w(rng, (8,)))
    w1, b1 = b.const("w1", _w(rng, (3, 8))), b.const("b1", _w(rng, (3,)))
    t, u, y = b.tensor("t", (1, 8), F32), b.tensor("u", (1, 8), F32), b.tensor("y", (1, 3), F32)
    b.op("FULLY_CONNECTED", [x, w0, b0], [t])
    b.op("RELU", [t], [u])
    b.op("FULLY_CONNECTED", [u, w1, b1], [y])
    b.output(y)
    model = b.build()
    x_value = _w(rng, (1, 6), 2.0)
    names, (fused,) = _run(model, x_value)
    unfused_names, (unfused,) = _run(model, x_value, experimental_preserve_all_tensors=True)
    assert names == ["FullyConnectedFloatRowChain"]
    assert unfused_names == ["FullyConnectedFloatRow", "ReluFloat", "FullyConnectedFloatRow"]
    assert_bits_equal(fused, unfused, "fused vs unfused")
    assert_close([fused], run_litert(model, [x_value], "BUILTIN_REF"), rtol=1e-4)


def _bounds(op) -> list:
    """The clamp bounds a float prepared op keeps (activation_fusion.float_bounds): out_min/out_max, lo/hi, or
    Arithmetic's clamp."""
    if hasattr(op, "out_min"):
        return [op.out_min, op.out_max]
    if hasattr(op, "clamp"):
        return list(op.clamp)
    return [op.lo, op.hi]


@pytest.mark.parametrize("case", CASES)
def test_bounds_are_prepared_0d_arrays(case):
    """Every producer (unfused, and fused with RELU6) and the standalone ReluFloat keep their clamp bounds as 0-d
    float32 arrays made at prepare: no scalar conversion per call. The values: test_fused_matches_unfused_and_litert.
    """
    model, _ = _model(case, "RELU6", 0)
    for kw in ({}, {"experimental_preserve_all_tensors": True}):
        it = litert_py.Interpreter(model_content=model, **kw)
        it.allocate_tensors()
        ops = [op for _, op in it._subgraphs[0].steps_nodes]
        for op in ops:
            for bound in _bounds(op):
                assert type(bound) is np.ndarray and bound.shape == () and bound.dtype == F32, (type(op), bound)
        if not kw:
            assert [float(b) for b in _bounds(ops[0])] == [0.0, 6.0]
