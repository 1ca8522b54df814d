"""QUANTIZE and DEQUANTIZE.

Paths:
- DEQUANTIZE float16 -> float32 (exact widening; constant weights are folded at prepare).
- DEQUANTIZE int8 / uint8 / int16 / int4 -> float32, per tensor: ``f32(f64(scale) * (q - zp))``, one
  rounding of the exact product (reference_integer_ops::Dequantize); read from a 256 / 65536 entry table.
  Per channel (int8, uint8, int4; more than one scale): ``f32(scale[c]) * f32(q - zp[c])`` in float32
  (reference_ops::PerChannelDequantize), the same bits as the exact product rounded once; per tensor
  likewise (DequantizeAffine) unless the input has fewer than 64 values (the table: one call).
- QUANTIZE float32 -> int8 / uint8 / int16 / int4, per tensor or per channel:
  ``clamp(int32(TfLiteRound(f32(x / scale))) + zp)`` with a float32 *division* and rounding half away
  from zero (reference AffineQuantize / PerChannelQuantize). A quotient outside the int32 range (or
  NaN) converts to INT32_MIN as on x86, and the zero point is then added with int32 wrap-around. Rounded in
  float32 with quant.hybrid.HALF_DOWN; QuantizeFloatStore when the clamped values fit an integer type of the
  output's width (zero point at qmin, or 0): the trunc is a truncating cast, zp added in the output type.
- QUANTIZE requantize int8 / uint8 -> int8 / uint8 / int16, int16 -> int8 / int16 / int32,
  int32 -> int8 / int16: ``clamp(MultiplyByQuantizedMultiplier(q - zp_in, M, shift) + zp_out)`` with
  ``(M, shift) = QuantizeMultiplier(f64(s_in) / f64(s_out))`` (double rounding, the default build);
  8- and 16-bit inputs read a table built at prepare. int16 -> int16 needs both zero points 0.

Sources matched: tensorflow/lite/kernels/quantize.cc, tensorflow/lite/kernels/dequantize.{h,cc},
tensorflow/lite/kernels/internal/reference/{quantize,requantize,dequantize}.h,
tensorflow/lite/kernels/internal/reference/integer_ops/dequantize.h.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_away,
    trunc_to_int32,
    wrap32,
)
from ..quant.hybrid import HALF_DOWN
from ..quant.requantizer import copysign_bits
from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .common import clip_ufunc, dot_impl, flat_views, per_channel_params, table_domain, table_index
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT = 0
_INT4 = dtypes.TensorType.INT4
_F32 = np.float32
_add, _copysign, _divide = np.add, np.copysign, np.divide
_dot = dot_impl  # np.dot without the array-function dispatch
HALF_DOWN_F32 = np.array(HALF_DOWN[np.dtype(_F32)])  # 0-d: a scalar operand is converted on every ufunc call
_HALF_DOWN_BITS = HALF_DOWN_F32.view(np.uint32).copy()
#: Arrays with at least this many values take copysign_half_down's two bitwise passes
BITWISE_COPYSIGN_FROM = 4096


def copysign_half_down(t: np.ndarray, out: np.ndarray) -> None:
    """``np.copysign(HALF_DOWN, t, out=out)`` (float32), bit for bit: numpy's copysign loop is not vectorized
    (about 0.6-1.2 ns per value, 40-78 us on 65536 values), so from BITWISE_COPYSIGN_FROM values on the sign
    bits of ``t`` are masked and HALF_DOWN's bits or-ed in: two vectorized integer passes (about 13 us)."""
    if t.size < BITWISE_COPYSIGN_FROM:
        np.copysign(HALF_DOWN_F32, t, out=out)
        return
    copysign_bits(t.view(np.uint32), _HALF_DOWN_BITS, out.view(np.uint32))


def _type_range(t: TensorInfo) -> tuple[int, int]:
    if t.type == _INT4:
        return -8, 7
    info = np.iinfo(t.dtype)
    return int(info.min), int(info.max)


@dataclass(frozen=True, eq=False)
class TableLookup:
    """DEQUANTIZE / requantize of an 8- or 16-bit input: one gather from a table built at prepare."""

    table: np.ndarray  # indexed by the input's unsigned bit pattern, in the output dtype

    def __call__(self, inputs, outputs):
        np.take(self.table, table_index(inputs[INPUT]), out=outputs[0], mode="wrap")


