"""Depthwise taps: views of the padded input per filter tap (plain and stride phase planes), the per-tap weights,
and the exact (integer) tap sums shared by the float and quantized DEPTHWISE_CONV_2D paths."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bound_plan import run_calls
from ..common import aligned_full, reshape_view
from .common import (
    DEPTHWISE_TILE_BYTES,
    Geometry,
    padded_buffer,
    quantized_weights,
    tile_over_width,
)
from .phases import phase_axis

# -- DEPTHWISE_CONV_2D ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DepthwiseTaps:
    """The KH*KW strided views of an NHWC input that a depthwise conv multiplies by one filter tap each.

    With a depth multiplier m > 1, padding or ``copy`` (a type conversion), the input is first copied into a
    buffer allocated at prepare (channel c repeated m times, so output channel c*m + j lines up with input
    channel c; border = pad value); otherwise the views are slices of the input itself.
    """

    padded: np.ndarray | None  # (N, Hp, Wp, C*m)
    fill: np.ndarray | None  # where the input goes in `padded`: (N, H, W, C) or (N, H, W, C, m) for m > 1
    taps: tuple  # per tap, the index of its view in the source (input or `padded`)
    views: tuple | None  # the tap views of `padded`
    window: np.ndarray | None = None  # all the tap views of `padded` as one (KH, KW, N, OH, OW, C*m) view

    @staticmethod
    def build(geo: Geometry, multiplier: int, dtype, pad_value=0, copy: bool = False) -> DepthwiseTaps:
        g = geo
        taps = tuple(
            (
                slice(None),
                slice(ky * g.dilation_h, ky * g.dilation_h + (g.out_h - 1) * g.stride_h + 1, g.stride_h),
                slice(kx * g.dilation_w, kx * g.dilation_w + (g.out_w - 1) * g.stride_w + 1, g.stride_w),
            )
            for ky in range(g.filter_h)
            for kx in range(g.filter_w)
        )
        if not g.padded and multiplier == 1 and not copy:
            return DepthwiseTaps(None, None, taps, None)
        padded, interior = padded_buffer(g, g.in_c * multiplier, dtype, pad_value)
        fill = padded[interior]
        if multiplier > 1:
            fill = reshape_view(fill, (g.batches, g.in_h, g.in_w, g.in_c, multiplier))
        sn, sh, sw, sc = padded.strides
        window = np.ndarray(
            (g.filter_h, g.filter_w, g.batches, g.out_h, g.out_w, g.in_c * multiplier),
            padded.dtype,
            padded,
            0,
            (sh * g.dilation_h, sw * g.dilation_w, sn, sh * g.stride_h, sw * g.stride_w, sc),
        )
        return DepthwiseTaps(padded, fill, taps, tuple(padded[t] for t in taps), window)

    def __call__(self, x: np.ndarray):
        """The tap views of ``x``: its own slices, or the padded buffer's after ``fill_calls`` ran."""
        run_calls(self.fill_calls(x))
        return self.tap_views(x)

    def fill_calls(self, x: np.ndarray) -> tuple:
        """The copy of ``x`` into the padded buffer (channel c repeated m times for a depth multiplier m), as
        (function, args, kwargs) triples; none when the views are slices of ``x``. An assignment: np.copyto's
        copy (an unsafe cast) without its dispatch (about 1 us less per call)."""
        if self.padded is None:
            return ()
        return ((self.fill.__setitem__, (Ellipsis, x[..., None] if self.fill.ndim == 5 else x), {}),)

    def tap_views(self, x: np.ndarray):
        """Per tap, its view of the padded buffer, or of ``x`` itself when there is none."""
        return [x[t] for t in self.taps] if self.padded is None else self.views

    @staticmethod
    def tap_calls(views, weights, out: np.ndarray, tmp: np.ndarray) -> tuple:
        """out = sum over the taps of view * weight, from the first tap in the reference's order, as (function,
        args, kwargs) triples: one product into ``out``, then per further tap its product into ``tmp`` and the
        add."""
        calls = [(np.multiply, (views[0], weights[0], out), {})]
        for view, weight in zip(views[1:], weights[1:]):
            calls += [(np.multiply, (view, weight, tmp), {}), (np.add, (out, tmp, out), {})]
        return tuple(calls)

    def exact_sum_calls(self, views, weights, out: np.ndarray, tmp: np.ndarray) -> tuple:
        """out = sum over the taps of view * weight for integer-valued sums that are exact in any order, as
        (function, args, kwargs) triples. ``weights``: per tap (OW, O) rows (``tap_calls``), or all stacked as
        (KH, KW, 1, 1, OW, O) with ``tmp`` of shape (KH, KW, N, OH, OW, O): then one multiply over the whole
        window view and one reduction, 2x faster than the tap loop on small layers (17 ufunc calls for 3x3
        become 2)."""
        if isinstance(weights, np.ndarray) and weights.ndim == 6:
            return (
                (np.multiply, (self.window, weights, tmp), {}),
                (np.add.reduce, (tmp.reshape((-1,) + out.shape),), {"axis": 0, "out": out}),
            )
        return self.tap_calls(views, weights, out, tmp)

    def exact_sum(self, views, weights, out: np.ndarray, tmp: np.ndarray) -> None:
        """``exact_sum_calls`` run at once (kernels whose weights or input change at every call)."""
        run_calls(self.exact_sum_calls(views, weights, out, tmp))


