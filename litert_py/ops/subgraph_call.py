"""What kernels that call subgraphs share (CALL_ONCE, WHILE, IF in control_flow.py; the StableHLO ops with
subgraphs in ops/stablehlo/core.py and ops/stablehlo/structured.py): the callee's prepared runtime, checked
against recursion (``callee_runtime``), its input/output type checks and the copy of its results into the node's
outputs."""

from __future__ import annotations

import numpy as np

from ..schema import dtypes
from .registry import OpContext


def _subgraph_refs(op) -> list[int]:
    refs = []
    for opts in (op.builtin_options, op.builtin_options2):
        for key, val in (opts or {}).items():
            if key.endswith("subgraph_index"):
                refs.append(int(val))
            elif key in ("branch_subgraph_indices", "called_computations"):
                refs.extend(int(v) for v in val)
    return refs


def called_subgraphs(model, k: int) -> set[int]:
    """The subgraphs subgraph ``k`` calls, directly or through others (``k`` itself only if it is on a cycle)."""
    n = len(model.subgraphs)
    seen: set[int] = set()
    todo = [r for op in model.subgraphs[k].operators for r in _subgraph_refs(op) if 0 <= r < n]
    while todo:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        for op in model.subgraphs[s].operators:
            todo.extend(r for r in _subgraph_refs(op) if 0 <= r < n)
    return seen


def callee_runtime(ctx: OpContext, k: int):
    """The runtime of subgraph ``k``, after checking that it never calls back into the caller's subgraph."""
    model = ctx.model
    n = len(model.subgraphs)
    ctx.check(0 <= k < n, f"subgraph index {k} out of range [0, {n})")
    if k == ctx.subgraph_index or ctx.subgraph_index in called_subgraphs(model, k):
        raise ctx.fail(f"subgraph {ctx.subgraph_index} calls itself recursively through subgraph {k}")
    return ctx.subgraph(k)


def _type_name(t: int) -> str:
    return dtypes.type_name(t)


def check_subgraph_io_types(ctx: OpContext, sub, role: str, which: str, tensors, expected) -> None:
    """The subgraph's inputs (or outputs) have the given TensorTypes, in count and in order."""
    idx = sub.sg.inputs if which == "inputs" else sub.sg.outputs
    ctx.check(
        len(idx) == len(expected), f"{role} subgraph {sub.index} has {len(idx)} {which}, the node needs {len(expected)}"
    )
    for k, (i, want) in enumerate(zip(idx, expected)):
        got = sub.sg.tensors[i].type
        ctx.check(
            got == want,
            f"{role} subgraph {sub.index} {which[:-1]} {k} is {_type_name(got)}, the node's is {_type_name(want)}",
        )


def subgraph_output_infos(sub):
    """What prepare knows of the outputs of the subgraph runtime ``sub``."""
    return [sub.infos[o] for o in sub.sg.outputs]


def store_outputs(outputs, values, dynamic: bool) -> None:
    """Copy a callee's results into the node's outputs (new arrays when the output shapes are dynamic)."""
    for k, v in enumerate(values):
        if dynamic:
            outputs[k] = np.array(v, copy=True)
        else:
            outputs[k][...] = v
