"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (NHWC, size tensor [new_height, new_width]).

Paths:
- RESIZE_BILINEAR float32 and uint8: the reference float kernel. Source coordinates, floor/ceil
  neighbours and the four products are evaluated in float32 in the reference order,
  ``p00*(1-dy)*(1-dx) + p10*dy*(1-dx) + p01*(1-dy)*dx + p11*dy*dx`` (+0.5 and truncation for uint8).
  Integer-factor upsampling whose tables are periodic (checked at prepare) runs the same expression as
  per-phase scalar-weight slices (resize_phases.ResizeBilinearPhases, bit-identical, about 2x faster).
- RESIZE_BILINEAR int8 and int16: the reference integer kernel: 10-bit fixed-point coordinates, products at
  scale 2^20, rounding half away from zero (the default build, TFLITE_SINGLE_ROUNDING off), computed exactly
  in separable form (columns, then rows) with the smallest accumulators that hold it (ResizeBilinearInteger,
  ResizeBilinearIntegerWide); integer-factor upsampling as per-phase scalar weights
  (resize_int_phases.ResizeBilinearIntegerPhases). Quantization parameters are not used (raw integers).
- RESIZE_NEAREST_NEIGHBOR: every 8/16/32-bit dtype (float32, int32, int8, uint8, int16, bool,
  float16); pure movement. align_corners rounds the float32 coordinate half away from zero,
  otherwise it is floored; half_pixel_centers adds 0.5 first.

A non-constant size tensor makes the output dynamic (tables are built at eval).

