"""Float CONV_2D over few input channels from channel-first phase planes (`ConvFloatPlanes`).

The im2col GEMM of `conv2d.ConvFloatBiasFolded` copies every receptive field into a row of its (M, K) matrix: with
few input channels (an image model's first layer, 3 channels) the copy moves runs of only KW*C floats and costs
as much as the GEMM. Here the input is first copied into channel-first phase planes ((stride_h, stride_w, C, N,
qh, qw): plane (py, px) holds the zero-padded rows py, py + sh, ... and columns px, px + sw, ...), so that every
(tap, channel) row of the transposed matrix A^T (K, N*OH*OW) is an (N, OH, OW) unit-stride slice of one plane:
one copy per phase moves runs of OW floats. The GEMM multiplies A^T's transpose (BLAS reads it transposed) by
the weights, with the bias as one more weight row against a ones row of A^T (set at prepare), then the clamp:
copy -> GEMM -> clamp. Measured (1 thread): BlazeFace's 5x5 stride-2 128x128x3 -> 64x64x24 layer 297 -> 245 us,
3x3 stride-2 256x256x3 -> 128x128x16 592 -> 451 us, 3x3 64x64x4 -> 16 144 -> 97 us.

Exactness: the float tolerance of the GEMM paths, not bit-exact: BLAS sums the K products and the bias in its
own order (tests/ops/conv/test_conv_planes.py: LiteRT's reference within 1e-5 per term of the largest output,
and a float64 reference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..activation_fusion import ClampLast
from ..bound_plan import BoundCalls
from ..common import aligned_empty, aligned_full, clip_ufunc
from .common import Geometry
from .phases import phase_axis, tap_groups

#: Taken for convs (not 1x1) whose receptive-field runs in NHWC, KW * C floats, are at most this long and with
#: at least PLANES_MIN_PIXELS output pixels (measured, 1 thread: runs of 9-15 floats 1.2-1.5x faster at 64x64 to
#: 128x128 outputs, 3 floats 2.9x; runs of 24 break even; a 32x32 output is 13% slower).
PLANES_MAX_RUN = 16
PLANES_MIN_PIXELS = 2048


@dataclass(frozen=True, eq=False)
class ConvFloatPlanes(BoundCalls, ClampLast):
    fills: tuple  # ((plane region (C, N, h, w), input index), ...)
    copies: tuple  # ((rows of A^T as (C, ny, nx, N, OH, OW), plane view), ...) one per phase
    at: np.ndarray  # (K + 1, N*OH*OW) float32; the last row is ones
    weights: np.ndarray  # (K + 1, O) float32; the last row is the bias (0 without one)
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on these arrays: the phase planes filled from ``x``'s channel-first views, the
        transposed im2col rows copied from the planes, the GEMM into ``out``'s rows (with the bias row), the
        clamp."""
        calls = [(np.copyto, (dest, x[index].transpose(3, 0, 1, 2)), {}) for dest, index in self.fills]
        calls += [(np.copyto, (dest, src), {}) for dest, src in self.copies]
        calls.append((np.matmul, (self.at.T, self.weights), {"out": out.reshape(-1, out.shape[3])}))
        calls.append((clip_ufunc, (out, self.out_min, self.out_max), {"out": out}))
        return tuple(calls)


def planes_apply(geo: Geometry, groups: int) -> bool:
    """Whether ConvFloatPlanes is the faster layout for this geometry (see PLANES_MAX_RUN)."""
    return (
        groups == 1
        and geo.filter_h * geo.filter_w > 1
        and geo.filter_w * geo.in_c <= PLANES_MAX_RUN
        and geo.batches * geo.out_h * geo.out_w >= PLANES_MIN_PIXELS
    )


def build_planes(geo: Geometry, f: np.ndarray, bias: np.ndarray | None, lo, hi) -> ConvFloatPlanes:
    """``f``: the (O, KH, KW, C) float32 filter."""
    g = geo
    hp, wp = g.pad_top + g.in_h + g.pad_bottom, g.pad_left + g.in_w + g.pad_right
    qh, rows = phase_axis(g.in_h, g.pad_top, hp, g.stride_h)
    qw, cols = phase_axis(g.in_w, g.pad_left, wp, g.stride_w)
    planes = aligned_full((g.stride_h, g.stride_w, g.in_c, g.batches, qh, qw), 0, np.float32)
    fills = tuple(
        (planes[py, px][:, :, r[0], c[0]], (slice(None), r[1], c[1]))
        for py, r in enumerate(rows)
        if r is not None
        for px, c in enumerate(cols)
        if c is not None
    )
    k = g.filter_h * g.filter_w * g.in_c
    m = g.batches * g.out_h * g.out_w
    at = aligned_empty((k + 1, m), np.float32)
    at[k] = 1
    weights = np.zeros((k + 1, g.out_c), np.float32)
    if bias is not None:
        weights[k] = np.asarray(bias, np.float32).reshape(-1)
    copies, row = [], 0
    sc, sn, sh, sw = (s // 4 for s in planes.strides[2:])
    for py, ky0, ky_step, ny, oy0, oy_step in tap_groups(g.filter_h, g.dilation_h, g.stride_h):
        for px, kx0, kx_step, nx, ox0, ox_step in tap_groups(g.filter_w, g.dilation_w, g.stride_w):
            plane = planes[py, px]
            src = np.ndarray(
                (g.in_c, ny, nx, g.batches, g.out_h, g.out_w),
                np.float32,
                plane,
                (oy0 * qw + ox0) * 4,
                (sc * 4, oy_step * sh * 4, ox_step * sw * 4, sn * 4, sh * 4, sw * 4),
            )
            n = g.in_c * ny * nx
            copies.append((at[row : row + n].reshape(src.shape), src))
            ky = np.arange(ky0, ky0 + ny * ky_step, ky_step)
            kx = np.arange(kx0, kx0 + nx * kx_step, kx_step)
            # rows (c, iy, ix) of A^T <- filter (o, ky[iy], kx[ix], c)
            w = f[:, ky][:, :, kx]  # (O, ny, nx, C)
            weights[row : row + n] = w.transpose(3, 1, 2, 0).reshape(n, g.out_c)
            row += n
    assert row == k
    return ConvFloatPlanes(fills, tuple(copies), at, weights, lo, hi)
