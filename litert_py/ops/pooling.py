"""AVERAGE_POOL_2D and MAX_POOL_2D.

Paths: float32 (`AveragePoolFloat`, `MaxPoolFloat`) and quantized uint8 / int8 / int16 (`AveragePoolQuantized`,
`MaxPoolQuantized`), all bit-exact with BUILTIN_REF. The window geometry (per-axis tap rectangles clipped to
the input, no padded copy) is shared with L2_POOL_2D (pool_common.py).

Sources matched (ai-edge-litert 2.3.0 = LiteRT tflite/kernels):
- tflite/kernels/pooling.cc GenericPrepare: one 4-D input, output type == input type, positive strides;
  the output size comes from the unchecked ComputePaddingHeightWidth (padding.h): where the window is
  invalid (filter size 0, a VALID filter larger than the input) the failing dims become 0 (both when the
  width fails, the height only when only it fails) and prepare succeeds with an empty output.
  Types other than FLOAT32/UINT8/INT8/INT16 fail at LiteRT's eval ("Type INT32 not currently
  supported."); here at prepare, with the same words.
- tflite/kernels/internal/reference/pooling.h: AveragePool sums the window's in-input elements in
  (filter_y, filter_x) order from 0.f and divides by their count (padding is not counted); MaxPool starts
  from std::numeric_limits<float>::lowest() and takes std::max(acc, x), which skips NaN (a window of NaNs
  gives -FLT_MAX) and lifts -inf to -FLT_MAX. Then ActivationFunctionWithMinMax with the float
  CalculateActivationRange: NONE/TANH/SIGN_BIT clamp to [-FLT_MAX, FLT_MAX] (+inf -> FLT_MAX; NaN passes).
- tflite/kernels/internal/reference/integer_ops/pooling.h (int8, int16) and reference/pooling.h (uint8):
  quantized pools work on the raw stored integers (the scales and zero points of input and output are
  only DCHECKed equal). AveragePool sums the in-input taps in int32 and divides by their count n with
  rounding: int8/int16 ``S > 0 ? (S + n/2) / n : (S - n/2) / n`` (C division, truncating: halves away from
  zero), uint8 ``(S + n/2) / n``; MaxPool starts from the type's lowest value. Both then clamp to the fused
  activation's range from CalculateActivationRangeQuantized (kernel_util.cc) on the output's scale and zero
  point, which pooling.cc computes at eval (an int32 overflow there fails prepare here).

The quantized average is sign(S) * ((|S| + n/2) // n) in int32 (no masked ufunc: 5x slower); the max reuses
the float path's separable max, starting from the type's lowest value. Both float paths reproduce the
reference bit for bit: the average adds the same elements in the same order and
divides by the same count; the max is order-free, computed separably (rows then columns) with np.fmax
(NaN = no value) and floored at the activation minimum. Windows are clipped to the input as rectangles
per tap (no padded copy). Average pools whose windows tile the input (global pools, filter == stride without
padding) with at least POOL_TILED_MIN_TAPS taps take one reduction instead (`AveragePoolFloatTiled`,
`AveragePoolQuantizedTiled`, float with more than one channel): bit-exact too (see the classes).
8-bit average pools read the division and clamp from a table of every possible window sum, made at prepare by
the division itself (one gather instead of seven passes): tiling windows of n <= DIVIDE_TABLE_MAX_COUNT elements
after one reduction (`AveragePoolQuantizedTiledTable`), the others after separable sums, rows then columns, from
one table per window count (`AveragePoolQuantizedSeparable`: any padding and stride; windows of more elements, or
tables too large, keep the per-tap `AveragePoolQuantized`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant import dtype_range
from ..schema.model import BuiltinOperator
from .activation_fusion import float_bounds
from .bound_plan import BoundCalls, contiguous_source
from .common import aligned_empty, clip_ufunc, quantized_activation_range, scalar_operand
from .conv.common import EMPTY_OUTPUT, Geometry
from .pool_common import (
    ALL,
    INPUT,
    OUTPUT,
    axis_taps,
    float_divisor,
    pool_geometry,
    pool_taps_2d,
    sum_taps,
    tap_counts,
)
from .registry import OpContext, register


def _leading_full(taps: list) -> int:
    """How many of the first taps (at most 2) cover every output."""
    leading = 0
    while leading < min(2, len(taps)) and taps[leading][2]:
        leading += 1
    return leading


@dataclass(frozen=True, eq=False)
class AveragePoolFloat:
    taps: tuple  # ((output index, input index), ...) in (filter_y, filter_x) order, each clipped to the input
    leading_full: int  # how many of the first taps (at most 2) cover every output
    count: np.ndarray  # the divisor: one count (0-d), or per output position as (OH, OW, C)
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        sum_taps(x, self.taps, self.leading_full, out)
        np.divide(out, self.count, out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def _prepare_average_float(ctx: OpContext, geo: Geometry) -> AveragePoolFloat | AveragePoolFloatTiled:
    tiles = PoolTiles.build(geo) if geo.in_c > 1 else None  # see AveragePoolFloatTiled: C = 1 is not sequential
    lo, hi = float_bounds(ctx.options.fused_activation_function)
    if tiles is not None:
        return AveragePoolFloatTiled.build(tiles, scalar_operand(geo.filter_h * geo.filter_w), lo, hi)
    taps = pool_taps_2d(geo)
    count = np.asarray(float_divisor(ctx, geo), np.float32)  # one count as a 0-d array, as the bounds
    return AveragePoolFloat(tuple((o, i) for o, i, _ in taps), _leading_full(taps), count, lo, hi)


#: An AVERAGE_POOL_2D whose windows tile the input with at least this many taps sums each window with one
#: reduction (AveragePoolFloatTiled, AveragePoolQuantizedTiled) instead of one whole-output add per tap: a
#: global pool over 128x128x16 took 16384 adds of 16 values (10.6 ms), one reduction takes 0.36 ms (float, as an
#: np.einsum: 0.06 ms).
POOL_TILED_MIN_TAPS = 8


@dataclass(frozen=True)
class PoolTiles:
    """Windows that tile the input without padding (per axis: one window at the origin, or filter == stride),
    all of their taps inside it: x[:, :rows, :cols] viewed as ``shape`` and reduced over ``axes`` gives the
    (N, OH, OW, C) window sums viewed as ``reduced``. One window row spanning whole input rows (OW = 1,
    KW = W) is read as (N, OH, KH*KW, C): one reduction over the taps in (filter_y, filter_x) order."""

    rows: int
    cols: int
    shape: tuple
    axes: int | tuple
    reduced: tuple

    @staticmethod
    def build(geo: Geometry) -> PoolTiles | None:
        g = geo
        if g.filter_h * g.filter_w < POOL_TILED_MIN_TAPS or g.pad_top or g.pad_left:
            return None
        for out, size, k, stride in (
            (g.out_h, g.in_h, g.filter_h, g.stride_h),
            (g.out_w, g.in_w, g.filter_w, g.stride_w),
        ):
            if not (out * k <= size and (out == 1 or k == stride)):
                return None
        n, c = g.batches, g.in_c
        if g.out_w == 1 and g.filter_w == g.in_w:
            return PoolTiles(g.out_h * g.filter_h, g.in_w, (n, g.out_h, g.filter_h * g.in_w, c), 2, (n, g.out_h, c))
        return PoolTiles(
            g.out_h * g.filter_h,
            g.out_w * g.filter_w,
            (n, g.out_h, g.filter_h, g.out_w, g.filter_w, c),
            (2, 4),
            g.out_shape,
        )

    def windows(self, x: np.ndarray) -> np.ndarray:
        return x[:, : self.rows, : self.cols].reshape(self.shape)  # splits axes of a strided view: a view


@dataclass(frozen=True, eq=False)
class AveragePoolFloatTiled(BoundCalls):
    """AVERAGE_POOL_2D float32 over tiling windows (PoolTiles) with more than one channel: one float32
    np.add.reduce of the window view, divided by the count, clamped. Bit-exact: the channel axis is the only
    one the output and the window view share contiguously, so numpy's reduction runs its inner loop over the
    channels and steps through the taps in the outer loops, kh then kw (the iterator orders axes by stride):
    per output element the sequential sum from the first tap in (filter_y, filter_x) order, the reference's.
    With one channel the taps would become the contiguous inner axis, which numpy sums pairwise (8 partial
    sums from 8 taps on): those layers keep the per-tap AveragePoolFloat.

    The reduction is np.einsum (the window view's subscripts minus the tap axes, made at prepare), not
    np.add.reduce: the same iteration (numpy's iterator with the channel axis innermost, the taps in the outer
    loops; einsum's inner loop for an output with a non-zero stride adds elementwise, out[c] += x[..., c]), but
    about 5x cheaper per inner loop (a global pool over 128x128x16: 300 -> 60 us). It also starts from +0.0 as
    the reference's ``float total = 0.f`` does (a window of -0.0 sums to +0.0 there; add.reduce gave -0.0)."""

    tiles: PoolTiles
    count: np.ndarray  # 0-d float32
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray
    subscripts: str = ""  # the einsum summing the window view over the tap axes

    @staticmethod
    def build(tiles: PoolTiles, count, lo, hi) -> AveragePoolFloatTiled:
        axes = (tiles.axes,) if isinstance(tiles.axes, int) else tiles.axes
        letters = "abcdef"[: len(tiles.shape)]
        kept = "".join(ch for k, ch in enumerate(letters) if k not in axes)
        return AveragePoolFloatTiled(tiles, count, lo, hi, f"{letters}->{kept}")

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The einsum of ``x``'s window view into ``out``'s reduced view, the division, the clamp. A
        non-C-contiguous ``x`` is read through a contiguous copy refreshed at each call (its window reshape,
        merging H and W, would be a copy made once: bound_plan.contiguous_source)."""
        calls = []
        x = contiguous_source(x, calls)
        sums = (np.einsum, (self.subscripts, self.tiles.windows(x)), {"out": out.reshape(self.tiles.reduced)})
        return (
            *calls,
            sums,
            (np.divide, (out, self.count), {"out": out}),
            (clip_ufunc, (out, self.out_min, self.out_max), {"out": out}),
        )


@dataclass(frozen=True, eq=False)
class AveragePoolQuantizedTiled:
    """AVERAGE_POOL_2D uint8 / int8 / int16 over tiling windows (PoolTiles): the int32 window sums in one
    reduction (integer sums are exact in any order; |sum| < 2^31 as in the reference), then the same rounding
    division and clamp as AveragePoolQuantized: bit-exact."""

    tiles: PoolTiles
    half: int
    count: int
    total: np.ndarray  # (N, OH, OW, C) int32
    sign: np.ndarray | None  # int8/int16: (N, OH, OW, C) int32 scratch; uint8: None
    lo: int
    hi: int

    def __call__(self, inputs, outputs):
        s, tiles = self.total, self.tiles
        np.add.reduce(tiles.windows(inputs[INPUT]), axis=tiles.axes, dtype=np.int32, out=s.reshape(tiles.reduced))
        _round_divide_clip(s, self.sign, self.half, self.count, self.lo, self.hi, outputs[OUTPUT])


#: 8-bit average pools whose windows all count the same n <= DIVIDE_TABLE_MAX_COUNT elements read the rounding
#: division and clamp of their window sums from a table of the 255 * n + 1 possible sums (at most 256 KB).
DIVIDE_TABLE_MAX_COUNT = 1024


def divide_table(dtype, count: int, lo: int, hi: int) -> tuple[np.ndarray, int]:
    """(table, offset): table[S + offset] = clamp(the reference's rounding division of the window sum S by
    ``count``) for every sum S of ``count`` values of the 8-bit ``dtype`` (offset = -qmin * count puts the
    smallest sum at 0). Made by _round_divide_clip itself over the whole domain: exact by construction."""
    qmin, qmax = dtype_range(dtype)
    sums = np.arange(qmin * count, qmax * count + 1, dtype=np.int32)
    table = np.empty(sums.shape, dtype)
    sign = None if dtype == np.uint8 else np.empty(sums.shape, np.int32)
    _round_divide_clip(sums, sign, count // 2, count, lo, hi, table)
    return table, -qmin * count


@dataclass(frozen=True, eq=False)
class AveragePoolQuantizedTiledTable:
    """AveragePoolQuantizedTiled for 8-bit types (windows of n <= DIVIDE_TABLE_MAX_COUNT elements): the
    window sums in one reduction that starts from the table's offset (so every sum is a valid index), then one
    gather from `divide_table` instead of the seven passes of the division and clamp. Bit-exact: the table
    holds _round_divide_clip's own results for every possible sum. The sums are accumulated in uint16 when
    255 * n < 2^16 (checked at prepare; a global pool of up to 257 values, 4-5 us less than int32 inside an
    invoke): every int8 value v is added as v mod 2^16, so the reduction gives (offset + sum) mod 2^16, which is
    offset + sum itself, as that lies in [0, 255 * n]; else in int32."""

    tiles: PoolTiles
    offset: int  # -qmin * n
    table: np.ndarray  # (255 * n + 1,) in the output type
    total: np.ndarray  # (N, OH, OW, C) uint16 / int32 sums + offset

    def __call__(self, inputs, outputs):
        np.take(self.table, self.sums(inputs[INPUT]), out=outputs[OUTPUT], mode="clip")  # every index valid

    def sums(self, x: np.ndarray) -> np.ndarray:
        """The window sums + offset (``total``), each a valid index of the table."""
        s, tiles = self.total, self.tiles
        windows = tiles.windows(x)
        np.add.reduce(windows, axis=tiles.axes, dtype=s.dtype, out=s.reshape(tiles.reduced), initial=self.offset)
        return s

    def sum_calls(self, x: np.ndarray) -> tuple:
        """(calls, indices): ``sums(x)``'s reduction as a bound-plan call on ``x``'s window view (arguments by
        position), and the array it writes (fully_connected_tail.PooledIntoRows's bound plan)."""
        s, tiles = self.total, self.tiles
        reduced = s.reshape(tiles.reduced)
        calls = []
        x = contiguous_source(x, calls)  # a window view of a non-contiguous x would be a copy made once
        return (*calls, (np.add.reduce, (tiles.windows(x), tiles.axes, s.dtype, reduced, False, self.offset), {})), s

    def feeding(self, consumer):
        """This pool and the folded FULLY_CONNECTED that alone reads its output as one step
        (fully_connected_tail.PooledIntoRows; also through a RESHAPE: PooledReshaped), or None."""
        from .fully_connected_tail import pool_feeding  # it imports the FC modules

        return pool_feeding(self, self.table, "clip", self.total.shape, consumer)


@dataclass(frozen=True, eq=False)
class MaxStage:
    """The max over the filter taps along one axis (1 = rows, 2 = columns) with np.fmax: NaN = no value."""

    taps: tuple  # ((output index, input index), ...), the taps covering every output first
    leading_full: int  # how many of the first taps (at most 2) cover every output
    tiles: tuple | None  # rows only: (rows used, (N, OH, KH, W, C)) when the windows tile the input exactly
    empty: object = np.nan  # the value of an output no tap reaches before the first partial tap (no value)

    def calls(self, src: np.ndarray, dst: np.ndarray) -> list:
        """The stage's numpy calls from ``src`` into ``dst`` (views made here), as (function, args, kwargs)
        triples."""
        if self.tiles is not None:  # a reduction over the window's rows: faster than pairwise ops
            used, shape = self.tiles
            return [(np.fmax.reduce, (src[:, :used].reshape(shape),), {"axis": 2, "out": dst})]  # (a view)
        taps = self.taps
        k = self.leading_full
        if k == 2:
            calls = [(np.fmax, (src[taps[0][1]], src[taps[1][1]]), {"out": dst})]
        elif k == 1:
            calls = [(np.copyto, (dst, src[taps[0][1]]), {})]
        else:
            calls = [(dst.fill, (self.empty,), {})]
        for o, i in taps[k:]:
            d = dst[o]
            calls.append((np.fmax, (d, src[i]), {"out": d}))
        return calls


def _max_stage(taps, axis: int, tiles=None, empty=np.nan) -> MaxStage:
    taps = sorted(taps, key=lambda t: not t[2])  # max is order-free: full-coverage taps first
    leading = 0
    while leading < min(2, len(taps)) and taps[leading][2]:
        leading += 1
    index = (lambda s: (ALL, s)) if axis == 1 else (lambda s: (ALL, ALL, s))
    return MaxStage(tuple((index(o), index(i)) for o, i, _ in taps), leading, tiles, empty)


def max_stage_calls(rows, cols, row_max, x: np.ndarray, out: np.ndarray) -> list:
    """The window maxima's calls: over the filter rows into ``row_max`` (unless one row suffices), then over the
    columns into ``out``."""
    if rows is None:
        return cols.calls(x, out)
    return [*rows.calls(x, row_max), *cols.calls(row_max, out)]


@dataclass(frozen=True, eq=False)
class MaxPoolFloat(BoundCalls):
    rows: MaxStage | None  # None: the filter has one row, stride 1 (the input is its own row maximum)
    cols: MaxStage
    row_max: np.ndarray | None  # (N, OH, W, C) scratch
    floor: np.ndarray  # 0-d: max(lowest, activation min), also the value of a window without a number
    ceiling: np.ndarray  # 0-d: the activation max

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The window maxima's calls (max_stage_calls), then the floor (fmax: also a window of NaNs' value) and
        the ceiling."""
        calls = max_stage_calls(self.rows, self.cols, self.row_max, x, out)
        return (*calls, (np.fmax, (out, self.floor), {"out": out}), (np.minimum, (out, self.ceiling), {"out": out}))


def _max_stages(ctx: OpContext, geo: Geometry, empty):
    """The row and column MaxStages of a max pool (rows None: the input is its own row maximum)."""
    g = geo
    rows = axis_taps(g.in_h, g.out_h, g.filter_h, g.stride_h, g.pad_top)
    cols = axis_taps(g.in_w, g.out_w, g.filter_w, g.stride_w, g.pad_left)
    ctx.check(bool(rows) and bool(cols), "a pooling window lies entirely in the padding")
    if g.filter_h == g.stride_h == 1 and g.out_h == g.in_h and g.pad_top == 0:
        return None, _max_stage(cols, 2, empty=empty)
    tiles = None
    if g.filter_h == g.stride_h > 1 and g.pad_top == 0 and g.pad_bottom == 0:
        tiles = (g.out_h * g.stride_h, (g.batches, g.out_h, g.stride_h, g.in_w, g.in_c))
    return _max_stage(rows, 1, tiles, empty), _max_stage(cols, 2, empty=empty)


def _prepare_max_float(ctx: OpContext, geo: Geometry) -> MaxPoolFloat:
    g = geo
    rows, cols = _max_stages(ctx, g, np.nan)
    lo, hi = float_bounds(ctx.options.fused_activation_function)
    # Windows are never empty (checked above); a window of NaNs ends as NaN and the floor replaces it.
    row_max = None if rows is None else aligned_empty((g.batches, g.out_h, g.in_w, g.in_c), np.float32)
    return MaxPoolFloat(rows, cols, row_max, lo, hi)


# -- quantized ------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AveragePoolQuantized:
    """The int32 sum of the in-input taps, a rounding division by their count, the activation clamp."""

    taps: tuple  # ((output index, input index), ...) clipped to the input
    leading_full: int  # how many of the first taps (at most 2) cover every output
    half: np.ndarray | int  # count // 2: one value, or per output position (OH, OW, 1)
    count: np.ndarray | int  # the divisor (same shape)
    total: np.ndarray  # (N, OH, OW, C) int32 sums
    sign: np.ndarray | None  # int8/int16 (halves away from zero): (N, OH, OW, C) int32 scratch; uint8: None
    lo: int
    hi: int

    def __call__(self, inputs, outputs):
        x, out, s = inputs[INPUT], outputs[OUTPUT], self.total
        sum_taps(x, self.taps, self.leading_full, s, np.int32)
        _round_divide_clip(s, self.sign, self.half, self.count, self.lo, self.hi, out)


#: AveragePoolQuantizedSeparable's division tables (one per distinct window count) hold at most this many entries
SEPARABLE_TABLE_MAX = 1 << 18


@dataclass(frozen=True, eq=False)
class AveragePoolQuantizedSeparable:
    """AVERAGE_POOL_2D uint8 / int8 over windows that do not tile, any padding: the window sums separably, the
    in-input filter rows of every output row first (``row_sum``, (N, OH, W, C): KH adds) and then their
    in-input columns (KW adds, the first onto the per-position table offset) instead of KH * KW adds; then one
    gather reads the rounding division and clamp from the division tables of every window count that occurs
    (`divide_table`, concatenated) instead of the seven passes of AveragePoolQuantized (a 3x3 SAME pool over
    24x24x32: 115 -> about 33 us; 1x3 SAME 79 -> 29 us; 2x2 stride 2: 13.5 -> 11 us against the per-tap sums
    and one division table).

    Exactness bound (checked at prepare): the integer sums are exact in any order while they fit their type:
    |row sum| <= 255 * KH (int16 while that is <= 32767, else int32), and offset + window sum, an index of the
    concatenated tables, lies in [0, their size) (int16 while that is <= 2**15, else int32). Each window sums
    exactly its in-input taps (the row and column taps are the per-axis clipped rectangles of pool_taps_2d),
    and every table entry is _round_divide_clip's own result for its count (n <= DIVIDE_TABLE_MAX_COUNT); the
    tables together hold at most SEPARABLE_TABLE_MAX entries, else the op keeps the per-tap path."""

    rows: tuple | None  # ((output rows, input rows), ...) along H; None: the input is its own row sum
    rows_full: int  # how many of the first row taps (at most 2) cover every output row
    cols: tuple  # ((output columns, input columns), ...) along W, the first covering every output
    row_sum: np.ndarray | None  # (N, OH, W, C) scratch: int16 while KH * 255 <= 32767 (exact), else int32
    offset: np.ndarray  # (OH, OW, 1) (or 0-d): where each position's table starts, minus its smallest sum
    table: np.ndarray  # the concatenated division tables, in the output type
    total: np.ndarray  # (N, OH, OW, C) offset + sums: int16 while the tables hold at most 2**15 entries, else int32

    @staticmethod
    def build(geo: Geometry, counts: np.ndarray, dtype, lo: int, hi: int) -> AveragePoolQuantizedSeparable | None:
        g = geo
        distinct = np.unique(counts)
        qmin, qmax = dtype_range(dtype)
        if distinct.max() > DIVIDE_TABLE_MAX_COUNT or int(((qmax - qmin) * distinct + 1).sum()) > SEPARABLE_TABLE_MAX:
            return None
        tables, starts, start = [], {}, 0
        for n in distinct.tolist():
            table, offset = divide_table(dtype, n, lo, hi)
            starts[n] = start + offset
            start += table.size
            tables.append(table)
        total_dtype = np.int16 if start <= 1 << 15 else np.int32  # indices < start (the tables' total size)
        offset = np.vectorize(starts.__getitem__, otypes=[total_dtype])(counts)[:, :, None]
        if distinct.size == 1:
            offset = np.array(offset.flat[0], total_dtype)
        rows = sorted(axis_taps(g.in_h, g.out_h, g.filter_h, g.stride_h, g.pad_top), key=lambda t: not t[2])
        cols = sorted(axis_taps(g.in_w, g.out_w, g.filter_w, g.stride_w, g.pad_left), key=lambda t: not t[2])
        if not cols[0][2]:  # no column tap covers every output (SAME and VALID windows always have one)
            return None
        identity = g.filter_h == g.stride_h == 1 and g.out_h == g.in_h and g.pad_top == 0
        row_dtype = np.int16 if g.filter_h * (qmax - qmin) <= np.iinfo(np.int16).max else np.int32
        return AveragePoolQuantizedSeparable(
            None if identity else tuple(((ALL, o), (ALL, i)) for o, i, _ in rows),
            _leading_full(rows),
            tuple(((ALL, ALL, o), (ALL, ALL, i)) for o, i, _ in cols),
            None if identity else np.empty((g.batches, g.out_h, g.in_w, g.in_c), row_dtype),
            offset,
            np.concatenate(tables),
            np.empty(g.out_shape, total_dtype),
        )

    def __call__(self, inputs, outputs):
        x, s = inputs[INPUT], self.total
        if self.rows is not None:
            sum_taps(x, self.rows, self.rows_full, self.row_sum, self.row_sum.dtype)
            x = self.row_sum
        cols = self.cols
        np.add(x[cols[0][1]], self.offset, out=s, dtype=s.dtype)  # the first tap covers every output
        for o, i in cols[1:]:
            d = s[o]
            np.add(d, x[i], out=d)
        np.take(self.table, s, out=outputs[OUTPUT])


def _round_divide_clip(s: np.ndarray, sign: np.ndarray | None, half, count, lo: int, hi: int, out: np.ndarray):
    """out = clamp(the reference's rounding division of the int32 window sums s by count), s overwritten."""
    if sign is not None:
        # S > 0: (S + h) / n;  S <= 0: (S - h) / n; C division truncates toward zero, so both are
        # sign(S) * ((|S| + h) // n) (S = 0 gives 0 either way). No masked ufunc: they are 5x slower.
        np.sign(s, out=sign)
        np.abs(s, out=s)
        s += half
        np.floor_divide(s, count, out=s)
        np.multiply(s, sign, out=s)
    else:
        s += half
        np.floor_divide(s, count, out=s)
    np.clip(s, lo, hi, out=out, casting="unsafe")


def _prepare_average_quantized(ctx: OpContext, geo: Geometry) -> AveragePoolQuantized | AveragePoolQuantizedTiled:
    tiles = PoolTiles.build(geo)
    dtype = ctx.input(INPUT).dtype
    if tiles is not None:
        lo, hi = quantized_activation_range(ctx, ctx.outputs[OUTPUT])
        sign = np.empty(geo.out_shape, np.int32) if dtype != np.uint8 else None
        count = geo.filter_h * geo.filter_w
        if dtype.itemsize == 1 and count <= DIVIDE_TABLE_MAX_COUNT:
            table, offset = divide_table(dtype, count, lo, hi)
            sum_dtype = np.uint16 if 255 * count < 1 << 16 else np.int32  # AveragePoolQuantizedTiledTable
            return AveragePoolQuantizedTiledTable(tiles, offset, table, np.empty(geo.out_shape, sum_dtype))
        return AveragePoolQuantizedTiled(tiles, count // 2, count, np.empty(geo.out_shape, np.int32), sign, lo, hi)
    taps = pool_taps_2d(geo)
    counts = tap_counts(ctx, geo)
    if (counts == counts.flat[0]).all():
        count = int(counts.flat[0])
        half = count // 2
    else:
        count = np.ascontiguousarray(counts[:, :, None], dtype=np.int32)
        half = count // 2
    lo, hi = quantized_activation_range(ctx, ctx.outputs[OUTPUT])
    if dtype.itemsize == 1:
        separable = AveragePoolQuantizedSeparable.build(geo, counts, dtype, lo, hi)
        if separable is not None:
            return separable
    leading = _leading_full(taps)
    sign = np.empty(geo.out_shape, np.int32) if dtype != np.uint8 else None
    return AveragePoolQuantized(
        tuple((o, i) for o, i, _ in taps), leading, half, count, np.empty(geo.out_shape, np.int32), sign, lo, hi
    )


@dataclass(frozen=True, eq=False)
class MaxPoolQuantized(BoundCalls):
    rows: MaxStage | None  # None: the filter has one row, stride 1 (the input is its own row maximum)
    cols: MaxStage
    row_max: np.ndarray | None  # (N, OH, W, C) scratch
    lo: np.integer | None  # the activation clamp; None when it is the whole type range
    hi: np.integer | None

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The window maxima's calls (max_stage_calls), then the activation clamp where there is one."""
        calls = max_stage_calls(self.rows, self.cols, self.row_max, x, out)
        if self.lo is not None:
            calls.append((clip_ufunc, (out, self.lo, self.hi), {"out": out}))
        return tuple(calls)


def _prepare_max_quantized(ctx: OpContext, geo: Geometry) -> MaxPoolQuantized:
    g = geo
    dtype = ctx.input(INPUT).dtype
    qmin, qmax = dtype_range(dtype)
    rows, cols = _max_stages(ctx, g, qmin)  # the reference starts from numeric_limits::lowest()
    lo, hi = quantized_activation_range(ctx, ctx.outputs[OUTPUT])
    clamp = (lo, hi) != (qmin, qmax)
    row_max = None if rows is None else np.empty((g.batches, g.out_h, g.in_w, g.in_c), dtype)
    return MaxPoolQuantized(rows, cols, row_max, dtype.type(lo) if clamp else None, dtype.type(hi) if clamp else None)


_QUANTIZED = tuple(np.dtype(t) for t in (np.uint8, np.int8, np.int16))


def _prepare_pool(ctx: OpContext, make_float, make_quantized):
    x, geo = pool_geometry(ctx)
    if x.dtype == np.float32:
        return EMPTY_OUTPUT if geo.empty else make_float(ctx, geo)
    if x.dtype in _QUANTIZED and x.type_name != "INT4":
        return EMPTY_OUTPUT if geo.empty else make_quantized(ctx, geo)
    raise ctx.fail(f"Type {x.type_name} not currently supported.")


@register(BuiltinOperator.AVERAGE_POOL_2D)
def prepare_average_pool_2d(ctx: OpContext):
    return _prepare_pool(ctx, _prepare_average_float, _prepare_average_quantized)


@register(BuiltinOperator.MAX_POOL_2D)
def prepare_max_pool_2d(ctx: OpContext):
    return _prepare_pool(ctx, _prepare_max_float, _prepare_max_quantized)