Sources matched: tensorflow/lite/kernels/resize_bilinear.cc, resize_nearest_neighbor.cc,
tensorflow/lite/kernels/internal/reference/resize_bilinear.h (ComputeInterpolationValues,
ResizeBilinear, ComputeInterpolationValuesInteger, ResizeBilinearInteger),
tensorflow/lite/kernels/internal/reference/resize_nearest_neighbor.h (GetNearestNeighbor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import InputValueError
from ..quant.fixedpoint import round_away
from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register
from .resize_int_phases import make_integer_phases_op, shared_twos
from .resize_phases import make_phases_op

INPUT, SIZE = 0, 1
_F32 = np.float32


# -- coordinate tables (per axis) ---------------------------------------------------------------------


def _float_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """``static_cast<float>(in) / out`` (or ``(in-1)/(out-1)`` with align_corners), in float32."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if align_corners and out_size > 1:
            return _F32(in_size - 1) / _F32(out_size - 1)
        return _F32(in_size) / _F32(out_size)


def bilinear_axis_float(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """ComputeInterpolationValues for every output index: (lower, upper, 1 - d, d), d in float32."""
    scale = _float_scale(in_size, out_size, align_corners)
    v = np.arange(out_size, dtype=_F32)
    if half_pixel:
        scaled = (v + _F32(0.5)) * scale - _F32(0.5)
    else:
        scaled = v * scale
    lo = np.maximum(np.floor(scaled).astype(np.int64), 0)
    hi = np.minimum(np.ceil(scaled).astype(np.int64), in_size - 1)
    d = scaled - lo.astype(_F32)  # input_y - y0, float32
    return lo, hi, _F32(1) - d, d


def bilinear_axis_integer(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """ComputeInterpolationValuesInteger: (lower, upper, 1024 - w, w) with 10-bit fixed-point weights."""
    if align_corners and out_size > 1:
        scale = (1024 * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = (1024 * in_size + out_size // 2) // out_size
    v = np.arange(out_size, dtype=np.int64)
    scaled = v * scale + scale // 2 - 512 if half_pixel else v * scale
    lo = np.maximum(_tdiv(scaled, 1024), 0)
    hi = np.minimum(_tdiv(scaled + 1023, 1024), in_size - 1)
    w = scaled - 1024 * lo
    return lo, hi, 1024 - w, w


def _tdiv(a: np.ndarray, b: int) -> np.ndarray:
    """C integer division (truncates toward zero) by a positive ``b``."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


def nearest_axis(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """GetNearestNeighbor for every output index, in float32 as the reference computes it."""
    scale = _float_scale(in_size, out_size, align_corners)
    offset = _F32(0.5) if half_pixel else _F32(0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        value = (np.arange(out_size, dtype=_F32) + offset) * scale
        idx = round_away(value) if align_corners else np.floor(value)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    if half_pixel:
        idx = np.maximum(idx, 0)
    return idx


# -- prepared ops ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ResizeBilinearFloat:
    """float32 (round_offset 0) and uint8 (round_offset 0.5, then truncation) reference kernel.

    The x weights are tiled over the channels, (OW, C), so every multiply runs over whole contiguous (OW, C)
    rows (with (OW, 1) weights numpy's inner loops ran over C values only); the gathers go into buffers made
    at prepare (``take(..., out=, mode='clip')``, the indices being in range); the row weights multiply the
    (OH, W, C) row gathers once, before the column gathers. Same operations, same order: bit-identical."""

    y0: np.ndarray
    y1: np.ndarray
    wy0: np.ndarray  # (1, OH, 1, 1) float32: 1 - dy
    wy1: np.ndarray  # dy
    x0: np.ndarray
    x1: np.ndarray
    wx0: np.ndarray  # (OW, C) float32: 1 - dx, tiled over the channels
    wx1: np.ndarray
    round_offset: float
    buffers: tuple  # (converted input or None, top, bot, acc, t), float32

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        xf, top, bot, acc, t = self.buffers
        if xf is not None:
            np.copyto(xf, x)  # uint8: exact; converting once is cheaper than mixed-type multiplies
            x = xf
        np.take(x, self.y0, axis=1, out=top, mode="clip")
        np.take(x, self.y1, axis=1, out=bot, mode="clip")
        # ((p00*wy0)*wx0 + (p10*wy1)*wx0) + (p01*wy0)*wx1 + (p11*wy1)*wx1, every step rounded to float32; the
        # row weights are applied before the column gathers (a gather commutes with an elementwise multiply).
        top *= self.wy0
        bot *= self.wy1
        np.take(top, self.x0, axis=2, out=acc, mode="clip")
        acc *= self.wx0
        np.take(bot, self.x0, axis=2, out=t, mode="clip")
        t *= self.wx0
        acc += t
        np.take(top, self.x1, axis=2, out=t, mode="clip")
        t *= self.wx1
        acc += t
        np.take(bot, self.x1, axis=2, out=t, mode="clip")
        t *= self.wx1
        acc += t
        if self.round_offset:  # uint8: + 0.5 then static_cast (truncation; acc + 0.5 is in [0, 256))
            acc += _F32(self.round_offset)
        np.copyto(outputs[0], acc, casting="unsafe")


@dataclass(frozen=True, eq=False)
class ResizeBilinearInteger:
    """int8 / int16: ResizeBilinearInteger (10-bit weights, accumulation at scale 2^20, rounding half away
    from zero), in separable form: the columns first on the input rows, ``H = (1024-wx)*x[:, :, x0] +
    wx*x[:, :, x1] - 512``, then the rows, ``acc' = (1024-wy)*H[:, y0] + wy*H[:, y1]``. Integer arithmetic is
    exact in any order and the row weights sum to 1024, so ``acc' = acc - 2^19`` where ``acc`` is the
    reference's four-product sum, and the output is ``((acc' + (acc' >> sign)) >> 20) + 1`` (see
    resize_int_phases for the proof). The weights of each axis are divided by the power of two they all share
    (2^kx, kx <= 9, and 2^ky; align_corners with ``out - 1 = f * (in - 1)``: 1024 / f), the bias becoming
    ``-2^(9-kx)`` and the shift ``20 - kx - ky``, as in resize_int_phases. Exactness bound (checked at prepare):
    ``|H'|, |S'| <= sy*(sx*2^(bits-1) + 2^(9-kx))`` with ``sy``, ``sx`` the largest ``|w0| + |w1|`` of each
    axis's reduced weights (1536 / 2^k at half_pixel_centers' clamped edges): the accumulators are int16 or int32
    when it fits, else (int16 without shared powers of two) ResizeBilinearIntegerWide. The x weights are tiled
    over the channels (OW, C)."""

    y0: np.ndarray
    y1: np.ndarray
    wy0: np.ndarray  # (1, OH, 1, 1) accumulator dtype: 1024 - wy
    wy1: np.ndarray  # wy
    x0: np.ndarray
    x1: np.ndarray
    wx0: np.ndarray  # (OW, C) accumulator dtype: 1024 - wx, tiled over the channels
    wx1: np.ndarray
    buffers: tuple  # (input, left, right, top, bottom) in the accumulator dtype

    bias: int = -512  # the rounding's -2^19 at the rows' scale (0: ResizeBilinearIntegerWide)
    shift: int = 20  # 20 - K for weights reduced by 2^K

    def _accumulate(self, x):
        xi, left, right, top, bot = self.buffers
        np.copyto(xi, x)  # once, on the input: mixed-type multiplies are slow in numpy
        np.take(xi, self.x0, axis=2, out=left, mode="clip")
        left *= self.wx0
        np.take(xi, self.x1, axis=2, out=right, mode="clip")
        right *= self.wx1
        left += right
        if self.bias:
            left += self.bias
        np.take(left, self.y0, axis=1, out=top, mode="clip")
        top *= self.wy0
        np.take(left, self.y1, axis=1, out=bot, mode="clip")
        bot *= self.wy1
        top += bot
        return top, bot

    def __call__(self, inputs, outputs):
        top, bot = self._accumulate(inputs[INPUT])
        np.right_shift(top, 8 * top.itemsize - 1, out=bot)  # -1 where acc - 2^19 < 0
        top += bot
        out = outputs[0]
        np.right_shift(top, self.shift, out=out, casting="unsafe")  # static_cast<T> (the result is always in range)
        out += 1


@dataclass(frozen=True, eq=False)
class ResizeBilinearIntegerWide(ResizeBilinearInteger):
    """ResizeBilinearInteger whose accumulators pass 2^31 (int16): float64 holding exact integers, the row
    weights scaled by 2^-20 (exact) and no bias, so the rows' sum is ``q = acc / 2^20`` with at most 20 fraction
    bits; ``|acc| < 2^52`` (checked; int16: below 2^37) keeps ``q + copysign(0.5, q)`` exact, and the converting
    copy truncates toward zero: ``(acc + sign * 2^19) / 2^20`` in C. float64 multiplies run faster in numpy than
    int64 ones."""

    def __call__(self, inputs, outputs):
        q, t = self._accumulate(inputs[INPUT])
        np.copysign(0.5, q, out=t)
        q += t
        np.copyto(outputs[0], q, casting="unsafe")  # static_cast<T>: truncation, in range


def _integer_op(in_shape, out_hw, dtype, ytab, xtab):
    n, h, w, c = in_shape
    oh, ow = out_hw
    (ylo, yhi, wy0, wy1), (xlo, xhi, wx0, wx1) = ytab, xtab
    big = 2 ** (8 * np.dtype(dtype).itemsize - 1)  # |x| <= big
    # the weights reduced by the power of two each axis shares (align_corners 33 -> 65: 512), as in resize_int_phases
    ky = min(shared_twos(np.concatenate([wy0, wy1])), 10)
    kx = min(shared_twos(np.concatenate([wx0, wx1])), 9)  # the bias -2^(9-kx) stays an integer
    sy, sx = (int((np.abs(a) + np.abs(b)).max()) >> k for a, b, k in ((wy0, wy1, ky), (wx0, wx1, kx)))
    bound = sy * (sx * big + (1 << (9 - kx)))  # |H'| and |S'|
    acc_t = next((t for t in (np.int16, np.int32) if bound <= np.iinfo(t).max), None)
    if acc_t is None:  # ResizeBilinearIntegerWide, on the weights themselves
        ky = kx = 0
        assert sy * sx * big < 2**52  # ResizeBilinearIntegerWide: q + copysign(0.5, q) exact
        acc_t = np.float64
    row_scale = 2.0**-20 if acc_t == np.float64 else 1  # exact: a power of two
    buffers = (
        np.empty(in_shape, acc_t),
        np.empty((n, h, ow, c), acc_t),
        np.empty((n, h, ow, c), acc_t),
        np.empty((n, oh, ow, c), acc_t),
        np.empty((n, oh, ow, c), acc_t),
    )
    wide = acc_t == np.float64
    return (ResizeBilinearIntegerWide if wide else ResizeBilinearInteger)(
        ylo,
        yhi,
        ((wy0 >> ky).reshape(1, -1, 1, 1) * row_scale).astype(acc_t),
        ((wy1 >> ky).reshape(1, -1, 1, 1) * row_scale).astype(acc_t),
        xlo,
        xhi,
        np.ascontiguousarray(np.broadcast_to((wx0 >> kx).reshape(-1, 1), (ow, c)), acc_t),
        np.ascontiguousarray(np.broadcast_to((wx1 >> kx).reshape(-1, 1), (ow, c)), acc_t),
        buffers,
        0 if wide else -(1 << (9 - kx)),
        20 - ky - kx,
    )


def _bilinear_op(in_shape, out_hw, dtype, align_corners, half_pixel):
    (_, h, w, _), (oh, ow) = in_shape, out_hw
    if dtype in (np.int8, np.int16):
        ytab = bilinear_axis_integer(h, oh, align_corners, half_pixel)
        xtab = bilinear_axis_integer(w, ow, align_corners, half_pixel)
        phases = make_integer_phases_op(in_shape, out_hw, dtype, ytab, xtab)
        return phases if phases is not None else _integer_op(in_shape, out_hw, dtype, ytab, xtab)
    ytab = bilinear_axis_float(h, oh, align_corners, half_pixel)
    xtab = bilinear_axis_float(w, ow, align_corners, half_pixel)
    phases = make_phases_op(in_shape, out_hw, dtype, ytab, xtab)
    if phases is not None:
        return phases
    ylo, yhi, wy0, wy1 = ytab
    xlo, xhi, wx0, wx1 = xtab
    n, c = in_shape[0], in_shape[3]
    buffers = (
        None if dtype == _F32 else np.empty(in_shape, _F32),
        np.empty((n, oh, w, c), _F32),
        np.empty((n, oh, w, c), _F32),
        np.empty((n, oh, ow, c), _F32),
        np.empty((n, oh, ow, c), _F32),
    )
    return ResizeBilinearFloat(
        ylo,
        yhi,
        wy0.reshape(1, -1, 1, 1),
        wy1.reshape(1, -1, 1, 1),
        xlo,
        xhi,
        np.ascontiguousarray(np.broadcast_to(wx0.reshape(-1, 1), (ow, c))),
        np.ascontiguousarray(np.broadcast_to(wx1.reshape(-1, 1), (ow, c))),
        0.5 if dtype == np.uint8 else 0.0,
        buffers,
    )


@dataclass(frozen=True, eq=False)
class ResizeNearestNeighbor:
    ys: np.ndarray
    xs: np.ndarray

    def __call__(self, inputs, outputs):
        np.take(np.take(inputs[INPUT], self.ys, axis=1), self.xs, axis=2, out=outputs[0], mode="clip")


def _nearest_op(in_shape, out_hw, dtype, align_corners, half_pixel):
    (_, h, w, _), (oh, ow) = in_shape, out_hw
    return ResizeNearestNeighbor(
        nearest_axis(h, oh, align_corners, half_pixel), nearest_axis(w, ow, align_corners, half_pixel)
    )


@dataclass(frozen=True, eq=False)
class ResizeDynamic:
    """The size tensor is not constant: build the tables for the sizes seen at each invoke."""

    make: object  # _bilinear_op or _nearest_op
    bilinear: bool
    align_corners: bool
    half_pixel: bool

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        oh, ow = (int(v) for v in inputs[SIZE].reshape(-1)[:2])
        if (self.bilinear and (oh <= 0 or ow <= 0)) or oh < 0 or ow < 0:
            raise InputValueError(f"resize output size must be positive, got {[oh, ow]}")
        out = limits.new_array((x.shape[0], oh, ow, x.shape[3]), x.dtype, "the resized output")
        self.make(x.shape, (oh, ow), x.dtype, self.align_corners, self.half_pixel)(inputs, [out])
        outputs[0] = out


# -- prepare --------------------------------------------------------------------------------------

_BILINEAR_TYPES = {np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int16)}


def _prepare_resize(ctx: OpContext, bilinear: bool):
    ctx.check_num(2)
    x, size = ctx.input(INPUT), ctx.input(SIZE)
    ctx.check(len(x.shape) == 4, f"NumDimensions(input) != 4 ({len(x.shape)} != 4)")
    ctx.check(len(size.shape) == 1, f"NumDimensions(size) != 1 ({len(size.shape)} != 1)")
    ctx.check(size.shape[0] == 2, f"size->dims->data[0] != 2 ({size.shape[0]} != 2)")
    ctx.check(size.dtype == np.int32, f"size must be INT32, got {size.type_name}")
    y = ctx.outputs[0]
    ctx.check(y.type == x.type, f"{ctx.op_name}: output type {y.type_name} differs from input type {x.type_name}")
    if bilinear:
        ctx.check(
            x.dtype in _BILINEAR_TYPES and x.type not in dtypes.OBJECT_TYPES,
            f"Output type is {x.type_name}, requires float.",
        )
        make = _bilinear_op
    else:
        ctx.check(
            x.type not in dtypes.OBJECT_TYPES and x.dtype.itemsize in (1, 2, 4),
            f"Output type is {x.type_name}, requires float, uint8, int8 or int16.",
        )
        make = _nearest_op
    align, half = bool(ctx.options.align_corners), bool(ctx.options.half_pixel_centers)
    if not size.is_constant:
        ctx.set_output_dynamic(0)
        return ResizeDynamic(make, bilinear, align, half)
    if bilinear:
        ctx.check(not (half and align), "If half_pixel_centers is True, align_corners must be False.")
    oh, ow = (int(v) for v in size.data.reshape(-1))
    if bilinear:
        ctx.check(oh > 0 and ow > 0, f"size_data[0] > 0 and size_data[1] > 0 were not true ({oh}, {ow})")
    else:
        ctx.check(oh >= 0 and ow >= 0, f"resize output size must not be negative, got {[oh, ow]}")
    ctx.set_output_shape(0, (x.shape[0], oh, ow, x.shape[3]))
    return make(x.shape, (oh, ow), x.dtype, align, half)


@register(BuiltinOperator.RESIZE_BILINEAR)
def prepare_resize_bilinear(ctx: OpContext) -> PreparedOp:
    return _prepare_resize(ctx, bilinear=True)


@register(BuiltinOperator.RESIZE_NEAREST_NEIGHBOR)
def prepare_resize_nearest_neighbor(ctx: OpContext) -> PreparedOp:
    return _prepare_resize(ctx, bilinear=False)
