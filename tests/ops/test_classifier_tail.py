"""The fused classifier tail (ops/fully_connected_tail.py, fused by ops/slice_views.py's fuse_feeding): a global
MEAN / AVERAGE_POOL_2D gathering straight into the FULLY_CONNECTED's GEMM rows (PooledIntoRows), and a one-row
folded FULLY_CONNECTED with the short SOFTMAX after it as one step on Python ints (FullyConnectedSoftmaxTiny).
Compared exactly with BUILTIN_REF over many invokes (random inputs and the extremes), with the prepared steps
asserted, so a broken fast path fails here: effective scales that are powers of two (many t = acc * eff exactly
on a half: round half away against ties-to-even), clamps hit at both ends, signed and ReLU-like clamps, int8 and
uint8, per-tensor and per-channel weights, an FC chain after the pool, and the cases that must not fuse."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import compare_steps

NONE, RELU = 0, 1


def _tail(
    dtype=np.int8,
    pool="mean",
    units=10,
    channels=16,
    act=NONE,
    ties=True,
    per_channel=False,
    w_max=3,
    extra_fc=0,
    beta=1.0,
    softmax=True,
    flatten=False,
    dequantize=False,
    in_shape=None,
) -> bytes:
    """x (1, 3, 4, C) -> MEAN / AVERAGE_POOL_2D (or none: x is (1, C), or ``in_shape`` of C values) [-> RESHAPE (1, C)]
    -> FULLY_CONNECTED
    (units) [-> more FCs] -> SOFTMAX [-> DEQUANTIZE]. ``ties``: scales that are powers of two, eff = 1/8 exactly
    (per-channel: 1/8 and 1/4)."""
    rng = np.random.default_rng(units * 7 + channels)
    signed = dtype == np.int8
    b = ModelBuilder()
    s_in, zp_in = (2.0**-4, -5) if signed else (2.0**-4, 120)
    shape = (1, 3, 4, channels) if pool else (in_shape or (1, channels))
    x = b.input("x", shape, dtype, quantization=quant(s_in, zp_in))
    if pool == "mean":
        y = b.tensor("pooled", (1, 1, 1, channels), dtype, quantization=quant(s_in, zp_in))
        b.op("MEAN", [x, b.const("axes", np.array([1, 2], np.int32))], [y], {"keep_dims": True})
        x = y
    elif pool == "avg":
        y = b.tensor("pooled", (1, 1, 1, channels), dtype, quantization=quant(s_in, zp_in))
        opts = {"padding": 1, "stride_h": 1, "stride_w": 1, "filter_height": 3, "filter_width": 4}
        b.op("AVERAGE_POOL_2D", [x], [y], opts)
        x = y
    if pool and flatten:  # Keras' Flatten: RESHAPE to (1, C)
        y = b.tensor("flat", (1, channels), dtype, quantization=quant(s_in, zp_in))
        b.op("RESHAPE", [x, b.const("shape", np.array([1, channels], np.int32))], [y], {"new_shape": [1, channels]})
        x = y
    s, depth = s_in, channels
    for k in range(1 + extra_fc):
        last = k == extra_fc
        n_out = units if last else 12
        wz = rng.integers(-w_max, w_max + 1, (n_out, depth))
        if per_channel:
            s_w = np.where(np.arange(n_out) % 2, 2.0**-7, 2.0**-6) if ties else rng.uniform(0.004, 0.02, n_out)
        else:
            s_w = 2.0**-7 if ties else 0.0113
        w_q = quant(s_w, 0 if signed else 128)
        w = b.const(f"w{k}", (wz if signed else wz + 128).astype(dtype), quantization=w_q)
        b_q = quant(s * np.asarray(s_w))
        bias = b.const(f"b{k}", rng.integers(-200, 200, n_out).astype(np.int32), quantization=b_q)
        s = s * 2.0**-7 * 8 if ties else s * 0.0113 / 0.07
        layer_act = act if last else RELU
        zp = (-128 if signed else 0) if layer_act == RELU else (3 if signed else 131)
        y = b.tensor(f"y{k}", (1, n_out), dtype, quantization=quant(s, zp))
        b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": layer_act})
        x, depth = y, n_out
    if softmax:
        y = b.tensor("probs", (1, units), dtype, quantization=quant(1 / 256, -128 if signed else 0))
        b.op("SOFTMAX", [x], [y], {"beta": beta})
    if dequantize:
        x, y = y, b.tensor("scores", (1, units), np.float32)
        b.op("DEQUANTIZE", [x], [y])
    b.output(y)
    return b.build()


def _compare(model: bytes, n: int = 60, **kwargs) -> list[str]:
    """compare_steps over ``n`` random inputs and the extremes."""

    def inputs(d):
        info = np.iinfo(d["dtype"])
        rng = np.random.default_rng(1)
        xs = [rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]) for _ in range(n)]
        return xs + [np.full(d["shape"], v, d["dtype"]) for v in (info.min, info.max, 0)]

    return compare_steps(model, inputs, **kwargs)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("pool", ["mean", "avg"])
@pytest.mark.parametrize("act", [NONE, RELU])
@pytest.mark.parametrize("ties", [True, False])
def test_pool_fc_softmax_fused(dtype, pool, act, ties):
    steps = _compare(_tail(dtype, pool, act=act, ties=ties))
    assert steps == ["PooledIntoRows/FullyConnectedSoftmaxTiny"]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("pool", ["mean", "avg"])
def test_pool_flatten_fc_softmax_fused(dtype, pool):
    """MLPerf Tiny's tail: the pool -> RESHAPE (Flatten) -> FC -> SOFTMAX, one step; without the FC's fusion
    (all but the softmax: a longer row) the pool still stores into the reshaped tensor (PooledReshaped)."""
    assert _compare(_tail(dtype, pool, flatten=True)) == ["PooledIntoRows/FullyConnectedSoftmaxTiny"]
    model = _tail(dtype, pool, flatten=True, units=30, ties=False)
    assert _compare(model) == ["PooledIntoRows/FullyConnectedQuantizedFoldedRounded", "SoftmaxQuantizedRow"]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_softmax_dequantize_fused(dtype):
    """The classifier's float output: pool -> FC -> SOFTMAX -> DEQUANTIZE as one step (the lookup composed into
    the softmax's store), also after an FC chain and with no FC at all (SOFTMAX -> DEQUANTIZE)."""
    (step,) = _compare(_tail(dtype, "mean", flatten=True, dequantize=True))
    assert step == "PooledIntoRows/FullyConnectedSoftmaxTiny"
    assert _compare(_tail(dtype, "avg", extra_fc=1, dequantize=True, ties=False))[0].startswith("PooledIntoRows/")
    b = ModelBuilder()
    x = b.input("x", (1, 7), dtype, quantization=quant(0.07, 3))
    y = b.tensor("probs", (1, 7), dtype, quantization=quant(1 / 256, -128 if dtype == np.int8 else 0))
    b.op("SOFTMAX", [x], [y], {"beta": 1.0})
    z = b.tensor("scores", (1, 7), np.float32)
    b.op("DEQUANTIZE", [y], [z])
    b.output(z)
    assert _compare(b.build()) == ["SoftmaxQuantizedTinyLookup"]
    interp = Interpreter(model_content=_tail(dtype, "mean", flatten=True, dequantize=True))
    interp.allocate_tensors()
    (fused,) = [op for _, op in interp._subgraphs[0].steps_nodes]
    assert type(fused.consumer.softmax).__name__ == "SoftmaxQuantizedTinyLookup"


