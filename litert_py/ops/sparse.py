"""DENSIFY: a sparse constant tensor (schema SparsityParameters) expanded to its dense form.

Paths: float32, float16 and int8 values. The input is always constant, so the runtime folds the node at
prepare: the constant's buffer arrives still encoded (the raw bytes of the stored values, see
runtime/tensors.py ``constant_array``) and its SparsityParameters are read from the model, since
TensorInfo does not carry them. Formats: any traversal_order, an increasing block_map (block dimensions
after the original ones; block b's size is ``dim_metadata[traversal_order[rank + b]].dense_size``, exactly
as LiteRT looks it up), levels DENSE or SPARSE_CSR with int32,
uint16 or uint8 segment and index vectors; block levels must be DENSE (ai-edge-litert 2.3.0 crashes with
SIGFPE on a SPARSE_CSR block level, so we refuse those at prepare).

The expansion (schema/sparsity.py ``densify``, also used by the runtime for sparse constants other ops read)
is FormatConverter::SparseToDense + Populate of
tensorflow/lite/kernels/internal/utils/sparsity_format_converter.cc, done level by level for all paths at
once instead of recursively: a DENSE level of size s extends every path with 0..s-1 (``prev * s + i``), a
SPARSE_CSR level extends path ``prev`` with the positions ``segments[prev] .. segments[prev + 1]`` and the
indices stored there (a path whose ``prev + 1`` is past the segments, or a position past the indices, ends,
as Populate skips them). Paths stay in Populate's depth-first order, which is the order the values are
stored in. Where LiteRT would read past the values or write outside the dense tensor (malformed sparsity),
prepare fails instead.

Sources matched: tensorflow/lite/kernels/densify.cc, tensorflow/lite/kernels/internal/utils/
sparsity_format_converter.cc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from ..schema.sparsity import densify  # noqa: F401  (the arithmetic lives in schema; tests import it here)
from .registry import OpContext, PreparedOp, register


@dataclass(frozen=True, eq=False)
class DensifyConstant:
    dense: np.ndarray

    def __call__(self, inputs, outputs):
        outputs[0][...] = self.dense


@register(BuiltinOperator.DENSIFY)
def prepare_densify(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x = ctx.input(0)
    ctx.check_types((np.float32, np.float16, np.int8), 0)
    ctx.check(ctx.outputs[0].type == x.type, "DENSIFY: output type differs from the input type")
    t = ctx.model.subgraphs[ctx.subgraph_index].tensors[x.index] if ctx.model is not None else None
    sp = t.sparsity if t is not None else None
    ctx.check(x.data is not None and sp is not None, "DENSIFY: the input must be a constant sparse tensor")
    raw = np.ascontiguousarray(np.asarray(x.data)).view(np.uint8).reshape(-1)
    usable = raw.size - raw.size % x.dtype.itemsize
    values = raw[:usable].view(x.dtype.newbyteorder("<")).astype(x.dtype)
    try:
        dense = densify(values, tuple(x.shape), sp)
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.set_output_shape(0, x.shape)
    return DensifyConstant(dense)
