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

    mask256: np.ndarray  # (columns, O) float64: 256 where the filter holds -128, else 0
    padded: np.ndarray  # (N, H + pads, W + pads, C) float64: the raw input with its border
    inner: np.ndarray  # the input's place in ``padded`` (a view)
    windows: tuple  # per affected column: the (N, OH, OW) view of ``padded`` that column reads
    neg: np.ndarray  # (N, OH, OW, columns) float64: min(q, 0) per column
    err: np.ndarray  # (N, OH, OW, O) float64: the error added

    @staticmethod
    def build(f: np.ndarray, geo: Geometry) -> HybridSseFix | None:
        """The fix for filter ``f`` (O, KH, KW, C) over ``geo``'s static shapes (buffers made here), or None when
        no -128 lies in the 16-wide blocks."""
        w = f.reshape(geo.out_c, -1)
        k16 = w.shape[1] & ~15
        hit = w[:, :k16] == -128
        cols = np.flatnonzero(hit.any(axis=0))
        if cols.size == 0:
            return None
        g = geo
        padded = np.empty((g.batches, g.in_h + g.pad_top + g.pad_bottom, g.in_w + g.pad_left + g.pad_right, g.in_c))
        inner = padded[:, g.pad_top : g.pad_top + g.in_h, g.pad_left : g.pad_left + g.in_w]
        rows = g.stride_h * (g.out_h - 1) + 1
        width = g.stride_w * (g.out_w - 1) + 1
        windows = tuple(
            padded[
                :,
                i * g.dilation_h : i * g.dilation_h + rows : g.stride_h,
                j * g.dilation_w : j * g.dilation_w + width : g.stride_w,
                c,
            ]
            for i, j, c in zip(*np.unravel_index(cols, (g.filter_h, g.filter_w, g.in_c)))
        )
        mask256 = np.ascontiguousarray(hit[:, cols].T, dtype=np.float64) * 256.0
        neg = np.empty((g.batches, g.out_h, g.out_w, cols.size))
        return HybridSseFix(mask256, padded, inner, windows, neg, np.empty(g.out_shape))

    def add(self, acc: np.ndarray, q: np.ndarray, pad: np.ndarray) -> None:
        """``acc`` (N, OH, OW, O) float64 += the SSE error for the raw int8 input ``q`` (N, H, W, C) whose border
        holds ``pad`` (N,) per batch."""
        self.padded[...] = pad.reshape(-1, 1, 1, 1)
        self.inner[...] = q
        neg = self.neg
        for k, window in enumerate(self.windows):  # a few columns (those holding -128), not elements
            neg[..., k] = window
        np.minimum(neg, 0, out=neg)
        np.matmul(neg, self.mask256, out=self.err)
        np.add(acc, self.err, out=acc)
