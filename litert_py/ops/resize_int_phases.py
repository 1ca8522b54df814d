"""RESIZE_BILINEAR int8 / int16 by integer-factor upsampling: separable scalar-weight phases, exact integers.

The reference integer kernel (ResizeBilinearInteger) computes, per output pixel, with 10-bit weights
``wy = scaled_y - 1024*y0`` and ``wx`` (ComputeInterpolationValuesInteger)::

    acc = x00*(1024-wy)*(1024-wx) + x10*wy*(1024-wx) + x01*(1024-wy)*wx + x11*wy*wx     (int64)
    out = (acc + (acc > 0 ? 2^19 : -2^19)) / 2^20                                      (C division)

When the output is an integer multiple of the input along both axes, the integer tables are periodic
(resize_phases.phase_plan, checked at prepare value by value on the tables the gather kernel uses, the 10-bit
weights passed as exact float32), so each (row phase, column phase) block of the output uses four scalar
weights. Integer arithmetic is exact in any order, so the sum factors: per column phase, on the edge-padded
input P, ``H = (1024-wx)*P[:, :, x0+j] + wx*P[:, :, x1+j] + b``; per block,
``acc' = (1024-wy)*H[y0+i] + wy*H[y1+i]``, which is ``acc + 1024*b`` because every phase's two weights sum to
1024 (checked). With ``b = -512``, ``acc' = acc - 2^19`` and the rounding is ``((acc' + (acc' >> 31)) >> 20) + 1``
(arithmetic shifts): for ``acc >= 2^19`` that is ``floor((acc + 2^19) / 2^20)``; for smaller ``acc`` it is
``floor((acc + 2^19 - 1) / 2^20)``, which is the truncating C division of ``acc - 2^19`` when ``acc <= 0`` and 0
(as the reference) when ``0 < acc < 2^19``. The shift by 20 converts into a block of the output dtype, copied into
the strided output as opaque pixels; the ``+ 1`` is one pass over the output. The adds and multiplies run over
flat contiguous ranges of the padded layout, as in resize_phases.

Reduced weights: a phase's two weights share a power of two, ``2^ky`` for the rows and ``2^kx`` for the columns
(2x half_pixel_centers: 256 and 768, so 2^8; ``kx`` is capped at 9, ``ky`` at 10), so a block's four products
share ``2^K``, ``K = ky + kx <= 19``. The kernel runs on the weights divided by it: ``H' = wx0'*P0 + wx1'*P1 -
2^(9-kx)`` and ``S' = wy0'*H'0 + wy1'*H'1 = (acc - 2^19) / 2^K`` (the reduced row weights sum to 2^(10-ky)),
and the output is ``((S' + (S' >> sign)) >> (20 - K)) + 1``: for ``S' >= 0`` that is ``acc' >> 20``; for
``S' < 0``, ``floor((2^K*S' - 1) / 2^20) = floor((S' - 1) / 2^(20-K))`` because ``S'`` is an integer.

Exactness bound (checked at prepare): ``|H'|, |S'| <= 2^(20-K) * (M + 1/2)`` for ``|x| <= M = 2^(bits-1)``;
the accumulators take the smallest of int16 / int32 / int64 that holds it over every block: int8 2x and 4x
upsampling accumulate in int16 (2^4 * 128.5 and 2^6 * 128.5), int16 in int32 (8x int8: int32).

The outputs outside the periodic pattern (half_pixel_centers' first row and column: one input read with weights
1280 and -256) equal the pattern's (the same input read twice, weights summing to 1024), which prepare checks;
any other exception leaves the op to the gather kernel.

Source matched: tensorflow/lite/kernels/internal/reference/resize_bilinear.h (ResizeBilinearInteger,
ComputeInterpolationValuesInteger).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .common import aligned_empty
from .resize_phases import pad_edges, phase_plan

_F32 = np.float32


@dataclass(frozen=True, eq=False)
class ResizeBilinearIntegerPhases:
    """Integer-factor int8 / int16 upsampling; see the module doc. ``columns``: per column phase
    ``(x offset 0, weight 0, x offset 1, weight 1)`` as flat element offsets; ``blocks``: per block
    ``(py, px, y offset 0, weight 0, y offset 1, weight 1)``; a zero weight's term is skipped."""

    fy: int
    fx: int
    ypad: tuple
    xpad: tuple
    in_hw: tuple
    columns: tuple
    blocks: tuple
    padded: np.ndarray  # (N, Hp, Wp, C) accumulator dtype
    horizontal: tuple  # per column phase: flat (N*Hp*Wp*C,) H
    acc: np.ndarray  # flat, the padded size
    tmp: np.ndarray  # flat, the padded size
    block: np.ndarray  # (N, H, W, C) output dtype: one block before its strided copy
    unit: np.dtype  # void of C * itemsize bytes
    hspan: int
    vspan: int

    def __call__(self, inputs, outputs):
        p, out = self.padded, outputs[0]
        pad_edges(p, inputs[0], self.ypad, self.xpad)
        flat = p.reshape(-1)
        hs, vs = self.hspan, self.vspan
        tmp_h = self.tmp[:hs]
        for (o0, w0, o1, w1, bias), h in zip(self.columns, self.horizontal, strict=True):
            h = h[:hs]
            _weighted_sum(flat, o0, w0, o1, w1, hs, h, tmp_h)
            h += bias  # -2^(9-kx): the rounding's -2^19 at the block's scale
        n, hp, wp, c = p.shape
        hh, ww = self.in_hw
        acc = self.acc[:vs]
        sign = 8 * acc.itemsize - 1
        acc_block = self.acc.reshape(n, hp, wp, c)[:, :hh, :ww]
        block, t = self.block, self.tmp[:vs]
        units = out.reshape(-1, c).view(self.unit).reshape(n, *out.shape[1:3])  # a pixel's C values as one item
        block_units = block.reshape(-1, c).view(self.unit).reshape(n, hh, ww)
        for py, px, o0, w0, o1, w1, m in self.blocks:
            _weighted_sum(self.horizontal[px], o0, w0, o1, w1, vs, acc, t)
            np.right_shift(acc, sign, out=t)  # -1 where S' < 0
            acc += t
            np.right_shift(acc_block, m, out=block, casting="unsafe")  # in range: static_cast<T>
            # into the strided output block as opaque pixels: 3-10x faster than a converting copy into it
            np.copyto(units[:, py :: self.fy, px :: self.fx], block_units)
        out += 1  # the rounding's + 1, once over the output


