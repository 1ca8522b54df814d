"""Space <-> depth / batch re-layouts: SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND,
DILATE. Bytes are moved, never reinterpreted; quantized tensors pass through with their raw integers.

Paths:
- SPACE_TO_DEPTH, DEPTH_TO_SPACE: float32, uint8, int8, int32, int64, 4-D NHWC; quantization parameters
  are not checked (LiteRT does not either: the raw integers move).
- SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND: every 8/16/32/64-bit dtype, 3-D (N, H, C) or 4-D (N, H, W, C)
  inputs; block_shape and paddings/crops int32; int8/uint8/int16 input and output share scale and zero
  point. SPACE_TO_BATCH_ND pads with the output zero point (0 for unquantized tensors); a negative padding
  crops, as in the reference loop. Non-constant block_shape / paddings / crops make the output dynamic.
- DILATE: every 8/16/32/64-bit dtype, any rank >= 1 (ai-edge-litert 2.3 has no rank limit); dilations
  int32; the padding value has the input's type.
  LiteRT only checks the first dilation against 1 and reads the padding value's first element: litert_py
  refuses any dilation below 1 and an empty padding value (LiteRT would write/read outside its arrays).

Sources matched: tensorflow/lite/kernels/{space_to_depth,depth_to_space,space_to_batch_nd,batch_to_space_nd,
dilate}.cc, tensorflow/lite/kernels/internal/reference/{space_to_depth,depth_to_space,space_to_batch_nd,
batch_to_space_nd}.h.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import limits
from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, TensorInfo, register

TT = dtypes.TensorType
_INT32_MAX = 2**31 - 1


def _check_output_type(ctx: OpContext, x: TensorInfo) -> None:
    y = ctx.outputs[0]
    ctx.check(y.type == x.type, f"{ctx.op_name}: output type {y.type_name} differs from input type {x.type_name}")


def _check_same_quantization(ctx: OpContext, x: TensorInfo) -> None:
    y = ctx.outputs[0]
    ctx.check(x.scale == y.scale, f"input->params.scale != output->params.scale ({x.scale} != {y.scale})")
    ctx.check(
        x.zero_point == y.zero_point,
        f"input->params.zero_point != output->params.zero_point ({x.zero_point} != {y.zero_point})",
    )


def _movable(t: TensorInfo) -> bool:
    return t.type not in dtypes.OBJECT_TYPES and t.dtype.itemsize in (1, 2, 4, 8)


def _ints(a) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


# =================================================================================================
# SPACE_TO_DEPTH, DEPTH_TO_SPACE
# =================================================================================================

_DEPTH_TYPES = {TT.FLOAT32, TT.UINT8, TT.INT8, TT.INT32, TT.INT64}


@dataclass(frozen=True, eq=False)
class Relayout:
    """Input viewed as ``src`` (6-D), axes permuted by ``perm``, written into the output viewed as ``dst``."""

    src: tuple[int, ...]
    perm: tuple[int, ...]
    dst: tuple[int, ...]

    def __call__(self, inputs, outputs):
        outputs[0].reshape(self.dst)[...] = inputs[0].reshape(self.src).transpose(self.perm)


def _prepare_depth(ctx: OpContext, to_depth: bool):
    ctx.check_num(1)
    x = ctx.input(0)
    ctx.check(len(x.shape) == 4, f"NumDimensions(input) != 4 ({len(x.shape)} != 4)")
    ctx.check(
        x.type in _DEPTH_TYPES,
        "data_type == kTfLiteFloat32 || data_type == kTfLiteUInt8 || data_type == "
        f"kTfLiteInt8 || data_type == kTfLiteInt32 || data_type == kTfLiteInt64 was not true ({x.type_name})",
    )
    _check_output_type(ctx, x)  # no quantization check: LiteRT moves the raw integers whatever the params
    b = ctx.options.block_size
    ctx.check(b > 0, f"params->block_size > 0 was not true ({b})")
    n, h, w, c = x.shape
    if to_depth:
        ctx.check(h % b == 0 and w % b == 0, f"height and width ({h}, {w}) must be multiples of block_size {b}")
        ctx.set_output_shape(0, (n, h // b, w // b, c * b * b))
        return Relayout((n, h // b, b, w // b, b, c), (0, 1, 3, 2, 4, 5), (n, h // b, w // b, b, b, c))
    ctx.check(c % (b * b) == 0, f"depth {c} must be a multiple of block_size * block_size ({b * b})")
    cout = c // (b * b)
    ctx.set_output_shape(0, (n, h * b, w * b, cout))
    return Relayout((n, h, w, b, b, cout), (0, 1, 3, 2, 4, 5), (n, h, b, w, b, cout))


@register(BuiltinOperator.SPACE_TO_DEPTH)
def prepare_space_to_depth(ctx: OpContext) -> PreparedOp:
    return _prepare_depth(ctx, True)


@register(BuiltinOperator.DEPTH_TO_SPACE)
def prepare_depth_to_space(ctx: OpContext) -> PreparedOp:
    return _prepare_depth(ctx, False)


# =================================================================================================
# SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND
# =================================================================================================

BLOCK, PADS = 1, 2


def _as_4d(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """3-D (N, H, C) inputs run as (N, H, 1, C), as the kernels do."""
    return shape if len(shape) == 4 else (shape[0], shape[1], 1, shape[2])


def _block_and_pads(shape, block, pads, fail, what: str):
    """The 2-D block and (top, bottom, left, right) with 3-D inputs extended by a unit block / zero pad."""
    bl, pd = _ints(block), _ints(pads)
    m = len(shape) - 2
    if len(bl) != m or len(pd) != 2 * m:
        raise fail(f"block_shape must have {m} entries and {what} {m}x2, got {len(bl)} and {len(pd)}")
    if any(v < 1 for v in bl):
        raise fail(f"block_shape values must be >= 1, got {bl}")
    if what == "crops" and any(v < 0 for v in pd):
        raise fail(f"crops values must be >= 0, got {pd}")
    if m == 1:
        bl, pd = bl + [1], pd + [0, 0]
    return tuple(bl), tuple(pd)


def space_to_batch_shape(shape, block, pads, fail=ValueError):
    n, h, w, c = _as_4d(tuple(shape))
    (bh, bw), (pt, pb, pl, pr) = _block_and_pads(shape, block, pads, fail, "paddings")
    hp, wp = h + pt + pb, w + pl + pr
    if hp < 0 or wp < 0:
        raise fail(f"negative paddings ({pt}, {pb}, {pl}, {pr}) remove more than the input ({h}, {w})")
    if hp % bh or wp % bw:
        raise fail(f"padded spatial size ({hp}, {wp}) is not a multiple of block_shape ({bh}, {bw})")
    out = (n * bh * bw, hp // bh, wp // bw, c)
    if max(out) > _INT32_MAX:
        raise fail("SPACE_TO_BATCH_ND output dimension overflows int32")
    return (bh, bw), (pt, pb, pl, pr), out


def _space_to_batch(x, pad_value, block, pads, out4, out):
    n, h, w, c = _as_4d(x.shape)
    (bh, bw), (pt, pb, pl, pr) = block, pads
    # A negative padding crops (the reference kernel copies only rows/columns inside the input).
    x4 = x.reshape(n, h, w, c)[:, max(-pt, 0) : h - max(-pb, 0), max(-pl, 0) : w - max(-pr, 0)]
    padded = np.full((n, h + pt + pb, w + pl + pr, c), pad_value, dtype=x.dtype)
    top, left = max(pt, 0), max(pl, 0)
    padded[:, top : top + x4.shape[1], left : left + x4.shape[2]] = x4
    _, ho, wo, _ = out4
    v = padded.reshape(n, ho, bh, wo, bw, c).transpose(2, 4, 0, 1, 3, 5)
    out.reshape(bh, bw, n, ho, wo, c)[...] = v


@dataclass(frozen=True, eq=False)
class SpaceToBatch:
    """Static shapes: output positions ``dst`` take input elements ``src`` (flat offsets found at prepare by
    running the re-layout on the element numbers), every other position the pad value."""

    src: np.ndarray
    dst: np.ndarray
    pad_value: object

    def __call__(self, inputs, outputs):
        flat = outputs[0].reshape(-1)
        flat[...] = self.pad_value
        flat[self.dst] = np.take(inputs[0].reshape(-1), self.src)


def _space_to_batch_map(in_shape, block, pads, out4) -> tuple[np.ndarray, np.ndarray]:
    numbers = np.arange(int(np.prod(in_shape, dtype=np.int64)), dtype=np.int64).reshape(in_shape)
    where = np.empty(int(np.prod(out4, dtype=np.int64)), dtype=np.int64)
    _space_to_batch(numbers, -1, block, pads, out4, where)
    dst = np.flatnonzero(where >= 0)
    return where[dst], dst


@dataclass(frozen=True, eq=False)
class SpaceToBatchDynamic:
    pad_value: object

    def __call__(self, inputs, outputs):
        x = inputs[0]
        block, pads, out4 = space_to_batch_shape(x.shape, inputs[BLOCK], inputs[PADS])
        out = limits.new_array(
            out4 if x.ndim == 4 else (out4[0], out4[1], out4[3]), x.dtype, "SPACE_TO_BATCH_ND's output"
        )
        _space_to_batch(x, self.pad_value, block, pads, out4, out)
        outputs[0] = out


def batch_to_space_shape(shape, block, crops, fail=ValueError):
    n, h, w, c = _as_4d(tuple(shape))
    (bh, bw), (ct, cb, cl, cr) = _block_and_pads(shape, block, crops, fail, "crops")
    if n % (bh * bw):
        raise fail(f"batch {n} is not a multiple of the block size {bh * bw}")
    ho, wo = h * bh - ct - cb, w * bw - cl - cr
    if ho < 0 or wo < 0:
        raise fail(f"crops ({ct}, {cb}, {cl}, {cr}) are larger than the output ({h * bh}, {w * bw})")
    return (bh, bw), (ct, cb, cl, cr), (n // (bh * bw), ho, wo, c)


def _batch_to_space(x, block, crops, out4, out):
    n, h, w, c = _as_4d(x.shape)
    (bh, bw), (ct, _, cl, _) = block, crops
    nb, ho, wo, _ = out4
    full = x.reshape(bh, bw, nb, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(nb, h * bh, w * bw, c)
    out.reshape(out4)[...] = full[:, ct : ct + ho, cl : cl + wo]


@dataclass(frozen=True, eq=False)
class BatchToSpace:
    block: tuple[int, int]
    crops: tuple[int, int, int, int]
    out4: tuple[int, int, int, int]

    def __call__(self, inputs, outputs):
        _batch_to_space(inputs[0], self.block, self.crops, self.out4, outputs[0])


@dataclass(frozen=True, eq=False)
class BatchToSpaceDynamic:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        block, crops, out4 = batch_to_space_shape(x.shape, inputs[BLOCK], inputs[PADS])
        out = limits.new_array(
            out4 if x.ndim == 4 else (out4[0], out4[1], out4[3]), x.dtype, "BATCH_TO_SPACE_ND's output"
        )
        _batch_to_space(x, block, crops, out4, out)
        outputs[0] = out


def _prepare_batch_common(ctx: OpContext, what: str) -> tuple[TensorInfo, TensorInfo, TensorInfo]:
    ctx.check_num(3)
    x, block, pads = ctx.input(0), ctx.input(BLOCK), ctx.input(PADS)
    rank = len(x.shape)
    ctx.check(3 <= rank <= 4, f"{ctx.op_name} input must be 3-D or 4-D, got rank {rank}")
    ctx.check(
        block.type == TT.INT32 and pads.type == TT.INT32,
        f"block_shape and {what} must be INT32, got {block.type_name} and {pads.type_name}",
    )
    ctx.check(
        len(block.shape) == 1 and block.shape[0] == rank - 2,
        f"NumDimensions(block_shape) must be 1 with {rank - 2} entries, got shape {list(block.shape)}",
    )
    ctx.check(
        len(pads.shape) == 2 and pads.shape == (rank - 2, 2),
        f"{what} must have shape [{rank - 2}, 2], got {list(pads.shape)}",
    )
    ctx.check(
        _movable(x),
        f"Type {x.type} is currently not supported by {'SpaceToBatch' if what == 'paddings' else 'BatchToSpace'}.",
    )
    _check_output_type(ctx, x)
    if x.type in (TT.UINT8, TT.INT8, TT.INT16):
        _check_same_quantization(ctx, x)
    return x, block, pads


def _out_shape(rank: int, out4):
    return out4 if rank == 4 else (out4[0], out4[1], out4[3])


@register(BuiltinOperator.SPACE_TO_BATCH_ND)
def prepare_space_to_batch_nd(ctx: OpContext) -> PreparedOp:
    x, block, pads = _prepare_batch_common(ctx, "paddings")
    y = ctx.outputs[0]
    # Quantized tensors pad with the output's zero point (0.0 in its quantization).
    pad_value = x.dtype.type(y.zero_point if x.type in (TT.UINT8, TT.INT8, TT.INT16) and y.quantization.scale else 0)
    if not (block.is_constant and pads.is_constant):
        ctx.set_output_dynamic(0)
        return SpaceToBatchDynamic(pad_value)
    b, p, out4 = space_to_batch_shape(x.shape, block.data, pads.data, ctx.fail)
    ctx.set_output_shape(0, _out_shape(len(x.shape), out4))
    return SpaceToBatch(*_space_to_batch_map(x.shape, b, p, out4), pad_value)


@register(BuiltinOperator.BATCH_TO_SPACE_ND)
def prepare_batch_to_space_nd(ctx: OpContext) -> PreparedOp:
    x, block, crops = _prepare_batch_common(ctx, "crops")
    if not (block.is_constant and crops.is_constant):
        ctx.set_output_dynamic(0)
        return BatchToSpaceDynamic()
    b, c, out4 = batch_to_space_shape(x.shape, block.data, crops.data, ctx.fail)
    ctx.set_output_shape(0, _out_shape(len(x.shape), out4))
    return BatchToSpace(b, c, out4)


# =================================================================================================
# DILATE
# =================================================================================================


def dilate_shape(in_shape, dilations, fail=ValueError) -> tuple[int, ...]:
    d = _ints(dilations)
    if len(d) != len(in_shape):
        raise fail(f"dilations_tensor->dims->data[0] != input rank ({len(d)} != {len(in_shape)})")
    if any(v < 1 for v in d):
        raise fail(
            f"dilations must be >= 1, got {d} (LiteRT checks only the first; others would write outside the output)"
        )
    if any(n == 0 and v > 1 for n, v in zip(in_shape, d)):
        raise fail("DILATE of an empty dimension by more than 1 gives a negative size ((0 - 1) * d + 1)")
    return tuple((n - 1) * v + 1 if n else 0 for n, v in zip(in_shape, d))


@dataclass(frozen=True, eq=False)
class Dilate:
    index: tuple  # the strided positions the input lands on

    def __call__(self, inputs, outputs):
        out = outputs[0]
        out[...] = inputs[2].reshape(-1)[0]
        out[self.index] = inputs[0]


@dataclass(frozen=True, eq=False)
class DilateDynamic:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        d = _ints(inputs[1])
        out = limits.new_array(dilate_shape(x.shape, d), x.dtype, "DILATE's output")
        Dilate(tuple(slice(None, None, v) for v in d))(inputs, [out])
        outputs[0] = out


@register(BuiltinOperator.DILATE)
def prepare_dilate(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3)
    x, dil, value = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = len(x.shape)
    ctx.check(rank > 0, "ctx.input_tensor->dims->size > 0 was not true.")
    _check_output_type(ctx, x)
    ctx.check(
        value.type == x.type,
        f"ctx.input_tensor->type != ctx.padding_value_tensor->type ({x.type_name} != {value.type_name})",
    )
    ctx.check(_movable(x), f"Type {x.type_name} is not supported by DILATE.")
    ctx.check(dil.type == TT.INT32, f"ctx.dilations_tensor->type != kTfLiteInt32 ({dil.type_name})")
    ctx.check(
        len(dil.shape) == 1 and dil.shape[0] == rank,
        f"dilations must be a vector of {rank} values, got shape {list(dil.shape)}",
    )
    ctx.check(value.size >= 1, "DILATE padding value is empty (LiteRT would read outside it)")
    ctx.check(rank < 2 or x.shape[0] > 0, f"DILATE of {list(x.shape)}: an empty first dimension (LiteRT segfaults)")
    if not dil.is_constant:
        ctx.set_output_dynamic(0)
        return DilateDynamic()
    ctx.set_output_shape(0, dilate_shape(x.shape, dil.data, ctx.fail))
    return Dilate(tuple(slice(None, None, v) for v in _ints(dil.data)))