def pool_reshape_model() -> bytes:
    """AVERAGE_POOL_2D (global) -> RESHAPE, the reshaped tensor the model's output."""
    b = ModelBuilder()
    x = b.input("x", (1, 3, 4, 6), np.int8, quantization=quant(0.1, -3))
    y = b.tensor("pooled", (1, 1, 1, 6), np.int8, quantization=quant(0.1, -3))
    opts = {"padding": 1, "stride_h": 1, "stride_w": 1, "filter_height": 3, "filter_width": 4}
    b.op("AVERAGE_POOL_2D", [x], [y], opts)
    z = b.tensor("flat", (1, 6), np.int8, quantization=quant(0.1, -3))
    b.op("RESHAPE", [y, b.const("shape", np.array([1, 6], np.int32))], [z], {"new_shape": [1, 6]})
    b.output(z)
    return b.build()


def test_pool_reshape_alone():
    """A pool whose reshaped output is the model's output: PooledReshaped stores into it."""
    assert _compare(pool_reshape_model()) == ["PooledReshaped"]


@pytest.mark.parametrize("ties", [True, False])
def test_per_channel_weights(ties):
    assert _compare(_tail(pool="mean", per_channel=True, ties=ties)) == ["PooledIntoRows/FullyConnectedSoftmaxTiny"]


@pytest.mark.parametrize(("units", "w_max", "beta"), [(2, 3, 1.0), (12, 20, 0.5), (24, 3, 1.0)])
def test_fc_softmax_fused(units, w_max, beta):
    """No pool: the FC reads the model's input; wide weights saturate most values (the clamp at both ends)."""
    steps = _compare(_tail(pool=None, units=units, w_max=w_max, beta=beta))
    assert steps == ["FullyConnectedSoftmaxTiny"]


