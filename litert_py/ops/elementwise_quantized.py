"""Quantized ADD, SUB, MUL, DIV (uint8, int8, int16): prepared ops and their prepare, dispatched to by
elementwise.py's ``prepare_arithmetic`` (which registers the ops and holds the float/integer paths). Semantics and
sources: see elementwise.py's docstring."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvokeError
from ..quant import (
    LUT_PAIRS_MIN_VALUES,
    dtype_range,
    lut_lookup_pairs,
    lut_pairs,
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
from .bound_plan import bound_plan
from .common import all_values, clip_ufunc, quantized_activation_range
from .registry import OpContext, TensorInfo

INPUT1, INPUT2, OUTPUT = 0, 1, 0
_I8, _U8, _I16 = TensorType.INT8, TensorType.UINT8, TensorType.INT16


# -- quantized ADD, SUB, MUL, DIV -------------------------------------------------------------------
# An 8-bit binary op is a function of the input *pair*, which takes only 65536 values: prepare evaluates the
# reference kernel's integer formula on all of them once (`table8`) and eval is one gather (QuantizedTable8,
# about 1 ns per element where the int64 fixed-point pipeline costs 4-5 ns). The int16 paths (2**32 pairs)
# look the per-input stage up in a 65536-entry table where there is one and run the rest in int64.
_U16 = np.uint16
SMALL_TABLE = 512  # output elements up to which QuantizedTable8 uses fancy indexing


def table8(fn, dtype, lo: int, hi: int, out_dtype) -> np.ndarray:
    """The 65536-entry table of an 8-bit binary op: ``fn(x1, x2)`` (the int32 result before the clamp, as int64)
    on every pair, clamped to [lo, hi]; entry ``byte(x1) << 8 | byte(x2)``."""
    v = all_values(dtype)
    result = np.broadcast_to(fn(v[:, None], v[None, :]), (v.size, v.size))  # fn broadcasts (256, 1) and (1, 256)
    return np.clip(wrap32(result), lo, hi).astype(out_dtype).reshape(-1)


@dataclass(frozen=True, eq=False)
class QuantizedTable8:
    """An 8-bit ADD / SUB / MUL / DIV: ``out = table[byte(x1) << 8 | byte(x2)]`` with NumPy broadcasting.

    ``table`` holds the reference kernel's output for every input pair. DIV checks its divisor first: LiteRT
    fails the invoke when an element of input2 equals input2's zero point.
    """

    table: np.ndarray  # (65536,) of the output dtype
    divisor_zero_point: int | None = None
    small: bool = False  # a few elements: one fancy-indexing call beats the four ufunc calls below
    idx: np.ndarray | None = None  # uint16 table indices, the output's shape (None when small)

    @classmethod
    def build(
        cls, table: np.ndarray, out_shape, divisor_zero_point: int | None = None, in_shapes: tuple = ()
    ) -> QuantizedTable8:
        """The op for an output of ``out_shape``: QuantizedTable8Bytes where both ``in_shapes`` are the output's
        (no broadcasting), it has at most BYTES_MAX_TABLE elements and the op checks no divisor; else fancy
        indexing up to SMALL_TABLE elements, else the gather through an index buffer allocated here, once."""
        values = int(np.prod(out_shape, dtype=np.int64))
        if (
            divisor_zero_point is None
            and values <= BYTES_MAX_TABLE
            and len(in_shapes) == 2
            and all(tuple(s) == tuple(out_shape) for s in in_shapes)
        ):
            idx = np.zeros(out_shape, "<u2")  # little-endian: byte 1 is the high byte on every machine
            pairs = idx.reshape(-1).view(np.uint8).reshape(tuple(out_shape) + (2,))  # (a view, also for 0-d)
            return QuantizedTable8Bytes(table, None, False, idx, pairs[..., 1], pairs[..., 0])
        small = values <= SMALL_TABLE
        if not small and divisor_zero_point is None and len(in_shapes) == 2:
            gate = QuantizedTable8Broadcast.of(table, out_shape, in_shapes)
            if gate is not None:
                return gate
        return cls(table, divisor_zero_point, small, None if small else np.empty(out_shape, _U16))

    _bound = None  # bind's (input 1, input 2, output, its numpy calls as (function, args, kwargs)), or None

    def bind(self, inputs, outputs) -> None:
        """Its numpy calls on the arrays it is bound to (ops/fusion.bind_steps; ``bound_calls``), so that __call__
        runs them without making views or reading attributes first; called with other arrays (a delegate's
        fallback chain), it takes the general path. Bit-identical: the same calls on the same arrays."""
        a, b, out = inputs[INPUT1], inputs[INPUT2], outputs[OUTPUT]
        calls = None if a is None or b is None or out is None else self.bound_calls(a, b, out)
        if calls is not None:
            object.__setattr__(self, "_bound", (a, b, out, bound_plan(calls)))

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple | None:
        """__call__'s numpy calls on these arrays, or None (a DIV's divisor check, the small fancy indexing, a
        resized output)."""
        idx = self.idx
        if self.divisor_zero_point is not None or self.small or idx is None or idx.shape != out.shape:
            return None
        shift = (np.left_shift, (a.view(np.uint8), 8), {"out": idx, "dtype": _U16})
        index = (np.bitwise_or, (idx, b.view(np.uint8)), {"out": idx})
        return shift, index, (np.take, (self.table, idx), {"out": out, "mode": "wrap"})

    def __call__(self, inputs, outputs):
        bound = self._bound
        if bound is not None and bound[0] is inputs[INPUT1] and bound[1] is inputs[INPUT2] and bound[2] is outputs[0]:
            for call in bound[3]:
                call()
            return
        a, b = inputs[INPUT1], inputs[INPUT2]
        if self.divisor_zero_point is not None and (b == self.divisor_zero_point).any():
            raise InvokeError("DIV: an element of input2 equals its zero point (data[i] != zero_point)")
        out = outputs[OUTPUT]
        if self.small:
            out[...] = self.table.reshape(256, 256)[a.view(np.uint8), b.view(np.uint8)]
            return
        idx = self.idx if self.idx is not None and self.idx.shape == out.shape else np.empty(out.shape, _U16)
        np.left_shift(a.view(np.uint8), 8, out=idx, dtype=_U16)
        np.bitwise_or(idx, b.view(np.uint8), out=idx)
        np.take(self.table, idx, out=out, mode="wrap")  # every index is < 65536: "wrap" skips the bounds check


#: QuantizedTable8Bytes up to this many elements (measured, 1 thread, against the shift / or / take form and
#: the fancy indexing of SMALL_TABLE: 256 values 3.4 / 2.9 -> 2.2 us, 448 3.6 / 3.5 -> 2.5, 1560 4.8 -> 3.9,
#: 6000 8.1 -> 8.6 us: kept).
BYTES_MAX_TABLE = 2048


@dataclass(frozen=True, eq=False)
class QuantizedTable8Bytes(QuantizedTable8):
    """QuantizedTable8 for same-shape inputs and output (no broadcasting): the table index
    ``byte(x1) << 8 | byte(x2)`` is built by two plain byte copies, x1's bytes into the high and x2's into the low
    bytes of a little-endian uint16 index buffer (the same index value), then one gather: no widening shift and
    no second pass over the index. Inputs of other shapes (a resized op) take QuantizedTable8's path."""

    high: np.ndarray | None = None  # (out shape) uint8 view of the index buffer's high bytes
    low: np.ndarray | None = None  # its low bytes

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple | None:
        """__call__'s numpy calls on these arrays, or None (other shapes)."""
        high = self.high
        if a.shape != high.shape or b.shape != high.shape or out.shape != high.shape:
            return None
        take = (np.take, (self.table, self.idx), {"out": out, "mode": "wrap"})
        return (np.copyto, (high, a.view(np.uint8)), {}), (np.copyto, (self.low, b.view(np.uint8)), {}), take

    def __call__(self, inputs, outputs):
        bound = self._bound
        if bound is not None and bound[0] is inputs[INPUT1] and bound[1] is inputs[INPUT2] and bound[2] is outputs[0]:
            for call in bound[3]:
                call()
            return
        a, b, out = inputs[INPUT1], inputs[INPUT2], outputs[OUTPUT]
        high = self.high
        if a.shape != high.shape or b.shape != high.shape or out.shape != high.shape:
            return QuantizedTable8.__call__(self, inputs, outputs)
        np.copyto(high, a.view(np.uint8))
        np.copyto(self.low, b.view(np.uint8))
        np.take(self.table, self.idx, out=out, mode="wrap")  # every index is < 65536


