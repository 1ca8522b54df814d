"""One-axis reductions and scans: ARG_MAX, ARG_MIN, CUMSUM.

ARG_MAX / ARG_MIN (float32, uint8, int8, int32, bool; int32 / int64 axis and output): first extreme index,
see ArgMaxMin for NaN. CUMSUM (float32, int32, int64; int32 axis; exclusive, reverse): sequential running sum.

Sources matched: tflite/kernels/{arg_min_max,cumsum}.cc, reference/arg_min_max.h,
tflite/kernels/internal/optimized/optimized_ops.h (ArgMinMax, ArgMaxVector / ArgMinVector, CumSum) with
NEON_2_SSE.h's vpmax_f32 / vpmin_f32 (the x86 wheel's NEON emulation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputValueError
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register

INPUT, AXIS, OUTPUT = 0, 1, 0

_F32, _I32, _I64 = TensorType.FLOAT32, TensorType.INT32, TensorType.INT64
_U8, _I8, _I16, _BOOL = TensorType.UINT8, TensorType.INT8, TensorType.INT16, TensorType.BOOL


# -- ARG_MAX, ARG_MIN (arg_min_max.cc, reference/arg_min_max.h, optimized_ops.h ArgMinMax) ---------------
@dataclass(frozen=True, eq=False)
class ArgMaxMin:
    """Index of the first maximum (minimum) along ``axis``: a later element wins only when strictly greater
    (less). arg_min_max.cc registers one kernel for every resolver (BUILTIN_REF included): it calls
    optimized_ops::ArgMinMax, which sends float32 / int8 / uint8 with an inner size of 1 (every axis after the
    reduced one has size 1) to ArgMinMaxLastAxis and everything else to reference_ops::ArgMinMax. Integers and
    float32 without NaN give the first extreme index on both paths.

    float32 NaN, reference path (inner size > 1, reference/arg_min_max.h NaN-aware comparator): a NaN candidate
    never wins and a NaN current value is replaced by any non-NaN one: the first non-NaN extreme, 0 if all NaN.

    float32 NaN, inner size 1 (ArgMaxVector / ArgMinVector<float>, optimized_ops.h, built with USE_NEON on
    x86-64 through NEON_2_SSE.h, no __aarch64__): for a length n < 4 the scalar loop above. For n >= 4, with
    k = 4 * (n // 4): lane j (elements j, j+4, ... below k) keeps its first non-NaN extreme and its index (NaN
    if the lane is all NaN); the lanes are folded as ``m = p(p(l0, l1), p(l2, l3))`` with NEON_2_SSE's serial
    vpmax_f32 ``p(a, b) = b if a < b else a`` (vpmin_f32: ``b if a > b else a``), so a NaN first operand
    propagates and a NaN second operand is dropped; the index is the smallest lane index whose lane value
    equals m (none when m is NaN). The tail (elements k..n-1) then runs the NaN-aware scalar loop from (m,
    index); a final NaN m gives 0. E.g. ARG_MAX [1, 2, NaN, 3] = 1, [NaN, NaN, 5, 8, 2] = 4. See _lanes_arg."""

    axis: int | None  # None: read from the axis tensor at eval
    is_max: bool
    out_dtype: np.dtype
    lanes: bool = False  # float32 with inner size 1 and axis length >= 4 (the vectorized kernel)

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if self.axis is None:
            axis = _arg_axis(int(inputs[AXIS].reshape(-1)[0]), x.ndim)
            lanes = _uses_lanes(x.dtype.kind == "f", x.shape, axis)
        else:
            axis, lanes = self.axis, self.lanes
        if lanes:
            best = (np.maximum if self.is_max else np.minimum).reduce(x, axis=axis, keepdims=True)
            if np.isnan(best).any():  # NaN somewhere: the vectorized kernel's own NaN behaviour
                idx = _lanes_arg(x.reshape(-1, x.shape[axis]), self.is_max).reshape(
                    x.shape[:axis] + x.shape[axis + 1 :]
                )
            else:  # no NaN: the first extreme, as on the reference path
                idx = np.argmax(x == best, axis=axis)
        elif x.dtype.kind == "f":
            best = (np.fmax if self.is_max else np.fmin).reduce(x, axis=axis, keepdims=True)
            idx = np.argmax(x == best, axis=axis)
        else:
            idx = (np.argmax if self.is_max else np.argmin)(x, axis=axis)
        if self.axis is None:
            outputs[OUTPUT] = idx.astype(self.out_dtype)
        else:
            np.copyto(outputs[OUTPUT], idx, casting="unsafe")


def _lanes_arg(x: np.ndarray, is_max: bool) -> np.ndarray:
    """ArgMaxVector / ArgMinVector<float> (NEON via NEON_2_SSE) for each row of ``x`` (rows, n), n >= 4."""
    rows, n = x.shape
    k = n - n % 4
    red = np.fmax if is_max else np.fmin
    v = x[:, :k].reshape(rows, k // 4, 4)
    lane = v  # each lane's non-NaN extreme (NaN when the lane is all NaN), halving the chunks (fast on any shape)
    while lane.shape[1] > 1:
        h = lane.shape[1] // 2
        half = red(lane[:, :h], lane[:, h : 2 * h])
        lane = np.concatenate((half, lane[:, 2 * h :]), axis=1) if lane.shape[1] % 2 else half
    lane = lane[:, 0]
    lane_idx = np.argmax(v == lane[:, None, :], axis=1) * 4 + np.arange(4)  # first index of it in its lane
    if is_max:

        def fold(a, b):
            return np.where(a < b, b, a)  # vpmax_f32: (a < b) ? b : a
    else:

        def fold(a, b):
            return np.where(a > b, b, a)  # vpmin_f32: (a > b) ? b : a

    m = fold(fold(lane[:, 0], lane[:, 1]), fold(lane[:, 2], lane[:, 3]))
    m_nan = np.isnan(m)
    hit = np.where(lane == m[:, None], lane_idx, n)  # index masks as vbslq_s32, then the smallest one
    res = np.where(m_nan, 0, np.minimum(np.minimum(hit[:, 0], hit[:, 1]), np.minimum(hit[:, 2], hit[:, 3])))
    if k < n:  # scalar tail: a non-NaN element wins over a NaN m or when strictly better
        t = x[:, k:]
        tb = t[:, 0] if n - k == 1 else red(t[:, 0], t[:, 1]) if n - k == 2 else red(red(t[:, 0], t[:, 1]), t[:, 2])
        better = (tb > m) if is_max else (tb < m)
        take = ~np.isnan(tb) & (m_nan | better)
        res = np.where(take, k + np.argmax(t == tb[:, None], axis=1), res)
    return res


def _uses_lanes(is_float: bool, shape: Sequence[int], axis: int) -> bool:
    """optimized_ops::ArgMinMax takes ArgMinMaxLastAxis (inner size 1); its float kernel vectorizes from 4."""
    return is_float and shape[axis] >= 4 and all(d == 1 for d in shape[axis + 1 :])


def _arg_axis(a: int, rank: int) -> int:
    r = a + rank if a < 0 else a
    if not 0 <= r < rank:
        raise InputValueError(f"Invalid axis index {a} for a rank-{rank} input.")
    return r


_ARG_TYPES = (_F32, _U8, _I8, _I32, _BOOL)


@register(BuiltinOperator.ARG_MAX)
@register(BuiltinOperator.ARG_MIN)
def prepare_arg_max_min(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, axis, y = ctx.input(INPUT), ctx.input(AXIS), ctx.outputs[OUTPUT]
    ctx.check(axis.size == 1, f"NumElements(axis) != 1 ({axis.size} != 1)")
    ctx.check(axis.type in (_I32, _I64), "axis->type == kTfLiteInt32 || axis->type == kTfLiteInt64 was not true.")
    ctx.check(y.type in (_I32, _I64), f"Unknown index output data type: {y.type_name}")
    if x.type not in _ARG_TYPES:
        raise ctx.fail(f"Unknown input type: {x.type_name}")
    ctx.check(len(x.shape) >= 1, "NumDimensions(input) >= 1 was not true.")
    is_max = ctx.builtin_code == BuiltinOperator.ARG_MAX
    if not axis.is_constant:
        ctx.set_output_dynamic(OUTPUT)
        return ArgMaxMin(None, is_max, y.dtype)
    try:
        a = _arg_axis(int(axis.data.reshape(-1)[0]), len(x.shape))
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    ctx.check(x.shape[a] > 0, "Cannot compute ArgMin/ArgMax over an empty axis.")
    ctx.set_output_shape(OUTPUT, tuple(d for i, d in enumerate(x.shape) if i != a))
    return ArgMaxMin(a, is_max, y.dtype, _uses_lanes(x.type == _F32, x.shape, a))


# -- CUMSUM (cumsum.cc, optimized_ops::CumSum) --------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Cumsum:
    """Running sum along ``axis`` in the input type (integers wrap), added in order (reversed for ``reverse``);
    ``exclusive`` shifts it by one, starting from 0."""

    axis: int | None  # None: read from the axis tensor at eval
    exclusive: bool
    reverse: bool

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        if x.size == 0:
            return
        axis = self.axis if self.axis is not None else _arg_axis(int(inputs[AXIS].reshape(-1)[0]), x.ndim)
        if self.reverse:
            x = np.flip(x, axis)
            target = np.flip(out, axis)
        else:
            target = out
        if self.exclusive:
            n = x.shape[axis]
            head = [slice(None)] * x.ndim
            head[axis] = slice(0, 1)
            target[tuple(head)] = 0
            if n > 1:
                src, dst = list(head), list(head)
                src[axis], dst[axis] = slice(0, n - 1), slice(1, n)
                np.add.accumulate(x[tuple(src)], axis=axis, dtype=out.dtype, out=target[tuple(dst)])
        else:
            np.add.accumulate(x, axis=axis, dtype=out.dtype, out=target)


@register(BuiltinOperator.CUMSUM)
def prepare_cumsum(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, axis, y = ctx.input(INPUT), ctx.input(AXIS), ctx.outputs[OUTPUT]
    ctx.check(
        x.type in (_I32, _F32, _I64),
        "input->type == kTfLiteInt32 || input->type == kTfLiteFloat32 || input->type == kTfLiteInt64 was not true.",
    )
    ctx.check(axis.type == _I32, f"axis->type != kTfLiteInt32 ({axis.type_name} != INT32)")
    ctx.check(axis.size == 1, f"NumElements(axis) != 1 ({axis.size} != 1)")
    ctx.check(len(x.shape) >= 1, "NumDimensions(input) >= 1 was not true.")
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    ctx.set_output_shape(OUTPUT, x.shape)
    a = None
    if axis.is_constant:
        try:
            a = _arg_axis(int(axis.data.reshape(-1)[0]), len(x.shape))
        except ValueError as e:
            raise ctx.fail(str(e)) from None
    return Cumsum(a, bool(ctx.options.exclusive), bool(ctx.options.reverse))
