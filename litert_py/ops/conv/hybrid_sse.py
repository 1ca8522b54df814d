"""The wheel's SSE int8 dot-product error of a hybrid CONV_2D whose filter holds -128 (HybridSseFix, used by
conv2d_quantized.ConvHybrid). Source matched: tflite/kernels/internal/optimized/sse_tensor_utils.cc
(DotProdInt8x4x4: ``_mm_sign_epi8`` moves the input's sign onto the weight and leaves -128 at -128); when the
wheel runs it was measured (docs/litert-differences.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import Geometry


@dataclass(frozen=True, eq=False)
class HybridSseFix:
    """The wheel's SSE int8 dot product (quant.hybrid.SseMinus128Fix, sse_tensor_utils.cc DotProdInt8x4x4) over a
    hybrid CONV_2D's im2col rows (both builtin resolvers run it; XNNPACK does not): within the 16-wide blocks of
    a row (columns below K & ~15, K = KH * KW * C in the filter's order) a weight of -128 times a negative input
    byte adds ``+128 * q`` instead of ``-128 * q``, so each accumulator is the exact one plus ``256 * sum over those
    columns of min(q, 0)``, q the raw int8 input (its zero point not subtracted; the im2col border holds
    ``pad``'s byte). Groups 1 only (prepare_conv_hybrid). Exact: integers below 2^53, added in float64."""

    taps: tuple  # per affected column: (row offset i * dilation_h, column offset j * dilation_w, channel)
    mask: np.ndarray  # (columns, O) float64: 1 where the filter holds -128
    geo: Geometry

    @staticmethod
    def build(f: np.ndarray, geo: Geometry) -> HybridSseFix | None:
        w = f.reshape(geo.out_c, -1)
        k16 = w.shape[1] & ~15
        hit = w[:, :k16] == -128
        cols = np.flatnonzero(hit.any(axis=0))
        if cols.size == 0:
            return None
        kh, kw, ch = np.unravel_index(cols, (geo.filter_h, geo.filter_w, geo.in_c))
        taps = tuple((int(i) * geo.dilation_h, int(j) * geo.dilation_w, int(c)) for i, j, c in zip(kh, kw, ch))
        return HybridSseFix(taps, np.ascontiguousarray(hit[:, cols].T, dtype=np.float64), geo)

    def add(self, acc: np.ndarray, q: np.ndarray, pad: np.ndarray) -> None:
        """``acc`` (N, OH, OW, O) float64 += the SSE error for the raw int8 input ``q`` (N, H, W, C) whose border
        holds ``pad`` (N,) per batch."""
        g = self.geo
        hp = g.in_h + g.pad_top + g.pad_bottom
        wp = g.in_w + g.pad_left + g.pad_right
        xp = np.empty((g.batches, hp, wp, g.in_c))
        xp[...] = pad.reshape(-1, 1, 1, 1)
        xp[:, g.pad_top : g.pad_top + g.in_h, g.pad_left : g.pad_left + g.in_w] = q
        neg = np.stack(
            [
                xp[
                    :,
                    i : i + g.stride_h * (g.out_h - 1) + 1 : g.stride_h,
                    j : j + g.stride_w * (g.out_w - 1) + 1 : g.stride_w,
                    c,
                ]
                for i, j, c in self.taps
            ],
            axis=-1,
        )
        np.minimum(neg, 0, out=neg)
        acc += 256.0 * (neg @ self.mask)
