"""Float DEPTHWISE_CONV_2D as one np.einsum over the window view (`DepthwiseConvFloatEinsum`), the fast float path.

The per-tap path makes two numpy passes per filter tap (the product into a scratch, then the add into the
output). np.einsum("ijnrp,ijp->nrp") over the (KH, KW, N, OH, OW*C) window view of the zero-padded input and the
(KH, KW, OW*C) weights (each tap's channel weights tiled over one output row) multiplies and accumulates in one
pass per tap inside one call, writing the output rows directly: 2-3.5x faster on MediaPipe's layers. With
stride_w > 1 an output row does not read a contiguous input run: the padded input is split into stride_w column
phase planes (plane px holds padded columns px, px + sw, ...; every padded row), where each tap's run is unit
stride; the taps of one plane are one einsum, the planes' partial sums are added.

Exactness: float32 products summed in float32. numpy's einsum keeps the taps as the outer (reduction) loop
around the contiguous OW*C run and sums from 0 in (filter_y, filter_x) order, the reference's order
(reference/depthwiseconv_float.h: total = 0, += each in-image tap's product, + bias, clamp; a padded tap adds
an exact 0): stride_w 1 layers with 2 or more channels came out bit-identical to BUILTIN_REF in the tests (with
one channel einsum makes the taps its inner loop: another order). With column phases the taps
are summed per phase, then the phases added: a different order, within the float tolerance (each of the
KH*KW + 1 terms rounded once: |error| <= (KH*KW + 1) * 2^-24 * sum |terms|), checked against a float64
reference in tests/ops/conv/test_depthwise_einsum.py. As with the per-tap path, a padded tap times an infinite
weight gives NaN where the reference skips the tap.
Measured (1 thread, isolated layer, 3x3 SAME): 64x64x24 330 -> 121 us, 16x16x64 69 -> 22 us, 8x8x96 34 -> 9.4 us,
2x2x128 11.6 -> 3.1 us, 5x5 16x16x128 406 -> 100 us; stride 2 64x64x28 -> 32x32 160 -> 70 us.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..activation_fusion import ClampLast
from ..bound_plan import BoundCalls
from ..common import aligned_empty, aligned_full, c_einsum, clip_ufunc, reshape_view
from .common import Geometry
from .phases import phase_axis, tap_groups

SUBSCRIPTS = "ijnrp,ijp->nrp"


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloatEinsum(BoundCalls, ClampLast):
    """Float DEPTHWISE_CONV_2D (constant filter, constant or no bias): the input copied into a zero-padded
    buffer (or its column phase planes), one einsum per plane into the output rows, the bias, the clamp."""

    fills: tuple  # ((destination, input index), ...)
    groups: tuple  # ((window (KHg, KWg, N, OH, OW*O) view, weights (KHg, KWg, OW*O)), ...) one per plane
    rows: tuple  # the output's shape as (N, OH, OW*O)
    scratch: np.ndarray | None  # (N, OH, OW*O): the partial sums of the second and later planes
    bias: np.ndarray | None  # (OW*O,)
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on these arrays: the fills from ``x``'s views, one einsum per plane into the
        output rows (the later planes' through ``scratch``, added), the bias, the clamp."""
        calls = [(np.copyto, (dest, x[index]), {}) for dest, index in self.fills]
        rows = out.reshape(self.rows)
        (window, weights), *more = self.groups
        calls.append((c_einsum, (SUBSCRIPTS, window, weights), {"out": rows}))
        for window, weights in more:
            calls.append((c_einsum, (SUBSCRIPTS, window, weights), {"out": self.scratch}))
            calls.append((np.add, (rows, self.scratch), {"out": rows}))
        if self.bias is not None:
            calls.append((np.add, (rows, self.bias), {"out": rows}))
        calls.append((clip_ufunc, (out, self.out_min, self.out_max), {"out": out}))
        return tuple(calls)


