"""DEPTHWISE_CONV_2D uint8 / int8 with a constant filter over several output pixels, the fast path
(`DepthwiseConvQuantizedRows`): the tap sums as one np.einsum per phase plane over (N, OH, OW*C) output rows,
the folded requantization (litert_py.ops.conv.requant) and a truncating epilogue.

Where the time went in DepthwiseConvQuantizedFolded (1 thread, 3x3): the tap sums were 45-70 % of the layer
(a (KH, KW, N, OH, OW, C) einsum whose inner loop runs over C values only, or a stacked multiply and reduction
below 48 channels), the epilogue 20-35 % (a casting floor, per-channel clip bounds with late zero points).
Here:

* The padded input (border = input zero point) is read as (KH, KW, N, OH, OW*C) windows (depthwise_einsum's
  `einsum_windows`: stride_w > 1 through column phase planes, so each tap reads a contiguous OW*C run), one
  einsum per plane: inner loops of OW*C values whatever the channel count. Exact: every partial sum of the
  integer products, in whatever order einsum adds, is an integer of magnitude at most
  max|x| * max_c sum_k |w_kc - w_zp| (``dtype`` from exact_dtype: float32 below 2^24, checked at prepare).
* For int8 outputs the requantization is folded (fold_requantization) with the output zero point, clamp and
  range shifted by +128: clamp(MBQM(acc) + zp + 128, lo + 128, hi + 128) is the int8 result + 128 in [0, 255].
  The epilogue clips to that range, so every value is >= 0 and the truncating float64 -> uint8 cast (np.copyto)
  is the floor; XOR 0x80 of the uint8 o + 128 is the two's complement bit pattern of the int8 o, written through
  a uint8 view of the output (one cheap pass). The shift also turns the usual zero point -128 of ReLU layers
  into 0, so their near-dead channels (right shifts of about 15 or more) no longer need the late-zero-point
  pass. uint8 outputs take the same epilogue without the shift and the XOR. Exactness bound: fold_requantization's
  (module docstring of requant.py), checked at prepare for the shifted zero point; layers where it fails on
  some channel's late bound too (a MixedEpilogue) keep DepthwiseConvQuantizedFolded.

Measured (1 thread, min of repeats, us, before -> after): see tools/bench_families.py and the branch note;
ds_cnn 25x5x64 s1 63 -> about 30, vww 48x48x8 s1 131 -> about 45.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..common import aligned_empty, clip_ufunc
from .common import INPUT, OUTPUT, Geometry
from .depthwise_einsum import SUBSCRIPTS, einsum_windows
from .requant import FoldedEpilogue, LateZeroPointEpilogue, SmallFoldedEpilogue, fold_requantization
from .taps import DepthwiseTaps

SIGN_BIT = np.array(0x80, np.uint8)

#: Outputs of at most this many values keep DepthwiseConvQuantizedFolded (its small epilogue makes fewer numpy
#: calls; the rows path was 0.75-0.85x on 64-256 values, 1.1-1.3x from 800 on).
ROWS_MIN_VALUES = 512

#: Strided windows (stride_w > 1) with at least WINDOW_MIN_CHANNELS channels and fewer than WINDOW_MAX_VALUES output
#: values read the padded buffer as one (KH, KW, N, OH, OW, C) window (inner loops of C values; no phase planes to
#: fill and add: two numpy calls fewer): 3x3 stride 2, 6x6x128 -> 3x3: 13.0 vs 14.4 us, 9x9x48 -> 4x4: 12.0 vs
#: 13.2 us; larger outputs and fewer channels take the column phase planes (31x27x48 -> 15x13: 46 vs 64 us,
#: 17x15x48 -> 8x7: 21 vs 23 us, 48x48x16 -> 24x24: 45 vs 86 us).
WINDOW_MIN_CHANNELS = 48
WINDOW_MAX_VALUES = 2048


@dataclass(frozen=True, eq=False)
class TruncatingEpilogue:
    """FoldedEpilogue for outputs shifted to [0, 255]: ``v`` (float64, overwritten) holds u + c (``half`` None) or u
    (then ``v + copysign(half, v) + const`` first), clipped to [lo, hi] within [0, 255] in place, where the
    truncating cast to uint8 is the floor; ``flip`` (int8 outputs: the uint8 values are the result + 128) XORs
    the sign bit in, giving the int8 bit pattern."""

    lo: np.ndarray  # 0-d float64
    hi: np.ndarray  # 0-d float64
    half: np.ndarray | None  # (OW*O,) float64 2^-(rs+1) per channel (sign path)
    const: np.ndarray | None  # 0-d float64 zp + 1/2 (sign path)
    sign: np.ndarray | None  # (N, OH, OW*O) float64 scratch (sign path)
    flip: bool

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        if self.half is not None:
            np.copysign(self.half, v, out=self.sign)
            np.add(v, self.sign, out=v)
            np.add(v, self.const, out=v)
        clip_ufunc(v, self.lo, self.hi, out=v)  # in [0, 255]: trunc == floor
        u = out.view(np.uint8).reshape(v.shape)
        np.copyto(u, v, casting="unsafe")
        if self.flip:
            np.bitwise_xor(u, SIGN_BIT, out=u)


@dataclass(frozen=True, eq=False)
class FlippedEpilogue:
    """Another folded epilogue (LateZeroPointEpilogue) of a +128-shifted int8 layer: it writes the result + 128
    into a uint8 view of the output, then XOR 0x80 gives the int8 bit pattern."""

    epilogue: object

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        u = out.view(np.uint8)
        self.epilogue(v, u)
        np.bitwise_xor(u, SIGN_BIT, out=u)


@dataclass(frozen=True, eq=False)
class Fill:
    """The input copied (and converted) into the padded buffer: ((destination, input index), ...)."""

    fills: tuple

    def __call__(self, x: np.ndarray) -> None:
        for dest, index in self.fills:
            np.copyto(dest, x[index])


@dataclass(frozen=True, eq=False)
class StagedFill:
    """The input's column phases into the phase planes in two copies each: the phase's pixels gathered as whole
    C-byte pixels (a void view: one element per pixel) into a contiguous staging buffer of the input's type,
    then converted into the plane in contiguous runs. Converting straight from the strided phase runs C values
    at a time through numpy's casting buffer: 96x96x8 stride 2, 47 -> 14 us; 48x48x16 26 -> 9 us."""

    pixel: np.dtype  # void of C * itemsize bytes
    fills: tuple  # ((plane region, staging buffer, its void view, input index of the void view), ...)

    def __call__(self, x: np.ndarray) -> None:
        xv = x.view(self.pixel)  # (N, H, W, 1): the last axis is contiguous (a C-contiguous tensor)
        for dest, stage, stage_pixels, index in self.fills:
            np.copyto(stage_pixels, xv[index])
            np.copyto(dest, stage)


