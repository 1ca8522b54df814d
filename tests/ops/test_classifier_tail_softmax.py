"""The classifier tail's softmax (ops/fully_connected_tail.FullyConnectedSoftmaxTiny: the FC's requantization in
numpy into an int32 view, then ops/softmax.softmax_row_into, or for two units one row of the prepared ``pairs``)
against BUILTIN_REF, exactly, over many invokes of one interpreter: every logit equal, the maximum at each
position (and tied maxima), extreme logit scales (the table cut short by diff_min, or all differences tiny),
several betas, 2..16 units, int8 and uint8, with and without rounding ties (round half away against ties to
even), and the DEQUANTIZE fused into the store (a lookup composed into ``outv`` / ``pairs``)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops.test_classifier_tail import _compare, _tail
from tests.oracle import compare_steps


def _head(dtype, weights, bias, logit_scale: float, beta: float, ties: bool = False, dequantize: bool = False):
    """x (1, depth) -> FULLY_CONNECTED (units, no activation) -> SOFTMAX [-> DEQUANTIZE]; ``weights`` (units,
    depth) and ``bias`` (units,) as integers (zero-point-free). ``ties``: scales that are powers of two (eff =
    1/8: many t = acc * eff exactly on a half)."""
    signed = dtype == np.int8
    units, depth = weights.shape
    b = ModelBuilder()
    s_in, s_w = (2.0**-4, 2.0**-7) if ties else (0.05, 0.0113)
    s_out = 2.0**-8 if ties else logit_scale
    x = b.input("x", (1, depth), dtype, quantization=quant(s_in, -5 if signed else 120))
    w_q = quant(s_w, 0 if signed else 128)
    w = b.const("w", (weights if signed else weights + 128).astype(dtype), quantization=w_q)
    bias = b.const("b", np.asarray(bias, np.int32), quantization=quant(s_in * s_w))
    y = b.tensor("logits", (1, units), dtype, quantization=quant(s_out, 3 if signed else 131))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": 0})
    p = b.tensor("probs", (1, units), dtype, quantization=quant(1 / 256, -128 if signed else 0))
    b.op("SOFTMAX", [y], [p], {"beta": beta})
    if dequantize:
        p, z = b.tensor("scores", (1, units), np.float32), p
        b.op("DEQUANTIZE", [z], [p])
    b.output(p)
    return b.build()


def _inputs(depth: int, one_hot: bool = False, n: int = 40):
    """Random rows, the extremes, and with ``one_hot`` each position high in turn (the rest low), then two
    positions high together (a tied maximum)."""

    def inputs(d):
        info = np.iinfo(d["dtype"])
        rng = np.random.default_rng(depth)
        xs = [rng.integers(info.min, info.max + 1, d["shape"]) for _ in range(n)]
        xs += [np.full(d["shape"], v) for v in (info.min, info.max, 0)]
        if one_hot:
            for i in range(depth):
                x = np.full(d["shape"], info.min)
                x[0, i] = info.max
                xs.append(x)
                y = x.copy()
                y[0, (i + 1) % depth] = info.max
                xs.append(y)
        return [x.astype(d["dtype"]) for x in xs]

    return inputs


def _step(model: bytes):
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    ((op, _, _),) = it._subgraphs[0].steps
    return op


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("units", [2, 3, 5, 8, 12, 16])
@pytest.mark.parametrize("ties", [False, True])
def test_max_at_each_position(dtype, units, ties):
    """A diagonal FC: the logit at the input's high position is the maximum, at each position in turn."""
    weights = np.diag(np.full(units, 40))
    bias = np.random.default_rng(units).integers(-300, 300, units)
    model = _head(dtype, weights, bias, 0.08, 1.0, ties=ties)
    assert compare_steps(model, _inputs(units, one_hot=True)) == ["FullyConnectedSoftmaxTiny"]
    op = _step(model)
    assert op.ties_free is not ties
    assert (op.softmax.pairs is not None) is (units == 2)


@pytest.mark.parametrize("units", [2, 7, 16])
def test_all_logits_equal(units):
    """Zero weights and one bias: every logit equal for every input (every term exp(0), the row's total
    units * 2^19)."""
    model = _head(np.int8, np.zeros((units, 6), int), np.full(units, 77), 0.05, 1.0)
    assert compare_steps(model, _inputs(6, n=5)) == ["FullyConnectedSoftmaxTiny"]


@pytest.mark.parametrize(
    ("logit_scale", "beta"),
    [
        (2.0, 1.0),  # diff_min cuts the exp table: most terms 0, the maximum's near 1
        (1.0, 2.5),
        (0.002, 1.0),  # every difference tiny: a near-uniform row
        (0.0004, 1.0),  # beta * scale * 2^26 near its lower bound (LiteRT requires > 1)
        (0.08, 0.5),
    ],
)
@pytest.mark.parametrize("units", [2, 10])
def test_extreme_scales_and_betas(logit_scale, beta, units):
    weights = np.random.default_rng(units).integers(-60, 61, (units, 16))
    model = _head(np.int8, weights, np.zeros(units, int), logit_scale, beta)
    assert compare_steps(model, _inputs(16)) == ["FullyConnectedSoftmaxTiny"]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("units", [2, 6])
@pytest.mark.parametrize("ties", [False, True])
def test_dequantize_composed(dtype, units, ties):
    """FC -> SOFTMAX -> DEQUANTIZE as one step: the lookup composed into the stored values (``outv``, and the
    ``pairs`` rows for two units), float32 outputs equal to BUILTIN_REF's."""
    weights = np.random.default_rng(units).integers(-30, 31, (units, 8))
    model = _head(dtype, weights, np.zeros(units, int), 0.1, 1.0, ties=ties, dequantize=True)
    assert compare_steps(model, _inputs(8)) == ["FullyConnectedSoftmaxTiny"]
    op = _step(model)
    assert type(op.softmax).__name__ == "SoftmaxQuantizedTinyLookup"
    if units == 2:
        assert op.softmax.pairs.dtype == np.float32


@pytest.mark.parametrize("units", [2, 5])
@pytest.mark.parametrize("ties", [False, True])
def test_chain_last_layer(units, ties):
    """A dense stack FC -> FC -> SOFTMAX: the chain runs its last layer's fused step unbound (``run_loaded``)."""
    model = _tail(pool=None, extra_fc=1, units=units, ties=ties, w_max=20)
    (step,) = _compare(model)
    assert step.startswith("FullyConnectedChain")
    layer = _step(model).layers[-1]
    assert type(layer).__name__ == "FullyConnectedSoftmaxTiny"
    assert (layer.softmax.pairs is not None) is (units == 2)