@dataclass(frozen=True, eq=False)
class DepthwisePhaseTaps:
    """DepthwiseTaps for strided windows (stride_w > 1, depth multiplier 1): the zero-padded input is split
    at every invoke into stride_h * stride_w phase planes (plane (py, px) holds the padded rows py, py + sh,
    ... and columns px, px + sw, ...), so every tap view is a unit-stride slice of one plane: the tap loops
    read rows of OW*C contiguous values instead of runs of C values every stride_w pixels (BlazeFace's
    stride-2 3x3 layers: 0.8-0.87x). The same values per tap, summed by the caller in the same order: results
    bit-identical to DepthwiseTaps."""

    fills: tuple  # ((plane region, input index), ...): where each phase's input elements go
    views: tuple  # per tap in (filter_y, filter_x) order, its (N, OH, OW, C) view of a plane

    @staticmethod
    def build(geo: Geometry, dtype) -> DepthwisePhaseTaps:
        g = geo
        hp, wp = g.pad_top + g.in_h + g.pad_bottom, g.pad_left + g.in_w + g.pad_right
        qh, rows = phase_axis(g.in_h, g.pad_top, hp, g.stride_h)
        qw, cols = phase_axis(g.in_w, g.pad_left, wp, g.stride_w)
        planes = aligned_full((g.stride_h, g.stride_w, g.batches, qh, qw, g.in_c), 0, dtype)  # border = 0.0
        fills = tuple(
            (planes[py, px][:, r[0], c[0]], (slice(None), r[1], c[1]))
            for py, r in enumerate(rows)
            if r is not None
            for px, c in enumerate(cols)
            if c is not None
        )
        views = []
        for ky in range(g.filter_h):
            py, oy = divmod(ky * g.dilation_h, g.stride_h)[::-1]
            for kx in range(g.filter_w):
                px, ox = divmod(kx * g.dilation_w, g.stride_w)[::-1]
                views.append(planes[py, px][:, oy : oy + g.out_h, ox : ox + g.out_w])
        return DepthwisePhaseTaps(fills, tuple(views))

    def fill_calls(self, x: np.ndarray) -> tuple:
        """The copies of ``x``'s phases into the planes, as (function, args, kwargs) triples."""
        return tuple((np.copyto, (dest, x[index]), {}) for dest, index in self.fills)

    def tap_views(self, x: np.ndarray):
        """Per tap, its view of a plane."""
        return self.views


def tap_weights(f: np.ndarray, geo: Geometry, dtype, filter_zp: int = 0) -> tuple:
    """Per tap, the (w - w_zp) of the O output channels tiled over the output width (or (O,) when too big)."""
    per_tap = f.reshape(geo.filter_h * geo.filter_w, geo.out_c)
    per_tap = quantized_weights(per_tap, filter_zp, dtype) if filter_zp or f.dtype != dtype else per_tap
    tiled = per_tap.nbytes * geo.out_w <= DEPTHWISE_TILE_BYTES
    return tuple(tile_over_width(t, geo.out_w, dtype) if tiled else np.array(t, dtype) for t in per_tap)


#: Exact (integer) depthwise sums use one multiply over all taps and a reduction (DepthwiseTaps.exact_sum)
#: while KH*KW * output elements stay below this; the tap loop streams better above it.
DEPTHWISE_STACKED_ELEMENTS = 1 << 18


def exact_tap_weights(f: np.ndarray, geo: Geometry, dtype, filter_zp: int = 0):
    """(w - w_zp) for DepthwiseTaps.exact_sum and its scratch: stacked (KH, KW, 1, 1, OW, O) on small layers,
    else per tap as _tap_weights."""
    size = geo.filter_h * geo.filter_w * int(np.prod(geo.out_shape))
    if size > DEPTHWISE_STACKED_ELEMENTS:
        return tap_weights(f, geo, dtype, filter_zp), np.empty(geo.out_shape, dtype)
    w = quantized_weights(f.reshape(geo.filter_h, geo.filter_w, 1, 1, 1, geo.out_c), filter_zp, dtype)
    w = np.ascontiguousarray(np.broadcast_to(w, (geo.filter_h, geo.filter_w, 1, 1, geo.out_w, geo.out_c)))
    return w, np.empty((geo.filter_h, geo.filter_w) + geo.out_shape, dtype)
