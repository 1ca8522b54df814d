"""The 8-bit quantized ADD, SUB, MUL, DIV (uint8, int8) as table lookups: ``table8`` evaluates the reference
kernel's integer formula on all 65536 input pairs at prepare and the prepared ops (QuantizedTable8 and its forms,
QuantizedTable8Scalar for a one-value constant operand) gather from it. Prepared by elementwise_quantized.py
(which holds the prepares, the int16 paths and re-exports these names); semantics and sources: see
elementwise.py's docstring. Each op is a bound_plan.BoundCalls2: its numpy calls on the arrays
ops/fusion.bind_steps binds it to (both inputs), made once; other arrays are bound the same way first (one path)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvokeError
from ..quant import LUT_PAIRS_MIN_VALUES, lut_pairs, wrap32
from .bound_plan import BoundCalls2
from .common import all_values
from .into_reshape import into_reshape, is_reshape_copy
from .registry import TensorInfo

INPUT1, INPUT2, OUTPUT = 0, 1, 0


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
class QuantizedTable8(BoundCalls2):
    """An 8-bit ADD / SUB / MUL / DIV: ``out = table[byte(x1) << 8 | byte(x2)]`` with NumPy broadcasting.

    ``table`` holds the reference kernel's output for every input pair. DIV checks its divisor first: LiteRT
    fails the invoke when an element of input2 equals input2's zero point.
    """

    table: np.ndarray  # (65536,) of the output dtype
    divisor_zero_point: int | None = None
    small: bool = False  # a few elements: one fancy-indexing call beats the four ufunc calls below
    idx: np.ndarray | None = None  # uint16 table indices, the output's shape (None when small)

    def feeding(self, consumer):
        """This op storing into the output of a RESHAPE copy that alone reads its output (ops/into_reshape.py; the
        index-buffer forms, whose buffer has the output's shape), or None."""
        return None if self.idx is None else into_reshape(self, consumer, self.idx.shape)

    @property
    def checks_values_at_eval(self) -> bool:
        """DIV checks its divisor at eval, also on an empty output and on constants (div.cc's ``data[i] !=
        zero_point``; the node runs, see runtime/subgraph)."""
        return self.divisor_zero_point is not None

    @classmethod
    def build(
        cls, table: np.ndarray, out_shape, divisor_zero_point: int | None = None, in_shapes: tuple = ()
    ) -> QuantizedTable8:
        """The op for an output of ``out_shape``: QuantizedTable8Bytes where it has at most BYTES_MAX_TABLE
        elements and the op checks no divisor (broadcasting inputs: their byte copies broadcast into the index);
        else fancy
        indexing up to SMALL_TABLE elements, else the gather through an index buffer allocated here, once."""
        values = int(np.prod(out_shape, dtype=np.int64))
        out_shape = tuple(int(d) for d in out_shape)
        shapes = tuple(tuple(int(d) for d in s) for s in in_shapes)
        if divisor_zero_point is None and values <= BYTES_MAX_TABLE and len(shapes) == 2:
            same = all(s == out_shape for s in shapes)
            if not same and np.broadcast_shapes(*shapes, out_shape) == out_shape and values > SMALL_TABLE:
                gate = QuantizedTable8Broadcast.of(table, out_shape, shapes)  # one input of the output's shape
                if gate is not None:
                    return gate
            if same or np.broadcast_shapes(*shapes, out_shape) == out_shape:
                idx = np.zeros(out_shape, "<u2")  # little-endian: byte 1 is the high byte on every machine
                pairs = idx.reshape(-1).view(np.uint8).reshape(out_shape + (2,))  # (a view, also for 0-d)
                return QuantizedTable8Bytes(table, None, False, idx, pairs[..., 1], pairs[..., 0], shapes)
        small = values <= SMALL_TABLE
        if not small and divisor_zero_point is None and len(in_shapes) == 2:
            gate = QuantizedTable8Broadcast.of(table, out_shape, in_shapes)
            if gate is not None:
                return gate
        return cls(table, divisor_zero_point, small, None if small else np.empty(out_shape, _U16))

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on these arrays: a DIV's divisor check, then the fancy indexing (small) or the
        index built in ``idx`` (a buffer of the output's shape allocated here where ``idx`` has another: a
        resized op) and the gather."""
        calls = []
        if self.divisor_zero_point is not None:
            calls.append((_check_divisor, (b, self.divisor_zero_point), {}))
        if self.small:
            return (
                *calls,
                (_gather_pairs, (self.table.reshape(256, 256), a.view(np.uint8), b.view(np.uint8), out), {}),
            )
        idx = self.idx if self.idx is not None and self.idx.shape == out.shape else np.empty(out.shape, _U16)
        calls.append((np.left_shift, (a.view(np.uint8), 8), {"out": idx, "dtype": _U16}))
        calls.append((np.bitwise_or, (idx, b.view(np.uint8)), {"out": idx}))
        calls.append((np.take, (self.table, idx), {"out": out, "mode": "wrap"}))  # every index is < 65536
        return tuple(calls)


def _check_divisor(b: np.ndarray, zero_point: int) -> None:
    """DIV's check: LiteRT fails the invoke when an element of input2 equals its zero point."""
    if (b == zero_point).any():
        raise InvokeError("DIV: an element of input2 equals its zero point (data[i] != zero_point)")


def _gather_pairs(table: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = table[a, b]`` (fancy indexing: one call for a few elements, broadcasting ``a`` and ``b``)."""
    out[...] = table[a, b]


#: QuantizedTable8Bytes up to this many elements (measured, 1 thread, against the shift / or / take form and
#: the fancy indexing of SMALL_TABLE: 256 values 3.4 / 2.9 -> 2.2 us, 448 3.6 / 3.5 -> 2.5, 1560 4.8 -> 3.9,
#: 6000 8.1 -> 8.6 us: kept). Broadcasting inputs too, their byte copies broadcasting into the index buffer
#: (medians of 9 alternated rounds, 1 thread: (1, 32, 64) x (1, 32, 1) 6.1 -> 4.5 us, (1, 32, 1) x (1, 1, 64)
#: 6.0 -> 4.1 us against shift / or / take; (1, 32, 1) x (1, 32, 16) 4.0 -> 2.9 us, (4, 1) x (1, 64) 2.7 -> 2.4 us
#: against the fancy indexing), except where one input has the output's shape and there are more than SMALL_TABLE
#: values: QuantizedTable8Broadcast (its shift of the small input and one broadcasting OR: (1, 32, 1) x
#: (1, 32, 64) 3.8 vs 4.3 us).
BYTES_MAX_TABLE = 2048


@dataclass(frozen=True, eq=False)
class QuantizedTable8Bytes(QuantizedTable8):
    """QuantizedTable8 for static inputs that broadcast to the output (BYTES_MAX_TABLE): the table index
    ``byte(x1) << 8 | byte(x2)`` is built by two byte copies, x1's bytes into the high and x2's into the low
    bytes of a little-endian uint16 index buffer of the output's shape (each copy broadcasting its input as the
    op's NumPy broadcasting pairs the values: the same index values), then one gather: no widening shift and
    no second pass over the index. Inputs of other shapes (a resized op) take QuantizedTable8's path."""

    high: np.ndarray | None = None  # (out shape) uint8 view of the index buffer's high bytes
    low: np.ndarray | None = None  # its low bytes
    shapes: tuple = ()  # the two inputs' shapes the op was built for

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple:
        """The two byte copies and the gather on these arrays; QuantizedTable8's calls for other shapes."""
        high = self.high
        if (a.shape, b.shape) != self.shapes or out.shape != high.shape:
            return super().bound_calls(a, b, out)
        take = (np.take, (self.table, self.idx), {"out": out, "mode": "wrap"})  # every index is < 65536
        return (np.copyto, (high, a.view(np.uint8)), {}), (np.copyto, (self.low, b.view(np.uint8)), {}), take


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

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple:
        """The shift of the small operand into a uint16 buffer of its own (allocated here; the shift is a copy of
        its bytes into the buffer's high bytes, the low ones staying 0: 1.9-3.0 -> 0.4-1.9 us), the broadcasting OR
        over the full one into ``idx`` and the gather on these arrays; QuantizedTable8's calls with the table
        transposed back for other shapes (a resized op)."""
        full, small = (a, b) if self.full == INPUT1 else (b, a)
        idx = self.idx
        if full.shape != idx.shape or small.shape != self.small_shape or out.shape != idx.shape:
            return QuantizedTable8(self.pair_table()).bound_calls(a, b, out)
        # little-endian: byte 1 is the high byte on every machine; at least 1-d (a 0-d uint16 OR an int8 array is
        # int16 under numpy 1.x's value-based casting, which the uint16 index refuses)
        shape = small.shape or (1,)
        high = np.zeros(shape, "<u2")
        high_bytes = high.reshape(-1).view(np.uint8).reshape(shape + (2,))[..., 1]
        shift = (np.copyto, (high_bytes, small.view(np.uint8)), {})  # byte(small) << 8: one plain byte copy
        index = (np.bitwise_or, (high, full.view(np.uint8)), {"out": idx})
        return shift, index, (np.take, (self.table, idx), {"out": out, "mode": "wrap"})  # every index is < 65536


@dataclass(frozen=True, eq=False)
class QuantizedTable8Scalar(BoundCalls2):
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

    def feeding(self, consumer):
        """This lookup and its only reader as one step (ops/slice_views.py's fuse_feeding): a RESHAPE / SQUEEZE /
        EXPAND_DIMS copy (shape.CopyReshaped) is absorbed (this op stores into the copy's output: the same values
        in C order, ``bound_calls`` reshapes), a SoftmaxQuantizedColumns loads its rows through the lookup
        (softmax.SoftmaxQuantizedColumnsLookup); else None."""
        from .softmax import SoftmaxQuantizedColumns, SoftmaxQuantizedColumnsLookup

        if is_reshape_copy(consumer):
            return self
        if type(consumer) is SoftmaxQuantizedColumns:
            return SoftmaxQuantizedColumnsLookup.of(consumer, self.lut, self.operand)
        return None

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple:
        """The gather on the varying input (reshaped to the output's shape where it has another: the same size,
        the constant broadcasts as a scalar) into ``out``."""
        x = b if self.operand else a
        if x.shape != out.shape:
            x = x.reshape(out.shape)
        return ((np.take, (self.lut, x.view(np.uint8)), {"out": out, "mode": "wrap"}),)  # every index is < 256


@dataclass(frozen=True, eq=False)
class QuantizedTable8ScalarPairs(QuantizedTable8Scalar):
    """QuantizedTable8Scalar over many values (at least quant.LUT_PAIRS_MIN_VALUES, an even number, the output's
    shape): two input bytes per gather from ``pairs`` (quant.lut_pairs of ``lut``, 65,536 uint16 entries).
    Exact: every output byte is ``lut``'s own entry for its input byte (no bound). An input or output that is
    not C-contiguous or odd-sized (a resized op) takes QuantizedTable8Scalar's byte gather."""

    pairs: np.ndarray | None = None

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple:
        """The pair gather on the varying input (quant.lut_lookup_pairs's); QuantizedTable8Scalar's byte gather
        where that declines."""
        x = b if self.operand else a
        if x.size != out.size or x.size % 2 or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return super().bound_calls(a, b, out)  # (an output of another shape: flat views, the same C order)
        pairs = x.reshape(-1).view(np.uint16), out.reshape(-1).view(np.uint16)
        return ((np.take, (self.pairs, pairs[0]), {"out": pairs[1], "mode": "wrap"}),)


def table_op(table: np.ndarray, a: TensorInfo, b: TensorInfo, out: TensorInfo, divisor_zero_point=None):
    """QuantizedTable8Scalar where one input is a one-value constant (DIV: not a zero divisor), else
    QuantizedTable8.build's choice."""
    if divisor_zero_point is None or (b.is_constant and int(np.asarray(b.data).reshape(-1)[0]) != divisor_zero_point):
        scalar = QuantizedTable8Scalar.of(table, a, b, out)
        if scalar is not None:
            return scalar
    return QuantizedTable8.build(table, out.shape, divisor_zero_point, _static(a, b, out))


def _static(a: TensorInfo, b: TensorInfo, out: TensorInfo) -> tuple:
    """The two inputs' shapes when they and the output's are static (QuantizedTable8.build's ``in_shapes``),
    else ()."""
    return () if a.dynamic or b.dynamic or out.dynamic else (tuple(a.shape), tuple(b.shape))
