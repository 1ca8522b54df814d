"""Match the tensors of a quantized model to the float model's tensors that hold the same values.

Subgraph 0 of both models. A tensor's *source* is found by following QUANTIZE / DEQUANTIZE chains back to the
tensor they convert (a quantized model's ``QUANTIZE(input)`` holds the float model's input). Constants and
tensors computed only from constants (weights, their float16 DEQUANTIZE) take no part.

1. Graph inputs match by position.
2. Every other tensor written by a node (not QUANTIZE / DEQUANTIZE) of the quantized model, in node order:
   - by name: a float tensor of the same name and number of elements;
   - else by graph position: the float node of the same op type whose non-constant inputs are the (sources
     of the) tensors already matched to this node's inputs, same output slot and number of elements. When
     several float nodes fit (two branches reading one tensor), they are taken in node order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..schema.model import BuiltinOperator, Model
from .floatify import is_quantized, op_name

_Q_DQ = {BuiltinOperator.QUANTIZE, BuiltinOperator.DEQUANTIZE}


@dataclass
class Graph:
    """Subgraph 0 as the matcher sees it."""

    model: Model
    const: set = field(default_factory=set)
    producer: dict = field(default_factory=dict)  # tensor -> (node, output slot)
    source: dict = field(default_factory=dict)  # tensor -> tensor, through QUANTIZE / DEQUANTIZE

    def __post_init__(self):
        sg = self.model.subgraphs[0]
        bufs = self.model.buffers
        self.const = {
            i for i, t in enumerate(sg.tensors) if t.buffer and bufs[t.buffer].data.size and not t.is_variable
        }
        for k, op in enumerate(sg.operators):
            ins = [i for i in op.inputs if i >= 0]
            for s, o in enumerate(op.outputs):
                self.producer[o] = (k, s)
            if ins and all(i in self.const for i in ins):
                self.const.update(o for o in op.outputs if o >= 0)
            if self.code(k) in _Q_DQ and len(ins) == 1:
                for o in op.outputs:
                    self.source[o] = self.source.get(ins[0], ins[0])

    def code(self, k: int) -> int:
        sg = self.model.subgraphs[0]
        return self.model.operator_codes[sg.operators[k].opcode_index].builtin_code

    def src(self, i: int) -> int:
        return self.source.get(i, i)

    def size(self, i: int) -> int:
        return int(np.prod(self.model.subgraphs[0].tensors[i].shape, dtype=np.int64))

    def compute_nodes(self):
        """Nodes that compute something (not QUANTIZE / DEQUANTIZE, not folded constants)."""
        sg = self.model.subgraphs[0]
        for k, op in enumerate(sg.operators):
            if self.code(k) in _Q_DQ or all(o in self.const for o in op.outputs if o >= 0):
                continue
            yield k, op

    def key(self, k: int, mapped_inputs) -> tuple:
        return (op_name(self.model, self.model.subgraphs[0].operators[k]), tuple(mapped_inputs))


def match_tensors(quant: Model, flt: Model) -> dict[int, int]:
    """Quantized-model tensor index -> float-model tensor index, for every tensor that could be matched."""
    q, f = Graph(quant), Graph(flt)
    qsg, fsg = quant.subgraphs[0], flt.subgraphs[0]
    matched: dict[int, int] = {}  # source tensor of q -> source tensor of f
    for qi, fi in zip(qsg.inputs, fsg.inputs):
        matched[q.src(qi)] = f.src(fi)
    by_name: dict[str, int] = {}
    for _, op in f.compute_nodes():
        for o in op.outputs:
            if o >= 0:
                by_name.setdefault(fsg.tensors[o].name, o)
    by_key: dict[tuple, list[int]] = {}
    for k, op in f.compute_nodes():
        by_key.setdefault(f.key(k, [f.src(i) for i in op.inputs if i >= 0 and i not in f.const]), []).append(k)
    used: set[int] = set(matched.values())
    for k, op in q.compute_nodes():
        ins = [q.src(i) for i in op.inputs if i >= 0 and i not in q.const]
        candidates = None
        if all(i in matched for i in ins):
            candidates = by_key.get(q.key(k, [matched[i] for i in ins]), [])
        for slot, o in enumerate(op.outputs):
            if o < 0 or o in q.const:
                continue
            fi = by_name.get(qsg.tensors[o].name)
            if fi is None or fi in used or f.size(fi) != q.size(o):
                fi = None
                for fk in candidates or ():
                    fop = fsg.operators[fk]
                    if (
                        slot < len(fop.outputs)
                        and fop.outputs[slot] not in used
                        and f.size(fop.outputs[slot]) == q.size(o)
                    ):
                        fi = fop.outputs[slot]
                        break
            if fi is not None:
                matched[o] = fi
                used.add(fi)
    out = {}
    for _, op in q.compute_nodes():
        for o in op.outputs:
            if o >= 0 and o in matched:
                out[o] = matched[o]
    return out


def compared_tensors(quant: Model) -> list[tuple[int, int]]:
    """(node, tensor) of every non-constant numeric tensor written by a computing node of the quantized model."""
    from ..schema import dtypes

    g = Graph(quant)
    sg = quant.subgraphs[0]
    numeric = {dtypes.TensorType.FLOAT32, dtypes.TensorType.FLOAT16}
    out = []
    for k, op in g.compute_nodes():
        for o in op.outputs:
            if o < 0 or o in g.const:
                continue
            t = sg.tensors[o]
            if t.type in numeric or is_quantized(t):
                out.append((k, o))
    return out
