"""One executable subgraph: resolve -> prepare -> plan -> invoke.

``prepare()`` (run by ``allocate_tensors``) walks the nodes in order, lets each kernel check its node and
set its output shapes, folds nodes whose inputs are all constant (float16 weight DEQUANTIZE, DENSIFY, shape
arithmetic on constants) into constants, plans one arena for the rest and binds every tensor to a view of
it. ``invoke()`` is then a plain loop over prebound (op, inputs, outputs) steps. Nodes that consume a tensor
whose shape is only known at eval time are prepared during invoke instead, with the shapes seen then.

A node none of whose outputs has an element (zero-size tensors) has nothing to compute and is not run
(``_nothing_to_compute``), unless its kernel is stateful (control flow, variables, random generators), it reads
run-time indices or sizes that LiteRT validates at eval, or its prepared op checks input values at eval as
LiteRT's kernel does whatever the output's size (``checks_values_at_eval``: POW int32's negative exponents, zero
divisors, a quantized DIV's divisor at its zero point). LiteRT's kernels return early on such nodes or compute
nothing, and litert_py's kernels need not handle every empty shape on their hot path. Such a prepared op is not
folded either when its constant inputs fail the check: the node fails at invoke, as in LiteRT (whose kernels run
at eval), instead of at allocate_tensors. A delegate's node (runtime/partition.DelegateNode) is never folded.

Shapes reported before the first invoke (``reported``): LiteRT prepares nodes in order and stops after the
first node with a dynamic output (Subgraph::PrepareOpsStartingAt: an output whose shape depends on values, any
string output, a HASHTABLE handle); the rest are prepared during invoke. Until then the value-dependent outputs
and every output of a later node keep the shape they had (the model's, before any invoke), and the detail dicts
show that; litert_py computes the real shapes where it can and reports LiteRT's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import FAILED_NODE, InvokeError, PrepareError, UnsupportedOpError
from ..ops.common import reusable, shares_input_bytes
from ..ops.fusion import bind_steps, fuse_steps
from ..ops.registry import KernelEntry, OpContext, TensorInfo, lookup
from ..schema import dtypes
from ..schema.model import BuiltinOperator, Model, Operator, OperatorCode
from .fp_errors import quiet as quiet_fp_errors
from .fp_errors import restore as restore_fp_errors
from .partition import DelegateNode
from .planner import ALIGNMENT, ArenaPlan, Lifetime, plan_arena
from .tensors import constant_array, int32_quantization

_STRING = dtypes.TensorType.STRING


def _nothing(inputs, outputs) -> None:
    """The step of a node whose outputs have no elements."""


@dataclass(frozen=True, eq=False)
class SharedInput:
    """The step of a node whose output shares its input's bytes (SubgraphRuntime._unmodified_aliases): called with
    the arrays it was made for, nothing to copy; called with others (a direct call), the copy. The node stays a
    step (about 0.1 us) so that profiles, cancel() and error reports see it, as LiteRT's RESHAPE still runs on a
    shared buffer and returns."""

    source: np.ndarray  # the input's array
    shared: np.ndarray  # the output's array: a view of the input's bytes

    def __call__(self, inputs, outputs) -> None:
        x, y = inputs[0], outputs[0]
        if x is self.source and y is self.shared:
            return
        np.copyto(y, x.reshape(y.shape))


def _shared_step(op, source: np.ndarray, shared: np.ndarray):
    """SharedInput in place of the prepared op ``op``, inside the profiler's timer when ``op`` is one (a node
    re-prepared while profiling keeps being timed)."""
    step = SharedInput(source, shared)
    rewrap = getattr(op, "with_inner", None)  # profiler's timer: the same node's key and stats
    return step if rewrap is None else rewrap(step)


def _nothing_to_compute(node: Node, op, ins: list[TensorInfo], outs: list[TensorInfo]) -> bool:
    """Every output is empty (and known at prepare), the kernel keeps no state, its prepared op checks no input
    values at eval (``checks_values_at_eval``), and no input is a run-time index or size whose values LiteRT
    checks at eval (a non-constant unquantized integer tensor with elements: SLICE's begin, GATHER's indices);
    then the node has nothing to compute."""
    if not outs or node.kernel.stateful or any(t.dynamic or t.size for t in outs):
        return False
    if getattr(op, "checks_values_at_eval", False):
        return False
    return not any(t.data is None and t.size and t.dtype.kind in "iub" and not t.quantization.is_quantized for t in ins)


def _warn_fall_back(node, error: Exception) -> None:
    """The RuntimeWarning of a delegate partition whose nodes run on litert_py's kernels instead."""
    import warnings

    warnings.warn(
        f"{node.name} failed to prepare node {node.index} ({len(node.members)} nodes); they run on "
        f"litert_py's kernels instead: {type(error).__name__}: {error}",
        RuntimeWarning,
        stacklevel=5,
    )