@dataclass(frozen=True, eq=False)
class QuantizedTable8Broadcast(QuantizedTable8):
    """QuantizedTable8 where one input (``full``) has the output's shape and the other (``small``) has fewer values
    and broadcasts (MobileNet-v3's squeeze-excite MUL of a feature map by a (1, 1, 1, C) gate): the table is
    stored transposed at prepare, ``table[byte(small) << 8 | byte(full)]``, so the shift runs over the small
    operand only and one broadcasting OR over the full one builds the index (two passes over the output instead
    of three); the gate's few values then also select few 256-entry rows of the table (fewer cache lines).
    Exact: the transposed table holds the same entries, each read by its own (x1, x2) pair. Inputs of other
    shapes (a resized op) take QuantizedTable8's path with the table transposed back."""

    full: int = INPUT1  # the input with the output's shape
    small_shape: tuple = ()

    @staticmethod
    def of(table: np.ndarray, out_shape, in_shapes) -> QuantizedTable8Broadcast | None:
        shapes = [tuple(s) for s in in_shapes]
        out_shape = tuple(out_shape)
        if shapes.count(out_shape) != 1:
            return None
        full = shapes.index(out_shape)
        small_shape = shapes[1 - full]
        if int(np.prod(small_shape, dtype=np.int64)) >= int(np.prod(out_shape, dtype=np.int64)):
            return None
        pairs = table.reshape(256, 256)  # [byte(x1), byte(x2)]
        swapped = np.ascontiguousarray(pairs.T if full == INPUT1 else pairs).reshape(-1)  # [byte(small), byte(full)]
        return QuantizedTable8Broadcast(swapped, None, False, np.empty(out_shape, _U16), full, small_shape)

    def pair_table(self) -> np.ndarray:
        """The table in QuantizedTable8's order, ``byte(x1) << 8 | byte(x2)``."""
        pairs = self.table.reshape(256, 256)
        return np.ascontiguousarray(pairs.T if self.full == INPUT1 else pairs).reshape(-1)

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple | None:
        """__call__'s numpy calls on these arrays (the shifted small operand into a uint16 buffer of its own,
        allocated here: the same values as __call__'s new array), or None (other shapes)."""
        full, small = (a, b) if self.full == INPUT1 else (b, a)
        idx = self.idx
        if full.shape != idx.shape or small.shape != self.small_shape or out.shape != idx.shape:
            return None
        high = np.empty(small.shape, _U16)
        shift = (np.left_shift, (small.view(np.uint8), 8), {"out": high, "dtype": _U16})
        index = (np.bitwise_or, (high, full.view(np.uint8)), {"out": idx})
        return shift, index, (np.take, (self.table, idx), {"out": out, "mode": "wrap"})

    def __call__(self, inputs, outputs):
        bound = self._bound
        if bound is not None and bound[0] is inputs[INPUT1] and bound[1] is inputs[INPUT2] and bound[2] is outputs[0]:
            for call in bound[3]:
                call()
            return
        full, small, out = inputs[self.full], inputs[1 - self.full], outputs[OUTPUT]
        idx = self.idx
        if full.shape != idx.shape or small.shape != self.small_shape or out.shape != idx.shape:
            return QuantizedTable8(self.pair_table())(inputs, outputs)
        high = np.left_shift(small.view(np.uint8), 8, dtype=_U16)
        np.bitwise_or(high, full.view(np.uint8), out=idx)
        np.take(self.table, idx, out=out, mode="wrap")  # every index is < 65536


