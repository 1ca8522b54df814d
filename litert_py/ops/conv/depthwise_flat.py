"""DEPTHWISE_CONV_2D float32 over flat row-padded sources (`DepthwiseConvFloatFlat`), the fast float path.

A tap's view of the zero-padded input, (N, OH, OW, C) with rows Wp*C apart, is strided; read with the padding
columns, it is one contiguous run of the flat buffer: tap (ky, kx) at output pixel (y, x) reads the padded
element ((y + ky*dh) * Wp + x + kx*dw) * C + c, i.e. flat[o_tap + j] for j the pixel's index in a "wide"
(N, Hp, Wp, C) accumulator. So the tap loop runs on 1-D contiguous operands: the multiply by the tap's weights
(tiled over the whole run at prepare: broadcasting them over rows costs numpy about as much as the product) and
the add into the accumulator, in blocks of DEPTHWISE_FLAT_BLOCK_BYTES that stay in the L1/L2 caches; the clamp
then copies the (N, OH, OW, C) corner of the accumulator into the output. The wide columns and rows past the
output (Wp - OW per row, Hp - OH per batch) are computed and dropped: the path is taken while the accumulator's
run is at most DEPTHWISE_FLAT_MAX_WASTE times the output. Strided windows use the phase planes of
`depthwise.DepthwisePhaseTaps` (every tap a unit-stride slice of one plane) as sources, with the planes' width
as the row pitch.

Exactness: per output element the same float32 operations in the same order as `DepthwiseConvFloat` and the
reference kernel (reference/depthwiseconv_float.h: the first tap's product, + each next tap's product in
(filter_y, filter_x) order, + bias, then the clamp; a padded tap adds an exact 0): bit-identical results
(tests/ops/conv/test_depthwise_flat.py compares with LiteRT's BUILTIN_REF for equality). The dropped columns may
overflow or hold NaN; they are never read.
Measured (1 thread, one busy 2-core box, 3x3 SAME, bias, input -> output): 64x64x24 395 -> 272 us,
32x32x32 127 -> 83 us, 16x16x64 69 -> 41 us, 8x8x96 34 -> 20 us, 2x2x128 11.6 -> 7.9 us, 96x96x16 612 -> 420 us,
128x128x16 (blocked rows before) 1443 -> 760 us.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..common import aligned_empty, clip_ufunc
from .common import INPUT, OUTPUT, Geometry

#: The tap loop runs over blocks of about this many bytes of the accumulator (measured: 48-100 KB blocks are
#: 1.2-1.45x faster than one pass over a 400 KB - 1 MB layer; a layer of at most two blocks is one block).
DEPTHWISE_FLAT_BLOCK_BYTES = 64 << 10
#: Stride-1 layers whose run is at most this many bytes take DepthwiseConvFloatFlatStacked (measured, 3x3: runs
#: of 3-29 KB 1.15-1.5x faster than the tap loop, 71 KB and more 1.1-1.6x slower).
DEPTHWISE_FLAT_STACK_BYTES = 32 << 10
#: The weights are tiled over whole wide rows of at least this many elements, broadcast over the rows of a block
#: (numpy's broadcasting loops run at full speed from about 6K elements per row; 1.5K-element rows cost 1.7x):
#: 9-25 taps * 24 KB instead of tiles as long as the block, which in a whole model come from outside the caches.
DEPTHWISE_FLAT_TILE_ELEMENTS = 6144
#: The flat path is taken while its weight tiles (taps * block * 4 bytes) stay within this.
DEPTHWISE_FLAT_WEIGHT_BYTES = 1 << 20
#: The flat path is taken while the wide accumulator's run is at most this many times the output's elements.
DEPTHWISE_FLAT_MAX_WASTE = 4


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloatFlat:
    """Float DEPTHWISE_CONV_2D (constant filter, constant or no bias) on contiguous runs of flat sources; see
    the module docstring (bit-identical to DepthwiseConvFloat)."""

    fills: tuple  # ((destination, input index), ...): the input copied into the sources' interiors
    blocks: tuple  # ((tap runs, accumulator run, scratch, tap weight tiles, bias tile or None), ...)
    wide: np.ndarray  # (N, OH, OW, O) view of the accumulator
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        for dest, index in self.fills:
            np.copyto(dest, x[index])
        for runs, acc, tmp, weights, bias in self.blocks:
            np.multiply(runs[0], weights[0], out=acc)
            for k in range(1, len(runs)):
                np.multiply(runs[k], weights[k], out=tmp)
                np.add(acc, tmp, out=acc)
            if bias is not None:
                np.add(acc, bias, out=acc)
        clip_ufunc(self.wide, self.out_min, self.out_max, out=outputs[OUTPUT])


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloatFlatStacked:
    """DepthwiseConvFloatFlat for small stride-1 layers (one run of at most DEPTHWISE_FLAT_STACK_BYTES): the
    taps' runs are one (KH, KW, n) view of the flat padded buffer, multiplied by the stacked weight tiles in one
    call and summed by one np.add.reduce over the taps (numpy reduces a non-contiguous leading axis
    sequentially, first tap first: the same order), then bias and clamp: 4 numpy calls instead of 2*KH*KW + 1.
    Bit-identical to DepthwiseConvFloat (tested against BUILTIN_REF)."""

    fill: np.ndarray  # where the input goes in the padded buffer
    index: tuple  # the input index copied there
    window: np.ndarray  # (KH, KW, n) view of the flat padded buffer
    weights: np.ndarray  # (KH, KW, n) tiled weights
    products: np.ndarray  # (KH*KW, n) scratch, the same memory as (KH, KW, n)
    products_grid: np.ndarray
    acc: np.ndarray  # (n,) run of the accumulator
    bias: np.ndarray | None  # (n,) tiled bias
    wide: np.ndarray  # (N, OH, OW, O) view of the accumulator
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        np.copyto(self.fill, inputs[INPUT][self.index])
        np.multiply(self.window, self.weights, out=self.products_grid)
        np.add.reduce(self.products, axis=0, out=self.acc)
        if self.bias is not None:
            np.add(self.acc, self.bias, out=self.acc)
        clip_ufunc(self.wide, self.out_min, self.out_max, out=outputs[OUTPUT])


def flat_run_length(geo: Geometry, rows: int, pitch: int) -> int:
    """Elements of the wide accumulator run: from the first output pixel to the last one."""
    return (((geo.batches - 1) * rows + geo.out_h - 1) * pitch + geo.out_w) * geo.out_c


class FlatLayout(NamedTuple):
    """How the wide run of n elements is cut: weight tiles of `period` elements (broadcast over the rows of a
    (step // period, period) block), blocks of `step` elements over n_pad = n rounded up to whole periods (the
    sources and the accumulator hold `slack` = n_pad - n more elements, computed and dropped)."""

    n: int
    period: int
    step: int
    slack: int


def flat_layout(geo: Geometry, rows: int, pitch: int) -> FlatLayout | None:
    """The layout of the flat path for sources of ``rows`` rows of ``pitch`` pixels per batch, or None when it
    does not suit: a wide run over DEPTHWISE_FLAT_MAX_WASTE times the output, or weight tiles over
    DEPTHWISE_FLAT_WEIGHT_BYTES (they are read at every invoke, mostly from outside the caches)."""
    c, row = geo.out_c, pitch * geo.out_c
    n = flat_run_length(geo, rows, pitch)
    if n > DEPTHWISE_FLAT_MAX_WASTE * np.prod(geo.out_shape):
        return None
    if n <= 2 * DEPTHWISE_FLAT_TILE_ELEMENTS:  # one block, the weights tiled over all of it
        period = step = n
    else:  # whole wide rows, at least DEPTHWISE_FLAT_TILE_ELEMENTS
        period = -(-DEPTHWISE_FLAT_TILE_ELEMENTS // row) * row
        step = max(1, DEPTHWISE_FLAT_BLOCK_BYTES // (period * 4)) * period
        n_pad = -(-n // period) * period
        if n_pad <= 2 * step:
            step = n_pad
    if geo.filter_h * geo.filter_w * period * 4 > DEPTHWISE_FLAT_WEIGHT_BYTES:
        return None
    assert period % c == 0 and step % period == 0
    return FlatLayout(n, period, step, -(-n // period) * period - n)


def build_flat(
    geo: Geometry,
    layout: FlatLayout,
    fills: tuple,
    src: np.ndarray,
    offsets: list,
    rows: int,
    pitch: int,
    weights: np.ndarray,
    bias: np.ndarray | None,
    lo: np.float32,
    hi: np.float32,
    grid: tuple[int, int] | None = None,
) -> DepthwiseConvFloatFlat | DepthwiseConvFloatFlatStacked:
    """``src``: the flat source buffer; ``offsets``: per tap in (filter_y, filter_x) order, where output pixel
    0's element is in ``src``; the layout's padded run fits after every offset. The accumulator has ``rows``
    rows of ``pitch`` pixels per batch. ``weights``: (taps, O) float32. ``grid`` (stride 1: tap (ky, kx) at
    offset ky * grid[0] + kx * grid[1]) allows the stacked op."""
    c = geo.out_c
    n, period, step, slack = layout
    n_pad = n + slack
    assert src.ndim == 1 and max(offsets) + n_pad <= src.size, "a tap's run leaves its source"
    wide_size = geo.batches * rows * pitch * c
    if grid is not None and n * 4 <= DEPTHWISE_FLAT_STACK_BYTES:
        return _stacked(geo, fills, src, grid, n, wide_size, rows, pitch, weights, bias, lo, hi)
    # the last block ends at n_pad and may overlap its predecessor (recomputed from its first tap: the same
    # values); every block starts at a multiple of the period, so the same weight tiles line up
    starts = list(range(0, n_pad - step + 1, step))
    if starts[-1] + step < n_pad:
        starts.append(n_pad - step)
    acc = aligned_empty((max(wide_size, n_pad),), np.float32)
    shape = (step // period, period)
    tmp = aligned_empty(shape, np.float32)
    w_tiles = tuple(np.tile(w, period // c) for w in weights.astype(np.float32))
    b_tile = None if bias is None else np.tile(np.asarray(bias, np.float32).reshape(-1), period // c)
    blocks = tuple(
        (
            tuple(src[o + s : o + s + step].reshape(shape) for o in offsets),
            acc[s : s + step].reshape(shape),
            tmp,
            w_tiles,
            b_tile,
        )
        for s in starts
    )
    wide = acc[:wide_size].reshape(geo.batches, rows, pitch, c)[:, : geo.out_h, : geo.out_w]
    return DepthwiseConvFloatFlat(fills, blocks, wide, lo, hi)


def _stacked(geo, fills, src, grid, n, wide_size, rows, pitch, weights, bias, lo, hi) -> DepthwiseConvFloatFlatStacked:
    g, c = geo, geo.out_c
    ((fill, index),) = fills
    item = src.itemsize
    window = np.ndarray((g.filter_h, g.filter_w, n), np.float32, src, 0, (grid[0] * item, grid[1] * item, item))
    assert np.shares_memory(window, src)
    w = np.tile(weights.astype(np.float32).reshape(g.filter_h, g.filter_w, 1, c), (1, 1, n // c, 1))
    products = aligned_empty((g.filter_h * g.filter_w, n), np.float32)
    acc = aligned_empty((wide_size,), np.float32)
    b = None if bias is None else np.tile(np.asarray(bias, np.float32).reshape(-1), n // c)
    wide = acc.reshape(g.batches, rows, pitch, c)[:, : g.out_h, : g.out_w]
    return DepthwiseConvFloatFlatStacked(
        fill,
        index,
        window,
        w.reshape(g.filter_h, g.filter_w, n),
        products,
        products.reshape(g.filter_h, g.filter_w, n),
        acc[:n],
        b,
        wide,
        lo,
        hi,
    )
