"""Validation of a decoded ``schema.model.Model``: every cross-reference checked the way LiteRT's InterpreterBuilder
does (tensor, buffer, opcode, subgraph indices; quantization and sparsity parameters; buffer sizes against tensor
shapes; the schema version; external buffers), so that nothing past the reader sees an index or size it must check
again. Cycles between *subgraphs* (a WHILE body calling itself) are found here too. ``reader.decode_model`` calls
``validate`` on every model it decodes.

Sources matched: tflite/core/interpreter_builder.cc (ParseTensors, ParseNodes, ParseQuantization, ParseSparsity,
BuildLocalIndexToRegistrationMapping), tflite/core/subgraph.cc (the buffer size checks of SetTensorParametersReadOnly).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidModelError
from . import dtypes
from .model import (
    BuiltinOperator,
    Model,
    Operator,
    Tensor,
)

#: The schema version LiteRT's InterpreterBuilder accepts (TFLITE_SCHEMA_VERSION); it rejects every other.
SCHEMA_VERSION = 3
#: Largest number of elements a tensor may declare. Keeps a hostile shape from asking for exabytes.
MAX_TENSOR_ELEMENTS = 1 << 40


def tensor_num_elements(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _bounded_num_elements(shape) -> int | None:
    """Elements of a shape of non-negative dims, or None once the count passes MAX_TENSOR_ELEMENTS."""
    if 0 in shape:
        return 0
    n = 1
    for d in shape:
        n *= d
        if n > MAX_TENSOR_ELEMENTS:
            return None
    return n


def expected_buffer_bytes(t: Tensor) -> int | None:
    """Bytes a dense constant buffer of this tensor must hold, or None when the shape does not tell."""
    if t.type in dtypes.OBJECT_TYPES or t.sparsity is not None:
        return None
    return dtypes.buffer_bytes(t.type, tensor_num_elements(t.shape))


def _string_buffer_error(raw: np.ndarray, count: int) -> str | None:
    """What is wrong with a STRING tensor's buffer (int32 count, int32 offsets[count + 1], bytes), if anything."""
    n = raw.size
    if n < 4:
        return f"a string buffer needs at least 4 bytes, it has {n}"
    got = int(raw[:4].view("<i4")[0])
    if got != count:
        return f"the string buffer holds {got} strings for {count} elements"
    if 4 * (count + 2) > n:
        return f"{count} strings need {4 * (count + 2)} header bytes, the buffer has {n}"
    offs = raw[4 : 4 * (count + 2)].view("<i4").astype(np.int64)
    if offs[0] != 4 * (count + 2) or offs[-1] > n or np.any(np.diff(offs) < 0):
        return "the string buffer's offsets are out of order or out of range"
    return None


def _sparsity_values(t: Tensor, where: str) -> int:
    """Check a tensor's sparsity parameters (TACO format); return the number of values its buffer holds."""
    sp = t.sparsity
    rank, order, dims = len(t.shape), sp.traversal_order, sp.dim_metadata
    m = len(order)
    if len(dims) != m or m < rank or len(sp.block_map) != m - rank:
        raise InvalidModelError(
            f"{where}: sparsity has {m} traversal_order, {len(dims)} dim_metadata and "
            f"{len(sp.block_map)} block_map entries for rank {rank}"
        )
    if sorted(order) != list(range(m)):
        raise InvalidModelError(f"{where}: sparsity traversal_order {list(order)} is not a permutation")
    if any(not 0 <= b < rank for b in sp.block_map):
        raise InvalidModelError(f"{where}: sparsity block_map {list(sp.block_map)} out of range for rank {rank}")
    position = {d: p for p, d in enumerate(order)}
    block_sizes = [dims[position[rank + j]].dense_size for j in range(m - rank)]
    sizes = list(t.shape) + block_sizes  # the size of each traversed dimension, by dimension id
    for j, b in enumerate(sp.block_map):
        if block_sizes[j] <= 0 or t.shape[b] % block_sizes[j]:
            raise InvalidModelError(
                f"{where}: block size {block_sizes[j]} does not divide dimension {b} of shape {list(t.shape)}"
            )
        sizes[b] = sizes[b] // block_sizes[j]
    nodes = 1
    for p, d in enumerate(dims):
        size = sizes[order[p]]
        if d.format == 0:  # DENSE
            if d.dense_size != size:
                raise InvalidModelError(f"{where}: dense dimension {p} has dense_size {d.dense_size}, expected {size}")
            nodes *= size
        elif d.format == 1:  # SPARSE_CSR
            segs, idx = np.asarray(d.array_segments, np.int64), np.asarray(d.array_indices, np.int64)
            if d.array_segments_type == 0 or d.array_indices_type == 0:
                raise InvalidModelError(f"{where}: sparse dimension {p} lacks array_segments or array_indices")
            if (
                segs.size != nodes + 1
                or segs[0] != 0
                or segs[-1] != idx.size
                or np.any(np.diff(segs) < 0)
                or np.any(idx < 0)
                or np.any(idx >= size)
            ):
                raise InvalidModelError(f"{where}: sparse dimension {p} has inconsistent array_segments/array_indices")
            nodes = idx.size
        else:
            raise InvalidModelError(f"{where}: dimension {p} has unknown format {d.format}")
        if nodes > MAX_TENSOR_ELEMENTS:
            raise InvalidModelError(f"{where}: sparsity describes too many values")
    return nodes


