"""Control flow: CALL_ONCE, WHILE, IF (every dtype: the loop/branch values are copied, never computed).

CALL_ONCE runs its init subgraph at the first invoke of the interpreter and never again, also across
``allocate_tensors`` calls (LiteRT keeps the flag in the interpreter's resources, not in the node).

WHILE feeds its inputs to the cond subgraph; while cond's single bool output is true it runs the body on
the loop values and feeds the body's outputs back. The body may change the shapes of the loop values from
one iteration to the next: cond and body are re-prepared for the shapes they are given (like LiteRT's
ResizeInputTensor + AllocateTensors), and the node's outputs are then dynamic. When the body keeps every
shape, the outputs have the input shapes and are planned statically. Loop values follow dataflow
semantics even when a body output is the body's input tensor at another position (a swap); there
ai-edge-litert 2.3.0 lends one buffer to two loop values and returns wrong values. STABLEHLO_WHILE (same
options: cond_subgraph_index, body_subgraph_index) is the same kernel.

IF runs the then or else subgraph on inputs[1:] by the value of its bool scalar input 0. Its outputs are
static when both branches give the same static shapes, dynamic otherwise.

A subgraph that calls back into a subgraph on its own call chain (directly or through CALL_ONCE, WHILE, IF
or any op naming a subgraph) is rejected at prepare. CALL (deprecated) has no kernel in LiteRT either.
Sources matched: tensorflow/lite/kernels/call_once.cc, while.cc, if.cc, control_flow_common.h.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register
from .subgraph_call import (
    called_subgraphs,
    callee_runtime,
    check_subgraph_io_types,
    store_outputs,
    subgraph_output_infos,
)


# -- CALL_ONCE --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class CallOnce:
    """The flag lives in the interpreter's resources (a new prepare makes a new step, which must not run the init
    subgraph again); an entry there is never removed, so once the step has seen it, its own ``_done`` answers."""

    interpreter: object
    subgraph_index: int
    _done = False  # not a field: set on the instance once the flag is seen

    def __call__(self, inputs, outputs):
        if self._done:
            return
        done = self.interpreter.resources
        key = ("call_once", self.subgraph_index)
        if not done.get(key):
            sub = self.interpreter.subgraph(self.subgraph_index)
            if not sub.allocated:
                sub.prepare()
            sub.invoke()
            done[key] = True
        object.__setattr__(self, "_done", True)


@register(BuiltinOperator.CALL_ONCE, stateful=True)
def prepare_call_once(ctx: OpContext) -> PreparedOp:
    ctx.check_num(0, 0)
    k = ctx.options.init_subgraph_index
    sub = callee_runtime(ctx, k)
    ctx.check(not sub.sg.inputs and not sub.sg.outputs, "CALL_ONCE's init subgraph must have no inputs or outputs")
    return CallOnce(ctx.runtime, k)


# -- WHILE ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class While:
    """The loop. With static loop values and no swap, prepared cond and body (``_loop_plan``) the loop runs their
    prepared steps itself (``_run_planned``): per iteration the body's inputs are refreshed from its outputs by bound
    assignments (a loop value the body passes through unchanged is not copied), cond's inputs only where cond reads
    them (``cond_read``: an input some node of cond reads or writes, cond's output, a variable); cond's other inputs
    get the loop values once when the loop is left, also by an error or a cancel (the values cond last saw). The
    tensors of cond and body then read back as after ``SubgraphRuntime.run`` (cond's inputs: the final loop values;
    the body's: the values of its last run). Otherwise each iteration calls ``run`` (shapes checked, re-prepared
    when they change)."""

    cond: object  # SubgraphRuntime
    body: object
    dynamic: bool  # the body changes shapes: outputs are new arrays
    copy: bool  # a swap (a body output is another position's input tensor: copy the values between runs), or cond
    # or body called again from inside the loop (re-prepared there): the general loop
    guard: object = None  # ctx.cancel_guard: cancel() is tested once per iteration
    cond_read: tuple = ()  # per loop value: cond reads its input tensor (copied at every iteration)
    _plan = None  # _loop_plan's (cond.tensors, body.tensors, the plan) for the arrays it was made of

    def __call__(self, inputs, outputs):
        if not (self.dynamic or self.copy):
            plan = self._loop_plan()
            if plan is not None and all(a.shape == d.shape for a, d in zip(inputs, plan[1])):
                self._run_planned(plan, inputs, outputs)
                return
        values = inputs
        cond, body, guard = self.cond, self.body, self.guard
        # Without aliasing no copies between iterations: body.run writes its input tensors from the previous
        # run's output tensors, which the planner never places over the inputs (both live all along).
        while cond.run(values)[0].reshape(-1)[0]:
            if guard is not None and guard.requested is not None:  # no iteration cap, as in TFLite: cancel()
                guard.check_cancelled()
            values = body.run(values)
            if self.copy:
                values = [np.array(v, copy=True) for v in values]
        store_outputs(outputs, values, self.dynamic)

    def _loop_plan(self):
        """(cond's input arrays, the body's input arrays, its output arrays, cond's output as a 1-element view,
        the positions cond reads, the ones it does not, the body's input refreshes, cond's) while cond and body
        stay prepared as they were (their tensor lists unchanged), else made anew; None when either is not
        prepared with bound inputs and outputs (a deferred subgraph) or the plan does not apply."""
        cond, body, cached = self.cond, self.body, self._plan
        if cached is not None and cached[0] is cond.tensors and cached[1] is body.tensors:
            if cond.allocated and body.allocated:
                return cached[2]
        if cond is body or not (cond.allocated and body.allocated) or cond.deferred or body.deferred:
            return None
        if cond._bound_io is None or body._bound_io is None:
            return None
        cond_in, (flag,) = cond._bound_io
        body_in, body_out = body._bound_io
        if any(a.shape != b.shape for a, b in zip(cond_in, body_in)) or flag.size != 1:
            return None
        read = [k for k, r in enumerate(self.cond_read) if r]
        unread = [k for k, r in enumerate(self.cond_read) if not r]
        body_copies = tuple(partial(d.__setitem__, Ellipsis, a) for d, a in zip(body_in, body_out) if d is not a)
        cond_copies = tuple(partial(cond_in[k].__setitem__, Ellipsis, body_out[k]) for k in read)
        plan = (list(cond_in), list(body_in), body_out, flag.reshape(-1), read, unread, body_copies, cond_copies)
        object.__setattr__(self, "_plan", (cond.tensors, body.tensors, plan))
        return plan

    def _run_planned(self, plan, inputs, outputs) -> None:
        cond_in, body_in, body_out, flag, read, unread, body_copies, cond_copies = plan
        run_cond, run_body, guard = self.cond._invoke_steps, self.body._invoke_steps, self.guard
        values = inputs  # the loop values cond saw last (for its unread inputs when the loop is left)
        try:
            for k in read:
                cond_in[k][...] = inputs[k]
            run_cond()
            if flag[0]:
                for d, a in zip(body_in, inputs):
                    d[...] = a
                values = body_in
                while True:
                    if guard is not None and guard.requested is not None:  # no iteration cap, as in TFLite
                        guard.check_cancelled()
                    run_body()
                    values = body_out
                    for call in cond_copies:
                        call()
                    run_cond()
                    if not flag[0]:
                        break
                    for call in body_copies:
                        call()
                    values = body_in  # the same values, while the body overwrites its outputs
        finally:
            for k in unread:
                cond_in[k][...] = values[k]
        store_outputs(outputs, values, False)


def _cond_reads(cond) -> tuple:
    """Per input of the cond subgraph: whether its tensor is read (or written) by a node of cond, is cond's output,
    a variable or an input listed twice (copied at every iteration: While._run_planned)."""
    sg = cond.sg
    used = set(sg.outputs)
    for op in sg.operators:
        used.update(op.inputs)
        used.update(op.outputs)
        used.update(op.intermediates)
    return tuple(i in used or sg.tensors[i].is_variable or list(sg.inputs).count(i) > 1 for i in sg.inputs)


@register(BuiltinOperator.WHILE, stateful=True)
@register(BuiltinOperator.STABLEHLO_WHILE, stateful=True)  # the same semantics and option names
def prepare_while(ctx: OpContext) -> PreparedOp:
    n = len(ctx.inputs)
    ctx.check(len(ctx.outputs) == n, f"WHILE has {n} inputs but {len(ctx.outputs)} outputs")
    ctx.check(all(t is not None for t in ctx.inputs), "WHILE inputs must all be present")
    cond = callee_runtime(ctx, ctx.options.cond_subgraph_index)
    body = callee_runtime(ctx, ctx.options.body_subgraph_index)
    types = [t.type for t in ctx.inputs]
    for k, (t, o) in enumerate(zip(ctx.inputs, ctx.outputs)):
        ctx.check(t.type == o.type, f"WHILE output {k} is {o.type_name}, its input is {t.type_name}")
    check_subgraph_io_types(ctx, cond, "cond", "inputs", ctx.inputs, types)
    check_subgraph_io_types(ctx, body, "body", "inputs", ctx.inputs, types)
    check_subgraph_io_types(ctx, body, "body", "outputs", ctx.outputs, types)
    ctx.check(len(cond.sg.outputs) == 1, f"cond subgraph {cond.index} must have 1 output, has {len(cond.sg.outputs)}")
    shapes = [t.shape for t in ctx.inputs]
    cond.prepare_for(shapes)
    out = subgraph_output_infos(cond)[0]
    ctx.check(out.type == dtypes.TensorType.BOOL, f"cond subgraph {cond.index} output is {out.type_name}, must be BOOL")
    ctx.check(out.dynamic or out.size == 1, f"cond subgraph {cond.index} output has {out.size} elements, must have 1")
    body.prepare_for(shapes)
    outs = subgraph_output_infos(body)
    dynamic = any(o.dynamic or tuple(o.shape) != tuple(s) for o, s in zip(outs, shapes))
    for k, s in enumerate(shapes):
        if dynamic:
            ctx.set_output_dynamic(k)
        else:
            ctx.set_output_shape(k, s)
    ins, outs_idx = list(body.sg.inputs), list(body.sg.outputs)
    swapped = any(o in ins and ins.index(o) != k for k, o in enumerate(outs_idx)) or len(set(ins)) != len(ins)
    # cond or body run again from inside the loop (a nested WHILE sharing them) re-prepare it mid-loop: no plan
    inner = called_subgraphs(ctx.model, cond.index) | called_subgraphs(ctx.model, body.index)
    reentrant = cond.index in inner or body.index in inner
    return While(cond, body, dynamic, swapped or reentrant, ctx.cancel_guard, _cond_reads(cond))


# -- IF ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class If:
    then_branch: object  # SubgraphRuntime
    else_branch: object
    dynamic: bool

    def __call__(self, inputs, outputs):
        branch = self.then_branch if inputs[0].reshape(-1)[0] else self.else_branch
        store_outputs(outputs, branch.run(inputs[1:]), self.dynamic)


@register(BuiltinOperator.IF, stateful=True)
def prepare_if(ctx: OpContext) -> PreparedOp:
    cond = ctx.input(0)
    ctx.check(cond.type == dtypes.TensorType.BOOL, f"IF condition must be BOOL, got {cond.type_name}")
    ctx.check(cond.size == 1, f"IF condition must have 1 element, has {cond.size}")
    args = ctx.inputs[1:]
    ctx.check(all(t is not None for t in args), "IF inputs must all be present")
    branches = [
        callee_runtime(ctx, ctx.options.then_subgraph_index),
        callee_runtime(ctx, ctx.options.else_subgraph_index),
    ]
    shapes = [t.shape for t in args]
    dynamic = False
    results = []
    for role, sub in zip(("then", "else"), branches):
        check_subgraph_io_types(ctx, sub, role, "inputs", args, [t.type for t in args])
        check_subgraph_io_types(ctx, sub, role, "outputs", ctx.outputs, [t.type for t in ctx.outputs])
        sub.prepare_for(shapes)
        outs = subgraph_output_infos(sub)
        dynamic = dynamic or any(o.dynamic for o in outs)
        results.append([tuple(o.shape) for o in outs])
    dynamic = dynamic or results[0] != results[1]
    for k, s in enumerate(results[0]):
        if dynamic:
            ctx.set_output_dynamic(k)
        else:
            ctx.set_output_shape(k, s)
    return If(branches[0], branches[1], dynamic)
