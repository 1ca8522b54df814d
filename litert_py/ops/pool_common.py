"""The 2-D pools' shared geometry (AVERAGE_POOL_2D and MAX_POOL_2D in pooling.py, L2_POOL_2D in l2_pool.py): the
common prepare checks of tflite/kernels/pooling.cc GenericPrepare, the window taps as rectangles clipped to the
input (no padded copy), the in-order tap sum and the float divisor. Registers no op."""

from __future__ import annotations

import numpy as np

from .common import scalar_operand
from .conv.common import Geometry, window_geometry
from .registry import OpContext, TensorInfo

INPUT = 0
OUTPUT = 0
ALL = slice(None)


def axis_taps(in_size: int, out: int, filter_size: int, stride: int, pad: int) -> list[tuple[slice, slice, bool]]:
    """Per filter tap k along one axis: (output slice, input slice, covers every output) over the outputs
    o whose input o*stride - pad + k lies inside the input; taps inside no input are left out."""
    taps = []
    for k in range(filter_size):
        o0 = max(0, -((k - pad) // stride))  # ceil((pad - k) / stride)
        o1 = min(out, (in_size - 1 + pad - k) // stride + 1)
        if o1 > o0:
            i0 = o0 * stride - pad + k
            taps.append((slice(o0, o1), slice(i0, i0 + (o1 - o0 - 1) * stride + 1, stride), o1 - o0 == out))
    return taps


def axis_counts(in_size: int, out: int, filter_size: int, stride: int, pad: int) -> np.ndarray:
    """How many filter taps of each output lie inside the input, along one axis."""
    counts = np.zeros(out, np.int64)
    for o, _, _ in axis_taps(in_size, out, filter_size, stride, pad):
        counts[o] += 1
    return counts


def sum_taps(x: np.ndarray, taps: tuple, leading_full: int, out: np.ndarray, dtype=None) -> None:
    """``out = 0 + t0 + t1 + ...``, the taps' input windows added in order into their output windows; the first
    ``leading_full`` taps cover every output, and starting from the sum of the first two is the same sum for
    integers. A float sum must start from +0.0, as the reference's ``float total = 0.f`` does: adding +0.0
    changes only -0.0 (to +0.0), so a window of -0.0 values sums to +0.0 there (``t0 + t1`` gives -0.0). Summed
    from ``t0`` instead, each partial sum equals the reference's or is -0.0 where the reference's is +0.0 (then
    adding the same next tap keeps that: equal unless the tap is -0.0 too), so one ``+ 0.0`` over the finished
    sums gives the reference's bit for bit: a pass over the contiguous output instead of the strided first tap
    (a 2x2 stride-2 pool over 48x48x24: ~26 -> ~21 us)."""
    if leading_full == 2:
        np.add(x[taps[0][1]], x[taps[1][1]], out=out, dtype=dtype)
    elif leading_full == 1:
        np.copyto(out, x[taps[0][1]])
    else:
        out.fill(0)
    for k in range(leading_full, len(taps)):
        o, i = taps[k]
        dst = out[o]
        np.add(dst, x[i], out=dst)
    if leading_full and out.dtype.kind == "f":
        np.add(out, _ZEROS[out.dtype], out=out)


#: +0.0 per float type as 0-d arrays (a ufunc converts a scalar operand on every call)
_ZEROS = {np.dtype(t): scalar_operand(0, t) for t in (np.float16, np.float32, np.float64)}


def tap_counts(ctx: OpContext, geo: Geometry) -> np.ndarray:
    """(OH, OW): how many taps of each window lie inside the input. LiteRT fails at eval on a window with no
    element inside the input (SAME/VALID windows always have one): here at prepare."""
    counts = np.outer(
        axis_counts(geo.in_h, geo.out_h, geo.filter_h, geo.stride_h, geo.pad_top),
        axis_counts(geo.in_w, geo.out_w, geo.filter_w, geo.stride_w, geo.pad_left),
    )
    ctx.check(counts.min() > 0, "a pooling window lies entirely in the padding")
    return counts


def float_divisor(ctx: OpContext, geo: Geometry) -> np.float32 | np.ndarray:
    """The float pools' divisor (AVERAGE_POOL_2D, L2_POOL_2D): ``tap_counts`` as one float32 when every window
    has the same count, else as (OH, OW, C) float32."""
    counts = tap_counts(ctx, geo)
    if (counts == counts.flat[0]).all():
        return np.float32(counts.flat[0])
    return np.ascontiguousarray(np.broadcast_to(counts[:, :, None], geo.out_shape[1:]), dtype=np.float32)


def pool_taps_2d(geo: Geometry):
    """The 2-D tap rectangles in (filter_y, filter_x) order: ((output index, input index, full), ...)."""
    rows = axis_taps(geo.in_h, geo.out_h, geo.filter_h, geo.stride_h, geo.pad_top)
    cols = axis_taps(geo.in_w, geo.out_w, geo.filter_w, geo.stride_w, geo.pad_left)
    return [((ALL, oy, ox), (ALL, iy, ix), fy and fx) for oy, iy, fy in rows for ox, ix, fx in cols]


def pool_geometry(ctx: OpContext) -> tuple[TensorInfo, Geometry]:
    """The 2-D pools' common checks (one 4-D input, the output's type, positive strides), the window geometry
    and the output shape: the input and the geometry."""
    ctx.check_num(1)
    x, out = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(len(x.shape) == 4, f"input must be 4-D (NHWC), got shape {list(x.shape)}")
    ctx.check(out.type == x.type, f"output type {out.type_name} != input type {x.type_name}")
    o = ctx.options
    ctx.check(o.stride_h > 0 and o.stride_w > 0, f"strides must be positive, got {o.stride_h}x{o.stride_w}")
    geo = window_geometry(ctx, x.shape, x.shape[3], o.filter_height, o.filter_width, checked=False, dilation=False)
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    return x, geo