@dataclass(frozen=True, eq=False)
class DepthwiseConvQuantizedRows:
    """DEPTHWISE_CONV_2D uint8 / int8, constant filter and bias, folded requantization (module docstring): the
    input copied into the padded buffer (or its column phase planes), one einsum per plane into the (N, OH, OW*O)
    sums, sums * scale + const in float64, the epilogue."""

    fill: Fill | StagedFill  # the input into the padded buffer or its phase planes
    groups: tuple  # ((subscripts, window view, weights, out), ...) one per plane, the first out a view of sums
    sums: np.ndarray  # (N, OH, OW*O) float32 (or float64) exact tap sums
    scratch: np.ndarray | None  # (N, OH, OW*O): the second and later planes' sums (their out)
    scale: np.ndarray  # (OW*O,) float64 M * 2^(ls-31-rs)
    const: np.ndarray  # (OW*O,) float64 the folded constant
    acc: np.ndarray  # (N, OH, OW*O) float64
    acc_out: np.ndarray  # acc viewed with the output's shape (for the epilogues that need it)
    epilogue: object

    def __call__(self, inputs, outputs):
        self.fill(inputs[INPUT])
        sums = self.sums
        (subscripts, window, weights, out), *more = self.groups
        np.einsum(subscripts, window, weights, out=out)
        for subscripts, window, weights, out in more:
            np.einsum(subscripts, window, weights, out=out)
            np.add(sums, out, out=sums)
        acc = self.acc
        np.multiply(sums, self.scale, out=acc)  # |sum * M| < 2^53 units (the folding's bound): exact
        np.add(acc, self.const, out=acc)
        self.epilogue(self.acc_out, outputs[OUTPUT])


def prepare_depthwise_rows(
    geo: Geometry,
    x_dtype,
    x_zp: int,
    w: np.ndarray,
    offset: np.ndarray,
    multiplier: int,
    m,
    shift,
    zero_point: int,
    lo: int,
    hi: int,
    max_abs_x: int,
    acc_bound: float,
    dtype,
) -> DepthwiseConvQuantizedRows | None:
    """The prepared op, or None when it does not apply: ``w`` (taps, O) int64 filter minus its zero point,
    ``offset`` (O,) int64 bias - x_zp * sum(w); ``dtype`` the exact tap-sum type (float32 when
    max_abs_x * max_c sum_k |w_kc| < 2^24); the rest as fold_requantization. None for strided windows with a
    depth multiplier, or when the folding's bound fails (on every channel, or a MixedEpilogue)."""
    shift128 = 128 if np.dtype(x_dtype) == np.int8 else 0
    folding = fold_requantization(
        m,
        shift,
        zero_point + shift128,
        lo + shift128,
        hi + shift128,
        offset,
        np.abs(w).sum(axis=0),
        max_abs_x,
        acc_bound,
        geo.out_shape,
        np.uint8,
    )
    if folding is None:
        return None
    if int(np.prod(geo.out_shape)) <= ROWS_MIN_VALUES:
        return None
    fill, groups, sums, scratch = _tap_sums(geo, x_dtype, multiplier, w, dtype, x_zp)
    rows = sums.shape
    ep = folding.epilogue
    if type(ep) in (FoldedEpilogue, SmallFoldedEpilogue):
        sign = None if ep.half is None else aligned_empty(rows, np.float64)
        half = None if ep.half is None else ep.half.reshape(-1)[: geo.out_w * geo.out_c]
        epilogue = TruncatingEpilogue(ep.lo, ep.hi, half, None if half is None else ep.const, sign, shift128 > 0)
        rows_shape = True
    elif isinstance(ep, LateZeroPointEpilogue):
        epilogue = FlippedEpilogue(ep) if shift128 else ep
        rows_shape = False
    else:  # MixedEpilogue
        return None
    acc = aligned_empty(rows, np.float64)
    return DepthwiseConvQuantizedRows(
        fill,
        groups,
        sums,
        scratch,
        np.tile(folding.scale, geo.out_w),
        np.tile(folding.const, geo.out_w),
        acc,
        acc if rows_shape else acc.reshape(geo.out_shape),
        epilogue,
    )


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
