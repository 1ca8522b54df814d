"""DEPTHWISE_CONV_2D uint8 / int8 with a constant filter over more than ROWS_MIN_VALUES output values (and
stride-1 layers below that), the fast path (`DepthwiseConvQuantizedRows`): the exact tap sums as one np.einsum per
phase plane over (N, OH, OW*C) output rows, the folded requantization and truncating epilogue of
litert_py.ops.conv.requant_trunc.

Where the time went in DepthwiseConvQuantizedFolded (1 thread, 3x3, per layer): the tap sums 45-70 % (a
(KH, KW, N, OH, OW, C) einsum whose inner loops run over C values only, or below 48 channels a stacked multiply
and reduction), the epilogue 20-35 % (a casting floor; per-channel clip bounds and one more pass on layers with
late zero points), sums * scale + const 15 %, the input copy 2-10 %. Here:

* The tap sums: the input is copied into a padded float32 buffer (border = input zero point), read as
  (KH, KW, N, OH, OW*C) windows (depthwise_einsum.einsum_windows; stride_w > 1 through column phase planes,
  each filled through a contiguous staging copy: `StagedFill`), one einsum per plane: inner loops of OW*C
  values whatever the channel count (3x3 s1: 25x5x64 30 -> 12 us, 48x48x8 90 -> 24 us). Small strided layers
  with many channels (or a depth multiplier) read the padded buffer as one (KH, KW, N, OH, OW, C) window
  instead (WINDOW_MIN_CHANNELS, WINDOW_MAX_VALUES). Exactness bound: every partial sum of the integer products,
  in whatever order einsum adds, is an integer of magnitude at most max|x| * max_c sum_k |w_kc - w_zp|, exact
  in float32 when that is at most 2^24 (checked at prepare; else the layer keeps the other paths: the folding's
  bound, below, fails first on such layers anyway, as M >= 2^30).
* The requantization: requant_trunc.py's truncating epilogue, the one the quantized CONV_2D takes
  (requant_trunc.fold_truncating folds the per-channel scale and constant, TruncEpilogue clips the values less
  a base b <= lo (0 for uint8, else min(zp, lo)) to [lo - b, hi - b] within [0, 255], truncates them into the
  output's uint8 view, adds b modulo 256); its exactness bound (that module's docstring) is checked there per
  channel. The base zp of ReLU layers leaves the zero point out of the constant, so their near-dead channels
  (right shifts of about 15 or more, zp = -128) fold like the others. Where that bound fails on some channel
  (a sign-path layer whose |zp - lo| is too large for its right shifts), outputs of more than
  SMALL_EPILOGUE_VALUES values take requant_trunc.fold_truncating_proven (the same TruncEpilogue, its roundings
  proven by the monotone step check) where every channel's GEMM value is exact (no raw accumulator); else, where
  requant.py's floor-based folding holds, its epilogue runs (LateZeroPointEpilogue, FoldedEpilogue); a layer where
  some channel fails even that (a MixedEpilogue) keeps DepthwiseConvQuantizedFolded. The sums * scale + const of a
  proven folding are exact (its late bound), so its values are the function of the accumulator the proof checks.
  Measured (se_mobilenet, 1 thread, per layer): 8x8x96 s2 59 -> 43 us, 8x8x120 s1 59 -> 40 us.
* Small outputs (at most ROWS_MIN_VALUES values, stride_w 1; `SCALED_PATH`): the padded buffer and the sums in
  float64, the weights already scaled by M * 2^(ls-31-rs) per channel, the einsum writing the accumulators
  directly: one multiply pass fewer (these layers pay per numpy call). Exactness bound: w * M < 2^40 is exact,
  and every product and partial sum of x * (w * scale), in whatever order einsum adds, is a multiple of the
  channel's unit 2^(ls-31-rs) of magnitude at most M * max|x| * sum|w - w_zp| units, below 2^53 units by the
  folding's bound (checked per channel at prepare). Measured (1 thread, depthwise alone / fused with its
  pointwise conv, against DepthwiseConvQuantizedFolded in the same run): 4x4x16 7.2 -> 6.7 / 11.1 -> 9.8 us,
  8x8x16 11.8 -> 9.3 / 19.0 -> 16.1, 4x4x48 10.1 -> 8.2 / 13.8 -> 11.6, 3x3x96 9.5 -> 8.4 / 13.7 -> 12.3,
  2x2x144 8.1 -> 7.5 / 11.9 -> 11.1 us. Small strided layers keep DepthwiseConvQuantizedFolded (its stacked
  multiply and reduction; the column phase planes cost 3 us more there, a float64 window einsum as much).
* Feeding (:meth:`DepthwiseConvQuantizedRows.feeding`, depthwise_into_rows.py): when only a pointwise
  ConvQuantizedFoldedRows reads the output, the epilogue floors into the conv's float64 GEMM rows. Where the
  base b is not 0 the folding with b = 0 (the zero point in the constant: no add after the floor) is used there
  when it is exact (checked at prepare: a second fold_truncating), so the floored values go straight into the
  rows; else the values less b, b added after the floor.

Measured per layer (1 thread, min of repeats, this path against DepthwiseConvQuantizedFolded in the same run):
ds_cnn 25x5x64 s1 69 -> 34 us; vww 48x48x8 s1 127 -> 60, 48x48x16 s2 86 -> 47, 24x24x32 s1 149 -> 57,
12x12x64 s1 70 -> 31, 6x6x128 s1 35 -> 20 us; keyword_spotting_mobilenetv2 30x25x8 44 -> 26, 31x27x48 s2
68 -> 48 us; 96x96x8 s2 264 -> 78 us.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..bound_plan import BoundCalls, contiguous_source
from ..common import aligned_empty, c_einsum
from ..registry import TensorInfo
from .common import FLOAT32_EXACT, Geometry
from .depthwise_einsum import SUBSCRIPTS, einsum_windows
from .depthwise_into_rows import DepthwiseIntoRows, feeding, inlined
from .requant import SMALL_EPILOGUE_VALUES, MixedEpilogue, epilogue_calls, fold_requantization
from .requant_trunc import FULL_CONSTANTS_MAX_VALUES, TruncEpilogue, fold_truncating, fold_truncating_proven
from .taps import DepthwiseTaps

#: Outputs of at most this many values keep DepthwiseConvQuantizedFolded (fewer numpy calls, its small epilogue
#: from 512 values down). Measured inside keyword_spotting_mobilenetv2 (interleaved invokes, median per node):
#: the rows path 0.9-1.05x on 2x2x144 and 4x4x48 (576, 768 values), 1.15-1.2x on 4x4x96 (1536) and 3x3x128 (1152).
ROWS_MIN_VALUES = 1024

#: Strided windows (stride_w > 1) with at least WINDOW_MIN_CHANNELS channels and fewer than WINDOW_MAX_VALUES output
#: values read the padded buffer as one (KH, KW, N, OH, OW, C) window (inner loops of C values; no phase planes to
#: fill and add: two numpy calls fewer): 3x3 stride 2, 6x6x128 -> 3x3: 13.0 vs 14.4 us, 9x9x48 -> 4x4: 12.0 vs
#: 13.2 us; larger outputs and fewer channels take the column phase planes (31x27x48 -> 15x13: 46 vs 64 us,
#: 17x15x48 -> 8x7: 21 vs 23 us, 48x48x16 -> 24x24: 45 vs 86 us).
WINDOW_MIN_CHANNELS = 48

#: Stride-1 outputs of at most ROWS_MIN_VALUES values take the rows path with float64 scaled sums (module
#: docstring); tests set this False to reach DepthwiseConvQuantizedFolded.
SCALED_PATH = True
WINDOW_MAX_VALUES = 2048


@dataclass(frozen=True, eq=False)
class Fill:
    """The input copied (and converted) into the padded buffer: ((destination, input index), ...)."""

    fills: tuple

    def calls(self, x: np.ndarray) -> tuple:
        """The copies from ``x`` (its views made once), as (function, args, kwargs) triples."""
        return tuple((np.copyto, (dest, x[index]), {}) for dest, index in self.fills)


@dataclass(frozen=True, eq=False)
class StagedFill:
    """The input's column phases into the phase planes in two copies each: the phase's pixels gathered as whole
    C-byte pixels (a void view: one element per pixel) into a contiguous staging buffer of the input's type,
    then converted into the plane in contiguous runs. Converting straight from the strided phase runs C values
    at a time through numpy's casting buffer: 96x96x8 stride 2, 47 -> 14 us; 48x48x16 26 -> 9 us."""

    pixel: np.dtype  # void of C * itemsize bytes
    fills: tuple  # ((plane region, staging buffer, its void view, input index of the void view), ...)

    def calls(self, x: np.ndarray) -> tuple:
        """The copies from ``x`` (its void view made once; a C-contiguous copy of ``x`` first where it is not:
        bound_plan.contiguous_source), as (function, args, kwargs) triples."""
        c = []
        xv = contiguous_source(x, c).view(self.pixel)  # (N, H, W, 1)
        for dest, stage, stage_pixels, index in self.fills:
            c += [(np.copyto, (stage_pixels, xv[index]), {}), (np.copyto, (dest, stage), {})]
        return tuple(c)