@dataclass(frozen=True, eq=False)
class TableLookupScalar:
    """TableLookup for a one-value input (a streaming classifier's score): the value's unsigned bit pattern
    (``item() & mask``, as table_index reads it) picks the table entry on the Python side and ``fill`` stores it:
    the same entry, without np.take's fixed cost (about 0.3 us instead of 1.4 us)."""

    table: np.ndarray
    mask: int  # 0xFF for 8-bit inputs, 0xFFFF for 16-bit ones

    def __call__(self, inputs, outputs):
        outputs[0].fill(self.table[inputs[INPUT].item() & self.mask])

    def feeding(self, consumer) -> TableLookupScalar | None:
        """This lookup and ``consumer``, a TableLookupScalar that alone reads its one-value output (a streaming
        classifier's LOGISTIC then QUANTIZE), as one lookup in the composed table ``consumer.table[table & mask]``
        (ops/slice_views.py's fuse_feeding), or None. Exact: entry i is what the two steps store for input bit
        pattern i (this table holds integers in its output's type, whose bit pattern the consumer's mask reads);
        one step and one lookup fewer."""
        table = composed_table(self.table, consumer)
        return None if table is None else TableLookupScalar(table, self.mask)


def composed_table(table: np.ndarray, consumer) -> np.ndarray | None:
    """``consumer.table[table & mask]`` when ``consumer`` is a TableLookupScalar reading the integers ``table``
    holds at their own width (its mask covers exactly that many bits and its table every pattern), else None:
    entry i is what storing ``table[i]`` and then looking it up would give."""
    if type(consumer) is not TableLookupScalar or table.dtype.kind not in "iu":
        return None
    if consumer.mask != (1 << (8 * table.dtype.itemsize)) - 1 or consumer.table.size != consumer.mask + 1:
        return None
    return consumer.table[table.astype(np.int64) & consumer.mask]


def table_lookup(table: np.ndarray, x: TensorInfo) -> TableLookup | TableLookupScalar:
    """The prepared gather of ``table`` for input ``x``: TableLookupScalar for a one-value input."""
    if x.size == 1:
        return TableLookupScalar(table, (1 << (8 * x.dtype.itemsize)) - 1)
    return TableLookup(table)


# =================================================================================================
# DEQUANTIZE
# =================================================================================================


@dataclass(frozen=True, eq=False)
class DequantizeFloat16:
    def __call__(self, inputs, outputs):
        np.copyto(outputs[0], inputs[INPUT])


@dataclass(frozen=True, eq=False)
class DequantizeAffine:
    """``f32(q - zp) * f32(scale)`` in float32, per tensor (0-d scale) or per channel (broadcast along the
    quantized dimension): a copy that converts q to float32 (exact), the zero point subtracted (exact while
    ``|q - zp| < 2^24``; skipped when every zero point is 0), one float32 multiplication. The product of two
    floats rounded once to float32 is the exact product rounded once, so this is reference_ops::
    PerChannelDequantize and, per tensor, reference_ops::Dequantize's ``f32(f64(scale) * (q - zp))`` (the
    double product of a float and an integer below 2^24 is exact) bit for bit. Per tensor on an 8-bit
    (1, 32, 32, 64) input: 49 -> 13 us (zero point 0) / 17 us against the 256-entry np.take."""

    scale: np.ndarray  # float32, 0-d or broadcast along the quantized dimension
    zero_point: np.ndarray | None  # float32 (small integers, exact), same shape; None: all 0

    def __call__(self, inputs, outputs):
        out = outputs[0]
        np.copyto(out, inputs[INPUT])  # exact: |q| < 2^24
        if self.zero_point is not None:
            out -= self.zero_point  # exact
        out *= self.scale  # one float32 rounding of the exact product


def dequantize_affine(scale: np.ndarray, zero_point: np.ndarray) -> DequantizeAffine:
    zp = np.asarray(zero_point, _F32)
    return DequantizeAffine(np.asarray(scale, _F32), zp if zp.any() else None)