@dataclass(frozen=True, eq=False)
class QuantizedTable8Scalar:
    """An 8-bit ADD / SUB / MUL / DIV whose other operand is a one-value constant: ``out = lut[byte(x)]``, one
    gather from the 256 entries of the pair table's row or column for that constant (instead of building
    the 16-bit pair index in two passes, then gathering from the 65536-entry table): bit-exact, the entries are
    the pair table's own. ``operand`` is the input that varies; the output has as many values as it (the
    constant broadcasts as a scalar), so a different rank is a reshape."""

    lut: np.ndarray  # (256,) of the output dtype, indexed by the varying input's byte
    operand: int  # INPUT1 or INPUT2

    @staticmethod
    def of(table: np.ndarray, a: TensorInfo, b: TensorInfo, out: TensorInfo) -> QuantizedTable8Scalar | None:
        """The op when exactly one input is a constant of one value (and the output has the other's size; a
        dynamic input keeps the pair table), else None."""
        if a.dynamic or b.dynamic or out.dynamic or a.is_constant == b.is_constant:
            return None
        const, operand = (b, INPUT1) if b.is_constant else (a, INPUT2)
        if const.size != 1 or out.size != (a, b)[operand].size:
            return None
        byte = int(np.asarray(const.data).reshape(-1).view(np.uint8)[0])
        pairs = table.reshape(256, 256)  # [byte(x1), byte(x2)]
        lut = np.ascontiguousarray(pairs[:, byte] if operand == INPUT1 else pairs[byte, :])
        x = (a, b)[operand]
        if x.size >= LUT_PAIRS_MIN_VALUES and x.size % 2 == 0 and tuple(x.shape) == tuple(out.shape):
            return QuantizedTable8ScalarPairs(lut, operand, lut_pairs(lut))
        return QuantizedTable8Scalar(lut, operand)

    _bound = None  # bind's (varying input, output, its numpy calls as partial objects), or None

    def bind(self, inputs, outputs) -> None:
        """Its numpy calls on the arrays it is bound to (ops/fusion.bind_steps; ``bound_calls``), so that __call__
        runs them without making views or reading attributes first; called with other arrays, it takes the
        general path. Bit-identical: the same calls on the same arrays."""
        x, out = inputs[self.operand], outputs[OUTPUT]
        if x is not None and out is not None:
            object.__setattr__(self, "_bound", (x, out, bound_plan(self.bound_calls(x, out))))

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on these arrays."""
        if x.shape != out.shape:
            x = x.reshape(out.shape)
        return ((np.take, (self.lut, x.view(np.uint8)), {"out": out, "mode": "wrap"}),)

    def __call__(self, inputs, outputs):
        x, out = inputs[self.operand], outputs[OUTPUT]
        b = self._bound
        if b is not None and b[0] is x and b[1] is out:
            for call in b[2]:
                call()
            return
        if x.shape != out.shape:
            x = x.reshape(out.shape)  # same size: the constant broadcasts as a scalar
        np.take(self.lut, x.view(np.uint8), out=out, mode="wrap")  # every index is < 256


@dataclass(frozen=True, eq=False)
class QuantizedTable8ScalarPairs(QuantizedTable8Scalar):
    """QuantizedTable8Scalar over many values (at least quant.LUT_PAIRS_MIN_VALUES, an even number, the output's
    shape): two input bytes per gather from ``pairs`` (quant.lut_pairs of ``lut``, 65,536 uint16 entries).
    Exact: every output byte is ``lut``'s own entry for its input byte (no bound). An input or output that is
    not C-contiguous or odd-sized (a resized op) takes QuantizedTable8Scalar's byte gather."""

    pairs: np.ndarray | None = None

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on these arrays (lut_lookup_pairs's gather; QuantizedTable8Scalar's where that
        declines)."""
        if x.shape != out.shape or x.size % 2 or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return super().bound_calls(x, out)
        pairs = x.reshape(-1).view(np.uint16), out.reshape(-1).view(np.uint16)
        return ((np.take, (self.pairs, pairs[0]), {"out": pairs[1], "mode": "wrap"}),)

    def __call__(self, inputs, outputs):
        x, out = inputs[self.operand], outputs[OUTPUT]
        b = self._bound
        if b is not None and b[0] is x and b[1] is out:
            for call in b[2]:
                call()
            return
        if x.shape != out.shape or not lut_lookup_pairs(x, self.pairs, out):
            QuantizedTable8Scalar.__call__(self, inputs, outputs)


def _table_op(table: np.ndarray, a: TensorInfo, b: TensorInfo, out: TensorInfo, divisor_zero_point=None):
    """QuantizedTable8Scalar where one input is a one-value constant (DIV: not a zero divisor), else
    QuantizedTable8.build's choice."""
    if divisor_zero_point is None or (b.is_constant and int(np.asarray(b.data).reshape(-1)[0]) != divisor_zero_point):
        scalar = QuantizedTable8Scalar.of(table, a, b, out)
        if scalar is not None:
            return scalar
    return QuantizedTable8.build(table, out.shape, divisor_zero_point, _static(a, b, out))


