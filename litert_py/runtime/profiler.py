"""Per-node timing of invokes, like LiteRT's ``benchmark_model --enable_op_profiling``.

``profile(interpreter, runs, warmup)`` wraps every prepared step of every subgraph in a timer while it
profiles and puts the original callables back afterwards, so the plain invoke loop is unchanged (and no
slower) outside a profile. Nodes of control-flow subgraphs (WHILE, IF, CALL_ONCE bodies) are timed in their own
subgraph; the control-flow node's own (self) time excludes them, so the by-op summary adds up to the invoke.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from ..ops.bound_chain import member_steps
from ..schema import dtypes


@dataclass(frozen=True)
class NodeProfile:
    """One node's time per invoke (``mean_ms`` includes nodes of subgraphs it runs; ``self_ms`` does not)."""

    subgraph: int
    node: int
    op: str  # schema enum name (CONV_2D), or the custom code of a custom op
    version: int
    dtypes: str  # e.g. "INT8, INT8, INT32 -> INT8"
    output_shape: tuple[int, ...] | None  # of output 0, as last run
    calls: int  # calls per invoke (a WHILE body node runs once per iteration)
    mean_ms: float
    self_ms: float
    percent: float  # mean_ms as a share of the mean invoke time


@dataclass(frozen=True)
class OpProfile:
    """All nodes of one op type (self times, so nested subgraphs are not counted twice)."""

    op: str
    count: int  # nodes
    total_ms: float
    percent: float
    cumulative_percent: float


@dataclass(frozen=True)
class Profile:
    runs: int
    warmup: int
    invoke_ms: float  # mean time of one profiled invoke (timers included)
    nodes: tuple[NodeProfile, ...]  # in run order: subgraph 0 first, then the others by index
    by_op: tuple[OpProfile, ...]  # most expensive first

    def top(self, n: int | None = None) -> list[NodeProfile]:
        """The ``n`` most expensive nodes by self time."""
        return sorted(self.nodes, key=lambda r: -r.self_ms)[:n]

    def to_dict(self) -> dict:
        return {
            "runs": self.runs,
            "warmup": self.warmup,
            "invoke_ms": self.invoke_ms,
            "nodes": [asdict(r) for r in self.nodes],
            "by_op": [asdict(r) for r in self.by_op],
        }

    def table(self, top: int | None = 10) -> str:
        """Text tables in the style of benchmark_model: every node in run order, the ``top`` slowest nodes by
        self time (none when ``top`` is 0 or None), and the summary by op type."""
        lines = [
            f"Profile: {self.runs} runs after {self.warmup} warm-up, invoke {self.invoke_ms:.3f} ms (timers included)"
        ]

        def section(title: str, rows) -> None:
            lines.append(title)
            lines.append(
                f"  {'node':>8}  {'op':<24} {'v':>2} {'mean ms':>9} {'self ms':>9} {'%':>6}  {'output':<16} dtypes"
            )
            for r in rows:
                shape = "?" if r.output_shape is None else ("x".join(map(str, r.output_shape)) or "scalar")
                calls = f"  ({r.calls:g} calls per invoke)" if r.calls != 1 else ""
                where = f"{r.node}" if r.subgraph == 0 else f"{r.subgraph}:{r.node}"
                lines.append(
                    f"  {where:>8}  {r.op[:24]:<24} {r.version:>2} {r.mean_ms:9.4f} {r.self_ms:9.4f} "
                    f"{r.percent:6.2f}  {shape:<16} {r.dtypes}{calls}"
                )

        section("Run order (sg:node for nodes of other subgraphs):", self.nodes)
        if top:
            rows = self.top(top)
            section(f"Top {len(rows)} nodes by self time:", rows)
        lines.append("By op type (self times):")
        lines.append(f"  {'op':<28} {'count':>5} {'total ms':>10} {'%':>7} {'cum %':>7}")
        for o in self.by_op:
            lines.append(
                f"  {o.op[:28]:<28} {o.count:>5} {o.total_ms:10.4f} {o.percent:7.2f} {o.cumulative_percent:7.2f}"
            )
        return "\n".join(lines)


class _Timer:
    """A step callable that adds its time to ``stats[key]`` = [calls, total, self]."""

    __slots__ = ("inner", "key", "stats", "stack")

    def __init__(self, inner, key, stats, stack):
        self.inner, self.key, self.stats, self.stack = inner, key, stats, stack

    def __call__(self, ins, outs):
        stack = self.stack
        stack.append(0.0)  # time of timed nodes called from inside this one
        t0 = time.perf_counter()
        try:
            return self.inner(ins, outs)
        finally:
            dt = time.perf_counter() - t0
            child = stack.pop()
            if stack:
                stack[-1] += dt
            s = self.stats[self.key]
            s[0] += 1
            s[1] += dt
            s[2] += dt - child

    def with_inner(self, inner) -> _Timer:
        """This timer around another step of the same node (runtime/subgraph's SharedInput)."""
        return _Timer(inner, self.key, self.stats, self.stack)

    def __getattr__(self, name):  # a wrapped prepared op still answers inspection
        return getattr(self.inner, name)


def _unwrap(op):
    while isinstance(op, _Timer):
        op = op.inner
    return op


