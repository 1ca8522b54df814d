"""Quantized ADD, SUB, MUL, DIV (uint8, int8, int16): prepared ops and their prepare, dispatched to by
elementwise.py's ``prepare_arithmetic`` (which registers the ops and holds the float/integer paths). Semantics and
sources: see elementwise.py's docstring."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InvokeError
from ..quant import (
    dtype_range,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    requantize_int64_inplace,
    wrap32,
)
from ..quant import saturating_rounding_doubling_high_mul as srdhm
from ..quant.gemmlowp import (
    checked_log2,
    count_leading_sign_bits,
    get_reciprocal,
    rdbpot16,
    rounding_divide_by_pot_x86,
)
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .common import all_values, clip_ufunc, quantized_activation_range
from .registry import OpContext, TensorInfo
from .table8 import (  # noqa: F401  (re-exported: the 8-bit table ops' home before they moved)
    BYTES_MAX_TABLE,
    SMALL_TABLE,
    QuantizedTable8,
    QuantizedTable8Broadcast,
    QuantizedTable8Bytes,
    QuantizedTable8Scalar,
    QuantizedTable8ScalarPairs,
    table8,
    table_op,
)

INPUT1, INPUT2, OUTPUT = 0, 1, 0
_U16 = np.uint16
_I8, _U8, _I16 = TensorType.INT8, TensorType.UINT8, TensorType.INT16

# -- quantized ADD, SUB, MUL, DIV -------------------------------------------------------------------
# The 8-bit ops are table lookups (table8.py). The int16 paths (2**32 pairs) look the per-input stage up in a
# 65536-entry table where there is one and run the rest in int64.


def _buffer(shape, dtype, prepared: np.ndarray | None) -> np.ndarray:
    """``prepared`` (a buffer allocated at prepare) when it has ``shape``, else a new one (an op prepared for
    other shapes, e.g. on the dynamic path): the int16 ops allocate nothing per invoke on static shapes."""
    return prepared if prepared is not None and prepared.shape == shape else np.empty(shape, dtype)


@dataclass(frozen=True, eq=False)
class Scratch16:
    """The int16 ops' per-invoke buffers, allocated at prepare: the accumulator (the output's shape) and the
    per-input LUT results (each input's shape). Every element is written before it is read."""

    acc: np.ndarray | None = None
    lut1: np.ndarray | None = None
    lut2: np.ndarray | None = None

    @staticmethod
    def build(ctx: OpContext, acc_dtype, luts: bool = False) -> Scratch16:
        a, b, out = ctx.input(INPUT1), ctx.input(INPUT2), ctx.outputs[OUTPUT]
        if a.dynamic or b.dynamic or out.dynamic:
            return Scratch16()
        if not luts:
            return Scratch16(np.empty(out.shape, acc_dtype))
        return Scratch16(np.empty(out.shape, acc_dtype), np.empty(a.shape, np.int32), np.empty(b.shape, np.int32))


NO_SCRATCH = Scratch16()


@dataclass(frozen=True, eq=False)
class AddSubQuantized16:
    """int16 ADD / SUB, general scales (zero points 0): ``clamp(MBQM(lut1[x1] +- lut2[x2], M, shift))``.

    ``lut_k[x] = MBQM(x << 15, M_k, shift_k)`` for every int16 ``x``: the per-input rescaling of
    reference_ops::AddElementwise / SubElementwise. ``|lut| < 2**30``, so the int32 sum never wraps.
    """

    lut1: np.ndarray  # (65536,) int32
    lut2: np.ndarray
    subtract: bool
    multiplier: int
    shift: int
    lo: int
    hi: int
    scratch: Scratch16 = NO_SCRATCH  # int64 accumulator, int32 LUT results

    def __call__(self, inputs, outputs):
        out, x1, x2, buf = outputs[OUTPUT], inputs[INPUT1], inputs[INPUT2], self.scratch
        acc = _buffer(out.shape, np.int64, buf.acc)
        a = np.take(self.lut1, x1.view(_U16), mode="wrap", out=_buffer(x1.shape, np.int32, buf.lut1))
        b = np.take(self.lut2, x2.view(_U16), mode="wrap", out=_buffer(x2.shape, np.int32, buf.lut2))
        (np.subtract if self.subtract else np.add)(a, b, out=acc)
        requantize_int64_inplace(acc, self.multiplier, self.shift, 0, self.lo, self.hi, out)


@dataclass(frozen=True, eq=False)
class AddSubPot16:
    """int16 ADD / SUB with power-of-two scales (the LSTM path, zero points 0): an input whose scale is below
    the output's is rounded right (int16 ``RoundingDivideByPOT``, looked up in its ``lut``), then
    ``clamp(x1 +- x2, lo, hi)``.

    reference_ops::Add (int16, pot_scale) adds with int16 saturation, Sub16 subtracts with int16 saturation and
    BroadcastSub16POTSlow in int32: each equals the int32 result clamped to [lo, hi], a sub-range of int16.
    """

    lut1: np.ndarray | None  # (65536,) int32; None: the input is taken as is
    lut2: np.ndarray | None
    subtract: bool
    lo: int
    hi: int
    scratch: Scratch16 = NO_SCRATCH  # int32 accumulator, int32 LUT results

    def __call__(self, inputs, outputs):
        a, b, buf = inputs[INPUT1], inputs[INPUT2], self.scratch
        if self.lut1 is not None:
            a = np.take(self.lut1, a.view(_U16), mode="wrap", out=_buffer(a.shape, np.int32, buf.lut1))
        if self.lut2 is not None:
            b = np.take(self.lut2, b.view(_U16), mode="wrap", out=_buffer(b.shape, np.int32, buf.lut2))
        out = outputs[OUTPUT]
        acc = _buffer(out.shape, np.int32, buf.acc)
        (np.subtract if self.subtract else np.add)(a, b, out=acc, dtype=np.int32)
        clip_ufunc(acc, self.lo, self.hi, out=out, casting="unsafe")


@dataclass(frozen=True, eq=False)
class MulQuantized16:
    """int16 MUL (zero points 0): ``clamp(MBQM(x1 * x2, M, shift), lo, hi)``; the product fits int32."""

    multiplier: int
    shift: int
    lo: int
    hi: int
    scratch: Scratch16 = NO_SCRATCH  # int64 accumulator

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        acc = _buffer(out.shape, np.int64, self.scratch.acc)
        np.multiply(inputs[INPUT1], inputs[INPUT2], out=acc, dtype=np.int64)
        requantize_int64_inplace(acc, self.multiplier, self.shift, 0, self.lo, self.hi, out)


@dataclass(frozen=True, eq=False)
class MulInt16ToInt8:
    """int16 x int16 -> int8 / uint8 MUL, the LSTM legacy path of reference_integer_ops::Mul /
    reference_ops::Mul: the Q0.15 product ``SRDHM16(x1, x2)`` rounded right by 8 bits (ties away from zero),
    clamped to ``[lo - zo, hi - zo]``, plus ``zo``. Scales and the multiplier play no part."""

    zero_point: int
    lo: int
    hi: int
    scratch: Scratch16 = NO_SCRATCH  # int64 product

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        p = _buffer(out.shape, np.int64, self.scratch.acc)
        np.multiply(inputs[INPUT1], inputs[INPUT2], out=p, dtype=np.int64)
        saturated = p == 1 << 30  # (-32768)**2
        p += 1 << 14  # SRDHM16: (p + 2**14) >> 15, ties toward +inf ...
        p >>= 15
        np.copyto(p, 32767, where=saturated)  # ... except (-32768)**2 -> 32767
        p += 128
        p -= p < 128  # RoundingDivideByPOT(y, 8) = (y + 128 - [y < 0]) >> 8: ties away from zero
        p >>= 8
        clip_ufunc(p, self.lo - self.zero_point, self.hi - self.zero_point, out=p)
        np.add(p, self.zero_point, out=out, casting="unsafe")


def _div_quantized(a: np.ndarray, b: np.ndarray, multiplier: int, shift: int, reciprocals=None) -> np.ndarray:
    """reference_ops::DivElementwise before the output offset: a = x1 - z1, b = x2 - z2 (b != 0), int64 arrays.

    1/b comes from GetReciprocal (Newton-Raphson in Q2.29), a is normalised by its headroom, and the quotient
    is rescaled with ``MultiplyByQuantizedMultiplierSmallerThanOneExp(q, M, shift - bits_over_unit - headroom)``,
    whose exponent often leaves [-31, 0] (e.g. 1/127 with all scales 1): LiteRT then computes garbage, and so
    do we, the same garbage (``rounding_divide_by_pot_x86``). ``reciprocals``: optional tables
    ``(inverse[b], bits_over_unit[b])`` covering every |b| that occurs.
    """
    neg = b < 0
    a = np.where(neg, wrap32(-a), a)
    b = np.where(neg, wrap32(-b), b)
    b = np.where(b == 0, 1, b)  # a zero divisor never reaches the kernel (checked at invoke)
    if reciprocals is None:
        inverse, bits_over_unit = get_reciprocal(b, 31)
    else:
        inverse, bits_over_unit = reciprocals[0][b], reciprocals[1][b]
    headroom = count_leading_sign_bits(a)
    quotient = srdhm(wrap32(a << headroom), inverse)  # MultiplyByQuantizedMultiplierGreaterThanOne
    return rounding_divide_by_pot_x86(srdhm(quotient, multiplier), bits_over_unit + headroom - shift)


@dataclass(frozen=True, eq=False)
class DivQuantized16:
    """int16 DIV: ``clamp(zo + _div_quantized(x1 - z1, x2 - z2), lo, hi)``, per element in int64."""

    zero_points: tuple[int, int, int]
    multiplier: int
    shift: int
    lo: int
    hi: int
    reciprocals: tuple[np.ndarray, np.ndarray]  # GetReciprocal(b, 31) for every |x2 - z2| that can occur
    #: div.cc checks input2 against its zero point at eval, also on an empty output and on constants (the node
    #: runs; see runtime/subgraph)
    checks_values_at_eval: ClassVar[bool] = True

    def __call__(self, inputs, outputs):
        z1, z2, zo = self.zero_points
        a, b = inputs[INPUT1], inputs[INPUT2]
        if (b == z2).any():
            raise InvokeError("DIV: an element of input2 equals its zero point (data[i] != zero_point)")
        a, b = np.broadcast_arrays(a.astype(np.int64) - z1, b.astype(np.int64) - z2)
        r = _div_quantized(a, b, self.multiplier, self.shift, self.reciprocals)
        clip_ufunc(wrap32(r + zo), self.lo, self.hi, out=outputs[OUTPUT], casting="unsafe")


# -- quantized prepare ------------------------------------------------------------------------------
def check_scales(ctx: OpContext, *tensors: TensorInfo, names=("input1", "input2", "output")) -> None:
    """Per-tensor quantization with a positive, finite scale on every tensor (LiteRT reads ``params.scale``;
    a missing scale is 0, which makes its multipliers 0 or NaN and aborts or garbles the kernel)."""
    for name, t in zip(names, tensors):
        q = t.quantization
        ctx.check(
            len(q.scale) <= 1,
            f"{ctx.op_name}: {name} has per-channel quantization ({len(q.scale)} scales); only per-tensor is supported",
        )
        ctx.check(
            q.is_quantized and np.isfinite(t.scale) and t.scale > 0,
            f"{ctx.op_name} on {t.type_name} needs a quantized {name} with a positive scale "
            f"(got {t.scale if q.is_quantized else 'none'})",
        )


def _zero_point_is_zero(ctx: OpContext, *tensors: TensorInfo) -> None:
    for name, t in zip(("input1", "input2", "output"), tensors):
        ctx.check(t.zero_point == 0, f"{name}->params.zero_point != 0 ({t.zero_point} != 0)")


def smaller_than_one_exp(ctx: OpContext, real: float, what: str) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: LiteRT CHECK-fails (aborts) unless 0 < real < 1 and shift <= 0."""
    ok = 0.0 < real < 1.0
    m, shift = quantize_multiplier(real) if ok else (0, 1)
    ctx.check(
        ok and shift <= 0,
        f"{ctx.op_name}: the {what} multiplier {real!r} is not in (0, 1) (LiteRT's "
        "QuantizeMultiplierSmallerThanOneExp aborts on it)",
    )
    return m, shift


def _quantize_multiplier_checked(ctx: OpContext, real, what: str) -> tuple[int, int]:
    """QuantizeMultiplier of a float32 real multiplier, whose shift MultiplyByQuantizedMultiplier can apply."""
    real = float(real)
    ctx.check(np.isfinite(real), f"{ctx.op_name}: the {what} multiplier is not finite ({real})")
    m, shift = quantize_multiplier(real)
    ctx.check(-31 <= shift <= 31, f"{ctx.op_name}: the {what} multiplier {real!r} is out of range (shift {shift})")
    return m, shift


def _prepare_add_sub_quantized(ctx: OpContext, a: TensorInfo, b: TensorInfo):
    out = ctx.outputs[OUTPUT]
    subtract = ctx.builtin_code == BuiltinOperator.SUB
    check_scales(ctx, a, b, out)
    lo, hi = quantized_activation_range(ctx, out)
    s1, s2, so = (np.float32(t.scale) for t in (a, b, out))
    z1, z2, zo = a.zero_point, b.zero_point, out.zero_point
    if a.type == _I16:
        _zero_point_is_zero(ctx, a, b, out)
        logs = [r if ok else None for ok, r in map(checked_log2, (s1, s2, so))]
        if not ctx.options.pot_scale_int16:
            logs = [None]
        if None not in logs:
            return _prepare_pot16(ctx, a, b, logs, subtract, lo, hi)
    elif subtract:  # PrepareGeneralSubOp
        qmin, qmax = dtype_range(out.dtype)
        for name, z in (("input1", z1), ("input2", z2), ("output", zo)):
            ctx.check(qmin <= z <= qmax, f"{name} zero point {z} is outside [{qmin}, {qmax}]")
    left_shift = 15 if a.type == _I16 else 20
    with np.errstate(over="ignore"):
        twice_max = np.float32(2) * max(s1, s2)  # 2 * std::max(float, float) is a float product
        denominator = np.float32(1 << left_shift) * so
    m1, e1 = smaller_than_one_exp(ctx, float(s1) / float(twice_max), "input1")
    m2, e2 = smaller_than_one_exp(ctx, float(s2) / float(twice_max), "input2")
    # SUB takes QuantizeMultiplierGreaterThanOne for an output multiplier > 1 and then shifts right by a
    # negative amount, undefined behaviour whose result depends on how the loop was vectorized (we saw
    # zo +- 1 in vectorized loops, other values in scalar ones); ADD aborts. Both are rejected.
    mo, eo = smaller_than_one_exp(ctx, float(twice_max) / float(denominator), "output")
    if a.type == _I16:
        v = all_values(np.int16)
        return AddSubQuantized16(
            multiply_by_quantized_multiplier(v << left_shift, m1, e1).astype(np.int32),
            multiply_by_quantized_multiplier(v << left_shift, m2, e2).astype(np.int32),
            subtract,
            mo,
            eo,
            lo,
            hi,
            Scratch16.build(ctx, np.int64, luts=True),
        )

    def add_sub(x1, x2):  # reference_ops::AddElementwise / SubElementwise, per pair
        r1 = multiply_by_quantized_multiplier(wrap32((x1 - z1) << left_shift), m1, e1)
        r2 = multiply_by_quantized_multiplier(wrap32((x2 - z2) << left_shift), m2, e2)
        return multiply_by_quantized_multiplier(wrap32(r1 - r2 if subtract else r1 + r2), mo, eo) + zo

    return table_op(table8(add_sub, a.dtype, lo, hi, out.dtype), a, b, out)


def _prepare_pot16(ctx: OpContext, a: TensorInfo, b: TensorInfo, logs, subtract: bool, lo: int, hi: int):
    """The int16 power-of-two-scale path of add.cc / sub.cc (PrepareInt16SubOpPOT)."""
    shift1, shift2 = logs[0] - logs[2], logs[1] - logs[2]
    ctx.check(shift1 == 0 or shift2 == 0, "data->input1_shift == 0 || data->input2_shift == 0 was not true.")
    ctx.check(shift1 <= 0, "data->input1_shift <= 0 was not true.")
    ctx.check(shift2 <= 0, "data->input2_shift <= 0 was not true.")
    ctx.check(
        max(-shift1, -shift2) <= 31,
        f"{ctx.op_name}: input/output scale ratio 2**{min(shift1, shift2)} is "
        "below 2**-31 (RoundingDivideByPOT's limit)",
    )
    if not subtract:  # reference_ops::Add (int16, POT) has no broadcasting: MatchingElementsSize CHECK-fails
        out = ctx.outputs[OUTPUT]
        ctx.check(
            a.size == b.size == out.size,
            f"ADD with power-of-two int16 scales does not broadcast "
            f"({list(a.shape)} and {list(b.shape)}); LiteRT aborts",
        )
    v = all_values(np.int16)

    def lut(shift):
        return None if shift == 0 else rdbpot16(v, -shift).astype(np.int32)

    return AddSubPot16(lut(shift1), lut(shift2), subtract, lo, hi, Scratch16.build(ctx, np.int32, luts=True))


def _prepare_mul_quantized(ctx: OpContext, a: TensorInfo, b: TensorInfo):
    out = ctx.outputs[OUTPUT]
    if a.type == _I16 and out.type in (_I8, _U8):  # the LSTM legacy path: no broadcasting (LiteRT aborts)
        check_scales(ctx, out, names=("output",))  # the input scales play no part
        lo, hi = quantized_activation_range(ctx, out)
        ctx.check(
            a.size == b.size == out.size,
            f"MUL int16 -> {out.type_name} does not broadcast ({list(a.shape)} and {list(b.shape)}); LiteRT aborts",
        )
        return MulInt16ToInt8(out.zero_point, lo, hi, Scratch16.build(ctx, np.int64))
    check_scales(ctx, a, b, out)
    lo, hi = quantized_activation_range(ctx, out)
    with np.errstate(over="ignore", under="ignore"):
        real = np.float32(a.scale) * np.float32(b.scale) / np.float32(out.scale)  # float32, as mul.cc
    m, shift = _quantize_multiplier_checked(ctx, real, "output")
    z1, z2, zo = a.zero_point, b.zero_point, out.zero_point
    if a.type == _I16:  # EvalQuantized: TF_LITE_ENSURE_EQ(input1_offset, 0) ... (at invoke in LiteRT)
        _zero_point_is_zero(ctx, a, b, out)
        return MulQuantized16(m, shift, lo, hi, Scratch16.build(ctx, np.int64))

    def mul(x1, x2):  # reference_integer_ops::MulElementwise / reference_ops::MulElementwise, per pair
        return multiply_by_quantized_multiplier(wrap32((x1 - z1) * (x2 - z2)), m, shift) + zo

    return table_op(table8(mul, a.dtype, lo, hi, out.dtype), a, b, out)


def _prepare_div_quantized(ctx: OpContext, a: TensorInfo, b: TensorInfo):
    out = ctx.outputs[OUTPUT]
    check_scales(ctx, a, b, out)
    lo, hi = quantized_activation_range(ctx, out)
    with np.errstate(over="ignore", under="ignore"):
        real = np.float32(a.scale) / (np.float32(b.scale) * np.float32(out.scale))  # float32, as div.cc
    real = float(real)
    ctx.check(np.isfinite(real), f"DIV: the output multiplier is not finite ({real})")
    m, shift = quantize_multiplier(real)  # any shift: the kernel's exponent arithmetic is emulated throughout
    qmin, qmax = dtype_range(out.dtype)
    z1, z2, zo = a.zero_point, b.zero_point, out.zero_point
    for name, z in (("input1", z1), ("input2", z2), ("output", zo)):  # DivCheckArithmeticParams
        ctx.check(-qmax - 1 <= z <= qmax + 1, f"{name} zero point {z} is outside [{-qmax - 1}, {qmax + 1}]")
    if a.type == _I16:
        b_max = max(abs(qmin - z2), abs(qmax - z2))
        return DivQuantized16((z1, z2, zo), m, shift, lo, hi, get_reciprocal(np.arange(b_max + 1).clip(1), 31))

    def div(x1, x2):
        return _div_quantized(x1 - z1, x2 - z2, m, shift) + zo

    return table_op(table8(div, a.dtype, lo, hi, out.dtype), a, b, out, divisor_zero_point=z2)


#: the quantized paths' prepare per op (elementwise.py's prepare_arithmetic dispatches to them)
PREPARE_QUANTIZED = {
    BuiltinOperator.ADD: _prepare_add_sub_quantized,
    BuiltinOperator.SUB: _prepare_add_sub_quantized,
    BuiltinOperator.MUL: _prepare_mul_quantized,
    BuiltinOperator.DIV: _prepare_div_quantized,
}
