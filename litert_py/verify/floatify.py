"""Float versions of a quantized model, built with litert_py's writer.

- ``float_model(model)``: the whole model in float32. Every quantized tensor becomes FLOAT32 (constants hold
  their dequantized values, per channel included; int32 biases too), QUANTIZE / DEQUANTIZE between two tensors
  that are now both float disappear (their output is an alias of their input), LSTM intermediates are dropped.
  Tensor indices stay those of the quantized model, so tensor ``i`` of one is tensor ``i`` of the other (but
  for the removed aliases: ``FloatModel.alias``).
- ``op_by_op_model(model, shapes)``: the same float ops, but each node of subgraph 0 reads fresh graph inputs
  instead of its producers' outputs, and every node's outputs are graph outputs: one invoke runs every op in
  float on whatever values are fed, here the dequantized actual inputs of the quantized ops. That gives each
  layer's own error, with one interpreter instead of one model per op.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..runtime.tensors import constant_array
from ..schema import dtypes
from ..schema.model import Buffer, BuiltinOperator, Model, Operator, SignatureDef, Subgraph, Tensor, TensorMap
from .metrics import dequantize

FLOAT32 = dtypes.TensorType.FLOAT32
_Q_DQ = {BuiltinOperator.QUANTIZE, BuiltinOperator.DEQUANTIZE}
_INT_TYPES = {
    dtypes.TensorType.INT8,
    dtypes.TensorType.UINT8,
    dtypes.TensorType.INT16,
    dtypes.TensorType.INT32,
    dtypes.TensorType.INT4,
    dtypes.TensorType.INT64,
}


def is_quantized(t: Tensor) -> bool:
    """An integer tensor with quantization scales (what dequantizes to a real value)."""
    q = t.quantization
    return q is not None and len(q.scale) > 0 and t.type in _INT_TYPES


def op_name(model: Model, op: Operator) -> str:
    return model.operator_codes[op.opcode_index].name


def dequantized_constant(model: Model, t: Tensor) -> np.ndarray | None:
    data = constant_array(model, t)
    if data is None:
        return None
    q = t.quantization
    return dequantize(np.asarray(data), q.scale, q.zero_point, q.quantized_dimension).astype(np.float32)


@dataclass(frozen=True)
class FloatModel:
    model: Model
    alias: dict  # quantized-model tensor index -> float-model tensor index (identity when absent)
    removed: frozenset  # indices of subgraph 0 nodes removed (QUANTIZE / DEQUANTIZE turned into aliases)

    def tensor(self, i: int) -> int:
        return self.alias.get(i, i)


def _float_subgraph(model: Model, sg: Subgraph, buffers: list[Buffer]) -> tuple[Subgraph, dict, frozenset]:
    tensors = list(sg.tensors)
    for i, t in enumerate(sg.tensors):
        if not is_quantized(t):
            continue
        data = dequantized_constant(model, t) if t.buffer and not t.is_variable else None
        buf = 0
        if data is not None:
            buffers.append(Buffer(np.ascontiguousarray(data).view(np.uint8).reshape(-1).copy()))
            buf = len(buffers) - 1
        tensors[i] = replace(t, type=FLOAT32, quantization=None, buffer=buf)
    alias: dict[int, int] = {}
    ops, removed = [], set()
    for k, op in enumerate(sg.operators):
        code = model.operator_codes[op.opcode_index].builtin_code
        ins = tuple(alias.get(i, i) for i in op.inputs)
        if (
            code in _Q_DQ
            and len(op.inputs) == 1
            and tensors[ins[0]].type == FLOAT32
            and tensors[op.outputs[0]].type == FLOAT32
        ):
            alias[op.outputs[0]] = ins[0]
            removed.add(k)
            continue
        ops.append(replace(op, inputs=ins, intermediates=()))
    outputs = tuple(alias.get(i, i) for i in sg.outputs)
    return replace(sg, tensors=tuple(tensors), operators=tuple(ops), outputs=outputs), alias, frozenset(removed)


def float_model(model: Model) -> FloatModel:
    """The whole model in float32 (see the module docstring)."""
    buffers = list(model.buffers)
    subgraphs, alias0, removed0 = [], {}, frozenset()
    for k, sg in enumerate(model.subgraphs):
        fsg, alias, removed = _float_subgraph(model, sg, buffers)
        subgraphs.append(fsg)
        if k == 0:
            alias0, removed0 = alias, removed
    sigs = tuple(_alias_signature(s, alias0) if s.subgraph_index == 0 else s for s in model.signature_defs)
    m = replace(model, subgraphs=tuple(subgraphs), buffers=tuple(buffers), signature_defs=sigs)
    return FloatModel(m, alias0, removed0)


def _alias_signature(s: SignatureDef, alias: dict) -> SignatureDef:
    return replace(s, outputs=tuple(TensorMap(t.name, alias.get(t.tensor_index, t.tensor_index)) for t in s.outputs))


@dataclass(frozen=True)
class OpByOp:
    """The op-by-op float model and, per node of the quantized model, where its copies live."""

    model: Model
    feeds: dict  # node -> [(quantized-model input tensor, op-by-op input tensor)]
    outputs: dict  # node -> [(quantized-model output tensor, op-by-op output tensor)]


def op_by_op_model(model: Model, shapes, nodes) -> OpByOp:
    """Every listed node of subgraph 0 in float, each on its own graph inputs (see the module docstring).

    ``shapes``: the quantized interpreter's tensor shapes after allocate_tensors (dynamic shapes resolved).
    """
    fm = float_model(model)
    fsg = fm.model.subgraphs[0]
    qsg = model.subgraphs[0]
    tensors = list(fsg.tensors)
    consts = {i for i, t in enumerate(tensors) if t.buffer and fm.model.buffers[t.buffer].data.size}
    ops, feeds, outs, inputs, outputs = [], {}, {}, [], []
    for k in nodes:
        op = qsg.operators[k]
        new_in = []
        feeds[k] = []
        for i in op.inputs:
            if i < 0 or i in consts:
                new_in.append(i)
                continue
            t = tensors[i]
            # a variable (state) input stays a variable: set to the state the quantized op saw before each invoke
            tensors.append(replace(t, name=f"{t.name}@op{k}", shape=tuple(shapes[i]), shape_signature=None, buffer=0))
            j = len(tensors) - 1
            new_in.append(j)
            feeds[k].append((i, j))
            if not t.is_variable:
                inputs.append(j)
        new_out = []
        outs[k] = []
        for o in op.outputs:
            t = tensors[o]
            tensors.append(replace(t, name=f"{t.name}@op{k}", shape=tuple(shapes[o]), shape_signature=None, buffer=0))
            j = len(tensors) - 1
            new_out.append(j)
            outs[k].append((o, j))
            outputs.append(j)
        ops.append(replace(op, inputs=tuple(new_in), outputs=tuple(new_out), intermediates=()))
    sg = replace(fsg, tensors=tuple(tensors), operators=tuple(ops), inputs=tuple(inputs), outputs=tuple(outputs))
    m = replace(fm.model, subgraphs=(sg,) + fm.model.subgraphs[1:], signature_defs=())
    return OpByOp(m, feeds, outs)
