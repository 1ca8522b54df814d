"""Resource variables: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE.

A VAR_HANDLE names a variable by (container, shared_name); every subgraph of one interpreter that names the
same pair shares it (the interpreter's ``resources`` dict holds the values). Like LiteRT, the variable's
value keeps the dtype and shape of the last assignment. READ_VARIABLE's output is planned with the model's
shape when its shape_signature is fully known (a variable of another shape then fails the invoke, where
LiteRT's reference kernels copy a partial or overlong buffer), and is dynamic, taking the variable's
current shape as LiteRT resizes it, when the signature has a -1. Reading a variable whose dtype (that of its
last assignment) is not the output's fails the invoke, as in LiteRT's reference kernel; so does
READ_VARIABLE of a never-assigned variable. Variables (and hashtables) survive ``reset_all_variables``,
as in LiteRT, which resets only is_variable tensors.
Source matched: tensorflow/lite/kernels/var_handle.cc, read_variable.cc, assign_variable.cc,
tensorflow/lite/experimental/resource/resource_variable.cc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register


@dataclass(eq=False)
class ResourceVariable:
    """A variable of the interpreter's ``resources`` dict. An entry, once made, is never replaced nor removed
    (ops/ring_buffer.RingBufferChecks keeps the object); an assignment of the value's shape and type writes into
    the value's array in place."""

    value: np.ndarray | None = None

    def assign(self, value: np.ndarray) -> None:
        if self.value is not None and self.value.shape == value.shape and self.value.dtype == value.dtype:
            self.value[...] = value
        else:
            self.value = np.array(value, copy=True)


def assign_variable(resources: dict, key, value: np.ndarray) -> None:
    """ASSIGN_VARIABLE's effect: the variable ``key`` of ``resources`` (created on first use) takes ``value``."""
    var = resources.get(key)
    if var is None:
        var = resources[key] = ResourceVariable()
    var.assign(value)


@dataclass(frozen=True, eq=False)
class VarHandle:
    key: tuple

    @property
    def constant_output(self) -> np.ndarray:
        """The handle never changes: the runtime folds it into a constant at prepare (see shape.WriteConstant)."""
        value = np.empty((), dtype=object)
        value[()] = self.key
        return value

    def __call__(self, inputs, outputs):
        outputs[0][...] = self.key


def _name(dtype: np.dtype) -> str:
    return "STRING" if dtype.kind == "O" else dtypes.upper_name(dtype)


def _variable_value(var: ResourceVariable | None, handle, dtype: np.dtype) -> np.ndarray:
    if var is None or var.value is None:
        raise RuntimeError(f"READ_VARIABLE of variable {handle} before any ASSIGN_VARIABLE")
    value = var.value
    if value.dtype != dtype:  # LiteRT's reference kernel: TF_LITE_ENSURE_TYPES_EQ at eval
        raise RuntimeError(
            f"variable_tensor->type != output->type ({_name(value.dtype)} != {_name(dtype)}): variable {handle}"
        )
    return value


@dataclass(frozen=True, eq=False)
class ReadVariable:
    """The model declares the value's shape: copy into the planned output."""

    resources: dict
    dtype: np.dtype  # the output's type: a variable of another type fails the invoke

    def value(self, handle) -> np.ndarray:
        """The variable's value itself (not a copy), checked as READ_VARIABLE checks it at eval (assigned, of the
        output's type); the fused ring buffer (ops/ring_buffer.py) reads through it."""
        return _variable_value(self.resources.get(handle), handle, self.dtype)

    def __call__(self, inputs, outputs):
        handle = inputs[0][()]
        value = self.value(handle)
        out = outputs[0]
        if value.shape != out.shape:
            raise RuntimeError(
                f"variable {handle} holds shape {list(value.shape)}, the model reads "
                f"{list(out.shape)} (declare -1 in the output's shape_signature for a variable "
                "whose shape changes)"
            )
        out[...] = value


@dataclass(frozen=True, eq=False)
class ReadVariableDynamic:
    """The model leaves the value's shape open (-1 in its shape_signature): the output takes the variable's
    current shape, as LiteRT resizes it."""

    resources: dict
    dtype: np.dtype

    def __call__(self, inputs, outputs):
        handle = inputs[0][()]
        outputs[0] = _variable_value(self.resources.get(handle), handle, self.dtype).copy()


@dataclass(frozen=True, eq=False)
class AssignVariable:
    resources: dict

    def __call__(self, inputs, outputs):
        assign_variable(self.resources, inputs[0][()], inputs[1])


@register(BuiltinOperator.VAR_HANDLE, stateful=True)
def prepare_var_handle(ctx: OpContext) -> PreparedOp:
    ctx.check_num(0, 1)
    out = ctx.outputs[0]
    ctx.check(  # LiteRT writes its int32 resource id into any output type; litert_py's handle is an object
        out.type == dtypes.TensorType.RESOURCE,
        f"VAR_HANDLE's output must be a RESOURCE tensor, got {out.type_name} (not supported by litert_py)",
    )
    opts = ctx.options
    # An empty shared_name is unique per op in TF; LiteRT keys it by the names as given, and so do we.
    key = ("resource_variable", opts.container, opts.shared_name)
    ctx.set_output_shape(0, ())
    return VarHandle(key)


@register(BuiltinOperator.READ_VARIABLE, stateful=True)
def prepare_read_variable(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    out = ctx.outputs[0]
    dtype = np.dtype(object) if out.type in dtypes.OBJECT_TYPES else out.dtype  # strings: object arrays
    sig = ctx.model.subgraphs[ctx.subgraph_index].tensors[out.index].shape_signature
    if sig is not None and any(d < 0 for d in sig):
        ctx.set_output_dynamic(0)
        return ReadVariableDynamic(ctx.resources, dtype)
    return ReadVariable(ctx.resources, dtype)


@register(BuiltinOperator.ASSIGN_VARIABLE, stateful=True)
def prepare_assign_variable(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 0)
    return AssignVariable(ctx.resources)