def _weighted_sum(src, o0, w0, o1, w1, span, out, tmp):
    """``out = w0*src[o0:o0+span] + w1*src[o1:o1+span]``, a zero weight's term skipped."""
    if w1 == 0:
        np.multiply(src[o0 : o0 + span], w0, out=out)
    elif w0 == 0:
        np.multiply(src[o1 : o1 + span], w1, out=out)
    else:
        np.multiply(src[o0 : o0 + span], w0, out=out)
        np.multiply(src[o1 : o1 + span], w1, out=tmp)
        out += tmp


def shared_twos(values) -> int:
    """The number of trailing zero bits shared by the integers ``values`` (not all 0)."""
    g = math.gcd(*(int(v) for v in values))
    return (g & -g).bit_length() - 1


def _plan(in_size, out_size, tab):
    lo, hi, w0, w1 = tab
    plan = phase_plan(in_size, out_size, lo, hi, w0.astype(_F32), w1.astype(_F32))  # 10-bit weights: exact
    if plan is None:
        return None
    w = [(int(a), int(b)) for a, b in zip(plan.w0, plan.w1, strict=True)]
    if any(a < 0 or b < 0 or a + b != 1024 for a, b in w):  # the bound and the bias fold need these
        return None
    # An exception whose neighbours are one input (lo == hi: half_pixel_centers' clamped first output, weights
    # 1280 and -256) which the pattern also reads twice is 1024 * x either way (both weight pairs sum to 1024).
    o = plan.exceptions
    p, i = o % plan.factor, o // plan.factor
    before = plan.pad[0]
    a = np.clip(i + np.array(plan.lo_start)[p] - before, 0, in_size - 1)
    b = np.clip(i + np.array(plan.hi_start)[p] - before, 0, in_size - 1)
    if not ((lo[o] == hi[o]) & (a == lo[o]) & (b == lo[o])).all():
        return None  # other exceptions: the gather kernel (none seen with integer factors: exact 10-bit scales)
    return plan, w


def make_integer_phases_op(in_shape, out_hw, dtype, ytab, xtab) -> ResizeBilinearIntegerPhases | None:
    """The phase kernel for the integer tables ``(lo, hi, 1024 - w, w)`` of both axes, or None when an axis
    is not periodic (or the weights leave the bound of the module doc)."""
    n, h, w, c = in_shape
    oh, ow = out_hw
    if n * c == 0:
        return None
    yp, xp = _plan(h, oh, ytab), _plan(w, ow, xtab)
    if yp is None or xp is None or (yp[0].factor == 1 and xp[0].factor == 1):
        return None
    (ys, wy), (xs, wx) = yp, xp
    ky = [min(shared_twos(ab), 10) for ab in wy]
    kx = [min(shared_twos(ab), 9) for ab in wx]  # the bias -2^(9-kx) stays an integer
    big = 2 ** (8 * np.dtype(dtype).itemsize - 1)  # |x| <= big
    bound = max(2 ** (20 - a - b) * (2 * big + 1) // 2 for a in ky for b in kx)  # |S'|, |H'| <= bound
    acc_t = np.dtype(next(t for t in (np.int16, np.int32, np.int64) if bound < np.iinfo(t).max))
    hp, wp = h + sum(ys.pad), w + sum(xs.pad)
    columns = tuple(
        (xs.lo_start[px] * c, wx[px][0] >> k, xs.hi_start[px] * c, wx[px][1] >> k, -(1 << (9 - k)))
        for px, k in enumerate(kx)
    )
    blocks = tuple(
        (py, px, ys.lo_start[py] * wp * c, wy[py][0] >> a, ys.hi_start[py] * wp * c, wy[py][1] >> a, 20 - a - b)
        for py, a in enumerate(ky)
        for px, b in enumerate(kx)
    )
    size = n * hp * wp * c
    return ResizeBilinearIntegerPhases(
        ys.factor,
        xs.factor,
        ys.pad,
        xs.pad,
        (h, w),
        columns,
        blocks,
        aligned_empty((n, hp, wp, c), acc_t),
        tuple(aligned_empty(size, acc_t) for _ in range(xs.factor)),
        aligned_empty(size, acc_t),
        aligned_empty(size, acc_t),
        aligned_empty((n, h, w, c), dtype),
        np.dtype((np.void, c * np.dtype(dtype).itemsize)),
        ((n * hp - 1) * wp + w) * c,
        (((n - 1) * hp + h - 1) * wp + w) * c,
    )
