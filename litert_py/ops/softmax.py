"""SOFTMAX's quantized prepared ops (uint8/int8, int16) and their prepare (the float ones are in softmax_float.py);
the op is registered (and its checks shared) by activations.py. Semantics and sources: see
activations_quantized.py's docstring (SoftmaxPrepare, reference/softmax.h, reference/integer_ops/softmax.h)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..quant import dtype_range, lut_int16, lut_lookup_int16, multiply_by_quantized_multiplier, wrap32
from ..quant import rounding_divide_by_pot as rdbpot
from ..quant import saturating_rounding_doubling_high_mul as srdhm
from ..quant.gemmlowp import SoftmaxRowReciprocals, exp_on_negative_values, softmax_reciprocal
from ..schema.dtypes import TensorType
from .bound_plan import BoundCalls, BoundCalls2, contiguous_source
from .common import check_equal, qparams, quantized_multiplier
from .quantize import TableLookup
from .registry import OpContext, TensorInfo

INPUT, OUTPUT = 0, 0
_I8, _I16 = TensorType.INT8, TensorType.INT16


def _exp_f64(v: np.ndarray) -> np.ndarray:
    """``std::exp(double)`` (libm, through Python's math module): SoftmaxPrepare's int16 exp LUT."""
    return np.array([math.exp(t) for t in v.tolist()], np.float64)


@dataclass(frozen=True, eq=False)
class SoftmaxQuantized:
    """reference/softmax.h, uint8 / int8 input, uint8 / int8 / int16 output (gemmlowp fixed point).

    The per-element work depends only on ``d = max(row) - x`` (0..255), so ``exp_table[d]`` holds
    ``exp_on_negative_values(SRDHM(-d << left_shift, multiplier))`` (Q0.31, 0 where ``-d < diff_min``) and
    ``sum_table[d]`` its Q12.19 rescale. Per row: ``(scale, bits_over_unit) = GetReciprocal(sum, 12)``, then
    ``RDBPOT(SRDHM(scale, e), bits_over_unit + 31 - out_bits) + type_min``, clamped (both roundings fused
    into one shift, exact for these non-negative values).
    """

    exp_table: np.ndarray  # int64[256]
    sum_table: np.ndarray  # int64[256]
    out_bits: int
    out_min: int
    out_max: int

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        d = np.subtract(x.max(axis=-1, keepdims=True), x, dtype=np.intp)
        e = self.exp_table.take(d)
        totals = self.sum_table.take(d).sum(axis=-1, keepdims=True)
        if totals.size == 1:  # one row: Python ints, no per-row array work
            total = ((int(totals.reshape(())) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # int32 accumulator
            scale, rounding, shift = softmax_reciprocal(total, self.out_bits)
        else:
            scale, rounding, shift = softmax_reciprocal(wrap32(totals), self.out_bits)
        e *= scale
        e += rounding
        np.right_shift(e, shift, out=e)
        np.minimum(e, self.out_max - self.out_min, out=e)
        np.add(e, self.out_min, out=out, casting="unsafe")


@dataclass(frozen=True, eq=False)
class SoftmaxQuantizedColumns(BoundCalls):
    """SoftmaxQuantized (8-bit input) for many rows of at most QUANTIZED_COLUMNS_MAX_ROW values (an attention's
    scores, a segmentation head's per-pixel classes) as a bound plan (ops/bound_plan.BoundCalls) over prepared
    transposed buffers (n, m) whose columns are the m rows, as softmax_float.SoftmaxFloatColumns: the copy in
    (widened to intp), the row maxima over axis 0, ``d = max - x`` in place, the two table reads into int64
    buffers, the totals over axis 0, the per-row reciprocal and rounding (quant.gemmlowp.SoftmaxRowReciprocals'
    calls into its buffers of m), the rounding shift in place, the clamp and offset as one np.take from
    ``out_table`` (out_min .. out_max, mode 'clip': q >= 0, only the upper clip acts) and the copy out: 45 calls
    made once as partial objects, constants as 0-d arrays (each call ~0.25 us of overhead instead of ~0.6 with
    numpy's wrappers, keywords and Python-int constants; transformer_int8's (1, 4, 32, 32) step with its lookup,
    process CPU time: 59 -> 39 us hot, 74 -> 49 us inside invokes). Reductions over axis 0 instead of a short
    last axis (a row-major layout reducing over a last axis of 32 takes 2-3x longer per reduction).

    Exactness: the same integers as SoftmaxQuantized step by step: the same d, table entries, totals (no int32
    wrap below ROW_MAX + 1 values: the wrap is skipped), reciprocals and roundings (SoftmaxRowReciprocals, whose
    bound ``2^18 <= total <= TOTAL_MAX`` every row of 1 .. TOTAL_MAX >> 19 values meets: the maximum's term is 2^19,
    each term at most 2^19; checked at prepare), the same clamp. Chosen at prepare for a static shape of two or
    more rows of at most QUANTIZED_COLUMNS_MAX_ROW (<= ROW_MAX) values; arrays of another shape (a direct call)
    go to ``fallback``."""

    xi: np.ndarray  # intp (n, m): row i of the input is column i; then d
    x_view: np.ndarray  # xi.T in the input's shape
    e: np.ndarray  # int64 (n, m)
    s: np.ndarray  # int64 (n, m)
    q: np.ndarray  # (n, m) in the output type
    q_view: np.ndarray  # q.T in the input's shape
    row_max: np.ndarray  # intp (m,)
    total: np.ndarray  # int64 (m,), read by ``reciprocals``
    out_table: np.ndarray  # out_min .. out_max in the output type
    reciprocals: SoftmaxRowReciprocals  # the per-row reciprocal and rounding of ``total``
    fallback: SoftmaxQuantized

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> list:
        if x.shape != self.x_view.shape or out.shape != self.q_view.shape:
            return [(self.fallback, ([x], [out]), {})]
        return [(np.copyto, (self.x_view, x), {}), *self.loaded_calls(out)]

    def loaded_calls(self, out: np.ndarray) -> list:
        """The calls of the softmax of the rows loaded into ``xi`` (its columns) into ``out``."""
        d, e, g, rec = self.xi, self.e, self.fallback, self.reciprocals
        return [
            (np.maximum.reduce, (d, 0, None, self.row_max), {}),
            (np.subtract, (self.row_max, d), {"out": d}),
            (np.take, (g.exp_table, d), {"out": e, "mode": "clip"}),  # d is in 0 .. 255: no clip acts
            (np.take, (g.sum_table, d), {"out": self.s, "mode": "clip"}),  # ("raise" would buffer ``out``)
            (np.add.reduce, (self.s, 0, None, self.total), {}),
            *rec.calls(),
            (np.multiply, (e, rec.scale), {"out": e}),
            (np.add, (e, rec.addend), {"out": e}),
            (np.right_shift, (e, rec.shift), {"out": e}),
            (np.take, (self.out_table, e), {"out": self.q, "mode": "clip"}),
            (np.copyto, (out, self.q_view), {}),
        ]

    @staticmethod
    def build(fallback: SoftmaxQuantized, x: TensorInfo, y: TensorInfo) -> SoftmaxQuantizedColumns:
        shape = tuple(x.shape)
        n, m = shape[-1], int(np.prod(shape[:-1], dtype=np.int64))
        xi, q, total = np.empty((n, m), np.intp), np.empty((n, m), y.dtype), np.empty(m, np.int64)
        return SoftmaxQuantizedColumns(
            xi,
            xi.T.reshape(shape),
            np.empty((n, m), np.int64),
            np.empty((n, m), np.int64),
            q,
            q.T.reshape(shape),
            np.empty(m, np.intp),
            total,
            np.arange(fallback.out_min, fallback.out_max + 1).astype(y.dtype),
            SoftmaxRowReciprocals.build(total, fallback.out_bits),
            fallback,
        )


@dataclass(frozen=True, eq=False)
class SoftmaxQuantizedColumnsLookup(BoundCalls2, SoftmaxQuantizedColumns):
    """SoftmaxQuantizedColumns fed by a one-value lookup whose output only it reads, through at most a reshape (an
    attention's ``MUL`` of the scores by a constant scale, table8.QuantizedTable8Scalar, then RESHAPE): the rows are
    loaded as ``lut[byte(x)]``, one gather from the lookup's own 256 entries (widened to intp) read through the
    transposed view of the lookup's input, instead of the lookup into its tensor, the reshape's copy and the
    transposing copy (the lookup's input: (1, 4, 32, 32) 2.0 us copy -> 3.8 us gather, two steps less). Exact:
    the loaded values are the lookup's outputs in C order, the values the reshaped tensor would hold. The plan
    reads the lookup's inputs (``bound_calls(a, b, out)``, the varying one ``operand``); one of another size (a
    resized model's, a direct call's) takes the lookup, then SoftmaxQuantized."""

    lut: np.ndarray = None  # (256,) intp: the lookup's value per input byte
    lut_out: np.ndarray = None  # (256,) the lookup's table in its output type
    operand: int = 0

    @staticmethod
    def of(softmax: SoftmaxQuantizedColumns, lut: np.ndarray, operand: int) -> SoftmaxQuantizedColumnsLookup:
        base = (getattr(softmax, f.name) for f in dataclasses.fields(SoftmaxQuantizedColumns))
        return SoftmaxQuantizedColumnsLookup(*base, lut.astype(np.intp), lut, operand)

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> list:
        x = b if self.operand else a
        n, m = self.xi.shape
        if x.size != n * m or out.shape != self.q_view.shape:
            return [(self.lookup_then_softmax, (x, out), {})]
        calls = []
        x = contiguous_source(x, calls)  # a view of a C-contiguous array reads its new values at each call
        load = (np.take, (self.lut, x.view(np.uint8).reshape(m, n).T), {"out": self.xi, "mode": "wrap"})
        return [*calls, load, *self.loaded_calls(out)]  # xi[j, r] = lut[x row r, col j]

    def lookup_then_softmax(self, x: np.ndarray, out: np.ndarray) -> None:
        """The lookup, then SoftmaxQuantized: any input and output of the same size."""
        y = self.lut_out.take(x.view(np.uint8))
        self.fallback([y.reshape(out.shape)], [out])


#: SoftmaxQuantizedRow's longest row: every sum of Q12.19 terms (each at most 2^19) stays below 2^31, so the int32
#: accumulator never wraps and the Python-int total is LiteRT's.
ROW_MAX = (1 << 12) - 1

#: SoftmaxQuantizedColumns for rows of at most this many values (and at most ROW_MAX: its int32 sums): longer rows
#: keep SoftmaxQuantized, whose per-row work the two transposing copies outweigh there (whole invokes of one int8
#: SOFTMAX, columns vs general, us: (2, 256) 34 vs 49, (2, 500) 49 vs 60, (8, 500) 61 vs 64, (64, 512) 204 vs
#: 224, (2, 700) 56 vs 53, (4, 1000) 86 vs 66, (2, 4095) 250 vs 92)
QUANTIZED_COLUMNS_MAX_ROW = 500


@dataclass(frozen=True, eq=False)
class SoftmaxQuantizedRow:
    """SoftmaxQuantized for one row (every dimension but the last is 1) of at most ROW_MAX values, with every
    table made at prepare so that an invoke is 8 numpy calls (the general path makes 10, with an index array
    and temporaries per call): ``m = max(x)``, then the per-element terms are read straight from the 256-entry
    rows ``exp_rows[m - qmin]`` / ``sum_rows[m - qmin]`` indexed by ``x`` itself (the rows hold
    ``exp_table[m - x]`` / ``sum_table[m - x]`` at position ``x mod 256``: np.take reads a negative int8 index
    from the end), so no difference array is made; the total is one reduction, the reciprocal Python ints
    (GetReciprocal), the rounding shift three in-place calls on the int64 scratch, and the final
    ``min(q, out_max - out_min) + out_min`` one np.take from ``out_table`` (out_min .. out_max) with
    mode='clip' (q >= 0: only the upper clip acts) into the output.

    Exactness: the same integers as SoftmaxQuantized, step by step: the same table entries (the rows are
    those tables re-indexed; entries with x > m are never read), the same total (no int32 wrap below
    ROW_MAX + 1 values, checked at prepare), the same scale, exponent, rounding and shift, the same clamp."""

    exp_rows: np.ndarray  # (256, 256) int64: exp_rows[m - qmin][x mod 256] = exp_table[m - x] (0 for x > m)
    sum_rows: np.ndarray  # (256, 256) int64: the same for sum_table
    out_table: np.ndarray  # (out_max - out_min + 1,) in the output type: out_min .. out_max
    qmin: int  # the input type's minimum
    out_bits: int
    e: np.ndarray  # int64 scratch, the input's shape
    s: np.ndarray  # int64 scratch, the input's shape
    general: SoftmaxQuantized  # for an input of another shape than prepared (the dynamic path)

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.shape != self.e.shape:
            return self.general(inputs, outputs)
        row = int(np.maximum.reduce(x, axis=None)) - self.qmin
        # mode="wrap": x mod 256, what a negative int8 index reads in "raise" mode, which would buffer ``out``
        e = self.exp_rows[row].take(x, out=self.e, mode="wrap")
        total = int(np.add.reduce(self.sum_rows[row].take(x, out=self.s, mode="wrap"), axis=None))  # < 2^31
        scale, rounding, shift = softmax_reciprocal(total, self.out_bits)
        np.multiply(e, scale, out=e)
        np.add(e, rounding, out=e)
        np.right_shift(e, shift, out=e)
        self.out_table.take(e, mode="clip", out=outputs[OUTPUT])

    @staticmethod
    def build(exp_table: np.ndarray, sum_table: np.ndarray, x: TensorInfo, y: TensorInfo) -> SoftmaxQuantizedRow:
        qmin, _ = dtype_range(x.dtype)
        values = np.arange(256) if qmin == 0 else (np.arange(256) + 128) % 256 - 128  # x at position x mod 256
        d = np.arange(qmin, qmin + 256)[:, None] - values[None, :]  # m - x
        valid = d >= 0
        d = np.where(valid, d, 0)
        out_min, out_max = dtype_range(y.dtype)
        return SoftmaxQuantizedRow(
            np.where(valid, exp_table[d], 0),
            np.where(valid, sum_table[d], 0),
            np.arange(out_min, out_max + 1).astype(y.dtype),
            qmin,
            8 * y.dtype.itemsize,
            np.empty(x.shape, np.int64),
            np.empty(x.shape, np.int64),
            SoftmaxQuantized(exp_table, sum_table, 8 * y.dtype.itemsize, out_min, out_max),
        )


#: SoftmaxQuantizedTiny's longest row: below about 30 values Python ints beat SoftmaxQuantizedRow's 8 numpy calls.
TINY_MAX = 24


def softmax_row_into(values, sum_list: list, exp_list: list, out_bits: int, outv, span: int, row) -> None:
    """SoftmaxQuantized on one short row of Python ints, stored into ``row`` (SoftmaxQuantizedTiny; also
    fully_connected_tail.FullyConnectedSoftmaxTiny's last call): ``values()`` gives the row (any common offset of
    the input's values: only the differences ``m - x`` to its maximum m are read), the total of the terms
    ``sum_list[m - x]`` (at most TINY_MAX * 2^19 < 2^31: the int32 accumulator never wraps), its reciprocal and
    rounding (gemmlowp.softmax_reciprocal), then per value ``r = (exp_list[m - x] * scale + addend) >>
    shift``, clamped to ``span`` (out_max - out_min), picks ``outv[r]``: the value stored (out_min + r, or a
    lookup composed into it), all stored with one assignment. Exact: Python ints, the same integers step by
    step as SoftmaxQuantized; the stored values are in the output type's range.

    A module function taking every table as an argument (a bound plan's partial, made once): inside an invoke,
    after the convolutions evicted the caches, each attribute read, nested call or numpy call costs about a
    microsecond, more than this arithmetic; plain loops, not comprehensions or max() (each a call with a frame
    of its own)."""
    xs = values()
    m = xs[0]
    for v in xs:
        if v > m:
            m = v
    total = 0
    for v in xs:
        total += sum_list[m - v]
    scale, addend, shift = softmax_reciprocal(total, out_bits)
    q = []
    for v in xs:
        r = (exp_list[m - v] * scale + addend) >> shift
        q.append(outv[r if r < span else span])
    row[...] = q


def softmax_pair_into(values, pairs: np.ndarray, row) -> None:
    """The softmax of a row of two values ``a, b = values()`` into ``row``: the prepared ``pairs[a - b]``
    (SoftmaxQuantizedTiny.pairs), one row copy instead of the arithmetic (a binary classifier's head)."""
    a, b = values()
    row[...] = pairs[a - b]


#: The differences a - b of two 8-bit values at SoftmaxQuantizedTiny.pairs' rows: 0 .. 255, then -255 .. -1 (a
#: negative index counts from the end).
PAIR_DIFFERENCES = np.concatenate([np.arange(256), np.arange(-255, 0)])


@dataclass(frozen=True, eq=False)
class SoftmaxQuantizedTiny:
    """SoftmaxQuantized for one row (every dimension but the last is 1) of at most TINY_MAX values (a keyword
    spotter's head: 2-12 classes) on Python ints (``softmax_row_into``): the row read with ``tolist``, every
    term read from the tables as Python lists, the reciprocal unrolled, the values stored with one assignment:
    about 2-4 us instead of SoftmaxQuantizedRow's 8-14 us in a model (numpy's per-call cost, not arithmetic,
    dominates a row this short).

    A row of two values (a binary classifier) is one row copy: its softmax depends only on ``a - b`` (the
    differences to the maximum are ``(0, a - b)`` or ``(b - a, 0)``), so ``pairs`` holds the output row of each
    of the 511 differences of two 8-bit values, made at prepare by ``general`` (SoftmaxQuantized) on the rows
    ``(a - b, 0)``: the same integers by construction.

    Exactness: Python ints are exact, and each step is SoftmaxQuantized's on the same integers (softmax_row_into).
    Checked at prepare: a static shape with one row of at most TINY_MAX values."""

    exp_list: list  # exp_table as Python ints
    sum_list: list  # sum_table as Python ints
    outv: object  # per clamped r in 0 .. out_max - out_min: the value stored (a range: out_min + r)
    pairs: np.ndarray | None  # two values: (511, 2) output rows by a - b (PAIR_DIFFERENCES), else None
    lead: tuple  # the index of the row: (0,) * (rank - 1)
    out_bits: int
    shape: tuple
    general: SoftmaxQuantized  # for an input of another shape than prepared (the dynamic path)

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.shape != self.shape:
            return self.general(inputs, outputs)
        lead = self.lead
        f, args = self.row_call(x[lead].tolist, outputs[OUTPUT][lead])
        f(*args)

    def row_call(self, values, row: np.ndarray) -> tuple:
        """(function, arguments): the softmax of the row ``values()`` (a callable giving Python ints, e.g. a
        bound ``tolist``) into ``row`` (the output's row): softmax_pair_into for two values, else
        softmax_row_into."""
        if self.pairs is not None:
            return softmax_pair_into, (values, self.pairs, row)
        args = (values, self.sum_list, self.exp_list, self.out_bits, self.outv, len(self.outv) - 1, row)
        return softmax_row_into, args

    def feeding(self, consumer) -> SoftmaxQuantizedTinyLookup | None:
        """This softmax and the DEQUANTIZE (or requantize) table lookup of its 8-bit output that alone reads it
        (quantize.TableLookup; ops/slice_views.py's fuse_feeding), as one step: SoftmaxQuantizedTinyLookup; also
        a second such lookup after the first when the first one's values are 8-bit integers (a requantize, then
        a DEQUANTIZE): the lookups composed."""
        if type(consumer) is not TableLookup or self.out_bits != 8 or consumer.table.size != 256:
            return None
        if not all(type(v) is int and -128 <= v <= 255 for v in self.outv):
            return None  # a lookup's float values: no bit pattern to index the next table with
        table = consumer.table
        values = table.tolist()
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["outv"] = [values[v & 0xFF] for v in self.outv]  # table_index: the value's unsigned bit pattern
        if self.pairs is not None:
            fields["pairs"] = table[self.pairs.astype(np.intp) & 0xFF]
        return SoftmaxQuantizedTinyLookup(**fields)

    @staticmethod
    def build(exp_table: np.ndarray, sum_table: np.ndarray, x: TensorInfo, y: TensorInfo) -> SoftmaxQuantizedTiny:
        out_min, out_max = dtype_range(y.dtype)
        out_bits = 8 * y.dtype.itemsize
        general = SoftmaxQuantized(exp_table, sum_table, out_bits, out_min, out_max)
        pairs = None
        if x.shape[-1] == 2:
            pairs = np.empty((PAIR_DIFFERENCES.size, 2), y.dtype)
            general([np.stack([PAIR_DIFFERENCES, np.zeros_like(PAIR_DIFFERENCES)], axis=1)], [pairs])
        return SoftmaxQuantizedTiny(
            exp_table.tolist(),
            sum_table.tolist(),
            list(range(out_min, out_max + 1)) if out_bits == 8 else range(out_min, out_max + 1),
            pairs,
            (0,) * (len(x.shape) - 1),
            out_bits,
            tuple(x.shape),
            general,
        )


@dataclass(frozen=True, eq=False)
class SoftmaxQuantizedTinyLookup(SoftmaxQuantizedTiny):
    """SoftmaxQuantizedTiny whose 8-bit output only a table lookup reads (a classifier's final DEQUANTIZE to
    float32: quantize.TableLookup, indexed by the value's unsigned bit pattern), as one step: ``outv`` and
    ``pairs`` hold ``lookup[q & 0xFF]`` instead of each softmax value q, which is stored instead. Exact: q is
    the integer the int8 / uint8 tensor would hold, and ``q & 0xFF`` its bit pattern, which the lookup reads
    (``table_index``); the entries are the table's values (as Python numbers in ``outv``: a float32 entry as
    the double of the same value), stored into the lookup's output type unchanged. Checked at prepare
    (``SoftmaxQuantizedTiny.feeding``): an 8-bit softmax output and a 256-entry table."""


@dataclass(frozen=True, eq=False)
class SoftmaxInt16:
    """reference/softmax.h SoftmaxInt16: exp by a 513-entry LUT, the reciprocal of the sum by another.

    ``exp_table[d]`` (``d = max(row) - x``, 0..65535) is ``LUTLookup(clamp(MBQM(-d, M, shift) + 32767),
    exp_lut)``, precomputed for every ``d``. The reciprocal of a row's sum is
    ``LUTLookup(clamp(shifted_sum - 3 * 2^15, int16), one_over_one_plus_x_lut)``, tabulated as ``recip_table``
    over the clamped argument + 32768.
    """

    exp_table: np.ndarray  # int64[65536]
    recip_table: np.ndarray  # int64[65536]

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        d = np.subtract(x.max(axis=-1, keepdims=True), x, dtype=np.intp)
        e = self.exp_table.take(d)
        totals = e.sum(axis=-1, keepdims=True)  # Q16.15 in an int32
        if totals.size == 1:  # one row: Python ints
            total = ((int(totals.reshape(())) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
            headroom_plus_one = max(32 - (total & 0xFFFFFFFF).bit_length(), 1)
            shifted = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
            reciprocal = int(self.recip_table[min(max(shifted - (1 << 16), 0), 65535)])
            right_shift = 31 - headroom_plus_one
            rounding = 1 << (right_shift - 1)
        else:
            total = wrap32(totals)
            headroom_plus_one = np.maximum(32 - np.frexp((total & 0xFFFFFFFF).astype(np.float64))[1], 1)
            shifted = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
            reciprocal = self.recip_table.take(np.minimum(np.maximum(shifted - (1 << 16), 0), 65535))
            right_shift = 31 - headroom_plus_one
            rounding = np.left_shift(np.int64(1), right_shift - 1)
        e *= reciprocal
        e += rounding
        np.right_shift(e, right_shift, out=e)
        np.minimum(e, 32767, out=e)
        np.maximum(e, 0, out=e)
        np.copyto(out, e, casting="unsafe")


@dataclass(frozen=True, eq=False)
class SoftmaxInt16Row:
    """SoftmaxInt16 for one row (every dimension but the last is 1), the buffers made at prepare: the
    differences ``d = max(x) - x`` and the int64 terms are written into them, the row's reciprocal is
    SoftmaxInt16's one-row Python-int path, and the final ``clamp(q, 0, 32767)`` is one np.take from
    ``out_table`` (0 .. 32767) with mode='clip' (which clamps the index at both ends) into the output: 8 numpy
    calls instead of 11, the same integers step by step (the same tables, sum, reciprocal, rounding and shift;
    the clamp's bounds are the table's)."""

    exp_table: np.ndarray  # int64[65536]
    recip_table: np.ndarray  # int64[65536]
    out_table: np.ndarray  # int16 0 .. 32767
    d: np.ndarray  # intp scratch, the input's shape
    e: np.ndarray  # int64 scratch, the input's shape
    general: SoftmaxInt16  # for an input of another shape than prepared (the dynamic path)

    def __call__(self, inputs, outputs):
        x, e = inputs[INPUT], self.e
        if x.shape != e.shape:
            return self.general(inputs, outputs)
        np.subtract(np.maximum.reduce(x, axis=None), x, out=self.d, dtype=np.intp)
        self.exp_table.take(self.d, out=e)
        total = ((int(np.add.reduce(e, axis=None)) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # int32 accumulator
        headroom_plus_one = max(32 - (total & 0xFFFFFFFF).bit_length(), 1)
        shifted = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
        reciprocal = int(self.recip_table[min(max(shifted - (1 << 16), 0), 65535)])
        right_shift = 31 - headroom_plus_one
        np.multiply(e, reciprocal, out=e)
        np.add(e, 1 << (right_shift - 1), out=e)
        np.right_shift(e, right_shift, out=e)
        self.out_table.take(e, mode="clip", out=outputs[OUTPUT])


def _one_row(x: TensorInfo) -> bool:
    return not x.dynamic and 0 < x.shape[-1] <= ROW_MAX and int(np.prod(x.shape)) == x.shape[-1]


def prepare_softmax_quantized(ctx: OpContext, x: TensorInfo, y: TensorInfo):
    """SoftmaxPrepare (kReference) + reference/softmax.h: see SoftmaxQuantized and SoftmaxInt16."""
    s_in, zi = qparams(ctx, x)
    s_out, zo = qparams(ctx, y)
    beta = float(np.float32(ctx.options.beta))
    if x.type == _I16:
        ctx.check(y.type == _I16, f"Only int16 output is supported with int16 input, got {y.type_name}.")
    else:
        ctx.check(
            y.type in (x.type, _I16),
            f"Only {x.type_name.lower()} and int16 outputs are supported with "
            f"{x.type_name.lower()} inputs currently, got {y.type_name}.",
        )
    if x.type == y.type == _I8:
        check_equal(ctx, zo, -128, "output->params.zero_point")
        ctx.check(
            abs(float(s_out) - 1.0 / 256) <= float(np.float32(0.001) * np.float32(1.0 / 256)),
            "output->params.scale not near 1.f / 256 (within 0.1%).",
        )
    if x.type == y.type == _I16:
        check_equal(ctx, zo, 0, "output->params.zero_point")
        ctx.check(
            abs(float(s_out) - 1.0 / 32768) <= float(np.float32(0.001) * np.float32(1.0 / 32768)),
            "output->params.scale not near 1.f / 32768 (within 0.1%).",
        )
    if x.type == _I16:
        check_equal(ctx, zi, 0, "input->params.zero_point")
        exp_lut = lut_int16(_exp_f64, 10.0 / 65535, 32767, 2.0 / 65535, 0, precision=np.float64)
        recip_lut = lut_int16(lambda t: 1.0 / (1.0 + t), 1.0 / 65535, -32768, 2.0 / 65535, 0, precision=np.float64)
        # float product s_in * beta, then a double division (activations.cc)
        real = float(np.float32(s_in * np.float32(beta))) / (10.0 / 65535.0)
        m, shift = quantized_multiplier(ctx, real, "input beta")
        diff = -np.arange(65536, dtype=np.int64)
        scaled = multiply_by_quantized_multiplier(diff, m, shift)
        exp_table = lut_lookup_int16(np.clip(scaled + 32767, -32768, 32767), exp_lut).astype(np.int64)
        recip_table = lut_lookup_int16(np.arange(-32768, 32768), recip_lut).astype(np.int64)
        if _one_row(x):
            shape = tuple(x.shape)
            out_table = np.arange(32768).astype(np.int16)
            general = SoftmaxInt16(exp_table, recip_table)
            return SoftmaxInt16Row(
                exp_table, recip_table, out_table, np.empty(shape, np.intp), np.empty(shape, np.int64), general
            )
        return SoftmaxInt16(exp_table, recip_table)
    # PreprocessSoftmaxScaling(beta, s_in, 5): Q5.26 differences, capped multiplier; then
    # QuantizeMultiplierGreaterThanOne, which CHECKs (aborts the process in LiteRT) unless the multiplier is > 1.
    real = min(beta * float(s_in) * float(1 << 26), (1 << 31) - 1.0)
    ctx.check(
        real > 1.0, f"beta * input_scale * 2^26 = {real} must be > 1 (QuantizeMultiplierGreaterThanOne; LiteRT aborts)"
    )
    m, left_shift = quantized_multiplier(ctx, real, "input beta")
    diff_min = -math.floor(31.0 * (1 << 26) / (1 << left_shift))  # -CalculateInputRadius(5, left_shift)
    diff = -np.arange(256, dtype=np.int64)
    e = exp_on_negative_values(srdhm(wrap32(diff << left_shift), m), 5)
    valid = diff >= diff_min
    exp_table = np.where(valid, e, 0).astype(np.int64)
    sum_table = np.where(valid, rdbpot(e, 12), 0).astype(np.int64)  # Rescale<12>: Q0.31 -> Q12.19
    if _one_row(x):
        if x.shape[-1] <= TINY_MAX:
            return SoftmaxQuantizedTiny.build(exp_table, sum_table, x, y)
        return SoftmaxQuantizedRow.build(exp_table, sum_table, x, y)
    out_min, out_max = dtype_range(y.dtype)
    general = SoftmaxQuantized(exp_table, sum_table, 8 * y.dtype.itemsize, out_min, out_max)
    # 2+ rows of at most QUANTIZED_COLUMNS_MAX_ROW values (longer rows: the transposing copies cost more)
    # n terms of at most 2^19 (the row maximum's exactly): totals in [2^19, n 2^19], SoftmaxRowReciprocals' bound
    row_max = min(QUANTIZED_COLUMNS_MAX_ROW, ROW_MAX, SoftmaxRowReciprocals.TOTAL_MAX >> 19)
    if not x.dynamic and len(x.shape) >= 2 and 0 < x.shape[-1] <= row_max and x.size > x.shape[-1]:
        return SoftmaxQuantizedColumns.build(general, x, y)
    return general
