"""Control flow: CALL_ONCE (WHILE, IF and CALL come with the control-flow work).

CALL_ONCE runs its init subgraph at the first invoke of the interpreter and never again, also across
``allocate_tensors`` calls (LiteRT keeps the flag in the interpreter's resources, not in the node).
Source matched: tensorflow/lite/kernels/call_once.cc.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema.model import BuiltinOperator
from .registry import OpContext, register


@dataclass(frozen=True, eq=False)
class CallOnce:
    interpreter: object
    subgraph_index: int

    def __call__(self, inputs, outputs):
        done = self.interpreter.resources
        key = ("call_once", self.subgraph_index)
        if done.get(key):
            return
        sub = self.interpreter._subgraph(self.subgraph_index)
        if not sub.allocated:
            sub.prepare()
        sub.invoke()
        done[key] = True


@register(BuiltinOperator.CALL_ONCE, stateful=True)
def prepare_call_once(ctx: OpContext):
    ctx.check_num(0, 0)
    k = ctx.options.init_subgraph_index
    sub = ctx.runtime._subgraph(k)
    ctx.check(not sub.sg.inputs and not sub.sg.outputs, "CALL_ONCE's init subgraph must have no inputs or outputs")
    return CallOnce(ctx.runtime, k)
