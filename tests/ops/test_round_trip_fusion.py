"""Round trips through float (ops/lut_fusion.py's _fuse_round_trips): elementwise steps from an 8-bit tensor back to
an 8-bit one (DEQUANTIZE, float unary ops, QUANTIZE: a transformer layer norm's negated mean) as one table
lookup, composed further into the MUL that reads it. Compared exactly with BUILTIN_REF over many invokes (every
input byte), with the prepared steps asserted: fused where the chain is elementwise and position-independent,
kept where a tensor of it is also an output, read twice, or quantized per channel with different scales."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.schema.builder import ModelBuilder, quant

I8, U8, F32 = np.int8, np.uint8, np.float32


def _chain(dtype=I8, unary=("NEG",), out_q=None, mul=True, keep_float=False, float_reader=False, shape=(1, 32, 1)):
    """x (8-bit) -> DEQUANTIZE -> ``unary`` float ops -> QUANTIZE (``out_q``) [-> MUL by a (1, 32, 64) input]."""
    signed = dtype == I8
    b = ModelBuilder()
    x = b.input("x", shape, dtype, quantization=quant(0.05, -3 if signed else 125))
    f = b.tensor("f", shape, F32)
    b.op("DEQUANTIZE", [x], [f])
    outs = []
    for k, name in enumerate(unary):
        g = b.tensor(f"g{k}", shape, F32)
        b.op(name, [f], [g])
        if keep_float and k == 0:
            outs.append(g)
        f = g
    extra = None
    if float_reader:
        extra = b.tensor("extra", shape, F32)
        b.op("ABS", [f], [extra])
    q = b.tensor("q", shape, dtype, quantization=out_q or quant(0.07, 7 if signed else 135))
    b.op("QUANTIZE", [f], [q])
    if mul:
        y = b.input("y", (1, 32, 64), dtype, quantization=quant(0.03, 2 if signed else 130))
        z = b.tensor("z", (1, 32, 64), dtype, quantization=quant(0.05, -1 if signed else 127))
        b.op("MUL", [q, y], [z], {"fused_activation_function": 0})
        outs.insert(0, z)
    else:
        outs.insert(0, q)
    if extra is not None:
        outs.append(extra)
    b.output(*outs)
    return b.build()


def _compare(model: bytes) -> list[str]:
    """Ours and BUILTIN_REF over 8 invokes (the first input takes every byte value at every position over
    them; a second input random), outputs equal; our prepared steps' class names."""
    from litert_py import Interpreter
    from tests.oracle import oracle

    LiteRT, resolver = oracle()
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    ours = Interpreter(model_content=model)
    for it in (theirs, ours):
        it.allocate_tensors()
    details = ours.get_input_details()
    rng = np.random.default_rng(6)
    for k in range(8):
        feeds = []
        for n, d in enumerate(details):
            info = np.iinfo(d["dtype"])
            if n == 0:
                every = np.arange(info.min, info.max + 1)
                feeds.append(np.resize(np.roll(every, 32 * k + k), d["shape"]).astype(d["dtype"]))
            else:
                feeds.append(rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]))
        results = []
        for it in (ours, theirs):
            for d, v in zip(it.get_input_details(), feeds):
                it.set_tensor(d["index"], v)
            it.invoke()
            results.append([it.get_tensor(o["index"]).copy() for o in it.get_output_details()])
        for got, want in zip(*results):
            np.testing.assert_array_equal(got, want)
        assert len(np.unique(results[1][0])) > 1
    return [type(op).__name__ for _, op in ours._subgraphs[0].steps_nodes]


@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("unary", [("NEG",), ("NEG", "ABS"), ()])
def test_round_trip_alone(dtype, unary):
    """DEQUANTIZE -> float ops -> QUANTIZE, the model's output: one ActivationLut."""
    assert _compare(_chain(dtype, unary, mul=False)) == ["ActivationLut"]


def test_round_trip_into_a_mul():
    """The layer norm's pattern: the round trip's table composed into the MUL's pair table (one step)."""
    names = _compare(_chain())
    assert names == ["QuantizedTable8Broadcast"]


def test_round_trip_large_input_pairs():
    assert _compare(_chain(mul=False, shape=(1, 64, 256))) == ["ActivationLutPairs"]


@pytest.mark.parametrize(
    ("kwargs", "steps"),
    [
        ({"keep_float": True, "mul": False}, ["TableLookup", "UnaryPlain", "QuantizeFloatStore"]),  # an output
        ({"float_reader": True, "mul": False}, ["TableLookup", "UnaryPlain", "UnaryPlain", "QuantizeFloatStore"]),
    ],
)
def test_round_trip_kept(kwargs, steps):
    """A float tensor of the chain that is also a model output, or read by another step: no fusion."""
    assert _compare(_chain(**kwargs)) == steps


def test_per_channel_quantize_is_not_fused():
    """QUANTIZE per channel with different scales: positions differ, the steps stay."""
    q = quant([0.04, 0.05, 0.03, 0.06], [1, 2, 3, 4], 2)
    names = _compare(_chain(out_q=q, mul=False, shape=(1, 3, 4)))
    assert names == ["TableLookup", "UnaryPlain", "QuantizeFloatStore"]


@pytest.mark.parametrize(("shape", "fused"), [((1, 64, 64), True), ((1, 64, 65), False)])
def test_per_channel_round_trip_size_cap(shape, fused):
    """A per-channel QUANTIZE with equal scales: tabulated by a run per input value (every position must agree)
    up to ROUND_TRIP_PER_CHANNEL_MAX values (4096 here), left as steps past it (prepare stays short)."""
    from litert_py.ops.lut_fusion import ROUND_TRIP_PER_CHANNEL_MAX

    c = shape[-1]
    assert (np.prod(shape) <= ROUND_TRIP_PER_CHANNEL_MAX) == fused
    q = quant([0.07] * c, [7] * c, 2)
    names = _compare(_chain(out_q=q, mul=False, shape=shape))
    assert (names[-1] != "QuantizeFloatStore") == fused, names  # fused: one table step; else the chain's steps
    assert len(names) == (1 if fused else 3), names