def test_pool_into_fc_chain():
    """The pool feeds a chain of two FCs (its consumer is the chain), the last FC fused with the softmax."""
    (step,) = _compare(_tail(pool="avg", extra_fc=1, ties=False))
    assert step.startswith("PooledIntoRows/FullyConnectedChain")


@pytest.mark.parametrize("ties", [True, False])
def test_fc_chain_softmax(ties):
    """A dense classifier's stack (FC -> FC -> SOFTMAX): the chain's last layer fused with the softmax."""
    (step,) = _compare(_tail(pool=None, extra_fc=1, ties=ties))
    assert step.startswith("FullyConnectedChain")
    op = Interpreter(model_content=_tail(pool=None, extra_fc=1, ties=ties))
    op.allocate_tensors()
    (fused,) = [op for _, op in op._subgraphs[0].steps_nodes]
    assert type(fused.layers[-1]).__name__ == "FullyConnectedSoftmaxTiny"


def test_pool_into_fc_without_softmax():
    steps = _compare(_tail(pool="mean", softmax=False, ties=False))
    assert steps == ["PooledIntoRows/FullyConnectedQuantizedFoldedRounded"]


def test_not_fused():
    """A softmax row longer than SoftmaxQuantizedTiny's keeps its own step; all tensors preserved: no fusion."""
    steps = _compare(_tail(pool="mean", units=30, ties=False))
    assert steps == ["PooledIntoRows/FullyConnectedQuantizedFoldedRounded", "SoftmaxQuantizedRow"]
    steps = _compare(_tail(pool="mean"), experimental_preserve_all_tensors=True)
    assert steps == ["MeanQuantizedTable", "FullyConnectedQuantizedFolded", "SoftmaxQuantizedTiny"]


def _one_value(dtype, widths, acts, dequantize=False) -> bytes:
    """A FULLY_CONNECTED stack over one input value (tflite-micro's int8 sine model: 1 -> 16 -> 16 -> 1), with a
    DEQUANTIZE of its output (float32) when ``dequantize``."""
    rng = np.random.default_rng(sum(widths))
    signed = dtype == np.int8
    b = ModelBuilder()
    s, zp = 0.025, (-128 if signed else 0)
    x = b.input("x", (1, 1), dtype, quantization=quant(s, zp))
    for k, (depth, units, act) in enumerate(zip(widths, widths[1:], acts)):
        wz = rng.integers(-127, 128, (units, depth))
        s_w = 0.01
        w = b.const(f"w{k}", (wz if signed else wz + 128).astype(dtype), quantization=quant(s_w, 0 if signed else 128))
        bias = b.const(f"b{k}", rng.integers(-2000, 2000, units).astype(np.int32), quantization=quant(s * s_w))
        s = s * s_w * depth**0.5 * 40 / 127
        zp = (-128 if signed else 0) if act == RELU else (5 if signed else 133)
        y = b.tensor(f"y{k}", (1, units), dtype, quantization=quant(s, zp))
        b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": act})
        x = y
    if dequantize:
        y = b.tensor("out", (1, widths[-1]), np.float32)
        b.op("DEQUANTIZE", [x], [y])
        x = y
    b.output(x)
    return b.build()


def _all_values(model: bytes) -> list[str]:
    """compare_steps on every one of the 256 input values."""
    return compare_steps(
        model, lambda d: [np.array(v, np.uint8).view(d["dtype"]).reshape(d["shape"]) for v in range(256)]
    )


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_one_value_fc_table_into_chain(dtype):
    """The sine model's shape: the whole stack over the one input value is one table (OneValueChainTable)."""
    assert _all_values(_one_value(dtype, (1, 16, 16, 1), (RELU, RELU, NONE))) == ["OneValueChainTable"]
    assert _all_values(_one_value(dtype, (1, 16, 8), (NONE, RELU))) == ["OneValueChainTable"]  # 8 values out


@pytest.mark.parametrize("act", [NONE, RELU])
def test_one_value_fc_table_alone(act):
    assert _all_values(_one_value(np.int8, (1, 8), (act,))) == ["FullyConnectedOneValueTable"]