#: Inputs with fewer values read the table (one np.take call is cheaper than two or three ufunc calls there)
DEQUANTIZE_TABLE_BELOW = 64
#: The largest |zero point| for which ``q - zp`` of a 16-bit q is an integer below 2^24 (exact in float32)
DEQUANTIZE_ZP_MAX = 2**24 - 2**16


_DEQUANTIZE_TYPES = {np.dtype(t) for t in (np.uint8, np.int8, np.int16, np.float16)}


@register(BuiltinOperator.DEQUANTIZE)
def prepare_dequantize(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x, y = ctx.input(INPUT), ctx.outputs[0]
    ctx.check(
        x.type == _INT4 or (x.dtype in _DEQUANTIZE_TYPES and x.type not in dtypes.OBJECT_TYPES),
        f"Type {x.type_name} is unsupported by op DEQUANTIZE.",
    )
    ctx.check(y.dtype == np.float32, f"DEQUANTIZE output must be FLOAT32, got {y.type_name}")
    ctx.set_output_shape(0, x.shape)
    if x.dtype == np.float16:
        return DequantizeFloat16()
    if x.dtype == np.int16:
        ctx.check(x.zero_point == 0, f"op_context.input->params.zero_point != 0 ({x.zero_point} != 0)")
    if len(x.quantization.scale) > 1:
        ctx.check(x.dtype != np.int16, f"Type {x.type_name} not supported for per-channel.")
        scale, zp = per_channel_params(ctx, x)
        return dequantize_affine(scale, zp)
    if (x.dynamic or x.size >= DEQUANTIZE_TABLE_BELOW) and abs(x.zero_point) <= DEQUANTIZE_ZP_MAX:
        return dequantize_affine(x.scale, x.zero_point)
    domain = table_domain(x.dtype).astype(np.int64)
    # reference_ops::Dequantize: int32 ``val - zero_point`` (wraps for a zero point near the int32 limits),
    # times the double scale; the f64 product is exact
    table = (np.float64(x.scale) * wrap32(domain - x.zero_point)).astype(_F32)
    return table_lookup(table, x)


# =================================================================================================
# QUANTIZE
# =================================================================================================


@dataclass(frozen=True, eq=False)
class QuantizeFloat:
    """float32 -> int: clamp(int32(round_half_away(x / scale)) + zp), per tensor or per channel.

    Rounding and clamping are monotone and the bounds are integers (fixed points of the rounding), so the
    quotient is clamped first, to [qmin - zp, qmax - zp]: then |t| < 2^17 and trunc(t + copysign(0.49999997, t))
    in float32 is round_half_away(t) (quant.hybrid.HALF_DOWN: t + 1/2 would not do in float32, 0.49999997 + 0.5
    rounds to 1.0); adding zp (an integer below 2^16: exact in float32) gives an in-range integer, assigned to
    the output (an exact conversion; a plain assignment costs a fraction of a casting ufunc call on small
    tensors).

    Overflow: the reference's ``int32(round(t)) + zp`` wraps around in int32 and x86 converts a quotient outside
    int32 (or NaN) to INT32_MIN, so where round(t) is outside [t_min, t_max] = [INT32_MIN - min(zp, 0),
    INT32_MAX - max(zp, 0)] (or NaN) the output is clamp(wrap32(INT32_MIN + zp)), ``overflow_value``. The exact
    check of that (``_wrapped``) runs only when the screen ``dot(t, t) < 4^k`` fails, 2^k <= edge - 1 where
    every such t has |t| >= edge - 1 (edge: the smaller of -t_min, t_max): one BLAS call (about 0.5 us) instead
    of a reduction (np.minimum.reduce: 0.7-0.9 us, its setup). The screen never passes where the check would
    find one: the terms t_i^2 are non-negative, so every partial sum rounded to nearest (float32 or float64,
    fused multiply-add or not, in any order) is at least each rounded term it holds (rounding is monotone and
    keeps representable values), a term with |t_i| >= 2^k rounds to at least 4^k (a power of two) or inf, and
    a NaN makes the sum NaN, which compares false. When it fails without one (many large quotients), the check
    finds none: the values are the check's alone."""

    scale: np.ndarray  # float32: scalar or broadcast along the quantized dimension
    zero_point: np.ndarray  # int32, same shape
    lo: np.ndarray  # float32 qmin - zp: the quotient is clamped to the output range first
    hi: np.ndarray  # float32 qmax - zp
    qmin: int
    qmax: int
    overflow_value: np.ndarray  # what an out-of-int32-range quotient becomes: clamp(wrap32(INT32_MIN + zp))

    shape: tuple | None = None  # the input's shape: scratch buffers made at prepare (None: per call)

    def __post_init__(self):
        shape = () if self.shape is None else self.shape
        object.__setattr__(self, "_t", np.empty(shape, _F32))
        object.__setattr__(self, "_half", np.empty(shape, _F32))
        zp = np.asarray(self.zero_point)
        object.__setattr__(self, "_zp", zp.astype(_F32) if zp.any() else None)
        # The reference's int32(round(t)) + zp wraps around in int32, and x86 converts a quotient outside int32
        # (or NaN) to INT32_MIN: where round(t) is outside [t_min, t_max] (int32 less the zero point's side), or
        # NaN, the result is clamp(wrap32(INT32_MIN + zp)) = overflow_value (qmax for zp < 0, qmin otherwise)
        zp64 = zp.astype(np.int64)
        t_min, t_max = INT32_MIN - np.minimum(zp64, 0), INT32_MAX - np.maximum(zp64, 0)
        object.__setattr__(self, "_t_min", t_min.astype(np.float64))  # exact: |.| < 2^53
        object.__setattr__(self, "_t_max", t_max.astype(np.float64))
        # every such t has |t| >= edge (round half away moves t by at most 1/2): the screen 4^k <= edge^2
        edge = min(int(-t_min.max()), int(t_max.min())) - 1
        object.__setattr__(self, "_screen", 4.0 ** (edge.bit_length() - 1) if edge >= 1 else 0.0)

    def _overflow(self, t: np.ndarray):
        """None, or the mask of the quotients whose rounded value is outside [t_min, t_max] (or NaN), which
        are zeroed in ``t`` (their outputs are overflow_value): the screen, then ``_wrapped`` (class docstring)."""
        flat = t.reshape(-1)
        if not t.size or _dot(flat, flat) < self._screen:
            return None
        return self._wrapped(t)

    def _wrapped(self, t: np.ndarray):
        """The exact check behind the screen: round(t) half away from zero in float64 (t + 1/2 is exact there),
        compared with [t_min, t_max]; None when no quotient is outside."""
        t64 = t.astype(np.float64)
        r = np.trunc(t64 + np.copysign(0.5, t64))
        bad = ~((r >= self._t_min) & (r <= self._t_max))  # NaN too
        if not bad.any():
            return None
        t[bad] = 0
        return bad

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.shape == self._t.shape:
            t, half = self._t, self._half
        else:
            t, half = np.empty(x.shape, _F32), np.empty(x.shape, _F32)
        np.divide(x, self.scale, out=t)  # float32 division, as the reference
        bad = self._overflow(t)
        clip_ufunc(t, self.lo, self.hi, out=t)
        copysign_half_down(t, half)
        t += half
        np.trunc(t, out=t)
        if self._zp is not None:
            t += self._zp
        out = outputs[0]
        out[...] = t  # integers within the output range: exact
        if bad is not None:
            np.copyto(out, np.broadcast_to(self.overflow_value, out.shape), where=bad)


@dataclass(frozen=True, eq=False)
class QuantizeFloatStore(QuantizeFloat):
    """QuantizeFloat for an input of the prepared shape whose rounded, clamped values ``v`` in
    ``[lo, hi] = [qmin - zp, qmax - zp]`` fit an integer type of the output's width (checked at prepare in
    ``quantize_float``): unsigned when ``lo >= 0`` (zp = qmin: int8 with zero point -128, uint8 with 0),
    signed when lo and hi fit it (zero point 0); else, for 8-bit outputs, int16 (any zero point in the
    output range). The trunc of QuantizeFloat's float32 rounding is done by numpy's truncating float ->
    integer cast into that buffer (``ibuf[...] = t``, np.copyto's unsafe cast: the truncation lies in [lo, hi], so C's
    conversion is defined), then zp is added in the output type (the buffer viewed as the output type:
    addition mod 2^bits, exact since ``v + zp`` is in the output range; int16: added in int16 in place and the
    sum, in [qmin, qmax], assigned to the output). Unsigned: after the clip t >= 0, where round half away is the
    truncation of ``t + 0.49999997`` without the sign term. Six numpy calls (seven signed, one more for int16),
    the overflow screen's np.dot included (QuantizeFloat); StoreInto runs them over 1-d views
    (``store_call``)."""

    ibuf: np.ndarray | None = None  # the input's shape, integer type of the output's width (or int16)
    iout: np.ndarray | None = None  # ibuf viewed as the output's type (int16: ibuf)
    zp_out: np.ndarray | None = None  # zp in iout's type (0-d, or per channel)
    unsigned: bool = False

    def __post_init__(self):
        super().__post_init__()
        t = self._t
        half = None if self.unsigned else self._half  # None: + HALF_DOWN, no sign term
        bitwise = half is not None and t.size >= BITWISE_COPYSIGN_FROM  # copysign_half_down's bitwise passes
        screen = self._screen if t.size else np.inf  # an empty input: never screened
        wide = self.iout is self.ibuf  # int16 for an 8-bit output: zp added there, the sum assigned
        consts = (self.scale, self.lo, self.hi)
        plan = (self, t, t.reshape(-1), *consts, half, bitwise, self.ibuf, self.iout, self.zp_out, wide, screen)
        object.__setattr__(self, "_plan", plan)
        # the same calls over 1-d views (common.flat_views) when every constant is one value: the same values
        flat = None
        if all(np.ndim(c) == 0 for c in (*consts, self.zp_out)):
            t1, ibuf1 = t.reshape(-1), self.ibuf.reshape(-1)  # 1-d views of the buffers (both C-contiguous)
            half1 = None if half is None else half.reshape(-1)
            iout1 = ibuf1 if wide else ibuf1.view(self.iout.dtype)
            flat = (self, t1, t1, *consts, half1, bitwise, ibuf1, iout1, self.zp_out, wide, screen)
        object.__setattr__(self, "_flat_plan", flat)

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.shape != self._t.shape:
            return QuantizeFloat.__call__(self, inputs, outputs)
        quantize_store(self._plan, x, outputs[0])

    def store_call(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """``(quantize_store, (plan, x, out))``: QUANTIZE of the bound input ``x`` (the prepared shape) into the
        bound ``out`` (ops/slice_views.py's StoreInto), over 1-d views of the three when they can be."""
        flat = flat_views(x, out)
        if self._flat_plan is not None and all(a.ndim == 1 for a in flat):
            return quantize_store, (self._flat_plan, *flat)
        return quantize_store, (self._plan, x, out)


def quantize_store(plan: tuple, x: np.ndarray, out: np.ndarray) -> None:
    """QuantizeFloatStore's QUANTIZE of ``x`` into ``out``: the calls of its docstring, over the arrays gathered at
    prepare (``plan``: no attribute lookups, about 1 us of a 10 us step inside an invoke). An int16 buffer for an
    8-bit output (``wide``) gets zp added in place and is assigned to the output (an exact conversion: the sums are
    in range), not added into it: a casting ufunc call costs about 1.5 us more inside an invoke."""
    op, t, flat, scale, lo, hi, half, bitwise, ibuf, iout, zp_out, wide, screen = plan
    _divide(x, scale, out=t)  # float32 division, as the reference
    bad = None
    if not _dot(flat, flat) < screen:  # _overflow inlined (its screen: QuantizeFloat's docstring)
        bad = op._wrapped(t)
    clip_ufunc(t, lo, hi, out=t)
    if half is None:
        _add(t, HALF_DOWN_F32, out=t)
    else:
        if bitwise:
            copysign_half_down(t, half)
        else:
            _copysign(HALF_DOWN_F32, t, out=half)  # copysign_half_down below BITWISE_COPYSIGN_FROM
        _add(t, half, out=t)
    ibuf[...] = t  # truncation toward zero: np.copyto(casting="unsafe")'s cast without its dispatch
    if wide:
        _add(iout, zp_out, out=iout)  # in [qmin, qmax]
        out[...] = iout
    else:
        _add(iout, zp_out, out=out)  # mod 2^bits in the output type: the sum is in range
    if bad is not None:
        np.copyto(out, np.broadcast_to(op.overflow_value, out.shape), where=bad)


@dataclass(frozen=True, eq=False)
class QuantizeFloatWideZeroPoint:
    """float32 -> int for zero points of 2^16 or more in magnitude (valid in the schema, absent from real models):
    the reference's arithmetic spelled out in int64, without QuantizeFloat's float32 shortcuts (which assume
    |zp| < 2^16: bounds qmin - zp exact in float32, and every wrapped ``round(t) + zp`` clamping as
    INT32_MIN + zp does). The float32 quotient x / scale rounded half away from zero (``round_away``, in
    float32 as TfLiteRound), converted as x86 does (``trunc_to_int32``: outside int32 or NaN gives INT32_MIN),
    plus zp with int32 wrap-around (reference/quantize.h AffineQuantize:
    ``static_cast<int32>(TfLiteRound(val / scale)) + zp``), clamped to the output range."""

    scale: np.ndarray  # float32: scalar or broadcast along the quantized dimension
    zero_point: np.ndarray  # int64, same shape
    qmin: int
    qmax: int

    def __call__(self, inputs, outputs):
        r = trunc_to_int32(round_away(np.divide(inputs[INPUT], self.scale, dtype=_F32)))
        outputs[0][...] = np.clip(wrap32(r + self.zero_point), self.qmin, self.qmax)


#: zero points at or above this magnitude take QuantizeFloatWideZeroPoint
WIDE_ZERO_POINT = 2**16


def quantize_float(scale, zp, qmin: int, qmax: int, overflow, shape: tuple, out_dtype):
    """QuantizeFloatStore when its bound holds, else QuantizeFloat (``zp`` int64, scalar or per channel);
    QuantizeFloatWideZeroPoint for |zp| >= 2^16."""
    if zp.size and int(np.max(np.abs(zp))) >= WIDE_ZERO_POINT:
        return QuantizeFloatWideZeroPoint(scale, zp, qmin, qmax)
    # np.asarray: 0-d arrays, not numpy scalars, for a scalar zero point (a scalar clip bound is converted on every
    # call: about 0.2 us of a 0.55 us clip on 120 values)
    bounds = np.asarray(qmin - zp, _F32), np.asarray(qmax - zp, _F32)
    args = (scale, zp.astype(np.int32), *bounds, qmin, qmax, overflow)
    lo, hi = int(np.min(qmin - zp)), int(np.max(qmax - zp))
    out_dtype = np.dtype(out_dtype)
    if out_dtype.kind in "iu" and all(d >= 0 for d in shape):
        unsigned = lo >= 0
        same = np.dtype(f"{'u' if unsigned else 'i'}{out_dtype.itemsize}")
        for store in (same, np.dtype(np.int16)) if out_dtype.itemsize == 1 else (same,):
            info = np.iinfo(store)
            zp_fits = info.min <= int(np.min(zp)) and int(np.max(zp)) <= info.max
            if info.min <= lo and hi <= info.max and zp_fits:
                ibuf = np.empty(shape, store)
                wide = store.itemsize > out_dtype.itemsize  # int16: v + zp added there, the sum cast to the output
                zp_out = np.asarray(zp).astype(store if wide else out_dtype)  # wraps nothing: zp fits
                iout = ibuf if wide else ibuf.view(out_dtype)
                return QuantizeFloatStore(*args, shape=shape, ibuf=ibuf, iout=iout, zp_out=zp_out, unsigned=unsigned)
    return QuantizeFloat(*args, shape=shape)


@dataclass(frozen=True, eq=False)
class RequantizeInt32:
    """int32 input: MultiplyByQuantizedMultiplier over the int32 difference q - zp_in (wrapping)."""

    input_zero_point: int
    multiplier: int
    shift: int
    output_zero_point: int
    qmin: int
    qmax: int

    def __call__(self, inputs, outputs):
        v = wrap32(inputs[INPUT].astype(np.int64) - self.input_zero_point)
        r = multiply_by_quantized_multiplier(v, self.multiplier, self.shift)
        r += self.output_zero_point
        np.clip(r, self.qmin, self.qmax, out=r)
        np.copyto(outputs[0], r, casting="unsafe")


def requantize_values(
    q: np.ndarray, zp_in: int, multiplier: int, shift: int, zp_out: int, qmin: int, qmax: int
) -> np.ndarray:
    """reference_ops::Requantize on int values (int64 result; the int8<->uint8 "xor 0x80" fast path gives
    the same numbers as this formula)."""
    r = np.asarray(multiply_by_quantized_multiplier(wrap32(np.asarray(q, np.int64) - zp_in), multiplier, shift))
    return np.clip(r + zp_out, qmin, qmax)


_QUANTIZE_OUT_FROM_FLOAT = {np.dtype(t) for t in (np.uint8, np.int8, np.int16)}
_REQUANTIZE = {
    np.dtype(np.int8): {np.dtype(t) for t in (np.uint8, np.int8, np.int16)},
    np.dtype(np.uint8): {np.dtype(t) for t in (np.uint8, np.int8, np.int16)},
    np.dtype(np.int16): {np.dtype(t) for t in (np.int8, np.int16, np.int32)},
    np.dtype(np.int32): {np.dtype(t) for t in (np.int8, np.int16)},
}


def _unsupported(x: TensorInfo, y: TensorInfo) -> str:
    return f"Input type {x.type_name} with Output type {y.type_name} is not currently supported."


@register(BuiltinOperator.QUANTIZE)
def prepare_quantize(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x, y = ctx.input(INPUT), ctx.outputs[0]
    ctx.check(
        bool(y.quantization.scale),
        "output->quantization.type != kTfLiteAffineQuantization: the QUANTIZE output has no quantization parameters",
    )
    ctx.set_output_shape(0, x.shape)
    qmin, qmax = _type_range(y) if y.type not in dtypes.OBJECT_TYPES and y.dtype.kind in "iu" else (0, 0)
    if x.dtype == np.float32 and x.type not in dtypes.OBJECT_TYPES:
        ctx.check(
            y.type == _INT4 or (y.dtype in _QUANTIZE_OUT_FROM_FLOAT and y.type not in dtypes.OBJECT_TYPES),
            _unsupported(x, y),
        )
        if len(y.quantization.scale) > 1:
            ctx.check(y.type != _INT4, _unsupported(x, y))
            scale, zp = per_channel_params(ctx, y)
        else:
            scale, zp = np.asarray(y.scale, _F32), np.asarray(y.zero_point, np.int64)
        overflow = np.clip(wrap32(INT32_MIN + zp), qmin, qmax).astype(y.dtype)
        return quantize_float(scale, zp, qmin, qmax, overflow, tuple(x.shape), y.dtype)
    ctx.check(
        x.type not in dtypes.OBJECT_TYPES
        and x.type != _INT4
        and x.dtype in _REQUANTIZE
        and y.type not in dtypes.OBJECT_TYPES
        and y.type != _INT4
        and y.dtype in _REQUANTIZE[x.dtype],
        _unsupported(x, y),
    )
    if x.dtype == np.int16 and y.dtype == np.int16:
        ctx.check(x.zero_point == 0, f"input->params.zero_point != 0 ({x.zero_point} != 0)")
        ctx.check(y.zero_point == 0, f"output->params.zero_point != 0 ({y.zero_point} != 0)")
    ctx.check(x.scale > 0 and y.scale > 0, f"QUANTIZE needs positive scales, got {x.scale} and {y.scale}")
    real = np.float64(x.scale) / np.float64(y.scale)
    # e.g. inf / 1 or 1e30 / 1e-40: LiteRT's QuantizeMultiplier casts inf to int64, and MultiplyByQuantized-
    # Multiplier shifts by more than 31 bits (both undefined behaviour): refused instead
    bad = f"QUANTIZE: the requantization multiplier input scale / output scale ({x.scale} / {y.scale}) is"
    ctx.check(bool(np.isfinite(real)), f"{bad} not finite")
    multiplier, shift = quantize_multiplier(real)
    ctx.check(-31 <= shift <= 31, f"{bad} outside the fixed-point range (shift {shift} not in [-31, 31])")
    if x.dtype == np.int32:
        return RequantizeInt32(x.zero_point, multiplier, shift, y.zero_point, qmin, qmax)
    table = requantize_values(table_domain(x.dtype), x.zero_point, multiplier, shift, y.zero_point, qmin, qmax)
    return table_lookup(table.astype(y.dtype), x)