def _buffer(shape, dtype, prepared: np.ndarray | None) -> np.ndarray:
    """``prepared`` (a buffer allocated at prepare) when it has ``shape``, else a new one (an op prepared for
    other shapes, e.g. on the dynamic path): the int16 ops allocate nothing per invoke on static shapes."""
    return prepared if prepared is not None and prepared.shape == shape else np.empty(shape, dtype)


def _static(a: TensorInfo, b: TensorInfo, out: TensorInfo) -> tuple:
    """The two inputs' shapes when they and the output's are static (QuantizedTable8.build's ``in_shapes``),
    else ()."""
    return () if a.dynamic or b.dynamic or out.dynamic else (tuple(a.shape), tuple(b.shape))


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

    return _table_op(table8(add_sub, a.dtype, lo, hi, out.dtype), a, b, out)


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

    return _table_op(table8(mul, a.dtype, lo, hi, out.dtype), a, b, out)


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

    return _table_op(table8(div, a.dtype, lo, hi, out.dtype), a, b, out, divisor_zero_point=z2)


#: the quantized paths' prepare per op (elementwise.py's prepare_arithmetic dispatches to them)
PREPARE_QUANTIZED = {
    BuiltinOperator.ADD: _prepare_add_sub_quantized,
    BuiltinOperator.SUB: _prepare_add_sub_quantized,
    BuiltinOperator.MUL: _prepare_mul_quantized,
    BuiltinOperator.DIV: _prepare_div_quantized,
}
