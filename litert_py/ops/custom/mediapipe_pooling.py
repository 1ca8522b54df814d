"""MediaPipe's custom ops ``Convolution2DTransposeBias``, ``MaxPoolingWithArgmax2D`` and ``MaxUnpooling2D``
(float32 only, as MediaPipe defines them; registered by default).

Sources matched: google-ai-edge/mediapipe mediapipe/util/tflite/operations/transpose_conv_bias.cc,
max_pool_argmax.cc, max_unpooling.cc (registered by mediapipe/util/tflite/cpu_op_resolver.cc), and LiteRT's
tflite/delegates/xnnpack/xnnpack_delegate.cc (VisitMediaPipeDeconvolutionNode, VisitMediaPipeMaxPoolingNode,
VisitMediaPipeUnpoolingNode), which is how ai-edge-litert's default resolver (AUTO) runs them.

Options: not a FlexBuffer but the raw bytes of a TfLite C struct (little-endian int32 fields), which the
kernels reinterpret in place (``node->custom_initial_data``):
- ``Convolution2DTransposeBias``: ``TfLiteTransposeConvParams`` ``{padding, stride_width, stride_height, ...}``;
  only the first three fields are read (MediaPipe's models store exactly these 12 bytes).
- the two pools: ``TfLitePoolParams`` ``{padding, stride_width, stride_height, filter_width, filter_height,
  activation, ...}``; the first five fields are required, ``activation`` is read when present (absent: NONE,
  as XNNPACK's zero-filled ``SafeCopyCustomData`` reads it).
``padding`` is TfLitePadding (1 SAME, 2 VALID); ``activation`` TfLiteFusedActivation (0 NONE .. 6 SIGMOID).
Options too short to hold the fields read, an unknown padding or activation, or a non-positive stride or
filter size are refused at prepare with a PrepareError naming the op and the field (MediaPipe reads past the
buffer or divides by zero).

Semantics:
- ``Convolution2DTransposeBias(input NHWC, weights OHWI, bias[O])``: TRANSPOSE_CONV plus a bias, no
  activation. Output height ``s * (H - 1) + KH - P`` where ``P = max(0, KH - (H - 1) % s - 1)`` for SAME and
  ``P = 0`` for VALID; the scatter starts ``P // 2`` rows above the output (same for the width). Computed
  by TRANSPOSE_CONV's float kernel (conv/col2im.py: GEMM + col2im); float sums may differ from MediaPipe's
  loop order in the last bits.
- ``MaxPoolingWithArgmax2D(input) -> (values, indices)``: MAX_POOL_2D's windows (output size and leading
  padding as TFLite's ComputePadding), the max starting from ``-FLT_MAX`` with a strict ``>`` in
  (filter_y, filter_x) order (NaN never wins; a window with nothing above ``-FLT_MAX`` gives ``-FLT_MAX`` and
  index 0), then clamped to the fused activation's range. ``indices`` is a float32 tensor holding
  ``filter_y * filter_width + filter_x + 0.1f``, the position within the (padded) window.
- ``MaxUnpooling2D(values, indices) -> output``: output ``(N, H * KH, W * KW, C)`` zero-filled, then each
  value written at ``(in_y * sh - pad_h + idx / KW, in_x * sw - pad_w + idx % KW)`` with ``idx =
  int(indices)`` (C truncation and remainder) and ``pad = ComputePadding(stride, out_size, filter, in_size)``;
  later inputs (in NHWC order) overwrite earlier ones. Writes that fall outside the output (MediaPipe writes
  out of bounds) are dropped, as are non-finite indices.

Where XNNPACK (AUTO, ai-edge-litert 2.3.0) differs from MediaPipe's kernels, litert_py follows MediaPipe's:
XNNPACK claims the pools only when the filter equals the stride, with VALID padding (unpooling) or SAME / VALID
(argmax pooling), and without a fused activation (otherwise the node stays unresolved and LiteRT fails); its
argmax indices are uint32 *bits* in the float32 tensor, counted column-major (``filter_x * filter_height +
filter_y``) over a window whose padding repeats the edge pixels; and LiteRT crashes (SIGSEGV) on a model whose
argmax indices go unused. Values and unpooled outputs agree; tests/ops/custom/test_mediapipe_pooling.py converts the
index encodings.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ...schema.model import Padding
from ..common import clip_ufunc, float_activation_range
from ..conv.col2im import TransposeConvFloat, TransposeConvFloatTiles, float_tiles_op
from ..conv.common import Geometry, out_size, pad_before
from ..registry import OpContext, PreparedOp, register

F32 = np.float32
LOWEST = F32(np.finfo(np.float32).min)
INPUT, WEIGHTS, BIAS, INDICES = 0, 1, 2, 1
OUTPUT, OUT_INDICES = 0, 1

#: TfLitePadding -> the schema's Padding
_PADDING = {1: Padding.SAME, 2: Padding.VALID}
_NUM_ACTIVATIONS = 7  # kTfLiteActNone .. kTfLiteActSigmoid


def _struct_options(ctx: OpContext, struct_name: str, fields: tuple[str, ...], required: int) -> dict[str, int]:
    """The int32 fields of a TfLite C struct stored as the custom options; the first ``required`` must be
    present, later ones read when the options hold them."""
    raw = bytes(ctx.custom_options or b"")
    n = min(len(raw) // 4, len(fields))
    if n < required:
        missing = fields[n]
        raise ctx.fail(
            f"{ctx.op_name}: custom options ({len(raw)} bytes) are too short for {struct_name} field "
            f"{missing!r} (needs {4 * required} bytes: {', '.join(fields[:required])})"
        )
    return dict(zip(fields[:n], struct.unpack_from(f"<{n}i", raw)))


def _padding(ctx: OpContext, opts: dict) -> int:
    p = opts["padding"]
    ctx.check(p in _PADDING, f"{ctx.op_name}: option 'padding' must be 1 (SAME) or 2 (VALID), got {p}")
    return _PADDING[p]


def _positive(ctx: OpContext, opts: dict, *names: str) -> None:
    for name in names:
        ctx.check(opts[name] > 0, f"{ctx.op_name}: option {name!r} must be positive, got {opts[name]}")


def _float_tensors(ctx: OpContext, rank4: tuple[int, ...]) -> None:
    for t in [*ctx.inputs, *ctx.outputs]:
        ctx.check(t is not None, f"{ctx.op_name}: every input is required")
        ctx.check(
            t.dtype == F32,
            f"{ctx.op_name} supports only float32 tensors (as MediaPipe), got {t.type_name} for tensor {t.name!r}",
        )
    for i in rank4:
        ctx.check(
            len(ctx.inputs[i].shape) == 4,
            f"{ctx.op_name}: input {i} must be 4-D, got shape {list(ctx.inputs[i].shape)}",
        )


# ----------------------------------------------------------------------------------------------
# Convolution2DTransposeBias
# ----------------------------------------------------------------------------------------------

_TRANSPOSE_CONV_FIELDS = ("padding", "stride_width", "stride_height")


@dataclass(frozen=True, eq=False)
class TransposeConvBias:
    """MediaPipe's input order (input, weights, bias) onto TRANSPOSE_CONV's float kernel (output_shape,
    weights, input, bias)."""

    conv: TransposeConvFloat | TransposeConvFloatTiles

    def __call__(self, inputs, outputs):
        self.conv([None, inputs[WEIGHTS], inputs[INPUT], inputs[BIAS]], outputs)


@register("Convolution2DTransposeBias")
def prepare_convolution_2d_transpose_bias(ctx: OpContext) -> PreparedOp:
    opts = _struct_options(ctx, "TfLiteTransposeConvParams", _TRANSPOSE_CONV_FIELDS, 3)
    padding = _padding(ctx, opts)
    _positive(ctx, opts, "stride_width", "stride_height")
    ctx.check_num(3, 1)
    _float_tensors(ctx, (INPUT, WEIGHTS))
    x, w, b = ctx.input(INPUT), ctx.input(WEIGHTS), ctx.input(BIAS)
    ctx.check(len(b.shape) == 1, f"{ctx.op_name}: bias must be 1-D, got shape {list(b.shape)}")
    n, h, wd, c = x.shape
    o, kh, kw, wc = w.shape
    ctx.check(wc == c, f"{ctx.op_name}: weights (OHWI) have {wc} input channels, the input has {c}")
    ctx.check(b.shape[0] == o, f"{ctx.op_name}: bias has {b.shape[0]} values for {o} output channels")
    ctx.check(
        h > 0 and wd > 0 and kh > 0 and kw > 0,
        f"{ctx.op_name}: empty input {list(x.shape)} or filter {list(w.shape)} is not supported",
    )
    sh, sw = opts["stride_height"], opts["stride_width"]
    pad_h = max(0, kh - (h - 1) % sh - 1) if padding == Padding.SAME else 0
    pad_w = max(0, kw - (wd - 1) % sw - 1) if padding == Padding.SAME else 0
    oh, ow = sh * (h - 1) + kh - pad_h, sw * (wd - 1) + kw - pad_w
    ctx.set_output_shape(OUTPUT, (n, oh, ow, o))
    geo = Geometry(n, h, wd, c, oh, ow, o, kh, kw, sh, sw, pad_top=pad_h // 2, pad_left=pad_w // 2)
    weights = w.data.transpose(3, 1, 2, 0).reshape(c, -1).astype(F32) if w.is_constant else None
    bias = b.data.astype(F32) if b.is_constant else None
    cols = ctx.scratch((n * h * wd, kh * kw * o), F32)
    full = ctx.scratch((n, geo.full_h, geo.full_w, o), F32)
    inf = F32(np.inf)
    tiles = float_tiles_op(ctx, geo, weights, False if bias is None else bias, -inf, inf)
    if tiles is not None:
        return TransposeConvBias(tiles)
    conv = TransposeConvFloat(geo, padding, weights, bias, bias is None, -inf, inf, (sh, sw), cols, full)
    return TransposeConvBias(conv)


# ----------------------------------------------------------------------------------------------
# MaxPoolingWithArgmax2D / MaxUnpooling2D
# ----------------------------------------------------------------------------------------------

_POOL_FIELDS = ("padding", "stride_width", "stride_height", "filter_width", "filter_height", "activation")


def _pool_options(ctx: OpContext) -> dict[str, int]:
    opts = _struct_options(ctx, "TfLitePoolParams", _POOL_FIELDS, 5)
    opts.setdefault("activation", 0)
    _positive(ctx, opts, "stride_width", "stride_height", "filter_width", "filter_height")
    act = opts["activation"]
    ctx.check(
        0 <= act < _NUM_ACTIVATIONS,
        f"{ctx.op_name}: option 'activation' must be a TfLiteFusedActivation (0..6), got {act}",
    )
    return opts


@dataclass(frozen=True, eq=False)
class MaxPoolArgmax:
    """Running max over the KH*KW taps in (filter_y, filter_x) order with a strict ``>`` (MediaPipe's
    loop): each tap is a strided view of a padded copy of the input whose padding is -inf (never wins)."""

    interior: np.ndarray  # view of ``padded`` where the input goes
    taps: tuple  # one (N, OH, OW, C) strided view of ``padded`` per tap, in (filter_y, filter_x) order
    codes: np.ndarray  # float32 index per tap: f32(t) + 0.1f
    best: np.ndarray  # (N, OH, OW, C) scratch: running max
    mask: np.ndarray  # (N, OH, OW, C) bool scratch
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        values, indices = outputs[OUTPUT], outputs[OUT_INDICES]
        if values.size == 0:
            return
        np.copyto(self.interior, inputs[INPUT])
        best, mask = self.best, self.mask
        best.fill(LOWEST)
        indices.fill(self.codes[0])
        for tap, code in zip(self.taps, self.codes):
            np.greater(tap, best, out=mask)
            np.copyto(best, tap, where=mask)
            np.copyto(indices, code, where=mask)
        clip_ufunc(best, self.out_min, self.out_max, out=values)


@register("MaxPoolingWithArgmax2D")
def prepare_max_pooling_with_argmax_2d(ctx: OpContext) -> PreparedOp:
    opts = _pool_options(ctx)
    padding = _padding(ctx, opts)
    ctx.check_num(1, 2)
    _float_tensors(ctx, (INPUT,))
    n, h, w, c = ctx.input(INPUT).shape
    kh, kw, sh, sw = opts["filter_height"], opts["filter_width"], opts["stride_height"], opts["stride_width"]
    oh, ow = out_size(padding, h, kh, sh), out_size(padding, w, kw, sw)
    ctx.check(
        oh is not None and ow is not None,
        f"{ctx.op_name}: a {kh}x{kw} filter does not fit the {h}x{w} input with VALID padding",
    )
    for i in (OUTPUT, OUT_INDICES):
        ctx.set_output_shape(i, (n, oh, ow, c))
    pad_h, pad_w = pad_before(h, kh, sh, 1, oh), pad_before(w, kw, sw, 1, ow)
    hp, wp = max((oh - 1) * sh + kh, pad_h + h), max((ow - 1) * sw + kw, pad_w + w)
    padded = ctx.scratch((n, max(hp, 0), max(wp, 0), c), F32, fill=-np.inf)
    interior = padded[:, pad_h : pad_h + h, pad_w : pad_w + w]
    hs, ws = (oh - 1) * sh + 1, (ow - 1) * sw + 1
    taps = tuple(padded[:, ky : ky + hs : sh, kx : kx + ws : sw] for ky in range(kh) for kx in range(kw))
    codes = np.arange(kh * kw, dtype=F32) + F32(0.1)
    lo, hi = float_activation_range(opts["activation"])
    shape = (n, oh, ow, c)
    return MaxPoolArgmax(interior, taps, codes, ctx.scratch(shape, F32), ctx.scratch(shape, bool), lo, hi)


@dataclass(frozen=True, eq=False)
class MaxUnpool:
    """Scatter of every input value to the output position its index names; the last write in NHWC input
    order wins (made explicit: for each target the largest input position is kept)."""

    base_y: np.ndarray  # (1, H, 1, 1) int64: in_y * sh - pad_h
    base_x: np.ndarray  # (1, 1, W, 1) int64: in_x * sw - pad_w
    lead: np.ndarray  # (N, 1, 1, C) int64: flat output offset of (n, 0, 0, c)
    filter_w: int
    out_h: int
    out_w: int
    channels: int
    order: np.ndarray  # (N*H*W*C,) int64: 0, 1, 2, ...
    last: np.ndarray  # (out size,) int64 scratch: the input position that writes each output element

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT].reshape(-1)
        out.fill(0)
        if out.size == 0 or self.order.size == 0:
            return
        raw = inputs[INDICES]
        finite = np.isfinite(raw) & (np.abs(raw) < F32(2.0**31))
        idx = np.trunc(np.where(finite, raw, 0)).astype(np.int64)  # C's float -> int conversion
        dx = np.fmod(idx, self.filter_w)  # C's % and / (truncating toward zero)
        dy = (idx - dx) // self.filter_w
        oy, ox = self.base_y + dy, self.base_x + dx
        ok = finite & (oy >= 0) & (oy < self.out_h) & (ox >= 0) & (ox < self.out_w)
        target = (self.lead + (oy * self.out_w + ox) * self.channels)[ok]
        last = self.last
        last.fill(-1)
        np.maximum.at(last, target, self.order[ok.reshape(-1)])
        written = last >= 0
        out[written] = inputs[INPUT].reshape(-1)[last[written]]


@register("MaxUnpooling2D")
def prepare_max_unpooling_2d(ctx: OpContext) -> PreparedOp:
    opts = _pool_options(ctx)
    _padding(ctx, opts)  # checked, though the unpooling's geometry does not depend on it
    ctx.check_num(2, 1)
    _float_tensors(ctx, (INPUT, INDICES))
    x, i = ctx.input(INPUT), ctx.input(INDICES)
    ctx.check(
        x.shape == i.shape, f"{ctx.op_name}: indices shape {list(i.shape)} must equal the input shape {list(x.shape)}"
    )
    n, h, w, c = x.shape
    kh, kw, sh, sw = opts["filter_height"], opts["filter_width"], opts["stride_height"], opts["stride_width"]
    oh, ow = h * kh, w * kw
    ctx.set_output_shape(OUTPUT, (n, oh, ow, c))
    pad_h, pad_w = pad_before(oh, kh, sh, 1, h), pad_before(ow, kw, sw, 1, w)
    base_y = (np.arange(h, dtype=np.int64) * sh - pad_h).reshape(1, h, 1, 1)
    base_x = (np.arange(w, dtype=np.int64) * sw - pad_w).reshape(1, 1, w, 1)
    lead = np.arange(n, dtype=np.int64).reshape(n, 1, 1, 1) * (oh * ow * c) + np.arange(c, dtype=np.int64).reshape(
        1, 1, 1, c
    )
    order = np.arange(n * h * w * c, dtype=np.int64)
    last = ctx.scratch((n * oh * ow * c,), np.int64)
    return MaxUnpool(base_y, base_x, lead, kw, oh, ow, c, order, last)
