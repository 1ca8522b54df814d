"""Resource variables: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE.

A VAR_HANDLE names a variable by (container, shared_name); every subgraph of one interpreter that names the
same pair shares it (the interpreter's ``resources`` dict holds the values). Like LiteRT, the variable's
value keeps the dtype and shape of the last assignment; READ_VARIABLE of a never-assigned variable fails.
Source matched: tensorflow/lite/kernels/var_handle.cc, read_variable.cc, assign_variable.cc,
tensorflow/lite/experimental/resource/resource_variable.cc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .registry import OpContext, register


@dataclass(eq=False)
class ResourceVariable:
    value: np.ndarray | None = None

    def assign(self, value: np.ndarray) -> None:
        if self.value is not None and self.value.shape == value.shape and self.value.dtype == value.dtype:
            self.value[...] = value
        else:
            self.value = np.array(value, copy=True)


def _variable(resources: dict, key) -> ResourceVariable:
    var = resources.get(key)
    if var is None:
        var = resources[key] = ResourceVariable()
    return var


@dataclass(frozen=True, eq=False)
class VarHandle:
    key: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = self.key


@dataclass(frozen=True, eq=False)
class ReadVariable:
    resources: dict

    def __call__(self, inputs, outputs):
        var = self.resources.get(inputs[0][()])
        if var is None or var.value is None:
            raise RuntimeError(f"READ_VARIABLE of variable {inputs[0][()]} before any ASSIGN_VARIABLE")
        out = outputs[0]
        if var.value.shape != out.shape:
            raise RuntimeError(f"variable {inputs[0][()]} holds shape {list(var.value.shape)}, the model reads "
                               f"{list(out.shape)}")
        out[...] = var.value


@dataclass(frozen=True, eq=False)
class AssignVariable:
    resources: dict

    def __call__(self, inputs, outputs):
        _variable(self.resources, inputs[0][()]).assign(inputs[1])


@register(BuiltinOperator.VAR_HANDLE, stateful=True)
def prepare_var_handle(ctx: OpContext):
    ctx.check_num(0, 1)
    opts = ctx.options
    # An empty shared_name is unique per op in TF; LiteRT keys it by the names as given, and so do we.
    key = ("resource_variable", opts.container, opts.shared_name)
    ctx.set_output_shape(0, ())
    return VarHandle(key)


@register(BuiltinOperator.READ_VARIABLE, stateful=True)
def prepare_read_variable(ctx: OpContext):
    ctx.check_num(1, 1)
    return ReadVariable(ctx.runtime.resources)


@register(BuiltinOperator.ASSIGN_VARIABLE, stateful=True)
def prepare_assign_variable(ctx: OpContext):
    ctx.check_num(2, 0)
    return AssignVariable(ctx.runtime.resources)
