"""TRANSPOSE_CONV's float32 computation, shared by TRANSPOSE_CONV (transpose.py) and MediaPipe's
Convolution2DTransposeBias (custom/mediapipe_pooling.py): the geometry from the output size, col2im (the
overlap-add of one GEMM's per-tap contributions, also used by transpose.py's quantized path) and the float32
prepared ops `TransposeConvFloat` and `TransposeConvFloatTiles`. Registers no op. Sources and the design:
transpose.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import limits
from ..common import clip_ufunc
from .common import Geometry, out_size, pad_before

#: TRANSPOSE_CONV's tensor positions (Convolution2DTransposeBias maps its own order onto them)
OUTPUT_SHAPE, WEIGHTS, INPUT, BIAS = 0, 1, 2, 3
OUTPUT = 0


def transpose_geometry(padding: int, x_shape, f_shape, out_shape, stride_h: int, stride_w: int) -> Geometry:
    n, h, w, c = x_shape
    o, kh, kw, _ = f_shape
    oh, ow = int(out_shape[1]), int(out_shape[2])
    # ComputePaddingHeightWidth on the output size (as the input of the forward conv); unchecked.
    ph = pw = 0
    if out_size(padding, ow, kw, stride_w) is not None and out_size(padding, oh, kh, stride_h) is not None:
        ph = pad_before(oh, kh, stride_h, 1, out_size(padding, oh, kh, stride_h))
        pw = pad_before(ow, kw, stride_w, 1, out_size(padding, ow, kw, stride_w))
    return Geometry(n, h, w, c, oh, ow, o, kh, kw, stride_h, stride_w, 1, 1, ph, pw)


def col2im(geo: Geometry, cols: np.ndarray, full: np.ndarray) -> np.ndarray:
    """Overlap-add of cols (N, H, W, KH, KW, O) into ``full`` (N, Hf, Wf, O), zeroed first; returns the
    output window of ``full`` (a view)."""
    g = geo
    full.fill(0)
    hs, ws = (g.in_h - 1) * g.stride_h + 1, (g.in_w - 1) * g.stride_w + 1
    for ky in range(g.filter_h):
        for kx in range(g.filter_w):
            dst = full[:, ky : ky + hs : g.stride_h, kx : kx + ws : g.stride_w]
            np.add(dst, cols[:, :, :, ky, kx], out=dst)
    return full[:, g.pad_top : g.pad_top + g.out_h, g.pad_left : g.pad_left + g.out_w]


@dataclass(frozen=True, eq=False)
class TransposeConvFloat:
    geo: Geometry | None  # None: from the output_shape input at every invoke (dynamic output)
    padding: int
    weights: np.ndarray | None  # (C, KH*KW*O); None: from the weights input
    bias: np.ndarray | None  # (O,) constant
    dynamic_bias: bool
    out_min: np.float32
    out_max: np.float32
    strides: tuple  # (stride_h, stride_w)
    cols: np.ndarray | None = None  # static geometry: (N*H*W, KH*KW*O) GEMM output
    full: np.ndarray | None = None  # static geometry: (N, Hf, Wf, O) overlap-add buffer

    def __call__(self, inputs, outputs):
        x, f = inputs[INPUT], inputs[WEIGHTS]
        geo = self.geo
        if geo is None:
            geo = transpose_geometry(self.padding, x.shape, f.shape, inputs[OUTPUT_SHAPE], *self.strides)
            outputs[OUTPUT] = limits.new_array(geo.out_shape, np.float32, "TRANSPOSE_CONV's output")
        out = outputs[OUTPUT]
        if out.size == 0:
            return
        w = self.weights
        if w is None:
            w = f.transpose(3, 1, 2, 0).reshape(geo.in_c, -1)
        cols, full = self.cols, self.full
        if cols is None:
            cols = np.empty((x.size // geo.in_c, w.shape[1]), np.float32)
            full = np.empty((geo.batches, geo.full_h, geo.full_w, geo.out_c), np.float32)
        np.matmul(x.reshape(-1, geo.in_c), w, out=cols)
        np.copyto(
            out, col2im(geo, cols.reshape(geo.batches, geo.in_h, geo.in_w, geo.filter_h, geo.filter_w, geo.out_c), full)
        )
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias and inputs[BIAS] is not None:
            np.add(out, inputs[BIAS], out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


@dataclass(frozen=True, eq=False)
class TransposeConvFloatTiles:
    """float32 with stride = filter size, no padding and the output exactly the scatter (the MediaPipe
    segmentation head's 2x2 / stride 2 Convolution2DTransposeBias): every output position gets exactly one tap,
    so the overlap-add is a rearrangement. The GEMM's (N, H, W, KH, KW*O) rows are moved to the output's
    (N, H, KH, W, KW*O) as opaque KW*O*4-byte units (one copy, no arithmetic), then the bias is added and the
    clamp applied when finite. Same GEMM, and each output is the reference's 0 + sum + bias: the scatter's
    ``0 +`` only turns -0 into +0, which the bias add does too unless the bias is -0 (checked at prepare; with
    no bias, +0 is added). Bit-identical to TransposeConvFloat, 4-5x faster on that layer."""

    geo: Geometry
    weights: np.ndarray  # (C, KH*KW*O) float32
    bias: np.ndarray | np.float32  # (O,) without -0, or +0
    clamp: tuple | None  # (lo, hi) when not (-inf, inf)
    cols: np.ndarray  # (N*H*W, KH*KW*O) float32 GEMM output
    unit: np.dtype  # void of KW*O*4 bytes

    def __call__(self, inputs, outputs):
        g, cols, out = self.geo, self.cols, outputs[OUTPUT]
        np.matmul(inputs[INPUT].reshape(-1, g.in_c), self.weights, out=cols)
        src = cols.view(self.unit).reshape(g.batches, g.in_h, g.in_w, g.filter_h)
        dst = out.reshape(-1, g.filter_w * g.out_c).view(self.unit)
        np.copyto(dst.reshape(g.batches, g.in_h, g.filter_h, g.in_w), src.transpose(0, 1, 3, 2))
        np.add(out, self.bias, out=out)
        if self.clamp is not None:
            clip_ufunc(out, self.clamp[0], self.clamp[1], out=out)


def float_tiles_op(ctx, geo: Geometry | None, weights, bias, lo, hi) -> TransposeConvFloatTiles | None:
    """TransposeConvFloatTiles when the geometry is static and tiles the output, the weights (C, KH*KW*O) are
    constant and the bias is constant without -0 or absent (``bias`` None: absent; False: not constant)."""
    g = geo
    if g is None or weights is None or bias is False or 0 in g.out_shape or g.in_h * g.in_w * g.in_c == 0:
        return None
    if (g.stride_h, g.stride_w, g.pad_top, g.pad_left) != (g.filter_h, g.filter_w, 0, 0):
        return None
    if (g.out_h, g.out_w) != (g.in_h * g.filter_h, g.in_w * g.filter_w):
        return None
    if bias is None:
        bias = np.float32(0)
    elif np.any((bias == 0) & np.signbit(bias)):
        return None
    clamp = None if (lo, hi) == (-np.inf, np.inf) else (np.float32(lo), np.float32(hi))
    cols = ctx.scratch((g.batches * g.in_h * g.in_w, g.filter_h * g.filter_w * g.out_c), np.float32)
    unit = np.dtype((np.void, g.filter_w * g.out_c * 4))
    return TransposeConvFloatTiles(g, np.ascontiguousarray(weights, np.float32), bias, clamp, cols, unit)
