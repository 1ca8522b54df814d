"""Segment reductions: SEGMENT_SUM, UNSORTED_SEGMENT_SUM, UNSORTED_SEGMENT_PROD, UNSORTED_SEGMENT_MAX,
UNSORTED_SEGMENT_MIN.

Paths: data float32 or int32 (int32 wraps on overflow, as the C++ loop does on x86), segment ids int32,
num_segments int32 (a scalar or a 1-element vector). Both runtimes reduce row by row in the order of the
segment ids (``np.<ufunc>.at`` is sequential), so float sums and products are bit-exact.

- SEGMENT_SUM: ids must start at 0 and grow by 0 or 1 ("delta == 0 || delta == 1"); the output has
  ``ids[-1] + 1`` rows. Constant ids give a static shape, otherwise the output is dynamic.
- UNSORTED_SEGMENT_*: ``num_segments`` rows; every id must be ``< num_segments`` (LiteRT's check);
  negative ids are skipped. Empty segments hold the identity LiteRT initializes with: 0 (sum), 1 (prod),
  the lowest value (max: ``numeric_limits<T>::lowest()``, -FLT_MAX for float32) and the largest (min).
  A non-constant ids or num_segments input makes the output dynamic. MAX / MIN use ``fmax`` / ``fmin``:
  ``std::max(acc, x)`` never takes a NaN ``x`` (``acc < NaN`` is false), and neither does ``fmax``.

Sources matched: tensorflow/lite/kernels/{segment_sum,unsorted_segment}.cc,
tensorflow/lite/kernels/internal/reference/reference_ops.h (SegmentSum, UnsortedSegmentRef).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import InputValueError
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register

_TYPES = (np.float32, np.int32)


def _segment_sum_rows(ids: np.ndarray) -> int:
    """Rows of SEGMENT_SUM's output; ValueError unless ids run 0, then steps of 0 or 1."""
    if ids.size == 0:
        return 0
    d = np.diff(ids.astype(np.int64))
    if ids[0] != 0 or (d.size and (d.min() < 0 or d.max() > 1)):
        raise InputValueError("SEGMENT_SUM: segment ids must start at 0 and increase by at most 1")
    return int(ids[-1]) + 1


def _unsorted_rows(ids: np.ndarray, num_segments: np.ndarray) -> int:
    n = int(num_segments.reshape(-1)[0])
    if ids.size and int(ids.max()) >= n:
        raise InputValueError(f"UNSORTED_SEGMENT: segment id {int(ids.max())} is not below num_segments {n}")
    return n


@dataclass(frozen=True, eq=False)
class SegmentReduce:
    """``ufunc.at`` of each data row into output row ``ids[i]`` (negative ids skipped) over ``identity``."""

    ufunc: np.ufunc
    identity: object
    sorted_ids: bool  # SEGMENT_SUM (rows from the ids) or UNSORTED_SEGMENT_* (rows from num_segments)
    dynamic: bool
    id_rank: int

    def __call__(self, inputs, outputs):
        data, ids = inputs[0], inputs[1]
        if self.dynamic:
            if ids.shape != data.shape[: self.id_rank]:
                raise InputValueError(f"segment ids shape {ids.shape} does not match data shape {data.shape}")
            rows = _segment_sum_rows(ids) if self.sorted_ids else _unsorted_rows(ids, inputs[2])
            outputs[0] = limits.new_array((rows,) + data.shape[self.id_rank :], data.dtype, "the segment output")
        out = outputs[0]
        out.fill(self.identity)
        flat_ids = ids.reshape(-1)
        keep = flat_ids >= 0
        rows = data.reshape(flat_ids.size, -1)
        if not keep.all():
            flat_ids, rows = flat_ids[keep], rows[keep]
        self.ufunc.at(out.reshape(out.shape[0], -1), flat_ids, rows)


_UNSORTED = {
    # op: (ufunc, identity per dtype)
    BuiltinOperator.UNSORTED_SEGMENT_SUM: (np.add, lambda dt: 0),
    BuiltinOperator.UNSORTED_SEGMENT_PROD: (np.multiply, lambda dt: 1),
    BuiltinOperator.UNSORTED_SEGMENT_MAX: (
        np.fmax,
        lambda dt: np.finfo(dt).min if dt.kind == "f" else np.iinfo(dt).min,
    ),
    BuiltinOperator.UNSORTED_SEGMENT_MIN: (
        np.fmin,
        lambda dt: np.finfo(dt).max if dt.kind == "f" else np.iinfo(dt).max,
    ),
}


def _check_common(ctx: OpContext, n_inputs: int):
    ctx.check_num(n_inputs)
    data, ids = ctx.input(0), ctx.input(1)
    ctx.check_types(_TYPES, 0)
    ctx.check(ids.dtype == np.int32, f"{ctx.op_name}: segment ids must be int32, got {ids.type_name}")
    ctx.check(ctx.outputs[0].type == data.type, f"{ctx.op_name}: output type differs from the data type")
    ctx.check(
        len(ids.shape) >= 1
        and len(data.shape) >= len(ids.shape)
        and tuple(data.shape[: len(ids.shape)]) == tuple(ids.shape),
        f"{ctx.op_name}: segment ids shape {ids.shape} does not match data shape {data.shape}",
    )
    return data, ids


@register(BuiltinOperator.SEGMENT_SUM)
def prepare_segment_sum(ctx: OpContext) -> PreparedOp:
    data, ids = _check_common(ctx, 2)
    ctx.check(len(ids.shape) == 1, "SEGMENT_SUM: segment ids must be a vector")
    if ids.data is None:
        ctx.set_output_dynamic(0)
        return SegmentReduce(np.add, 0, True, True, 1)
    try:
        rows = _segment_sum_rows(np.asarray(ids.data))
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.set_output_shape(0, (rows,) + tuple(data.shape[1:]))
    return SegmentReduce(np.add, 0, True, False, 1)


def prepare_unsorted_segment(ctx: OpContext) -> PreparedOp:
    data, ids = _check_common(ctx, 3)
    num = ctx.input(2)
    ctx.check(num.dtype == np.int32, f"{ctx.op_name}: num_segments must be int32, got {num.type_name}")
    ctx.check(len(num.shape) == 0 or tuple(num.shape) == (1,), f"{ctx.op_name}: num_segments must be a scalar")
    ufunc, identity = _UNSORTED[ctx.builtin_code]
    ident = data.dtype.type(identity(data.dtype))
    rank = len(ids.shape)
    if ids.data is None or num.data is None:
        ctx.set_output_dynamic(0)
        return SegmentReduce(ufunc, ident, False, True, rank)
    try:
        rows = _unsorted_rows(np.asarray(ids.data), np.asarray(num.data))
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.check(rows >= 0, f"{ctx.op_name}: num_segments must be non-negative, got {rows}")
    ctx.set_output_shape(0, (rows,) + tuple(data.shape[rank:]))
    return SegmentReduce(ufunc, ident, False, False, rank)


for _op in _UNSORTED:
    register(_op)(prepare_unsorted_segment)