class _Instrumented:
    """Wraps the steps of every live subgraph runtime; ``restore()`` puts the original callables back."""

    def __init__(self, interpreter):
        self.stats: dict[tuple[int, int], list] = {}
        self.chained: dict[int, tuple] = {}  # subgraph -> its (steps, steps_nodes) with BoundChain steps
        self.wrapped: dict[int, list] = {}  # subgraph -> the timed steps list put in their place
        self.stack: list[float] = []
        self.subs = [s for s in interpreter._subgraphs if s is not None]
        for sub in self.subs:
            self._wrap(sub)

    def _timer(self, sub, node, op):
        if op is None or isinstance(op, _Timer):
            return op
        key = (sub.index, node.index)
        self.stats.setdefault(key, [0, 0.0, 0.0])
        return _Timer(op, key, self.stats, self.stack)

    def _wrap(self, sub) -> None:
        nodes = getattr(sub, "steps_nodes", [])
        if not sub.deferred and len(sub.steps) == len(nodes):
            steps, nodes = member_steps(sub.steps, nodes)  # a BoundChain's nodes timed one by one
            if steps is not sub.steps:
                self.chained[sub.index] = (sub.steps, sub.steps_nodes)
            sub.steps = [(self._timer(sub, n, op), ins, outs) for (op, ins, outs), (n, _) in zip(steps, nodes)]
            self.wrapped[sub.index] = sub.steps
        sub.steps_nodes = [(n, self._timer(sub, n, op)) for n, op in nodes]
        cache = getattr(sub, "_deferred_cache", None)
        if cache:
            for k, (key, op, infos) in list(cache.items()):
                node = next((n for n, _ in sub.steps_nodes if n.index == k), None)
                if node is not None:
                    cache[k] = (key, self._timer(sub, node, op), infos)
        original = sub._prepare_node  # nodes (re)prepared while profiling (new shapes, late nodes) are timed too

        def prepare_node(node, infos, _sub=sub, _original=original):
            return self._timer(_sub, node, _original(node, infos))

        sub._prepare_node = prepare_node

    def restore(self) -> None:
        for sub in self.subs:
            sub.__dict__.pop("_prepare_node", None)
            chained = self.chained.get(sub.index)
            if chained is not None and sub.steps is self.wrapped.get(sub.index):  # not prepared anew meanwhile
                sub.steps, sub.steps_nodes = chained
            sub.steps = [(_unwrap(op), ins, outs) for op, ins, outs in sub.steps]
            sub.steps_nodes = [(n, _unwrap(op)) for n, op in getattr(sub, "steps_nodes", [])]
            sub.prepared_ops = {k: _unwrap(op) for k, op in sub.prepared_ops.items()}
            cache = getattr(sub, "_deferred_cache", None)
            if cache:
                for k, (key, op, infos) in list(cache.items()):
                    cache[k] = (key, _unwrap(op), infos)


def _dtype_path(sg, operator) -> str:
    ins = ", ".join(dtypes.type_name(sg.tensors[i].type) for i in operator.inputs if i >= 0)
    outs = ", ".join(dtypes.type_name(sg.tensors[i].type) for i in operator.outputs if i >= 0)
    return f"{ins} -> {outs}"


def profile(interpreter, runs: int = 10, warmup: int = 1, invoke=None) -> Profile:
    """Time every node over ``runs`` invokes (after ``warmup`` untimed ones); ``invoke`` defaults to
    ``interpreter.invoke`` (the tool passes a signature runner's call). Tensors must be allocated and set."""
    if not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an int >= 1, got {runs!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")
    invoke = invoke or interpreter.invoke
    for _ in range(warmup):
        invoke()
    inst = _Instrumented(interpreter)
    total = 0.0
    try:
        for _ in range(runs):
            t0 = time.perf_counter()
            invoke()
            total += time.perf_counter() - t0
    finally:
        inst.restore()
    invoke_ms = total * 1e3 / runs
    model = interpreter.model
    records = []
    subs = {s.index: s for s in interpreter._subgraphs if s is not None}
    for (si, ni), (calls, t, t_self) in sorted(inst.stats.items()):
        sub = subs[si]
        operator = sub.sg.operators[ni]
        code = model.operator_codes[operator.opcode_index]
        shape = None
        outs = [o for o in operator.outputs if o >= 0]
        if outs and sub.tensors[outs[0]] is not None and hasattr(sub.tensors[outs[0]], "shape"):
            shape = tuple(int(d) for d in sub.tensors[outs[0]].shape)
        mean = t * 1e3 / runs
        records.append(
            NodeProfile(
                si,
                ni,
                code.name,
                code.version,
                _dtype_path(sub.sg, operator),
                shape,
                calls / runs,
                mean,
                t_self * 1e3 / runs,
                100.0 * mean / invoke_ms if invoke_ms else 0.0,
            )
        )
    by: dict[str, list] = {}
    for r in records:
        acc = by.setdefault(r.op, [0, 0.0])
        acc[0] += 1
        acc[1] += r.self_ms
    by_op, cum = [], 0.0
    for op, (count, ms) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        pct = 100.0 * ms / invoke_ms if invoke_ms else 0.0
        cum += pct
        by_op.append(OpProfile(op, count, ms, pct, cum))
    return Profile(runs, warmup, invoke_ms, tuple(records), tuple(by_op))
