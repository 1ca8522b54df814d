"""Chains of 8-bit table lookups fused into one step (litert_py/ops/lut_fusion.py): each model asserts the prepared
steps left after fusion and compares with the oracle (ai-edge-litert BUILTIN_REF) exactly over every input byte
of each input (a composed table indexed or ordered wrongly shows), also where the fusion must not apply."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import oracle

I8, U8 = np.int8, np.uint8
RELU6 = 3


class _Net:
    """A tiny 8-bit model builder: tensors named by the op that made them."""

    def __init__(self, dtype):
        self.b, self.dtype, self.n = ModelBuilder(), dtype, 0
        self.signed = dtype == I8

    def input(self, shape, scale, zp):
        self.n += 1
        return self.b.input(
            f"in{self.n}", shape, self.dtype, quantization=quant(scale, zp if self.signed else zp + 128)
        )

    def op(self, op, ins, shape, scale, zp, options=None):
        self.n += 1
        t = self.b.tensor(f"t{self.n}", shape, self.dtype, quantization=quant(scale, zp if self.signed else zp + 128))
        self.b.op(op, ins, [t], options or {})
        return t

    def const(self, value, scale, zp):
        self.n += 1
        q = quant(scale, zp if self.signed else zp + 128)
        return self.b.const(f"c{self.n}", np.full((1,), value, self.dtype), quantization=q)

    def build(self, *outs):
        for o in outs:
            self.b.output(o)
        return self.b.build()


def _se_gate(net: _Net, gate_shape, feat_shape, swap: bool = False):
    """hard sigmoid as ADD 3 (RELU6) and MUL 1/6, then MUL of the features by the gate (MobileNet-v3's SE)."""
    feat = net.input(feat_shape, 0.05, -10)
    gate = net.input(gate_shape, 0.1, 5)
    three = net.const(30 if net.signed else 158, 0.1, 0)
    added = net.op("ADD", [gate, three], gate_shape, 6 / 255, -128, {"fused_activation_function": RELU6})
    sixth = net.const(43 if net.signed else 171, 1 / 256, 0)
    hsig = net.op("MUL", [added, sixth], gate_shape, 1 / 256, -128)
    out_shape = np.broadcast_shapes(tuple(feat_shape), tuple(gate_shape))
    return net.op("MUL", [hsig, feat] if swap else [feat, hsig], out_shape, 0.04, -3)


def _models():
    """name -> (model, the prepared classes left after fusion)"""
    cases = {}
    for dtype, tag in ((I8, "int8"), (U8, "uint8")):
        net = _Net(dtype)
        out = _se_gate(net, (1, 1, 1, 24), (1, 4, 4, 24))
        cases[f"se-gate-{tag}"] = (net.build(out), ["QuantizedTable8Bytes"])  # 384 values: broadcasting bytes
        net = _Net(dtype)
        out = _se_gate(net, (1, 1, 1, 24), (1, 4, 4, 24), swap=True)
        cases[f"se-gate-input1-{tag}"] = (net.build(out), ["QuantizedTable8Bytes"])
        for swap in (False, True):  # larger: the transposed-table broadcast form
            net = _Net(dtype)
            out = _se_gate(net, (1, 1, 1, 40), (1, 8, 8, 40), swap=swap)
            cases[f"se-gate-large-{'input1' if swap else 'input2'}-{tag}"] = (
                net.build(out),
                ["QuantizedTable8Broadcast"],
            )
        # table -> table: LOGISTIC then HARD_SWISH, large (pairs)
        net = _Net(dtype)
        x = net.input((1, 32, 32, 16), 0.06, 3)
        s = net.op("LOGISTIC", [x], (1, 32, 32, 16), 1 / 256, -128)
        cases[f"lut-lut-{tag}"] = (
            net.build(net.op("HARD_SWISH", [s], (1, 32, 32, 16), 0.01, -50)),
            ["ActivationLutPairs"],
        )
        # pair -> table: ADD then HARD_SWISH
        net = _Net(dtype)
        a, b = net.input((1, 4, 4, 8), 0.05, -7), net.input((1, 4, 4, 8), 0.03, 11)
        s = net.op("ADD", [a, b], (1, 4, 4, 8), 0.07, 3)
        cases[f"pair-lut-{tag}"] = (
            net.build(net.op("HARD_SWISH", [s], (1, 4, 4, 8), 0.02, -20)),
            ["QuantizedTable8Bytes"],
        )
    # not fused: the intermediate is also a subgraph output; read twice (x * x); a broadcast operand reshaped
    net = _Net(I8)
    x = net.input((1, 4, 4, 8), 0.05, -7)
    s = net.op("HARD_SWISH", [x], (1, 4, 4, 8), 0.03, -40)
    cases["kept-output"] = (net.build(net.op("LOGISTIC", [s], (1, 4, 4, 8), 1 / 256, -128), s), ["ActivationLut"] * 2)
    # x * x: the pair table's diagonal, then composed with the table before it
    net = _Net(I8)
    x = net.input((1, 4, 4, 8), 0.05, -7)
    s = net.op("HARD_SWISH", [x], (1, 4, 4, 8), 0.03, -40)
    cases["square"] = (net.build(net.op("MUL", [s, s], (1, 4, 4, 8), 0.02, 1)), ["ActivationLut"])
    # swish (SiLU) as LOGISTIC and MUL: x * sigmoid(x), one table
    net = _Net(I8)
    x = net.input((1, 16, 16, 64), 0.05, -7)
    sig = net.op("LOGISTIC", [x], (1, 16, 16, 64), 1 / 256, -128)
    cases["swish"] = (net.build(net.op("MUL", [sig, x], (1, 16, 16, 64), 0.03, -100)), ["ActivationLutPairs"])
    # Keras's hard swish as ADD / RELU6 / MUL ops: x * relu6(x + 3) / 6 in both orders, small and large
    for shape, cls in (((1, 4, 4, 8), "ActivationLut"), ((1, 32, 32, 16), "ActivationLutPairs")):
        for order in ("gate-first", "product-first"):
            net = _Net(I8)
            x = net.input(shape, 0.05, -7)
            added = net.op(
                "ADD", [x, net.const(60, 0.05, 0)], shape, 6 / 255, -128, {"fused_activation_function": RELU6}
            )
            if order == "gate-first":
                hsig = net.op("MUL", [added, net.const(43, 1 / 256, 0)], shape, 1 / 256, -128)
                out = net.op("MUL", [x, hsig], shape, 0.03, -20)
            else:
                prod = net.op("MUL", [x, added], shape, 0.15, -20)
                out = net.op("MUL", [prod, net.const(43, 1 / 256, 0)], shape, 0.03, -20)
            cases[f"keras-hard-swish-{order}-{shape[1]}"] = (net.build(out), [cls])
    return cases


CASES = _models()


def _feeds(it, rng):
    """Per input: the 256 byte values tiled (each value reaches every position class), then random values."""
    out = []
    for k in range(3):
        feeds = []
        for d in it.get_input_details():
            info = np.iinfo(d["dtype"])
            size = int(np.prod(d["shape"]))
            v = (np.arange(size) * (1 + 2 * k + 4 * len(feeds))) % 256 + info.min
            if k == 2:
                v = rng.integers(info.min, info.max + 1, size)
            feeds.append(v.astype(d["dtype"]).reshape(d["shape"]))
        out.append(feeds)
    if all(int(np.prod(d["shape"])) < 256 for d in it.get_input_details()):  # all pairs of small inputs
        sizes = [int(np.prod(d["shape"])) for d in it.get_input_details()]
        info = np.iinfo(it.get_input_details()[0]["dtype"])
        for start in range(0, 256, min(sizes)):
            out.append(
                [
                    ((np.arange(n) + start + j * 37) % 256 + info.min).astype(d["dtype"]).reshape(d["shape"])
                    for j, (n, d) in enumerate(zip(sizes, it.get_input_details()))
                ]
            )
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_table_chains_against_reference(case):
    model, classes = CASES[case]
    LiteRT, OpResolverType = oracle()
    theirs = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    ours = litert_py.Interpreter(model_content=model)
    theirs.allocate_tensors()
    ours.allocate_tensors()
    assert [type(op).__name__ for _, op in ours._subgraphs[0].steps_nodes] == classes
    rng = np.random.default_rng(7)
    for feeds in _feeds(ours, rng):
        for it in (theirs, ours):
            for d, v in zip(it.get_input_details(), feeds):
                it.set_tensor(d["index"], v)
            it.invoke()
        for dt, do in zip(theirs.get_output_details(), ours.get_output_details()):
            want, got = theirs.get_tensor(dt["index"]), ours.get_tensor(do["index"])
            np.testing.assert_array_equal(got, want)
            assert len(np.unique(want)) > 4  # the outputs vary: a misplaced entry shows
