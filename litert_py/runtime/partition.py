"""Split a subgraph's nodes into delegated partitions, as TFLite's delegate flow does.

``partition_nodes`` follows TFLite's ``PartitionGraphIntoIndependentNodeSubsets`` (tensorflow/lite/graph_info.cc):
subsets are built in "epochs"; each epoch takes, in node order and repeatedly until nothing changes, every node
of one kind (supported or not) whose inputs are ready, the kind being that of the first ready node. A tensor
produced in an epoch is ready for the rest of it. Every subset then only reads tensors of earlier subsets or its
own, so replacing a supported subset with one node never creates a cycle, and executing the subsets in order is a
topological order. ``GraphPartitionHelper`` (tensorflow/lite/delegates/utils.cc) then drops supported subsets with
fewer than ``min_nodes`` nodes; we partition again with those nodes unsupported, as TFLite's
``ReplaceNodeSubsetsWithDelegateKernels`` does with the nodes the delegate finally asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..schema.model import BuiltinOperator, Operator, OperatorCode


@dataclass
class Subset:
    supported: bool
    nodes: list[int] = field(default_factory=list)  # positions in the node list given to partition_nodes


def _epochs(ins: Sequence[Sequence[int]], outs: Sequence[Sequence[int]], supported: Sequence[bool]) -> list[Subset]:
    produced = {t for o in outs for t in o if t >= 0}
    ready = set()  # tensors produced by a node already placed (all others are always ready)
    done = [False] * len(ins)
    subsets: list[Subset] = []
    while not all(done):
        subset: Subset | None = None
        changed = True
        while changed:
            changed = False
            for k in range(len(ins)):
                if done[k] or (subset is not None and subset.supported != supported[k]):
                    continue
                if any(t >= 0 and t in produced and t not in ready for t in ins[k]):
                    continue
                if subset is None:
                    subset = Subset(supported[k])
                    subsets.append(subset)
                subset.nodes.append(k)
                done[k] = True
                ready.update(t for t in outs[k] if t >= 0)
                changed = True
        if subset is None:  # a cycle in the model: leave the rest in order, unsupported
            subsets.append(Subset(False, [k for k in range(len(ins)) if not done[k]]))
            break
    return subsets


def partition_nodes(
    ins: Sequence[Sequence[int]], outs: Sequence[Sequence[int]], supported: Sequence[bool], min_nodes: int = 1
) -> list[Subset]:
    """Subsets of node positions, in an execution order: supported subsets have >= ``min_nodes`` nodes."""
    supported = list(supported)
    subsets = _epochs(ins, outs, supported)
    small = [s for s in subsets if s.supported and len(s.nodes) < max(1, min_nodes)]
    if small:
        for s in small:
            for k in s.nodes:
                supported[k] = False
        subsets = _epochs(ins, outs, supported)
    return subsets


def subset_io(nodes: Sequence, positions: Sequence[int], graph_outputs: Sequence[int]) -> tuple[list[int], list[int]]:
    """(inputs, outputs) of the subset: tensors its nodes read that it does not produce (constants included, as in
    TFLite's delegate node), and tensors it produces that other nodes or the graph outputs read."""
    inside = set(positions)
    produced: list[int] = []
    for k in positions:
        produced.extend(t for t in nodes[k].operator.outputs if t >= 0)
    own = set(produced)
    inputs: list[int] = []
    for k in positions:
        for t in nodes[k].operator.inputs:
            if t >= 0 and t not in own and t not in inputs:
                inputs.append(t)
    read_outside = {t for k, n in enumerate(nodes) if k not in inside for t in n.operator.inputs if t >= 0}
    read_outside |= set(graph_outputs)
    outputs = [t for t in produced if t in read_outside]
    return inputs, outputs


DELEGATE_CODE = OperatorCode(BuiltinOperator.DELEGATE)


def delegate_operator(inputs: Sequence[int], outputs: Sequence[int]) -> Operator:
    return Operator(opcode_index=-1, inputs=tuple(inputs), outputs=tuple(outputs))


@dataclass(eq=False)
class DelegateNode:
    """The node that replaces one partition: the runtime prepares and invokes it like any other node."""

    index: int  # after the model's nodes, as LiteRT numbers its delegate nodes
    operator: Operator
    delegate: object
    members: list  # the replaced nodes, in an execution order
    kernel: object = None  # a KernelEntry whose prepare builds the Partition and calls delegate.prepare
    code: OperatorCode = DELEGATE_CODE

    @property
    def name(self) -> str:
        return getattr(self.delegate, "name", type(self.delegate).__name__)


def _foldable(runtime, nodes) -> set[int]:
    """Positions of nodes the runtime folds at prepare (stateless, every input constant, transitively); their
    outputs are computed now and given to ``supports`` as constants."""
    known = dict(runtime.constants)
    out: set[int] = set()
    for k, node in enumerate(nodes):
        ins = [i for i in node.operator.inputs if i >= 0]
        if node.kernel is None or node.kernel.stateful or not ins or not all(i in known for i in ins):
            continue
        infos = {
            i: runtime._info(i)
            for i in list(node.operator.inputs) + list(node.operator.outputs) + list(node.operator.intermediates)
            if i >= 0
        }
        for i in ins:
            infos[i].data = known[i]
        try:
            op = runtime._prepare_node(node, infos)
            outs = [runtime._new_array(infos[o]) if o >= 0 else None for o in node.operator.outputs]
            op([known.get(i) if i >= 0 else None for i in node.operator.inputs], outs)
        except Exception:
            continue
        for o, arr in zip(node.operator.outputs, outs):
            if o >= 0:
                known[o] = arr
        out.add(k)
    runtime.delegate_constants = {i: a for i, a in known.items() if i not in runtime.constants}
    return out


def apply_delegates(runtime, nodes: list, delegates: Sequence) -> list:
    """The subgraph's node list after every delegate has claimed its partitions (in order)."""
    from ..ops.registry import KernelEntry

    if not delegates or not nodes:
        return nodes
    foldable = _foldable(runtime, nodes)
    infos = {}
    for i in range(len(runtime.sg.tensors)):
        infos[i] = runtime._info(i)
        if i in runtime.delegate_constants:
            infos[i].data = runtime.delegate_constants[i]
            infos[i].shape = runtime.delegate_constants[i].shape
    n_model = len(runtime.sg.operators)
    for delegate in delegates:
        supports = getattr(delegate, "supports", None)
        if supports is None:
            continue
        flags = []
        for k, node in enumerate(nodes):
            ok = False
            if not isinstance(node, DelegateNode) and k not in foldable:
                ok = bool(supports(node, runtime._context(node, infos)))
            flags.append(ok)
        if not any(flags):
            continue
        subsets = partition_nodes(
            [n.operator.inputs for n in nodes],
            [n.operator.outputs for n in nodes],
            flags,
            getattr(delegate, "min_nodes", 1),
        )
        new_nodes, new_foldable = [], set()
        for s in subsets:
            if not s.supported:
                for k in s.nodes:
                    if k in foldable:
                        new_foldable.add(len(new_nodes))
                    new_nodes.append(nodes[k])
                continue
            ins, outs = subset_io(nodes, s.nodes, runtime.sg.outputs)
            members = [nodes[k] for k in s.nodes]
            index = (
                n_model
                + sum(isinstance(n, DelegateNode) for n in nodes)
                + sum(isinstance(n, DelegateNode) for n in new_nodes)
            )
            dnode = DelegateNode(index, delegate_operator(ins, outs), delegate, members)
            stateful = any(m.kernel is None or m.kernel.stateful for m in members)
            dnode.kernel = KernelEntry(_partition_prepare(runtime, dnode), stateful=stateful)
            new_nodes.append(dnode)
        nodes, foldable = new_nodes, new_foldable
    return nodes


def _partition_prepare(runtime, dnode: DelegateNode):
    def prepare(ctx):
        from ..delegates import Partition

        tensors = {}
        for i, info in zip(dnode.operator.inputs, ctx.inputs):
            tensors[i] = info
        for o, info in zip(dnode.operator.outputs, ctx.outputs):
            tensors[o] = info
        for m in dnode.members:
            for i in list(m.operator.inputs) + list(m.operator.outputs) + list(m.operator.intermediates):
                if i >= 0 and i not in tensors:
                    tensors[i] = runtime._info(i)
        part = Partition(
            runtime, dnode.members, list(dnode.operator.inputs), list(dnode.operator.outputs), tensors, ctx.num_threads
        )
        return dnode.delegate.prepare(part)

    return prepare


def expand(nodes: list, dnode: DelegateNode) -> list:
    """The node list with ``dnode`` replaced by the nodes it claimed (its fallback)."""
    k = nodes.index(dnode)
    return nodes[:k] + list(dnode.members) + nodes[k + 1 :]


@dataclass(frozen=True, eq=False)
class BuiltinChain:
    """A partition run on litert_py's own kernels, node after node (the fallback of a partition that failed to
    prepare while the subgraph was already invoking, after a value-dependent shape)."""

    steps: tuple  # (prepared op, input indices, output indices)
    shapes: dict  # internal tensor index -> (shape, dtype)
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    kept: dict = field(default_factory=dict)  # internal tensor index -> its array, made at the first call

    def __call__(self, inputs, outputs) -> None:
        env = dict(zip(self.inputs, inputs))
        for op, ins, outs in self.steps:
            # the same arrays at every call: the ops bound to them (ops/bound_plan.py) keep their plans
            arrays = [self._array(o) if o >= 0 else None for o in outs]
            op([env[i] if i >= 0 else None for i in ins], arrays)
            env.update((o, a) for o, a in zip(outs, arrays) if o >= 0)
        for k, o in enumerate(self.outputs):
            if outputs[k].shape == env[o].shape:
                outputs[k][...] = env[o]
            else:
                outputs[k] = env[o].copy()  # not a kept array: the next call writes those

    def _array(self, o: int) -> np.ndarray:
        a = self.kept.get(o)
        if a is None:
            a = self.kept[o] = np.zeros(*self.shapes[o])
        return a


def builtin_chain(runtime, dnode: DelegateNode, ctx) -> BuiltinChain:
    from ..delegates import Partition

    tensors = dict(zip(dnode.operator.inputs, ctx.inputs)) | dict(zip(dnode.operator.outputs, ctx.outputs))
    for m in dnode.members:
        for i in list(m.operator.inputs) + list(m.operator.outputs) + list(m.operator.intermediates):
            if i >= 0 and i not in tensors:
                tensors[i] = runtime._info(i)
    part = Partition(runtime, dnode.members, list(dnode.operator.inputs), list(dnode.operator.outputs), tensors)
    ops = part.infer_shapes()
    shapes = {o: (tensors[o].shape, tensors[o].dtype) for m in dnode.members for o in m.operator.outputs if o >= 0}
    steps = tuple((op, tuple(m.operator.inputs), tuple(m.operator.outputs)) for op, m in zip(ops, dnode.members))
    return BuiltinChain(steps, shapes, tuple(dnode.operator.inputs), tuple(dnode.operator.outputs))