def _window(src: np.ndarray, offset: int, shape: tuple, strides: tuple) -> np.ndarray:
    """A read-only strided view of the C-contiguous ``src`` (offset and strides in elements; the ndarray
    constructor refuses a view that leaves the buffer)."""
    item = src.itemsize
    view = np.ndarray(shape, src.dtype, src, offset * item, tuple(s * item for s in strides))
    view.flags.writeable = False
    return view


def build_einsum(geo: Geometry, multiplier: int, f: np.ndarray, bias: np.ndarray | None, lo, hi):
    """The prepared op for a constant (1, KH, KW, O) float32 filter, or None for strided windows with a depth
    multiplier (no phase planes there)."""
    windows = einsum_windows(geo, multiplier, f, np.float32, 0)
    if windows is None:
        return None
    fills, groups, rows, scratch = windows
    b = None if bias is None else np.tile(np.asarray(bias, np.float32).reshape(-1), geo.out_w)
    return DepthwiseConvFloatEinsum(fills, groups, rows, scratch, b, lo, hi)


def einsum_windows(geo: Geometry, multiplier: int, f: np.ndarray, dtype, border):
    """(fills, groups, rows, scratch) of DepthwiseConvFloatEinsum for the (1, KH, KW, O) filter values ``f`` in
    ``dtype`` over a padded buffer whose border holds ``border``, or None for strided windows with a depth
    multiplier (no phase planes there)."""
    g = geo
    c = g.out_c
    hp, wp = g.pad_top + g.in_h + g.pad_bottom, g.pad_left + g.in_w + g.pad_right
    run = g.out_w * c
    w = f.reshape(g.filter_h, g.filter_w, c).astype(dtype)
    groups = []
    if g.stride_w == 1:
        padded = aligned_full((g.batches, hp, wp, c), border, dtype)
        fill = padded[:, g.pad_top : g.pad_top + g.in_h, g.pad_left : g.pad_left + g.in_w]
        if multiplier > 1:  # output channel c*m + j reads input channel c
            fill = reshape_view(fill, (g.batches, g.in_h, g.in_w, g.in_c, multiplier))
        fills = ((fill, (Ellipsis, None) if multiplier > 1 else (Ellipsis,)),)
        row = wp * c
        window = _window(
            padded.reshape(-1),
            0,
            (g.filter_h, g.filter_w, g.batches, g.out_h, run),
            (g.dilation_h * row, g.dilation_w * c, hp * row, g.stride_h * row, 1),
        )
        groups.append((window, np.tile(w[:, :, None, :], (1, 1, g.out_w, 1)).reshape(g.filter_h, g.filter_w, run)))
    elif multiplier == 1:
        qw, cols = phase_axis(g.in_w, g.pad_left, wp, g.stride_w)
        planes = aligned_full((g.stride_w, g.batches, hp, qw, c), border, dtype)
        interior = slice(g.pad_top, g.pad_top + g.in_h)
        fills = tuple(
            (planes[px][:, interior, col[0]], (slice(None), slice(None), col[1]))
            for px, col in enumerate(cols)
            if col is not None
        )
        row = qw * c
        for px, kx0, kx_step, nx, ox0, ox_step in tap_groups(g.filter_w, g.dilation_w, g.stride_w):
            window = _window(
                planes[px].reshape(-1),
                ox0 * c,
                (g.filter_h, nx, g.batches, g.out_h, run),
                (g.dilation_h * row, ox_step * c, hp * row, g.stride_h * row, 1),
            )
            taps = w[:, kx0 : kx0 + nx * kx_step : kx_step]
            groups.append((window, np.tile(taps[:, :, None, :], (1, 1, g.out_w, 1)).reshape(g.filter_h, nx, run)))
    else:
        return None
    rows = (g.batches, g.out_h, run)
    scratch = aligned_empty(rows, dtype) if len(groups) > 1 else None
    return fills, tuple(groups), rows, scratch