@dataclass
class Node:
    index: int
    operator: Operator
    code: OperatorCode
    kernel: KernelEntry

    @property
    def name(self) -> str:
        return self.code.name


def resolve(
    model: Model, subgraph_index: int, custom_ops: dict | None = None, keep_missing: bool = False
) -> tuple[list[Node], list[tuple[str, int, int]]]:
    """Kernels for every node of a subgraph, and (op description, subgraph, node) for each node without one.
    ``custom_ops`` ({name: KernelEntry}, one interpreter's own) come before the global registry;
    ``keep_missing``: nodes without a kernel stay in the list with ``kernel=None``, for a delegate to claim."""
    nodes, missing = [], []
    sg = model.subgraphs[subgraph_index]
    for i, op in enumerate(sg.operators):
        code = model.operator_codes[op.opcode_index]
        entry = custom_ops.get(code.custom_code) if custom_ops and code.builtin_code == BuiltinOperator.CUSTOM else None
        entry = entry or lookup(code.builtin_code, code.custom_code)
        if entry is None:
            missing.append(_missing(sg, op, code, subgraph_index, i))
            if keep_missing:
                nodes.append(Node(i, op, code, None))
        else:
            nodes.append(Node(i, op, code, entry))
    return nodes, missing


def _missing(sg, op: Operator, code: OperatorCode, subgraph_index: int, i: int) -> tuple[str, int, int]:
    types = ", ".join(dtypes.type_name(sg.tensors[t].type) for t in op.inputs if t >= 0)
    kind = "custom op" if code.builtin_code == BuiltinOperator.CUSTOM else "builtin opcode"
    return (f"{kind} '{code.name}' version '{code.version}' ({types})", subgraph_index, i)


def unsupported_op_error(missing: list[tuple[str, int, int]]) -> UnsupportedOpError:
    """One error naming every distinct unsupported (op, version, input types), with where it occurs."""
    where: dict[str, list[str]] = {}
    for desc, sub, node in missing:
        where.setdefault(desc, []).append(f"{node}" if sub == 0 else f"{sub}:{node}")
    parts = []
    for desc, nodes in where.items():
        shown = ", ".join(nodes[:5]) + (f", ... ({len(nodes)} nodes)" if len(nodes) > 5 else "")
        parts.append(f"{desc} at node {shown}")
    return UnsupportedOpError(
        "Didn't find op for " + "; ".join(parts) + ". litert_py has no kernel for it; a custom op can be "
        "registered with litert_py.register_custom_op().",
        list(where),
    )


