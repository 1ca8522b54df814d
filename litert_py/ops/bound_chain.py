"""Consecutive bound steps as one, fused at prepare (issue 16): a run of steps whose prepared ops offer
``chain_calls`` (their bound call is a fixed sequence of numpy calls on the arrays they are bound to, with no
check or branch: float and integer Arithmetic and ArithmeticViews, an arithmetic -> TANH, the row FULLY_CONNECTED,
a RESHAPE copy) becomes one :class:`BoundChain` step that runs all their calls, in the same order, as one flat
bound plan (ops/bound_plan.py). The same calls on the same arrays give the same bytes; what goes is each step's
Python call and identity tests (about 0.2-0.5 us a step: a converter-unrolled GRU's WHILE body runs 13 steps of a
few small calls each, 20 times an invoke).

The chain's node names the members' inputs and outputs in turn (the arena planner keeps them all alive over the
chain's one step: nothing a member writes lies over what a later member reads) and is named after its first member
(the members' kernels raise nothing at eval: an error there would name the first). The profiler
(runtime/profiler.py) runs the members as steps of their own while it profiles, so every node keeps its own row.
The members are bound by the chain's ``bind`` (ops/fusion.bind_steps) to their part of the step's arrays; called
with other lists than the bound ones (a direct call), the chain calls each member on its part, each with its own
unbound path. ops/fusion.py runs this pass last; the interpreter does not fuse when it must keep every tensor
(experimental_preserve_all_tensors) or runs its dynamic path.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .common import shares_input_bytes

#: fewest consecutive chainable steps made one
MIN_CHAIN = 2


@dataclass(frozen=True, eq=False)
class BoundChain:
    """Member ops run in order, each on its part of the step's inputs and outputs (``arity``: per member its
    number of input and output positions, omitted ones included); bound, as one flat plan."""

    ops: tuple
    arity: tuple  # per member: (inputs, outputs)
    nodes: tuple = ()  # per member: its node (runtime/profiler.py times the members one by one)

    _bound = None  # bind's (inputs list, outputs list, the members' calls in order, or None)

    def parts(self, inputs, outputs):
        """(op, its inputs, its outputs) per member."""
        i = o = 0
        for op, (n_in, n_out) in zip(self.ops, self.arity):
            yield op, inputs[i : i + n_in], outputs[o : o + n_out]
            i, o = i + n_in, o + n_out

    def bind(self, inputs, outputs) -> None:
        parts = list(self.parts(inputs, outputs))
        for op, ins, outs in parts:
            bind = getattr(op, "bind", None)
            if bind is not None:
                bind(ins, outs)
        calls: list | None = []
        for op, ins, outs in parts:
            member = op.chain_calls(ins, outs)
            if member is None:
                calls = None
                break
            calls.extend(member)
        object.__setattr__(self, "_bound", (inputs, outputs, None if calls is None else tuple(calls)))

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is not None and b[0] is inputs and b[1] is outputs and b[2] is not None:
            for call in b[2]:
                call()
            return
        for op, ins, outs in self.parts(inputs, outputs):
            op(ins, outs)


def _chainable(op) -> bool:
    """The op's class offers ``chain_calls`` and, when it says so (``chainable``), its bound call is its calls alone.
    The class, not the object: the profiler's timer answers for the op it wraps, and a chained timer would not be
    timed."""
    return hasattr(type(op), "chain_calls") and getattr(op, "chainable", True)


def fuse_bound_chains(steps: list, infos: list, inputs, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each run of at least MIN_CHAIN
    consecutive chainable steps as one BoundChain step at the run's place. A RESHAPE copy whose output the arena
    may share with its input (common.shares_input_bytes) is no member: it copies nothing then."""
    sub_inputs, sub_outputs = set(inputs), set(outputs)
    out: list = []
    run: list = []

    def flush():
        if len(run) >= MIN_CHAIN:
            node = run[0][0]
            operator = dataclasses.replace(
                node.operator,
                inputs=tuple(i for n, _ in run for i in n.operator.inputs),
                outputs=tuple(o for n, _ in run for o in n.operator.outputs),
            )
            arity = tuple((len(n.operator.inputs), len(n.operator.outputs)) for n, _ in run)
            chain = BoundChain(tuple(op for _, op in run), arity, tuple(n for n, _ in run))
            out.append((dataclasses.replace(node, operator=operator), chain))
        else:
            out.extend(run)
        run.clear()

    for node, op in steps:
        if _chainable(op) and not shares_input_bytes(node, op, sub_inputs, sub_outputs):
            run.append((node, op))
        else:
            flush()
            out.append((node, op))
    flush()
    return out if len(out) != len(steps) else steps


def member_steps(steps: list, nodes: list) -> tuple[list, list]:
    """A subgraph's bound steps and their (node, op) list with each BoundChain as its members' own steps (bound
    to their parts of the chain's arrays by the chain's bind): the same calls, one step per node."""
    if not any(type(op) is BoundChain for _, op in nodes):
        return steps, nodes
    new_steps, new_nodes = [], []
    for (op, ins, outs), (node, _) in zip(steps, nodes):
        if type(op) is BoundChain and len(op.nodes) == len(op.ops):
            for m_node, part in zip(op.nodes, op.parts(ins, outs)):
                new_steps.append(part)
                new_nodes.append((m_node, part[0]))
        else:
            new_steps.append((op, ins, outs))
            new_nodes.append((node, op))
    return new_steps, new_nodes


def member_ops(steps) -> list:
    """The prepared ops of (node, op) steps with each BoundChain's members in its place (for inspection: tools
    and tests that look at which kernels run)."""
    return [m for _, op in steps for m in (op.ops if type(op) is BoundChain else (op,))]
