"""Hashtables: HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE.

Paths: int64 keys -> string values and string keys -> int64 values (the only pairs LiteRT accepts). A
HASHTABLE names its table by ``table_id``; every subgraph of one interpreter naming the same id shares the
table, kept in the interpreter's ``resources`` dict (it survives ``reset_all_variables``, as in LiteRT).
A static table: the first HASHTABLE_IMPORT fills it (first value wins for a repeated key), later imports
are ignored; FIND of a missing key gives the first element of the default value; SIZE is an int64 [1].
Sources matched: tensorflow/lite/kernels/hashtable/hashtable.cc, hashtable_find.cc, hashtable_import.cc,
hashtable_size.cc, tensorflow/lite/experimental/resource/static_hashtable.cc.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register

INT64 = dtypes.TensorType.INT64
STRING = dtypes.TensorType.STRING
_PAIRS = ((INT64, STRING), (STRING, INT64))


@dataclass(eq=False)
class StaticHashtable:
    key_type: int
    value_type: int
    table: dict = field(default_factory=dict)
    initialized: bool = False

    def import_(self, keys: np.ndarray, values: np.ndarray) -> None:
        if self.initialized:  # the converter may leave the initializer in the main graph: import once
            return
        table = self.table
        for k, v in zip(keys.reshape(-1).tolist(), values.reshape(-1).tolist()):
            table.setdefault(k, v)
        self.initialized = True


def _check_pair(ctx: OpContext, key_type: int, value_type: int) -> None:
    ctx.check(
        (key_type, value_type) in _PAIRS,
        f"{ctx.op_name} supports int64 keys with string values and string keys with int64 values, got "
        f"{dtypes.type_name(key_type)} keys with {dtypes.type_name(value_type)} values",
    )


def _check_handle(ctx: OpContext) -> None:
    h = ctx.input(0)
    ctx.check(
        h.type in (dtypes.TensorType.RESOURCE, dtypes.TensorType.INT32),
        f"{ctx.op_name}'s table handle must be a RESOURCE tensor, got {h.type_name}",
    )


@dataclass(frozen=True, eq=False)
class Hashtable:
    resources: dict
    key: tuple
    key_type: int
    value_type: int

    def __call__(self, inputs, outputs):
        if self.key not in self.resources:
            self.resources[self.key] = StaticHashtable(self.key_type, self.value_type)
        flat = outputs[0].reshape(-1)  # a handle of shape () or [1]: each element is the table's key
        for k in range(flat.size):
            flat[k] = self.key


@register(BuiltinOperator.HASHTABLE, stateful=True)
def prepare_hashtable(ctx: OpContext) -> PreparedOp:
    ctx.check_num(0, 1)
    opts = ctx.options
    _check_pair(ctx, opts.key_dtype, opts.value_dtype)
    out = ctx.outputs[0]
    ctx.check(out.type == dtypes.TensorType.RESOURCE, f"HASHTABLE output must be RESOURCE, got {out.type_name}")
    ctx.set_output_shape(0, out.shape)
    ctx.report_dynamic(0)  # hashtable.cc PrepareHashtable reallocates the handle as a dynamic tensor
    return Hashtable(ctx.resources, ("hashtable", int(opts.table_id)), int(opts.key_dtype), int(opts.value_dtype))


def _table(resources: dict, handle: np.ndarray) -> StaticHashtable:
    table = resources.get(handle.reshape(-1)[0])
    if table is None:
        raise RuntimeError(f"hashtable {handle.reshape(-1)[0]} does not exist (no HASHTABLE op ran for it)")
    return table


@dataclass(frozen=True, eq=False)
class HashtableImport:
    resources: dict

    def __call__(self, inputs, outputs):
        _table(self.resources, inputs[0]).import_(inputs[1], inputs[2])


@register(BuiltinOperator.HASHTABLE_IMPORT, stateful=True)
def prepare_hashtable_import(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3, 0)
    _check_handle(ctx)
    keys, values = ctx.input(1), ctx.input(2)
    _check_pair(ctx, keys.type, values.type)
    ctx.check(keys.size == values.size, f"HASHTABLE_IMPORT has {keys.size} keys but {values.size} values")
    return HashtableImport(ctx.resources)


@dataclass(frozen=True, eq=False)
class HashtableFind:
    resources: dict
    key_type: int
    value_type: int

    def __call__(self, inputs, outputs):
        table = _table(self.resources, inputs[0])
        if not table.initialized:
            raise RuntimeError("hashtable need to be initialized before using")
        default = inputs[2].reshape(-1)[0]
        if self.value_type == STRING:
            found = [table.table.get(k, default) for k in inputs[1].reshape(-1).tolist()]
            outputs[0].reshape(-1)[:] = found
        else:
            get = table.table.get
            outputs[0].reshape(-1)[:] = np.fromiter(
                (get(k, default) for k in inputs[1].reshape(-1).tolist()), np.int64, inputs[1].size
            )


@register(BuiltinOperator.HASHTABLE_FIND, stateful=True)
def prepare_hashtable_find(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3, 1)
    _check_handle(ctx)
    keys, default, out = ctx.input(1), ctx.input(2), ctx.outputs[0]
    ctx.check(
        default.type == out.type, f"HASHTABLE_FIND default value is {default.type_name}, its output {out.type_name}"
    )
    _check_pair(ctx, keys.type, out.type)
    ctx.check(default.size >= 1, "HASHTABLE_FIND needs a default value")
    ctx.set_output_shape(0, keys.shape)
    return HashtableFind(ctx.resources, keys.type, out.type)


@dataclass(frozen=True, eq=False)
class HashtableSize:
    resources: dict

    def __call__(self, inputs, outputs):
        outputs[0][...] = len(_table(self.resources, inputs[0]).table)


@register(BuiltinOperator.HASHTABLE_SIZE, stateful=True)
def prepare_hashtable_size(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    _check_handle(ctx)
    out = ctx.outputs[0]
    ctx.check(out.type == INT64, f"HASHTABLE_SIZE output must be INT64, got {out.type_name}")
    ctx.set_output_shape(0, (1,))
    return HashtableSize(ctx.resources)