def _check_quantization(t: Tensor, where: str, nt: int) -> None:
    """LiteRT's InterpreterBuilder::ParseQuantization checks, plus the details' tensor indices."""
    q = t.quantization
    if q is None:
        return
    if q.details is not None:
        if not 0 <= q.details.scales < nt or not -1 <= q.details.zero_points < nt:
            raise InvalidModelError(
                f"{where}: quantization details refer to tensors {q.details.scales}, {q.details.zero_points} of {nt}"
            )
        return
    if not q.scale:
        return
    if len(q.zero_point) != len(q.scale):
        raise InvalidModelError(
            f"{where}: QuantizationParam has {len(q.zero_point)} zero_point values and "
            f"{len(q.scale)} scale values. Must have same number."
        )
    rank = len(t.shape)
    if q.quantized_dimension < 0 or (rank and q.quantized_dimension >= rank):
        raise InvalidModelError(
            f"{where}: quantized_dimension must be in range [0, {rank}). Was {q.quantized_dimension}."
        )
    if len(q.scale) != 1 and rank and len(q.scale) != t.shape[q.quantized_dimension]:
        raise InvalidModelError(
            f"{where}: num_scales must be 1 for per-layer quantization, or "
            f"{t.shape[q.quantized_dimension]} for per-axis quantization, but got {len(q.scale)}."
        )


def _check_tensor(model: Model, t: Tensor, where: str, nt: int, external_ids: set[int]) -> None:
    nbuf = len(model.buffers)
    if t.type not in dtypes.TENSOR_TYPE_NAMES:
        raise InvalidModelError(f"{where} has unknown type {t.type}")
    if any(d < 0 for d in t.shape):
        raise InvalidModelError(f"{where} has a negative dimension in {list(t.shape)}")
    count = _bounded_num_elements(t.shape)
    if count is None:
        raise InvalidModelError(f"{where} shape {list(t.shape)} has over {MAX_TENSOR_ELEMENTS} elements")
    if t.shape_signature is not None and any(d < -1 for d in t.shape_signature):
        raise InvalidModelError(f"{where} has invalid shape_signature {list(t.shape_signature)}")
    for v in t.variant_tensors:
        if v.type not in dtypes.TENSOR_TYPE_NAMES or any(d < -1 for d in v.shape or ()):
            raise InvalidModelError(f"{where} has an invalid variant subtype {v}")
    if not 0 <= t.buffer < nbuf:
        raise InvalidModelError(f"{where} refers to buffer {t.buffer} of {nbuf}")
    if t.external_buffer and t.external_buffer not in external_ids:
        raise InvalidModelError(f"{where} refers to external buffer id {t.external_buffer}, which the model lacks")
    _check_quantization(t, where, nt)
    data = model.buffers[t.buffer].data
    if t.sparsity is not None:
        values = _sparsity_values(t, where)
        want = dtypes.buffer_bytes(t.type, values)
    elif t.type in (dtypes.TensorType.RESOURCE, dtypes.TensorType.VARIANT):
        if data.size:
            raise InvalidModelError(
                f"{where}: a {dtypes.type_name(t.type)} tensor cannot hold constant data "
                f"(its buffer has {data.size} bytes)"
            )
        return
    elif t.type == dtypes.TensorType.STRING:
        if data.size and (problem := _string_buffer_error(data, count)):
            raise InvalidModelError(f"{where}: {problem}")
        return
    else:
        want = dtypes.buffer_bytes(t.type, count)
    if data.size and want is not None and data.size != want:
        raise InvalidModelError(
            f"{where} of shape {list(t.shape)} {dtypes.type_name(t.type)} needs {want} bytes "
            f"but its buffer has {data.size}"
        )


def _subgraph_refs(op: Operator) -> list[tuple[str, int]]:
    """(field, subgraph index) for every subgraph an operator's options name."""
    refs = []
    for opts in (op.builtin_options, op.builtin_options2):
        for key, val in (opts or {}).items():
            if key.endswith("subgraph_index"):
                refs.append((key, val))
            elif key in ("branch_subgraph_indices", "called_computations"):
                refs.extend((key, v) for v in val)
    return refs


def _find_cycle(edges: dict[int, set[int]]) -> list[int] | None:
    """A cycle in the subgraph call graph, as a path, or None (iterative DFS: no recursion limit)."""
    state: dict[int, int] = {}  # 1 on the stack, 2 done
    for root in edges:
        if state.get(root):
            continue
        stack = [(root, iter(sorted(edges.get(root, ()))))]
        path = [root]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(sorted(edges.get(nxt, ())))))
                path.append(nxt)
    return None


