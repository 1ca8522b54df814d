"""Constant weight tensors of the recurrent op tests: float / hybrid weights (LSTM, RNN) and the constant inputs
of an integer (int8 input, int16 cell) LSTM (test_lstm.py's int8 paths and test_lstm_integer8.py's 8x8_8 kernel).
Values are drawn from ``rng`` in input order, so a seed keeps naming the same model."""

from __future__ import annotations

import numpy as np

from tests.oracle import quant


def weights(b, rng, name, shape, hybrid: bool, max_scale: float = 0.01) -> int:
    """A constant weight tensor: float32 normal with sigma 0.4, or (``hybrid``) int8 over the whole type with a
    symmetric scale in [0.002, max_scale)."""
    if hybrid:
        w = rng.integers(-128, 128, shape).astype(np.int8)
        return b.tensor(name, shape, np.int8, data=w, quantization=quant(float(rng.uniform(0.002, max_scale))))
    return b.const(name, (rng.standard_normal(shape) * 0.4).astype(np.float32))


def i8_weights(b, rng, name, shape) -> int:
    """A constant int8 weight tensor, symmetric, scale in [0.005, 0.02)."""
    w = rng.integers(-127, 128, shape).astype(np.int8)
    return b.tensor(name, shape, np.int8, data=w, quantization=quant(float(rng.uniform(0.005, 0.02))))


def gate_inputs(b, rng, xshape, n_cell, n_out, cifg, peep, proj, proj_bias) -> list[int]:
    """Inputs 0-17 of an integer LSTM: the int8 input x (a graph input), the input and recurrent weights, the int16
    peepholes, the int32 gate biases, the projection and its bias; -1 for the ones the variant omits (CIFG: the
    input gate's)."""
    n_in = xshape[-1]
    x_q = quant(float(rng.uniform(0.02, 0.08)), int(rng.integers(-20, 20)))
    skip = {"i"} if cifg else set()
    ins = [b.input("x", xshape, np.int8, quantization=x_q)]
    ins += [-1 if g in skip else i8_weights(b, rng, f"w_{g}", (n_cell, n_in)) for g in "ifco"]
    ins += [-1 if g in skip else i8_weights(b, rng, f"r_{g}", (n_cell, n_out)) for g in "ifco"]
    for g in "ifo":
        p = rng.integers(-3000, 3000, n_cell).astype(np.int16) if peep and g not in skip else None
        q = quant(float(rng.uniform(1e-4, 1e-3))) if p is not None else None
        ins.append(-1 if p is None else b.tensor(f"p_{g}", (n_cell,), np.int16, data=p, quantization=q))
    for g in "ifco":
        bias = None if g in skip else rng.integers(-3000, 3000, n_cell).astype(np.int32)
        ins.append(-1 if bias is None else b.tensor(f"b_{g}", (n_cell,), np.int32, data=bias, quantization=quant(1e-5)))
    ins.append(i8_weights(b, rng, "proj", (n_out, n_cell)) if proj else -1)
    pb = rng.integers(-500, 500, n_out).astype(np.int32) if proj_bias else None
    ins.append(-1 if pb is None else b.tensor("proj_b", (n_out,), np.int32, data=pb, quantization=quant(1e-4)))
    return ins


def layer_norm_inputs(b, rng, n_cell, cifg, ln) -> list[int]:
    """Inputs 20-23: the int16 layer-norm weights of the gates (-1 without layer norm, and for CIFG's input gate)."""
    out = []
    for g in "ifco":
        if not ln or (cifg and g == "i"):
            out.append(-1)
            continue
        w = rng.integers(12000, 32767, n_cell).astype(np.int16)
        out.append(b.tensor(f"ln_{g}", (n_cell,), np.int16, data=w, quantization=quant(float(rng.uniform(2e-5, 4e-5)))))
    return out


def integer_lstm_model(b, rng, ins, op, tm, xshape, n_cell, n_out, cs, zos, zo, cifg, ln, cclip, pclip) -> bytes:
    """An 8x8_16 integer LSTM from its inputs 0-17 (``gate_inputs``): the int8 output_state (zero point ``zos``)
    and int16 cell state (scale 2^cs), the layer-norm weights, the 5 intermediates, the int8 output (zero point
    ``zo``) and the op (``tm``: time_major of the sequence op)."""
    s_out = float(rng.uniform(0.004, 0.012))
    batch = xshape[-2] if op != "LSTM" and tm else xshape[0]
    ins = ins + [
        b.tensor("h", (batch, n_out), np.int8, is_variable=True, quantization=quant(s_out, zos)),
        b.tensor("c", (batch, n_cell), np.int16, is_variable=True, quantization=quant(2.0**cs)),
    ]
    ins += layer_norm_inputs(b, rng, n_cell, cifg, ln)
    inter = [b.tensor(f"inter{k}", (), np.int16, quantization=quant(float(rng.uniform(2e-4, 1e-3)))) for k in range(4)]
    inter.append(
        b.tensor("hidden", (), np.int8, quantization=quant(float(rng.uniform(0.005, 0.01)), int(rng.integers(-10, 10))))
    )
    out = b.tensor("out", xshape[:-1] + (n_out,), np.int8, quantization=quant(s_out, zo))
    opts = {"fused_activation_function": 4, "cell_clip": cclip, "proj_clip": pclip}
    if op != "LSTM":
        opts["time_major"] = tm
    b.op(op, ins, [out], opts, intermediates=inter)
    b.output(out)
    return b.build()