@dataclass(frozen=True, eq=False)
class DepthwiseConvQuantizedRows(BoundCalls):
    """DEPTHWISE_CONV_2D uint8 / int8, constant filter and bias, folded requantization (module docstring): the
    input copied into the padded buffer (or its column phase planes), one einsum per plane into the (N, OH, OW*O)
    sums, sums * scale + const in float64, the epilogue."""

    fill: Fill | StagedFill  # the input into the padded buffer or its phase planes
    groups: tuple  # ((subscripts, window view, weights, out), ...) one per plane, the first out a view of sums
    sums: np.ndarray  # (N, OH, OW*O) float32 exact tap sums (small outputs: float64 scaled sums, acc itself)
    scratch: np.ndarray | None  # (N, OH, OW*O): the second and later planes' sums (their out)
    scale: np.ndarray | None  # (OW*O,) float64 M * 2^(ls-31-rs); None: in the weights (small outputs)
    const: np.ndarray  # (OW*O,) float64 the folded constant
    acc: np.ndarray  # (N, OH, OW*O) float64
    acc_out: np.ndarray  # acc as the epilogue reads it: the rows, or the output's shape (LateZeroPointEpilogue)
    acc4: np.ndarray  # acc viewed with the output's shape
    epilogue: object
    rows_form: tuple | None  # (const, epilogue) of the b = 0 folding (feeding), where b != 0 and that is exact

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on ``x`` and ``out`` (accumulate_calls, requant.epilogue_calls)."""
        return (*self.accumulate_calls(x), *epilogue_calls(self.epilogue, self.acc_out, out))

    def accumulate_calls(self, x: np.ndarray) -> tuple:
        """The folded accumulators sums * scale + const of the input ``x`` into ``acc``: numpy calls, as (function,
        args, kwargs) triples (the float64 multiply of the copied sums is faster than the mixed float32 x float64
        one; |sum * M| < 2^53 units, the folding's bound: exact)."""
        calls = list(self.fill.calls(x))
        (subscripts, window, weights, out), *more = self.groups
        calls.append((c_einsum, (subscripts, window, weights), {"out": out}))
        for subscripts, window, weights, out in more:
            calls.append((c_einsum, (subscripts, window, weights), {"out": out}))
            calls.append((np.add, (self.sums, out, self.sums), {}))
        acc = self.acc
        if self.scale is not None:
            calls += [(np.copyto, (acc, self.sums), {}), (np.multiply, (acc, self.scale, acc), {})]
        calls.append((np.add, (acc, self.const, acc), {}))
        return tuple(calls)

    def feeding(self, conv) -> DepthwiseIntoRows | None:
        """This op and ``conv``, the step that alone reads its output, as one DepthwiseIntoRows
        (depthwise_into_rows.py: the epilogue's floored values, plus its base b where not 0, stored straight into a
        ConvQuantizedFoldedRows's float64 GEMM rows), or None when that module's bound is not checked."""
        if self.rows_form is not None:  # b = 0: the values floored straight into the rows
            const, ep = self.rows_form
            return inlined(feeding(dataclasses.replace(self, const=const), ep, self.acc4, conv))
        return inlined(feeding(self, self.epilogue, self.acc4, conv))


def prepare_depthwise_rows(
    geo: Geometry, x: TensorInfo, multiplier: int, w: np.ndarray, offset: np.ndarray, requantization: tuple
) -> DepthwiseConvQuantizedRows | None:
    """The prepared op, or None when it does not apply: ``w`` (taps, O) int64 filter minus its zero point,
    ``offset`` (O,) int64 bias - x_zp * sum(w), ``requantization`` fold_requantization's (multiplier, shift,
    zero_point, lo, hi, max_abs_x, acc_bound) (``max_abs_x``: the largest |x| of the input type, the padding's
    zero point included). None for at most ROWS_MIN_VALUES output values with stride_w > 1 (or without
    SCALED_PATH) or when neither folding is exact on every channel (requant_trunc's, requant.py's: a
    MixedEpilogue)."""
    m, shift, zero_point, lo, hi, max_abs_x, acc_bound = requantization
    values = int(np.prod(geo.out_shape))
    scaled = values <= ROWS_MIN_VALUES
    if scaled and (geo.stride_w != 1 or not SCALED_PATH):
        return None
    weight_abs_sums = np.abs(w).sum(axis=0)
    bounds = max_abs_x * weight_abs_sums + np.abs(offset)
    folding = fold_truncating(m, shift, zero_point, lo, hi, offset, bounds, acc_bound, x.dtype, out_shape=geo.out_shape)
    late = proven = None
    if folding is None and values > SMALL_EPILOGUE_VALUES:  # the proven truncating folding (no raw channel)
        args = (m, shift, zero_point, lo, hi, offset, bounds, acc_bound, geo.out_shape, x.dtype)
        proven = fold_truncating_proven(*args)
        if proven is not None and not isinstance(proven.epilogue, TruncEpilogue):
            proven = None
    if folding is None and proven is None:  # requant.py's floor-based folding: a late zero point
        late = fold_requantization(
            m, shift, zero_point, lo, hi, offset, weight_abs_sums, max_abs_x, acc_bound, geo.out_shape, x.dtype
        )
        if late is None or isinstance(late.epilogue, MixedEpilogue):
            return None
    if not scaled and max_abs_x * int(weight_abs_sums.max()) > FLOAT32_EXACT:  # the tap sums' bound
        return None  # (the folding's own bound, M >= 2^30 times the sums below 2^53 units, fails first anyway)
    scale = (folding or proven or late).scale
    if scaled:  # float64 sums of x * (w * scale): multiples of the unit below 2^53 units (the folding's bound)
        w_scaled = w * scale  # |w * M| < 2^40: exact
        fill, groups, sums, scratch = _tap_sums(geo, x.dtype, multiplier, w_scaled, np.float64, x.zero_point)
    else:
        fill, groups, sums, scratch = _tap_sums(geo, x.dtype, multiplier, w, np.float32, x.zero_point)
    rows = sums.shape
    acc = sums if scaled else aligned_empty(rows, np.float64)
    if proven is not None:  # (no b = 0 form: its bound fails where this one is needed)
        epilogue, const, acc_out, rows_form = proven.epilogue, proven.const, acc.reshape(proven.epilogue.shape), None
    elif folding is None:
        epilogue, const, acc_out, rows_form = late.epilogue, late.const, acc.reshape(geo.out_shape), None
    else:
        epilogue, const = folding.epilogue(geo.out_shape), folding.const
        acc_out = acc.reshape(epilogue.shape)  # (the output's shape for a PlainTruncEpilogue)
        rows_form = None
        if folding.base != 0:  # the feeding form: b = 0, floored straight into the conv's rows where exact
            plain = fold_truncating(m, shift, zero_point, lo, hi, offset, bounds, acc_bound, x.dtype, base=0)
            if plain is not None:
                assert np.array_equal(plain.scale, folding.scale)  # the base changes the constant only
                rows_form = (_per_value(plain.const, rows), plain.epilogue(geo.out_shape, wide=False))
    return DepthwiseConvQuantizedRows(
        fill,
        groups,
        sums,
        scratch,
        None if scaled else _per_value(scale, rows),
        _per_value(const, rows),
        acc,
        acc_out,
        acc.reshape(geo.out_shape),
        epilogue,
        rows_form,
    )


def _per_value(a: np.ndarray, rows: tuple) -> np.ndarray:
    """The per-channel float64 values ``a`` (O,) laid out for the (N, OH, OW*O) accumulators: one value per
    accumulator up to requant_trunc.FULL_CONSTANTS_MAX_VALUES values (a ufunc broadcasting a row over the
    accumulators costs about twice a plain one: 15x13x48 sums * scale + const 10.1 -> 6.3 us, 4x4x96
    2.7 -> 1.7 us), else one (OW*O,) row; on a cache line."""
    shape = rows if int(np.prod(rows)) <= FULL_CONSTANTS_MAX_VALUES else rows[-1:]
    out = aligned_empty(shape, np.float64)
    out.reshape(-1, np.size(a))[...] = a
    return out


def _tap_sums(geo: Geometry, x_dtype, multiplier: int, w: np.ndarray, dtype, x_zp: int):
    """(fill, groups, sums, scratch) of DepthwiseConvQuantizedRows: the (taps, O) weights ``w`` over the
    padded buffer (border ``x_zp``) as (N, OH, OW*O) rows (einsum_windows: column phase planes for stride_w > 1)
    or, for small strided windows with WINDOW_MIN_CHANNELS channels or a depth multiplier, one
    (KH, KW, N, OH, OW, O) window of DepthwiseTaps."""
    g = geo
    rows = (g.batches, g.out_h, g.out_w * g.out_c)
    small = g.out_c >= WINDOW_MIN_CHANNELS and int(np.prod(g.out_shape)) < WINDOW_MAX_VALUES
    if g.stride_w == 1 or (multiplier == 1 and not small):
        fills, windows, _, scratch = einsum_windows(
            g, multiplier, w.reshape(1, g.filter_h, g.filter_w, g.out_c), dtype, x_zp
        )
        sums = aligned_empty(rows, dtype)
        groups = tuple(
            (SUBSCRIPTS, window, weights, scratch if k else sums) for k, (window, weights) in enumerate(windows)
        )
        if g.stride_w == 1:
            return Fill(fills), groups, sums, scratch
        pixel = np.dtype((np.void, g.in_c * np.dtype(x_dtype).itemsize))
        staged = []
        for dest, index in fills:
            stage = np.empty(dest.shape, x_dtype)
            staged.append((dest, stage, stage.view(pixel), index + (slice(None),)))
        return StagedFill(pixel, tuple(staged)), groups, sums, scratch
    taps = DepthwiseTaps.build(g, multiplier, dtype, x_zp, copy=True)
    weights = w.reshape(g.filter_h, g.filter_w, 1, g.out_c).astype(dtype)
    weights = np.ascontiguousarray(np.broadcast_to(weights, (g.filter_h, g.filter_w, g.out_w, g.out_c)))
    sums = aligned_empty(rows, dtype)
    fill = Fill(((taps.fill, (Ellipsis, None) if multiplier > 1 else (Ellipsis,)),))
    return fill, (("ijnhwc,ijwc->nhwc", taps.window, weights, sums.reshape(g.out_shape)),), sums, None