def validate(model: Model) -> None:
    """Check every cross-reference of a decoded model; raise ``InvalidModelError`` naming the first bad one."""
    _validate_header(model)
    external_ids = _validate_external_buffers(model)
    calls: dict[int, set[int]] = {}
    for si, sg in enumerate(model.subgraphs):
        _validate_subgraph(model, si, sg, external_ids, calls)
    cycle = _find_cycle(calls)
    if cycle is not None:
        raise InvalidModelError(f"subgraphs call one another in a cycle: {' -> '.join(map(str, cycle))}")
    nsub = len(model.subgraphs)
    for s in model.signature_defs:
        if not 0 <= s.subgraph_index < nsub:
            raise InvalidModelError(f"signature {s.signature_key!r} refers to subgraph {s.subgraph_index} of {nsub}")
        nt = len(model.subgraphs[s.subgraph_index].tensors)
        for m in s.inputs + s.outputs:
            if not 0 <= m.tensor_index < nt:
                raise InvalidModelError(f"signature {s.signature_key!r} refers to tensor {m.tensor_index} of {nt}")


def _validate_header(model: Model) -> None:
    """Schema version, subgraphs and buffers present, operator codes, metadata buffer references."""
    nbuf, nsub = len(model.buffers), len(model.subgraphs)
    if model.version != SCHEMA_VERSION:
        raise InvalidModelError(
            f"Model provided is schema version {model.version} not equal to supported version {SCHEMA_VERSION}."
        )
    if nsub == 0:
        raise InvalidModelError("The model has no subgraphs")
    if nbuf == 0:
        raise InvalidModelError("The model has no buffers (buffer 0, the empty sentinel, is required)")
    if model.buffers[0].data.size:
        raise InvalidModelError(f"buffer 0 must be the empty sentinel, it holds {model.buffers[0].data.size} bytes")
    for k, code in enumerate(model.operator_codes):
        if code.builtin_code < 0:
            raise InvalidModelError(f"operator code {k} has invalid builtin code {code.builtin_code}")
        if code.builtin_code == BuiltinOperator.CUSTOM and code.custom_code is None:
            raise InvalidModelError(f"operator code {k}: Operator with CUSTOM builtin_code has no custom_code.")
        if code.version < 1:
            raise InvalidModelError(f"operator code {k} has version {code.version}")
    for m in model.metadata:
        if not 0 <= m.buffer < nbuf:
            raise InvalidModelError(f"metadata {m.name!r} refers to buffer {m.buffer} of {nbuf}")
    for b in model.metadata_buffer:
        if not 0 <= b < nbuf:
            raise InvalidModelError(f"metadata_buffer refers to buffer {b} of {nbuf}")


def _validate_external_buffers(model: Model) -> set[int]:
    """The ids of the external buffers, each checked unique, non-zero and in an existing group."""
    external_ids: set[int] = set()
    for e in model.external_buffers:
        if e.id in external_ids or e.id == 0:
            raise InvalidModelError(f"external buffer id {e.id} is 0 or not unique")
        if e.group >= len(model.external_buffer_groups):
            raise InvalidModelError(
                f"external buffer {e.id} refers to group {e.group} of {len(model.external_buffer_groups)}"
            )
        external_ids.add(e.id)
    return external_ids


def _validate_subgraph(model: Model, si: int, sg, external_ids: set[int], calls: dict[int, set[int]]) -> None:
    """Tensors, input/output and operator tensor indices, opcode indices and subgraph references of subgraph
    ``si``; the subgraphs it calls are added to ``calls[si]``."""
    nsub, nops, nt = len(model.subgraphs), len(model.operator_codes), len(sg.tensors)
    for ti, t in enumerate(sg.tensors):
        _check_tensor(model, t, f"subgraph {si} tensor {ti} ({t.name!r})", nt, external_ids)
    for name, idx in (("input", sg.inputs), ("output", sg.outputs)):
        for i in idx:
            if not 0 <= i < nt:
                raise InvalidModelError(f"subgraph {si} {name} tensor index {i} out of range [0, {nt})")
    for oi, op in enumerate(sg.operators):
        where = f"subgraph {si} operator {oi}"
        if not 0 <= op.opcode_index < nops:
            raise InvalidModelError(f"{where} has opcode index {op.opcode_index} of {nops}")
        for kind, idx in (("reads", op.inputs), ("writes", op.outputs), ("has intermediate", op.intermediates)):
            for i in idx:
                if not -1 <= i < nt:
                    raise InvalidModelError(f"{where} {kind} tensor {i} of {nt}")
        for key, val in _subgraph_refs(op):
            if not 0 <= val < nsub:
                raise InvalidModelError(f"{where}: {key} {val} of {nsub} subgraphs")
            calls.setdefault(si, set()).add(val)
