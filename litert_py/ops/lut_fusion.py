"""Chains of 8-bit table lookups fused at prepare into one step.

Every 8-bit op whose output depends on one input value (``ActivationLut`` / ``ActivationLutPairs`` with a uint8
index: HARD_SWISH, RELU*, LOGISTIC, TANH, LEAKY_RELU, GELU, ...; ``QuantizedTable8Scalar``: ADD / SUB / MUL
with a one-value constant) is a 256-entry table ``f`` indexed by the input byte, and every 8-bit binary op
(``QuantizedTable8`` / ``QuantizedTable8Bytes``: ADD / SUB / MUL) is a 65,536-entry pair table ``T`` indexed by
``byte(x1) << 8 | byte(x2)``. MobileNet-v3's squeeze-excite gate ends in a hard sigmoid written as ADD 3
(RELU6) and MUL 1/6 on the gate vector, then MUL of the feature map by it: three steps, each a few numpy calls,
of which :func:`fuse_table_chains` makes one. Rules, applied until none applies:

- table ``f`` then table ``g``: one ActivationLut (ActivationLutPairs when large) of ``g[byte(f[v])]``;
- pair table ``T`` then table ``g``: the pair op with the table ``g[byte(T[i])]``;
- table ``f`` feeding input 1 (2) of a pair table ``T``: the pair op reading ``f``'s input, with
  ``T'[a << 8 | b] = T[byte(f[a]) << 8 | b]`` (``T[a << 8 | byte(f[b])]``);
- a pair table whose two inputs are one tensor (``x * x``; swish ``x * sigmoid(x)`` and Keras's hard swish
  ``x * relu6(x + 3) / 6`` once the rules above have folded the LOGISTIC / ADD, RELU6, MUL into the MUL): one
  table, the diagonal ``T[v << 8 | v]``.

Before them, :func:`_fuse_round_trips` makes one ActivationLut of each chain of elementwise steps from an 8-bit
tensor back to an 8-bit tensor through other types (DEQUANTIZE's TableLookup / DequantizeAffine, float unary ops
(UnaryPlain), a QUANTIZE: a transformer layer norm's negated mean, DEQUANTIZE -> NEG -> QUANTIZE on (1, 32, 1)),
whose table the rules above then compose further (into the MUL that reads it). Its table is made by running the
chain's own prepared steps at prepare on the 256 input values (``_round_trip_table``: one run holding them all
where every tensor is per-tensor quantized; with a per-channel one, 256 runs each filling the input, used only
where every position gives the same value, so a per-channel QUANTIZE with different scales stays as it is):
exact by construction, the steps are elementwise (a whitelist of prepared classes) and run the same numpy code at
invoke. Measured (transformer_int8, whole invokes, medians of 15 alternated rounds in one process, a loaded
machine): its two chains fold into their MULs' tables, six steps fewer, 345-356 -> 312-317 us.

Measured (interleaved medians, 1 thread): se_mobilenet's two hard sigmoids (ADD, MUL on 96 / 120 values, about
7.5 us each) go; swish as LOGISTIC + MUL over 16x16x64 24.6 -> 7.3 us; hard swish as ADD, MUL, MUL over 32x32x16
29.9 -> 7.0 us.

Exactness: bit-identical to the steps it replaces, with no bound to check: each fused table entry is the
composition of the original tables' own entries, evaluated at prepare for every input byte (pair); a lookup of
the composed table then gives, for every input, the value the chain gives.

Conditions: the intermediate tensor has one producer step, is read by one step only (once), is not a subgraph
output and has a static shape equal to the fused step's other tensors' (no broadcasting or reshape changes
meaning); the source tensor the fused step reads instead is not a variable (nothing writes it between the two
steps: tensors are written once, by their producer). DIV (its divisor check reads input 2) is not fused. The
fused step names the source as its input, so the arena planner keeps it alive until the step has run. The
interpreter does not fuse when it must keep every tensor (experimental_preserve_all_tensors) or runs its
dynamic path.

This module registers no op; ops/fusion.py runs :func:`fuse_table_chains` on the prepared steps.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .activations_quantized import ActivationLut, ActivationLutPairs
from .quantize import DequantizeAffine, QuantizeFloat, TableLookup
from .slice_views import producers_readers
from .table8 import (
    QuantizedTable8,
    QuantizedTable8Broadcast,
    QuantizedTable8Bytes,
    QuantizedTable8Scalar,
    QuantizedTable8ScalarPairs,
)
from .unary import UnaryPlain

_U8 = np.dtype(np.uint8)
_8BIT = (np.dtype(np.int8), _U8)
#: Prepared classes whose output value at each position is a function of the input value at that position alone
#: (subclasses included: QuantizeFloatStore), the steps of a round trip (_fuse_round_trips).
_ELEMENTWISE = (TableLookup, DequantizeAffine, UnaryPlain, QuantizeFloat)


def _byte_map(node, op) -> tuple[np.ndarray, int] | None:
    """(the 256-entry table indexed by the input byte, the input tensor) of a one-input 8-bit table op, or None."""
    if type(op) in (ActivationLut, ActivationLutPairs) and op.index == _U8 and len(node.operator.inputs) == 1:
        return op.table, node.operator.inputs[0]
    if type(op) in (QuantizedTable8Scalar, QuantizedTable8ScalarPairs):
        return op.lut, node.operator.inputs[op.operand]
    return None


def _pair_table(op) -> np.ndarray | None:
    """The 65,536-entry table indexed by ``byte(x1) << 8 | byte(x2)`` of a pair table op (not DIV), or None."""
    if type(op) in (QuantizedTable8, QuantizedTable8Bytes) and op.divisor_zero_point is None:
        return op.table
    if type(op) is QuantizedTable8Broadcast:
        return op.pair_table()
    return None


def _static_shape(infos, t: int):
    info = infos[t]
    return None if info.dynamic else tuple(info.shape)


def _pair_op(table: np.ndarray, ins, out: int, infos):
    """The pair op of QuantizedTable8.build for inputs ``ins`` and output ``out`` (all static)."""
    return QuantizedTable8.build(table, infos[out].shape, None, tuple(tuple(infos[i].shape) for i in ins))


def _replace(node, inputs, outputs):
    return dataclasses.replace(node, operator=dataclasses.replace(node.operator, inputs=inputs, outputs=outputs))


def _fuse_one(steps: list, infos: list, keep: set) -> list | None:
    """``steps`` with the first fusable pair of steps fused (module docstring), or None."""
    producer, readers = producers_readers(steps)
    for j, (node, op) in enumerate(steps):
        consumer_map, consumer_pair = _byte_map(node, op), _pair_table(op)
        if consumer_map is None and consumer_pair is None:
            continue
        ins = list(node.operator.inputs)
        if len(node.operator.outputs) != 1:
            continue
        u = node.operator.outputs[0]
        if consumer_pair is not None and ins[0] == ins[1] and _static_shape(infos, ins[0]) == _static_shape(infos, u):
            if _static_shape(infos, u) is not None:  # op(x, x): the table's diagonal
                diagonal = ActivationLut(np.ascontiguousarray(consumer_pair[np.arange(256) * 257]), _U8)
                return [
                    (_replace(node, (ins[0],), (u,)), ActivationLutPairs.of(diagonal, infos[u])) if i == j else s
                    for i, s in enumerate(steps)
                ]
        for m, t in enumerate(ins):
            k = producer.get(t)
            if k is None or t in keep or readers.get(t) != [j] or ins.count(t) != 1:
                continue
            pnode, pop = steps[k]
            if list(pnode.operator.outputs) != [t] or _static_shape(infos, t) is None:
                continue
            fused = None
            if consumer_map is not None and consumer_map[1] == t:
                g = consumer_map[0]
                if _static_shape(infos, u) != _static_shape(infos, t):
                    continue
                f = _byte_map(pnode, pop)
                if f is not None and _static_shape(infos, f[1]) == _static_shape(infos, t):
                    if infos[f[1]].is_variable:
                        continue
                    table = ActivationLut(np.ascontiguousarray(g[f[0].view(np.uint8)]), _U8)
                    fused = (_replace(node, (f[1],), (u,)), ActivationLutPairs.of(table, infos[f[1]]))
                pair = _pair_table(pop)
                pins = tuple(pnode.operator.inputs)
                if pair is not None and all(_static_shape(infos, i) and not infos[i].is_variable for i in pins):
                    fused = (_replace(node, pins, (u,)), _pair_op(g[pair.view(np.uint8)], pins, u, infos))
            elif consumer_pair is not None and m < 2:
                f = _byte_map(pnode, pop)
                if f is None or _static_shape(infos, f[1]) != _static_shape(infos, t) or infos[f[1]].is_variable:
                    continue
                if any(_static_shape(infos, i) is None for i in ins + [u]):
                    continue
                rows = consumer_pair.reshape(256, 256)
                idx = f[0].view(np.uint8)
                table = np.ascontiguousarray(rows[idx, :] if m == 0 else rows[:, idx]).reshape(-1)
                new_ins = tuple(f[1] if i == m else x for i, x in enumerate(ins))
                fused = (_replace(node, new_ins, (u,)), _pair_op(table, new_ins, u, infos))
            if fused is not None:
                return [fused if i == j else s for i, s in enumerate(steps) if i != k]
    return None


def _round_trip(steps: list, infos: list, keep: set, readers: dict, j: int) -> list | None:
    """The step indices of the round trip starting at step ``j`` (module docstring), or None."""
    chain, t = [], None
    while True:
        node, op = steps[j]
        ins, outs = list(node.operator.inputs), list(node.operator.outputs)
        if not isinstance(op, _ELEMENTWISE) or len(ins) != 1 or len(outs) != 1 or ins[0] < 0:
            return None
        if (t is not None and ins[0] != t) or _static_shape(infos, outs[0]) != _static_shape(infos, ins[0]):
            return None
        chain.append(j)
        t = outs[0]
        if np.dtype(infos[t].dtype) in _8BIT:
            return chain if len(chain) > 1 else None
        if t in keep or len(readers.get(t, [])) != 1:
            return None
        j = readers[t][0]


#: A round trip with a per-channel tensor is tabulated by 256 runs over its whole shape (every position must
#: agree): only up to this many values, so that prepare stays short.
ROUND_TRIP_PER_CHANNEL_MAX = 4096


def _round_trip_table(steps: list, infos: list, chain: list) -> np.ndarray | None:
    """The 256-entry table of a round trip (indexed by the input byte), or None when a step fails or the result
    depends on the position. Every tensor of the chain per-tensor quantized: its steps are elementwise with the
    same parameters at every position, so runs over the input holding the 256 byte values in turn along its flat
    positions give the table (one run from 256 values up). A per-channel tensor (its parameters depend on the
    position): a run per input value filling the whole input, each required to agree at every position, for
    inputs of at most ROUND_TRIP_PER_CHANNEL_MAX values."""
    x = steps[chain[0]][0].operator.inputs[0]
    shape = tuple(infos[x].shape)
    size = int(np.prod(shape, dtype=np.int64))
    tensors = [x] + [steps[k][0].operator.outputs[0] for k in chain]
    per_tensor = all(len(infos[t].quantization.scale or ()) <= 1 for t in tensors)
    if size == 0 or (not per_tensor and size > ROUND_TRIP_PER_CHANNEL_MAX):
        return None
    bufs = [np.empty(shape, infos[t].dtype) for t in tensors[1:]]
    table = np.empty(256, bufs[-1].dtype)
    byte = np.arange(256, dtype=np.uint8)
    runs = [np.resize(np.roll(byte, -s), size) for s in range(0, 256, size)] if per_tensor else None
    try:
        with np.errstate(all="ignore"):
            for v in range(len(runs) if per_tensor else 256):
                src = runs[v] if per_tensor else np.full(size, v, np.uint8)
                cur = src.reshape(shape).view(infos[x].dtype)
                for k, buf in zip(chain, bufs):
                    steps[k][1]([cur], [buf])
                    cur = buf
                flat = cur.reshape(-1)
                if per_tensor:
                    table[src[: min(size, 256)]] = flat[: min(size, 256)]
                elif not (flat == flat[0]).all():
                    return None
                else:
                    table[v] = flat[0]
    except Exception:  # a step that cannot run on these values: no fusion
        return None
    return table


def _fuse_round_trips(steps: list, infos: list, keep: set) -> list:
    """``steps`` with each round trip (module docstring) as one ActivationLut (ActivationLutPairs when large) at
    its last step's place, reading the first step's input."""
    _, readers = producers_readers(steps)
    new_steps: list = list(steps)
    for j in range(len(steps)):
        ins = steps[j][0].operator.inputs
        if new_steps[j] is None or len(ins) != 1 or ins[0] < 0 or infos[ins[0]].is_variable:
            continue
        if np.dtype(infos[ins[0]].dtype) not in _8BIT:
            continue
        chain = _round_trip(steps, infos, keep, readers, j)
        if chain is None or any(new_steps[k] is None for k in chain):
            continue
        table = _round_trip_table(steps, infos, chain)
        if table is None:
            continue
        x, u = steps[j][0].operator.inputs[0], steps[chain[-1]][0].operator.outputs[0]
        last = steps[chain[-1]][0]
        for k in chain:
            new_steps[k] = None
        new_steps[chain[-1]] = (_replace(last, (x,), (u,)), ActivationLutPairs.of(ActivationLut(table, _U8), infos[x]))
    return [s for s in new_steps if s is not None]


def fuse_table_chains(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with chains of 8-bit table lookups fused
    (module docstring)."""
    keep = set(outputs)
    steps = _fuse_round_trips(steps, infos, keep)
    while True:
        fused = _fuse_one(steps, infos, keep)
        if fused is None:
            return steps
        steps = fused