class SubgraphRuntime:
    def __init__(
        self,
        interpreter,
        model: Model,
        index: int,
        preserve_all_tensors: bool = False,
        delegates=(),
        raise_missing: bool = True,
    ):
        self.interpreter = interpreter
        self.model = model
        self.index = index
        self.sg = model.subgraphs[index]
        self.preserve_all_tensors = preserve_all_tensors
        delegates = [d for d in delegates if hasattr(d, "supports")]
        nodes, missing = resolve(model, index, getattr(interpreter, "_custom_ops", None), keep_missing=bool(delegates))
        if missing and not delegates:
            raise unsupported_op_error(missing)
        self.nodes = nodes
        n = len(self.sg.tensors)
        self.shapes: list[tuple[int, ...]] = [t.shape for t in self.sg.tensors]
        # current types: the model's, until a kernel retypes its output at prepare (OpContext.set_output_type)
        self.types: list[int] = [t.type for t in self.sg.tensors]
        self.constants: dict[int, np.ndarray] = {}
        for i, t in enumerate(self.sg.tensors):
            if getattr(t, "external_buffer", 0):
                raise UnsupportedOpError(
                    f"subgraph {index} tensor {i} ({t.name!r}) keeps its data in an external "
                    "file (ExternalBuffer); litert_py does not load external weight files yet"
                )
            if t.is_variable:
                continue
            try:
                arr = constant_array(model, t)
            except ValueError as e:
                from ..errors import InvalidModelError

                raise InvalidModelError(f"subgraph {index} tensor {i} ({t.name!r}): {e}") from None
            if arr is not None:
                self.constants[i] = arr
        self._densify_for_kernels(index)
        self.missing: list[tuple[str, int, int]] = []
        if delegates:  # before the unsupported-op check: a delegate may supply ops litert_py lacks
            from .partition import apply_delegates

            self.nodes = apply_delegates(self, self.nodes, delegates)
            self.missing = [
                _missing(self.sg, n.operator, n.code, index, n.index) for n in self.nodes if n.kernel is None
            ]
            if self.missing and raise_missing:
                raise unsupported_op_error(self.missing)
        written = {o for op in self.sg.operators for o in op.outputs} | set(self.sg.inputs)
        for i, t in enumerate(self.sg.tensors):
            # A zero-element tensor with a buffer and no writer (e.g. an empty axis list) has no bytes to
            # store, yet it is a constant: give prepare an empty array instead of "not constant".
            if (
                i not in self.constants
                and i not in written
                and t.buffer > 0
                and not t.is_variable
                and 0 in t.shape
                and t.type not in dtypes.OBJECT_TYPES
            ):
                self.constants[i] = np.zeros(t.shape, dtypes.to_numpy(t.type))
        self.variables: dict[int, np.ndarray] = {}  # is_variable tensors, kept across invokes
        self.tensors: list[np.ndarray | None] = [None] * n
        self.infos: list[TensorInfo] = []
        self.prepared_ops: dict[int, object] = {}  # node index -> prepared op (for inspection)
        self.plan: ArenaPlan | None = None
        self.aliases: dict[int, int] = {}  # tensor -> the tensor whose bytes it shares (_unmodified_aliases)
        self.arena: np.ndarray | None = None
        self.allocated = False
        self.steps: list = []
        self._bound_io: tuple | None = None  # (input arrays, output arrays) for run(), set by _allocate
        self.deferred = False
        self.reported: dict[int, tuple[int, ...]] = {}  # tensor -> shape the detail dicts show until invoke
        self.invoked = False

    def _densify_for_kernels(self, index: int) -> None:
        """A sparse constant read by any op but DENSIFY (e.g. a sparse FULLY_CONNECTED weight, which LiteRT
        multiplies in its sparse form) is expanded once, here: every kernel then sees dense weights. DENSIFY
        itself gets the encoded values, as in LiteRT."""
        from ..errors import InvalidModelError
        from ..schema.sparsity import densify

        readers: dict[int, set[str]] = {}
        for node in self.nodes:
            for i in node.operator.inputs:
                readers.setdefault(i, set()).add(node.name)
        for i, t in enumerate(self.sg.tensors):
            if t.sparsity is None or i not in self.constants or readers.get(i, {"DENSIFY"}) <= {"DENSIFY"}:
                continue
            raw = np.ascontiguousarray(self.constants[i]).view(np.uint8).reshape(-1)
            dtype = np.dtype(dtypes.to_numpy(t.type)).newbyteorder("<")
            values = raw[: raw.size - raw.size % dtype.itemsize].view(dtype)
            try:
                self.constants[i] = densify(values, tuple(t.shape), t.sparsity)
            except ValueError as e:
                raise InvalidModelError(f"subgraph {index} tensor {i} ({t.name!r}): {e}") from None

    # -- prepare ----------------------------------------------------------------------------------
    def _info(self, i: int) -> TensorInfo:
        t = self.sg.tensors[i]
        q = int32_quantization(t.quantization)
        return TensorInfo(
            index=i,
            name=t.name,
            shape=tuple(self.shapes[i]),
            type=self.types[i],
            quantization=q or TensorInfo.__dataclass_fields__["quantization"].default,
            data=self.constants.get(i),
            is_variable=t.is_variable,
            sparsity=t.sparsity,
        )

    def _context(self, node: Node, infos: list[TensorInfo]) -> OpContext:
        op = node.operator
        return OpContext(
            node_index=node.index,
            builtin_code=node.code.builtin_code,
            op_name=node.name,
            version=node.code.version,
            options=op.builtin_options or op.builtin_options2,
            inputs=[infos[i] if i >= 0 else None for i in op.inputs],
            outputs=[infos[o] for o in op.outputs],
            custom_options=op.custom_options,
            intermediates=[infos[i] for i in op.intermediates if i >= 0],
            subgraph_index=self.index,
            runtime=self.interpreter,
            num_threads=getattr(self.interpreter, "num_threads", 1) or 1,
        )

    def _prepare_node(self, node: Node, infos: list[TensorInfo]):
        ctx = self._context(node, infos)
        try:
            # parameter arithmetic on degenerate quantization (a zero scale, a huge zero point) gives inf/NaN
            # as in C++, where the kernels' own checks refuse it: no numpy RuntimeWarnings on stderr
            with np.errstate(all="ignore"):
                return node.kernel.prepare(ctx)
        except PrepareError:
            raise
        except Exception as e:  # a kernel bug or an unchecked case: still name the node, never a bare traceback
            raise ctx.fail(f"{type(e).__name__}: {e}") from e

    def prepare(self) -> None:
        """Prepare every node, fold constants, plan the arena and bind tensors (``allocate_tensors``)."""
        self.allocated = False
        self._check_no_overlap()
        infos = [self._info(i) for i in range(len(self.sg.tensors))]
        for i, t in enumerate(self.sg.tensors):
            if t.is_variable:
                self._ensure_variable(i, infos[i])
        steps: list[tuple[Node, object | None]] = []  # (node, prepared op or None when deferred)
        folded: dict[int, np.ndarray] = {}
        self.deferred = False
        self.reported = {}
        litert_stopped = False  # LiteRT's prepare has stopped at a node with a dynamic output
        for node in self.nodes:
            ins = [infos[i] for i in node.operator.inputs if i >= 0]
            outputs = [o for o in node.operator.outputs if o >= 0]
            if any(t.dynamic for t in ins):
                self.deferred = True
                for o in outputs:
                    infos[o].dynamic = True
                steps.append((node, None))
                self._report_unprepared(outputs)
                continue
            self._check_budget(node, ins)
            try:
                op = self._prepare_node(node, infos)
            except Exception as e:
                if not self._fall_back(node, e):
                    raise
                return self.prepare()
            self.prepared_ops[node.index] = op
            outs = [infos[o] for o in outputs]
            self._check_budget(node, outs)
            if litert_stopped:
                self._report_unprepared(outputs)
            elif any(t.dynamic or t.reported_dynamic or t.type == _STRING for t in outs):
                # LiteRT allocates string outputs (and the outputs its kernel marks dynamic) as kTfLiteDynamic;
                # the node itself was prepared, so only outputs whose shape is unknown keep their old shape
                litert_stopped = True
                self._report_unprepared([o for o in outputs if infos[o].dynamic])
            if _nothing_to_compute(node, op, ins, outs):  # the outputs stay the empty arrays they are
                op = _nothing
            if (
                not node.kernel.stateful
                and not isinstance(node, DelegateNode)  # a delegate's node runs at invoke, as in TFLite
                and ins
                and all(t.is_constant and not t.is_variable for t in ins)
            ):
                if self._fold(node, op, infos, folded):
                    continue
            if getattr(op, "constant_output", None) is not None:  # SHAPE / RANK of a static shape
                self._fold_value(node, op.constant_output, infos, folded)
                continue
            if any(t.dynamic for t in outs):  # the op stores new arrays at eval: the loop must read them back
                self.deferred = True
            steps.append((node, op))
        self.infos = infos
        for i, info in enumerate(infos):
            self.shapes[i] = info.shape
            self.types[i] = info.type
        if not self.deferred and not self.preserve_all_tensors:
            steps = fuse_steps(steps, infos, self.sg.inputs, self.sg.outputs)  # ops/fusion.py
        self._allocate(steps, folded)
        self.allocated = True

    def _fall_back(self, node, error: Exception) -> bool:
        """A delegate's partition failed to prepare: run its nodes with litert_py's kernels (when all have one)."""
        from .partition import DelegateNode, expand

        if not isinstance(node, DelegateNode) or any(m.kernel is None for m in node.members):
            return False
        _warn_fall_back(node, error)
        self.nodes = expand(self.nodes, node)
        return True

    def _late_fall_back(self, node, infos, error: Exception):
        """A partition prepared during invoke failed: its nodes run on litert_py's kernels, one after another."""
        from .partition import DelegateNode, builtin_chain

        if not isinstance(node, DelegateNode) or any(m.kernel is None for m in node.members):
            raise error
        _warn_fall_back(node, error)
        return builtin_chain(self, node, self._context(node, infos))

    def _report_unprepared(self, outputs: list[int]) -> None:
        """Tensors LiteRT has not given their prepared shape yet: they show the model's shape before the first
        invoke, afterwards the shape the last invoke gave them (``self.shapes`` until this prepare ends)."""
        for o in outputs:
            self.reported[o] = tuple(self.shapes[o] if self.invoked else self.sg.tensors[o].shape)

    def _check_no_overlap(self) -> None:
        """LiteRT's Subgraph::CheckInputAndOutputForOverlap: a node may not write a tensor it reads (it would
        change a graph input, or its own operand, on every invoke). Refused at allocate_tensors, as there."""
        clashes = [
            f"Tensor {i} is both input {a} and output {b}"
            for node in self.nodes
            for a, i in enumerate(node.operator.inputs)
            if i >= 0
            for b, o in enumerate(node.operator.outputs)
            if o == i
        ]
        if clashes:
            raise PrepareError("\n".join(clashes + ["AllocateTensors() called on inconsistent model."]))

    @staticmethod
    def _check_budget(node: Node, tensors: list[TensorInfo]) -> None:
        """Refuse a node whose declared tensors alone exceed the memory limit, before its kernel allocates
        scratch for them: a hostile shape must fail cleanly, not exhaust the machine."""
        for t in tensors:
            if t.shape and max(t.shape) > limits.INT32_MAX:
                raise PrepareError(
                    f"Node number {node.index} ({node.name}): tensor {t.index} has shape "
                    f"{list(t.shape)}, a dimension over the int32 limit {limits.INT32_MAX}"
                )
        total = sum(
            limits.nbytes(t.shape, t.dtype)
            for t in tensors
            if t.data is None and t.type not in dtypes.OBJECT_TYPES and not t.dynamic
        )
        limits.check_allocation(total, f"Node number {node.index} ({node.name}): its tensors")

    def _fold(self, node: Node, op, infos: list[TensorInfo], folded: dict[int, np.ndarray]) -> bool:
        """Run a node whose inputs are all constant once, now; its outputs become constants. False (not folded:
        the node stays a step) when the prepared op ``checks_values_at_eval`` and the constants fail that check:
        LiteRT fails such a node at invoke."""
        ins = [infos[i].data if i >= 0 else None for i in node.operator.inputs]
        outs = [self._new_array(infos[o]) if o >= 0 else None for o in node.operator.outputs]
        try:
            with np.errstate(all="ignore"):
                op(ins, outs)
        except Exception as e:
            if isinstance(e, InvokeError) and getattr(op, "checks_values_at_eval", False):
                return False
            raise PrepareError(
                f"Node number {node.index} ({node.name}) failed while folding constants: {type(e).__name__}: {e}"
            ) from e
        for o, arr in zip(node.operator.outputs, outs):
            if o >= 0:
                arr = np.asarray(arr)
                infos[o].data = arr
                infos[o].shape = arr.shape
                infos[o].dynamic = False
                folded[o] = arr
        return True

    @staticmethod
    def _fold_value(node: Node, value: np.ndarray, infos: list[TensorInfo], folded: dict[int, np.ndarray]) -> None:
        """A one-output node whose prepared op always writes ``value`` (``constant_output``): a constant."""
        o = node.operator.outputs[0]
        arr = np.array(value, dtype=infos[o].dtype).reshape(infos[o].shape)
        infos[o].data = arr
        infos[o].dynamic = False
        folded[o] = arr

    @staticmethod
    def _new_array(info: TensorInfo) -> np.ndarray:
        if info.type in dtypes.OBJECT_TYPES:
            return np.empty(info.shape, dtype=object)
        return np.zeros(info.shape, dtype=info.dtype)

    def _ensure_variable(self, i: int, info: TensorInfo) -> None:
        """The variable at its initial value: every (re)allocation resets it, as Subgraph::AllocateTensors ends
        with ResetVariableTensors (in place where the shape is unchanged)."""
        cur = self.variables.get(i)
        if cur is None or cur.shape != info.shape or cur.dtype != info.dtype:
            self.variables[i] = self._initial_variable(i, info)
        else:
            cur[...] = self._initial_variable(i, info)

    def _initial_variable(self, i: int, info: TensorInfo) -> np.ndarray:
        """LiteRT's ResetVariableTensor (tflite/core/api/tensor_utils.cc): INT8 variables start at their zero
        point, every other type at 0 (buffer data of a variable is not used)."""
        arr = self._new_array(info)
        if info.type == dtypes.TensorType.INT8 and info.zero_point:
            arr.fill(info.zero_point)
        return arr

    def reset_variables(self) -> None:
        for i in self.variables:
            self.variables[i][...] = self._initial_variable(i, self.infos[i] if self.infos else self._info(i))

    def _allocate(self, steps, folded: dict[int, np.ndarray]) -> None:
        n_steps = len(steps)
        end = n_steps
        lifetimes: dict[int, Lifetime] = {}
        sizes: dict[int, int] = {}

        def plannable(i: int) -> bool:
            if i < 0:
                return False
            info = self.infos[i]
            return (
                info.data is None and not info.is_variable and not info.dynamic and info.type not in dtypes.OBJECT_TYPES
            )

        def touch(i: int, step: int) -> None:
            lt = lifetimes.get(i)
            lifetimes[i] = Lifetime(step, step) if lt is None else Lifetime(min(lt.first, step), max(lt.last, step))

        aliases, shared_nodes = {}, set()
        if not (self.deferred or self.preserve_all_tensors):
            aliases, shared_nodes = self._unmodified_aliases(steps, plannable)
        root = aliases.get
        for i in self.sg.inputs:
            if plannable(i):
                touch(root(i, i), -1)
                touch(root(i, i), end)
        for k, (node, _) in enumerate(steps):
            for i in node.operator.outputs + node.operator.inputs:
                if i >= 0 and plannable(i):
                    touch(root(i, i), k)
        for i in self.sg.outputs:
            if plannable(i):
                touch(root(i, i), end)
        for i in lifetimes:
            info = self.infos[i]
            sizes[i] = info.size * info.dtype.itemsize
        plan = plan_arena(sizes, lifetimes, reuse=not self.preserve_all_tensors)
        limits.check_allocation(plan.arena_bytes, f"the arena of subgraph {self.index}")
        arena = np.zeros(plan.arena_bytes + ALIGNMENT, np.uint8)
        base = (-arena.ctypes.data) % ALIGNMENT
        tensors: list[np.ndarray | None] = [None] * len(self.sg.tensors)
        for i, off in plan.offsets.items():
            info = self.infos[i]
            start = base + off
            tensors[i] = arena[start : start + sizes[i]].view(info.dtype).reshape(info.shape)
        for i, r in aliases.items():  # the bytes of the tensor it copies unchanged
            tensors[i] = tensors[r].reshape(self.infos[i].shape)
        for i, arr in self.constants.items():
            tensors[i] = arr
        for i, arr in folded.items():
            tensors[i] = arr
        for i, arr in self.variables.items():
            tensors[i] = arr
        for i, info in enumerate(self.infos):
            if tensors[i] is None and info.type in dtypes.OBJECT_TYPES and not info.dynamic:
                tensors[i] = np.empty(info.shape, dtype=object)
        self.plan, self.arena, self.tensors, self.aliases = plan, arena, tensors, aliases
        if aliases:  # the aliased nodes' steps copy nothing
            steps = [
                (n, _shared_step(op, tensors[n.operator.inputs[0]], tensors[n.operator.outputs[0]]))
                if n.index in shared_nodes
                else (n, op)
                for n, op in steps
            ]
        self.steps_nodes = steps
        self._bound_io = None
        if self.deferred:
            self.steps = []
            self._deferred_cache: dict[int, tuple] = {}
        else:
            ins, outs = [tensors[i] for i in self.sg.inputs], tuple(tensors[o] for o in self.sg.outputs)
            if all(a is not None for a in (*ins, *outs)):
                self._bound_io = (ins, outs)  # run()'s arrays while the shapes stay
            self.steps = [
                (
                    op,
                    [tensors[i] if i >= 0 else None for i in node.operator.inputs],
                    [tensors[o] if o >= 0 else None for o in node.operator.outputs],
                )
                for node, op in steps
            ]
            bind_steps(self.steps)  # fused steps' views of their arrays (ops/fusion.py)

    def _unmodified_aliases(self, steps, plannable) -> tuple[dict[int, int], set[int]]:
        """({output: the tensor whose bytes it shares}, the indices of those steps' nodes) for the steps whose
        prepared op copies its input unchanged into its output (``copies_input_unchanged``: RESHAPE, SQUEEZE,
        EXPAND_DIMS of static shapes), as LiteRT's
        ArenaPlanner shares them (kTfLiteInplaceOpDataUnmodified, InputTensorCanBeShared): the output becomes a
        view of the input's bytes, the two are planned as one tensor (its lifetime spans both) and the step copies
        nothing (SharedInput). As there, not when the input is a subgraph input or the output a subgraph output
        (set_tensor / get_tensor and a WHILE body's copies of its outputs into its inputs see them apart). Each
        tensor has one writer in a well-formed model, so the two hold the same values wherever both are live; a
        malformed model writing the input again after the reshape reads the later values, as LiteRT's shared
        buffer does."""
        aliases: dict[int, int] = {}
        nodes: set[int] = set()
        inputs = set(self.sg.inputs)
        outputs = set(self.sg.outputs)
        for node, op in steps:
            if not shares_input_bytes(node, op, inputs, outputs):
                continue
            x, y = node.operator.inputs[0], node.operator.outputs[0]
            r = aliases.get(x, x)
            if not (plannable(r) and plannable(y)) or y in inputs:
                continue
            a, b = self.infos[r], self.infos[y]
            if a.dtype != b.dtype or a.size != b.size:
                continue
            aliases[y] = r
            nodes.add(node.index)
        return aliases, nodes

    # -- run by control-flow kernels (WHILE, IF) -------------------------------------------------
    def prepare_for(self, shapes) -> None:
        """Give the subgraph's inputs these shapes; (re)prepare when one changed or it is not prepared yet."""
        changed = False
        for i, shape in zip(self.sg.inputs, shapes):
            shape = tuple(shape)
            if tuple(self.shapes[i]) != shape:
                self.shapes[i] = shape
                changed = True
        if changed or not self.allocated:
            self.prepare()

    def run(self, arrays) -> Sequence[np.ndarray]:
        """Invoke on ``arrays`` (one per subgraph input), re-preparing when their shapes changed; returns the
        output tensors (live arrays of this subgraph: copy them before the next run; do not modify the sequence).
        Called by a node of an invoke (WHILE once per iteration), already inside its quiet fp-error state."""
        bound = self._bound_io
        if bound is not None and self.allocated:  # the shapes it was prepared for: copy in, run, done
            for dst, a in zip(bound[0], arrays):
                if dst is not a:  # a loop value passed through unchanged is already in place
                    if dst.shape != a.shape:
                        break
                    dst[...] = a
            else:
                self._invoke_steps()
                return bound[1]
        return self._run_preparing(arrays)

    def _run_preparing(self, arrays) -> list[np.ndarray]:
        tensors = self.tensors
        if not self.allocated or any(tensors[i].shape != a.shape for i, a in zip(self.sg.inputs, arrays)):
            self.prepare_for([a.shape for a in arrays])
            tensors = self.tensors
        for i, a in zip(self.sg.inputs, arrays):
            dst = tensors[i]
            if dst is not a:
                dst[...] = a
        if self.deferred:
            self._invoke_dynamic_steps()
        else:
            self._invoke_steps()
        tensors = self.tensors  # a dynamic invoke may have stored new output arrays
        return [tensors[o] for o in self.sg.outputs]

    # -- invoke -----------------------------------------------------------------------------------
    def invoke(self) -> None:
        # inf/NaN arithmetic is the model's business, as in C++: no numpy warnings (fp_errors.py: np.errstate's
        # effect at a tenth of its cost)
        token = quiet_fp_errors()
        try:
            if self.deferred:
                self._invoke_dynamic_steps()
            else:
                self._invoke_steps()
        finally:
            restore_fp_errors(token)
        if self.reported:  # every node has run: the detail dicts show the real shapes from now on
            self.reported = {}
        self.invoked = True

    def _invoke_steps(self) -> None:
        ins = None
        try:
            for op, ins, outs in self.steps:  # noqa: B007 (ins names the failing node)
                op(ins, outs)
        except Exception as e:
            # each step has an inputs list of its own (kept when cancel() swaps the op): no counter in the loop
            k = next((k for k, step in enumerate(self.steps) if step[1] is ins), 0)
            # a step standing for several nodes (ops/ring_buffer.RingBufferChecks) names the one that failed
            node = getattr(e, FAILED_NODE, None) or self.steps_nodes[k][0]
            # a kernel's own InvokeError already speaks LiteRT's words; other exceptions get their type named
            what = str(e) if isinstance(e, InvokeError) else f"{type(e).__name__}: {e}"
            cls = type(e) if isinstance(e, InvokeError) else InvokeError  # keeps ResourceLimitError, ...
            raise cls(f"{what}\nNode number {node.index} ({node.name}) failed to invoke.") from e

    def _invoke_dynamic_steps(self) -> None:
        """Invoke when some shapes are only known at eval: prepare late nodes with the shapes seen now."""
        tensors = self.tensors
        for node, op in self.steps_nodes:
            operator = node.operator
            if op is None:  # deferred: (re)prepare when its input shapes change
                key = tuple(tensors[i].shape if i >= 0 and tensors[i] is not None else None for i in operator.inputs)
                cached = self._deferred_cache.get(node.index)
                if cached is None or cached[0] != key:
                    infos = self._late_infos(operator)
                    try:
                        prepared = self._prepare_node(node, infos)
                    except Exception as e:
                        prepared = self._late_fall_back(node, infos, e)
                    cached = (key, prepared, {o: infos[o] for o in operator.outputs if o >= 0})
                    self._check_budget(node, list(cached[2].values()))  # shapes seen now: same budget
                    self._deferred_cache[node.index] = cached
                    for o, info in cached[2].items():
                        if not info.dynamic:
                            tensors[o] = self._new_array(info)
                run = cached[1]
            else:
                run = op
            ins = [tensors[i] if i >= 0 else None for i in operator.inputs]
            outs = [tensors[o] if o >= 0 else None for o in operator.outputs]
            try:
                run(ins, outs)
            except Exception as e:
                what = str(e) if isinstance(e, InvokeError) else f"{type(e).__name__}: {e}"
                cls = type(e) if isinstance(e, InvokeError) else InvokeError
                raise cls(f"{what}\nNode number {node.index} ({node.name}) failed to invoke.") from e
            for o, arr in zip(operator.outputs, outs):
                if o >= 0:
                    if arr.ndim and max(arr.shape) > limits.INT32_MAX:  # a zero-size array can claim any dims
                        limits.check_dims(arr.shape, f"Node number {node.index} ({node.name}) output")
                    old = tensors[o]
                    if arr is not old and reusable(old, arr.shape, arr.dtype, arr):
                        old[...] = arr  # the tensor keeps its array: the plans bound to it stay (ops/bound_plan.py)
                    else:
                        tensors[o] = arr
                    self.shapes[o] = arr.shape

    def _late_infos(self, operator: Operator) -> dict[int, TensorInfo]:
        infos: dict[int, TensorInfo] = {}
        for i in operator.inputs + operator.outputs + operator.intermediates:
            if i >= 0:
                info = self._info(i)
                arr = self.tensors[i]
                if i in operator.inputs and arr is not None:
                    info.shape = arr.shape
                infos[i] = info
        return infos  # indexed like the list _context expects