@pytest.mark.parametrize("widths", [(1, 16, 1), (1, 16, 4), (1, 16, 16, 1)])
def test_one_value_fc_stack_with_dequantize(widths):
    """A stack over one value ending in DEQUANTIZE: the last FC and the DEQUANTIZE may compose into one float
    lookup (FullyConnectedScalarLookup); its float values must not be tabulated as integers (they were
    truncated to 0 once). Every one of the 256 inputs equal to BUILTIN_REF."""
    acts = (RELU,) * (len(widths) - 2) + (NONE,)
    steps = _all_values(_one_value(np.int8, widths, acts, dequantize=True))
    assert steps[0] in ("OneValueChainTable", "FullyConnectedOneValueTable", "PooledIntoRows")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_softmax_requantize_dequantize(dtype):
    """SOFTMAX -> QUANTIZE (8-bit requantize: a table lookup) -> DEQUANTIZE: both lookups composed into the
    softmax's store (prepare once raised TypeError composing the second)."""
    b = ModelBuilder()
    x = b.input("x", (1, 7), dtype, quantization=quant(0.07, 3))
    y = b.tensor("probs", (1, 7), dtype, quantization=quant(1 / 256, -128 if dtype == np.int8 else 0))
    b.op("SOFTMAX", [x], [y], {"beta": 1.0})
    other = np.uint8 if dtype == np.int8 else np.int8
    u = b.tensor("probs_other", (1, 7), other, quantization=quant(1 / 128, 3))
    b.op("QUANTIZE", [y], [u])
    z = b.tensor("scores", (1, 7), np.float32)
    b.op("DEQUANTIZE", [u], [z])
    b.output(z)
    assert _compare(b.build()) == ["SoftmaxQuantizedTinyLookup"]


def _streaming_head(units: tuple) -> bytes:
    """A whole-window int8 DEPTHWISE_CONV_2D (1, 5, 1, 8) -> 1x1 CONV_2D (16, ReLU) -> FULLY_CONNECTED layers of
    ``units``: a streaming wake-word head with hidden dense layers (the depthwise step feeds the FC chain)."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    s_in = 0.05
    x = b.input("x", (1, 5, 1, 8), np.int8, quantization=quant(s_in, 3))
    w = rng.integers(-127, 128, (1, 5, 1, 8)).astype(np.int8)
    s_w = rng.uniform(0.002, 0.02, 8)
    bq = b.const("dw_b", rng.integers(-3000, 3000, 8).astype(np.int32), quantization=quant(s_in * s_w))
    s1 = s_in * 2.0
    d = b.tensor("d", (1, 1, 1, 8), np.int8, quantization=quant(s1, -128))
    opts = {"padding": 1, "stride_h": 1, "stride_w": 1, "depth_multiplier": 1, "fused_activation_function": RELU}
    b.op("DEPTHWISE_CONV_2D", [x, b.const("dw_w", w, quantization=quant(s_w, 0, 3)), bq], [d], opts)
    w = rng.integers(-127, 128, (16, 1, 1, 8)).astype(np.int8)
    s_w = rng.uniform(0.004, 0.008, 16)
    bq = b.const("pw_b", rng.integers(-3000, 9000, 16).astype(np.int32), quantization=quant(s1 * s_w))
    s2 = s1 * 6.0
    g = b.tensor("g", (1, 1, 1, 16), np.int8, quantization=quant(s2, -128))
    opts = {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": RELU}
    b.op("CONV_2D", [d, b.const("pw_w", w, quantization=quant(s_w, 0, 0)), bq], [g], opts)
    x, s, depth = g, s2, 16
    for k, n in enumerate(units):
        last = k == len(units) - 1
        wq = b.const(f"fc{k}_w", rng.integers(-60, 61, (n, depth)).astype(np.int8), quantization=quant(0.01, 0))
        bias = b.const(f"fc{k}_b", rng.integers(-500, 500, n).astype(np.int32), quantization=quant(s * 0.01))
        s = s * 0.01 * 60
        y = b.tensor(f"fc{k}", (1, n), np.int8, quantization=quant(s, 5 if last else -128))
        b.op("FULLY_CONNECTED", [x, wq, bias], [y], {"fused_activation_function": NONE if last else RELU})
        x, depth = y, n
    b.output(x)
    return b.build()


@pytest.mark.parametrize("units", [(12, 4), (12, 1)])
def test_depthwise_feeding_fc_chain(units):
    """The depthwise step feeding a chain of FCs stores into the rows the chain reads (a chain rebuilds its
    first layer: once the step kept the old layer's rows and the chain read rows nobody wrote)."""
    model = _streaming_head(units)
    assert _compare(model, n=30) == ["DepthwiseWholeIntoRowsFeeding"]
    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    (fused,) = [op for _, op in interp._subgraphs[0].steps_nodes]
    assert np.shares_memory(fused.then_rows, fused.then.rows())
