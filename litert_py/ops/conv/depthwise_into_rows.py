"""An int8 / uint8 DEPTHWISE_CONV_2D whose output only a pointwise CONV_2D's folded GEMM reads, as one step
(`DepthwiseIntoRows`): MobileNet-style blocks (depthwise 3x3, then 1x1 CONV_2D), where the depthwise's epilogue
stored its int8 values into a tensor (a truncating uint8 cast and a wrapping add, or a casting floor) and the conv's
np.copyto converted them into the first K columns of its float64 [A, 1] GEMM rows (`ConvQuantizedFoldedRows`).
Here the depthwise's epilogue writes its floored values straight into those rows: no int8 tensor, no casts, one
step fewer. Where the conv's output is not larger than about its input (SPLIT_MAX_OUT_PER_IN, SPLIT_MIN_VALUES:
MobileNetV2's projections, V1's pointwise convs) the values are floored in place instead, in the depthwise's own
contiguous accumulators, which are the GEMM's A against the conv's K weight rows; the conv's constant row is
added to the product after (no strided store into [A, 1]), tiled over the output's width (inner loops of OW*O
values). The common case (a stride-1 DepthwiseConvQuantizedRows, no sign term, nothing added after the floor)
runs as DepthwiseRowsIntoRows: the same numpy calls inlined into one __call__. A pointwise ConvQuantizedScaled
(K >= POINTWISE_SCALED_MIN_K: the float32 GEMM) is fed the same way, into the first K columns of its float32
[A, 1] rows (`_feeding_scaled`; values |v| <= 383 exact in float32): VWW MobileNet's 6x6x128 and 3x3x256 pairs
67-73 -> 61-67 us inside real invokes (per step, medians of 3 alternated runs), the model's steps 1254 -> 1222 us.

Bound (checked at prepare by :func:`feeding`): the values the depthwise's folded epilogue produces are integers
clipped to its output type's range (less the base b of requant_trunc's TruncEpilogue, added here after the floor; a
late zero point likewise added after the floor), |value| <= 383 (255 above a wrapped base of -256): exact in float64
and float32, so the conv's rows hold exactly the values its np.copyto would have converted from the int8 / uint8
tensor, and its GEMM and epilogue compute the same result (the split form adds the same terms, the constant row
last: the conv's folded GEMM is exact in any order by its own bound, requant.py). A scalar addend of the values
(the base b) is folded into the conv's constant row instead where :func:`fold_addend`'s bound holds (checked at
prepare): the rows hold the values less b, and the GEMM gives the same real values, exactly. The consumer must be a
ConvQuantizedFoldedRows (not a view reading) whose float64 rows have the depthwise's output shape, or a 1x1
ConvQuantizedScaled (its float32 rows); the epilogue must be one of the folded epilogues (not a MixedEpilogue, whose
Requantizer writes an integer tensor). ops/slice_views.fuse_feeding fuses the steps when the depthwise's output is
read by that conv only and is no subgraph output (not with experimental_preserve_all_tensors).

Measured (1 thread, median per pair, against the two steps in the same run): the epilogue into the rows
6000 values 9.9 -> 7.2 us (clip, floor into the rows instead of clip, uint8 cast, XOR, the conv's copy),
9360 values 8.5 -> 7.9, 1536 values 3.8 -> 3.0 us (numpy calls alone, random values). Whole models (this
fusion, the split form, depthwise_rows's small stride-1 form and c_einsum together, interleaved invokes, process
CPU time): keyword_spotting_mobilenetv2 0.92x, bench_families' vww_mobilenet 0.96x, ds_cnn_kws 0.95-0.98x.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..bound_plan import BoundCalls
from ..common import aligned_empty, c_einsum, clip_ufunc
from .conv2d_quantized import ConvQuantizedFoldedRows, ConvQuantizedScaled
from .im2col import Im2Col
from .requant import LateZeroPointEpilogue, epilogue_calls
from .requant_trunc import FULL_CONSTANTS_MAX_VALUES, TruncEpilogue, ties_away_calls

#: Where the conv has at most SPLIT_MAX_OUT_PER_IN outputs per input channel and the depthwise more than
#: SPLIT_MIN_VALUES output values, the depthwise's accumulators, floored in place (contiguous), are the GEMM's A
#: against the conv's weight rows, and the constant row is added after: one pass over the conv's output instead
#: of the strided store into [A, 1] (measured inside the models, per pair, 1 thread: keyword_spotting_mobilenetv2
#: 15x13x48 -> 8 80.5 -> 74.0 us, 8x7x48 23.5 -> 21.8, 4x4x48 22.9 -> 22.2, 4x4x96 18.1 -> 17.3; vww 24x24x32
#: -> 64 121 -> 114, 3x3x256 -> 256 72 -> 64; ds_cnn 25x5x64 77 -> 76; 2x2x144 (576 values) 14.9 -> 15.2: kept).
SPLIT_MAX_OUT_PER_IN = 2
SPLIT_MIN_VALUES = 640

#: A scalar addend of the depthwise's values (the base b of its TruncEpilogue: -128 on int8 ReLU layers whose
#: b = 0 folding is not exact) goes into the conv's constant row (fold_addend, where exact): the values floored
#: straight into the rows, one pass fewer, and stride-1 pairs take DepthwiseRowsIntoRows (measured inside the
#: models, interleaved processes, medians of 8: ds_cnn_kws 0.98x, bench_families' vww_mobilenet 0.96x). Tests set
#: this False to reach the add after the floor.
FOLD_ADDEND = True
FLOAT64_MANTISSA = 53  # significand bits (fold_addend)
FLOAT32_MANTISSA = 24


@dataclass(frozen=True, eq=False)
class RowsEpilogue:
    """A folded epilogue whose result goes into float64 rows: ``v`` (the depthwise's float64 accumulators, in the
    layout of the epilogue's per-channel operands) gets the sign term (sign path), the clip to [lo, hi] and the
    floor; the floored values, plus ``add`` (a TruncEpilogue's base b, or late zero points), are stored into
    ``rows`` (the conv's strided (N, OH, OW, O) view of its GEMM rows); ``folded``: a scalar addend not added here
    but folded into the conv's constant row (fold_addend: the rows hold the values less it)."""

    v: np.ndarray  # the accumulators, shaped as the epilogue's operands
    v4: np.ndarray  # the same memory with the output's shape
    lo: np.ndarray  # 0-d or per value float64
    hi: np.ndarray
    half: np.ndarray | None  # sign path: 2^-(rs+1) per value
    const: np.ndarray | None  # sign path: zp + 1/2 (early zero point)
    sign: np.ndarray | None  # sign path: scratch of v's shape
    add: np.ndarray | None  # added after the floor; None: floored straight into the rows
    rows: np.ndarray  # (N, OH, OW, O) float64 view of the conv's GEMM rows
    folded: float = 0.0  # the addend folded into the conv's constant row instead (fold_addend): rows + folded
    v_bits: np.ndarray | None = None  # sign path: v, half and sign viewed as uint64 (half broadcast to v's shape)
    half_bits: np.ndarray | None = None
    sign_bits: np.ndarray | None = None

    def __post_init__(self):
        if self.half is not None:
            half = np.ascontiguousarray(np.broadcast_to(self.half, self.v.shape))
            for name, a in (("v_bits", self.v), ("half_bits", half), ("sign_bits", self.sign)):
                object.__setattr__(self, name, a.view(np.uint64))

    def calls(self) -> tuple:
        """The epilogue's numpy calls, as (function, args, kwargs) triples (the clip's integer bounds:
        floor(clip(v)) == clip(floor(v)); the values after the add, integers within [-255, 255]: exact)."""
        v = self.v
        c = []
        if self.half is not None:
            c += ties_away_calls(v, self.v_bits, self.half_bits, self.sign, self.sign_bits)
            c.append((np.add, (v, self.const, v), {}))
        c.append((clip_ufunc, (v, self.lo, self.hi, v), {}))
        if self.add is None:
            c.append((np.floor, (self.v4, self.rows), {}))
        else:
            c += [(np.floor, (v, v), {}), (np.add, (self.v4, self.add, self.rows), {})]
        return tuple(c)


def rows_epilogue(epilogue, acc: np.ndarray, rows: np.ndarray) -> RowsEpilogue:
    """The RowsEpilogue of a depthwise's folded ``epilogue`` (FoldedEpilogue, LateZeroPointEpilogue, their small
    forms, or requant_trunc's TruncEpilogue: the callers check the type) over its float64 accumulators ``acc``
    (the output's shape, C-contiguous), its values going into ``rows``: a TruncEpilogue's clipped values are the
    result less its base b (b added after the floor, none where 0), a LateZeroPointEpilogue's the result less
    its late zero points."""
    out_shape = acc.shape
    add = None
    if isinstance(epilogue, TruncEpilogue):
        assert epilogue.half is not None or epilogue.const is None  # (a constant only on the sign path)
        v = acc if epilogue.half is None else acc.reshape(epilogue.shape)  # (scalar bounds: any shape)
        if epilogue.base:
            add = np.array(float(epilogue.base))
        return RowsEpilogue(v, acc, epilogue.lo, epilogue.hi, epilogue.half, epilogue.const, epilogue.sign, add, rows)
    if epilogue.sign is not None:
        v = acc.reshape(epilogue.sign.shape)
    elif np.ndim(epilogue.lo) == 1:  # LateZeroPointEpilogue's (OW*O,) bounds
        v = acc.reshape(-1, np.size(epilogue.lo))
    else:
        v = acc
    if isinstance(epilogue, LateZeroPointEpilogue):
        late = epilogue.late_zp
        add = late.reshape(out_shape if late.size == acc.size else out_shape[2:])
    return RowsEpilogue(v, acc, epilogue.lo, epilogue.hi, epilogue.half, epilogue.const, epilogue.sign, add, rows)


def feeding(depthwise, epilogue, acc: np.ndarray, conv) -> DepthwiseIntoRows | None:
    """``depthwise`` (an op whose ``accumulate_calls(x)`` leave its folded accumulators in ``acc``, given with the
    output's shape) with its folded ``epilogue`` (rows_epilogue's types, checked by the caller) and ``conv``, the
    step that alone reads its output, as one DepthwiseIntoRows; None when the module docstring's bound is not
    checked: ``conv`` not a ConvQuantizedFoldedRows, or its rows not float64 of the depthwise's output shape.
    The values' addend (a base b, late zero points) goes into the conv's constant row where
    :func:`fold_addend` proves that exact: the floored values go straight into the rows, one pass fewer."""
    if type(conv) is ConvQuantizedScaled:
        return _feeding_scaled(depthwise, epilogue, acc, conv)
    if type(conv) is not ConvQuantizedFoldedRows:
        return None
    rows = conv.a_input
    if rows.dtype != np.float64 or rows.shape != acc.shape or not np.shares_memory(rows, conv.a):
        return None
    k, o = conv.weights.shape[0] - 1, conv.weights.shape[1]
    split = o <= SPLIT_MAX_OUT_PER_IN * k and acc.size > SPLIT_MIN_VALUES
    ep = rows_epilogue(epilogue, acc, acc if split else rows)
    ep, weights = _addend_folded(ep, conv.weights, FLOAT64_MANTISSA)
    if split:  # the floored accumulators as the GEMM's A
        a = acc.reshape(-1, k)
        if not np.shares_memory(a, acc):  # (C-contiguous accumulators: a view)
            return None
        return DepthwiseIntoRows(
            depthwise, ep, a, weights[:-1], conv.acc, conv.acc_rows, conv.epilogue, conv.product,
            *_const_rows(conv, weights[-1], acc.shape[2]),
        )  # fmt: skip
    return DepthwiseIntoRows(
        depthwise, ep, conv.a, weights, conv.acc, conv.acc_rows, conv.epilogue, conv.product, None, None,
    )  # fmt: skip


def fold_addend(weights: np.ndarray, add, max_abs: float, mantissa: int) -> np.ndarray | None:
    """The GEMM weights ``weights`` ((K+1, O): K weight rows, then the constant row the ones column reads) with the
    constant row + ``add`` @ the weight rows, so that the GEMM of the rows ``a`` (|a| <= ``max_abs``, integers)
    gives what it gave for the rows a + ``add`` (a scalar, or (K,) per row column): the same real values, which
    are the values computed, bit for bit, when every product and partial sum is exact. None unless it is, per
    column c, in a float type of ``mantissa`` significand bits (53: float64; 24: float32):

    Exactness bound (checked here, at prepare): let u_c be the largest power of two dividing every weight and the
    constant of column c (the lowest set bit); every product a_k * W_kc (integer a_k) and every partial sum, of
    the old GEMM, the new one (in whatever order it adds, the constant row included or added after the product)
    and of the new constant's computation, is a multiple of u_c of magnitude at most
    (max_abs + max|add|) * sum_k |W_kc| + |const_c|, which must be at most 2^mantissa * u_c."""
    w = np.asarray(weights, np.float64)
    body, const = w[:-1], w[-1]
    z = np.broadcast_to(np.asarray(add, np.float64).reshape(-1), (body.shape[0],))
    if not (np.isfinite(w).all() and np.isfinite(z).all() and (z == np.round(z)).all() and np.isfinite(max_abs)):
        return None
    factor = math.ceil(max_abs) + int(np.abs(z).max())  # integers: max|a| + max|add|
    mant, exp = np.frexp(w)
    bits = np.abs(np.ldexp(mant, 53).astype(np.int64))  # the significand as an integer: exact
    low = np.where(bits == 0, 1, bits & -bits)  # the lowest set bit (a zero: any; left out below)
    low_exp = np.where(bits == 0, 1 << 20, np.log2(low).astype(np.int64) + exp - 53)
    unit_exp = low_exp.min(axis=0)  # per column: every value is a multiple of 2^unit_exp
    zero = (w == 0).all(axis=0)
    unit_exp = np.where(zero, 0, unit_exp)
    top = factor * np.abs(body).sum(axis=0) + np.abs(const)  # float64: a pre-check within a factor of 2
    if (top > np.ldexp(1.0, unit_exp + mantissa + 1)).any():
        return None
    ints = np.abs(np.ldexp(w, -unit_exp)).astype(np.int64)  # exact integers below 2^(mantissa + 1)
    top = factor * ints[:-1].sum(axis=0) + ints[-1]  # exact: below 2^(mantissa + 2) <= 2^55
    if (top > (1 << mantissa)).any():
        return None
    out = np.array(weights, copy=True)
    out[-1] = const + z @ body  # exact by the bound
    return out


def _addend_folded(ep: RowsEpilogue, weights: np.ndarray, mantissa: int) -> tuple:
    """(epilogue, weights): ``ep`` without its addend and the conv's ``weights`` with it folded into the constant
    row (fold_addend), where the addend is one scalar (a TruncEpilogue's base b) and that is exact; else both
    unchanged (late zero points, per channel, keep their add)."""
    if ep.add is None or np.size(ep.add) != 1 or not FOLD_ADDEND:
        return ep, weights
    max_abs = float(max(np.abs(ep.lo).max(), np.abs(ep.hi).max()))
    folded = fold_addend(weights, float(ep.add), max_abs, mantissa)
    if folded is None:
        return ep, weights
    return dataclasses.replace(ep, add=None, folded=float(ep.add)), folded


def _feeding_scaled(depthwise, epilogue, acc: np.ndarray, conv: ConvQuantizedScaled) -> DepthwiseIntoRows | None:
    """feeding's form for a pointwise ConvQuantizedScaled (1x1 stride 1 unpadded, one block of its im2col matrix:
    Im2Col.pointwise): the depthwise's floored values go straight into the first K columns of the conv's float32
    [A, 1] rows (integers |value| <= 383 before the base is added, the int8 / uint8 results after: exact in
    float32), the rows its np.copyto would have filled from the tensor with the same values; then its float32 GEMM
    and ScaledEpilogue, under the conv's own bound (its max|x| is the output type's). None for other layouts."""
    im2col = conv.im2col
    if type(im2col) is not Im2Col or not im2col.pointwise or im2col.groups != 1 or len(im2col.blocks) != 1:
        return None
    a, dest = im2col.blocks[0][4][0], im2col.blocks[0][5]
    if dest.shape[-1] != acc.shape[-1] or dest.size != acc.size:
        return None
    rows = dest.reshape(acc.shape)  # (1, N, OH, OW, 1, 1, C) -> (N, OH, OW, C): unit axes, a view
    if rows.dtype != np.float32 or not np.shares_memory(rows, a):
        return None
    sums = conv.sums
    ep, weights = _addend_folded(rows_epilogue(epilogue, acc, rows), conv.weights[0], FLOAT32_MANTISSA)
    return DepthwiseIntoRows(
        depthwise, ep, a, weights, sums, sums.reshape(a.shape[0], -1), conv.epilogue, np.matmul, None, None,
    )  # fmt: skip


def _const_rows(conv, row: np.ndarray, width: int) -> tuple:
    """(const_row, product_rows) of the split form: the conv's constant row, one value per GEMM output (up to
    requant_trunc.FULL_CONSTANTS_MAX_VALUES values: no broadcasting, the same additions) with the conv's (M, O)
    GEMM output, or, above that, tiled over the output's ``width`` with the output viewed as (M / width,
    width * O) rows (inner loops of width * O values, not O); the untiled row and the (M, O) rows when that view
    is not one. 750x8 values: 5.1 (the (O,) row) -> 3.0 (tiled) -> 1.3 us (per value)."""
    rows = conv.acc_rows
    if rows.size <= FULL_CONSTANTS_MAX_VALUES:
        full = aligned_empty(rows.shape, np.float64)
        full[...] = row
        return full, rows
    wide = rows.reshape(-1, width * rows.shape[1]) if rows.shape[0] % width == 0 else rows
    if wide is rows or not np.shares_memory(wide, rows) or not wide.flags.c_contiguous:
        return row, rows
    return np.tile(row, width), wide


@dataclass(frozen=True, eq=False)
class DepthwiseIntoRows(BoundCalls):
    """DEPTHWISE_CONV_2D (DepthwiseConvQuantizedRows or DepthwiseConvQuantizedFolded) then the pointwise CONV_2D
    (ConvQuantizedFoldedRows) that alone reads its output, as one step (module docstring): the depthwise's
    accumulators, its epilogue into the conv's GEMM rows (or in place: ``const_row`` set), the conv's GEMM (plus
    ``const_row``) and epilogue."""

    depthwise: object  # its accumulate_calls(x) fill the accumulators `epilogue` reads
    epilogue: RowsEpilogue
    a: np.ndarray  # the conv's [A, 1] rows; or (split form) the depthwise's accumulators as (M, K)
    weights: np.ndarray  # the conv's (K+1, O) weights; or (split form) their first K rows
    acc: np.ndarray
    acc_rows: np.ndarray
    conv_epilogue: object
    product: object
    const_row: np.ndarray | None  # split form: the conv's constant row (_const_rows), added after the product
    product_rows: np.ndarray | None  # split form: acc_rows, or its (N*OH, OW*O) view (_const_rows)

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on ``x`` and ``out``: the depthwise's accumulators (its ``accumulate_calls``), the
        epilogue into the rows, ``tail_calls``."""
        return (*self.depthwise.accumulate_calls(x), *self.epilogue.calls(), *self.tail_calls(out))

    def tail_calls(self, out: np.ndarray) -> tuple:
        """The conv's product, constant row and epilogue calls into ``out``."""
        c = [(self.product, (self.a, self.weights), {"out": self.acc_rows})]
        if self.const_row is not None:
            c.append((np.add, (self.product_rows, self.const_row, self.product_rows), {}))
        return (*c, *epilogue_calls(self.conv_epilogue, self.acc, out))


@dataclass(frozen=True, eq=False)
class DepthwiseRowsIntoRows(DepthwiseIntoRows):
    """DepthwiseIntoRows with the common case's calls inlined (built by depthwise_rows's
    DepthwiseConvQuantizedRows.feeding): a stride-1 DepthwiseConvQuantizedRows (one fill copy, one einsum)
    whose RowsEpilogue has no sign term and nothing added after the floor (``add`` None: ReLU-like layers
    floored straight into the rows or in place). The same numpy calls on the same arrays in the same order as
    DepthwiseIntoRows's (so the same values, under the same bounds); about 1 us fewer per pair of Python calls
    and attribute reads (keyword_spotting_mobilenetv2, 1 thread: 4x4x96 pairs 14.5 -> 13.5 us)."""

    fill_dest: np.ndarray = None  # the padded buffer's interior (Fill's one destination)
    fill_index: tuple = ()
    subscripts: str = ""
    window: np.ndarray = None
    taps: np.ndarray = None
    sums_out: np.ndarray = None  # the einsum's output (the sums, or the accumulators: scaled float64 sums)
    sums: np.ndarray = None
    scale: np.ndarray | None = None  # None: the sums are already scaled, in ``dw_acc``
    const: np.ndarray = None
    dw_acc: np.ndarray = None  # (N, OH, OW*O) float64 accumulators
    lo: np.ndarray = None
    hi: np.ndarray = None
    v4: np.ndarray = None  # dw_acc with the output's shape
    rows: np.ndarray = None  # where the floor goes: the conv's rows, or v4 itself (split form)

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """DepthwiseIntoRows's numpy calls on ``x`` and ``out``, inlined (the depthwise's fill and einsum, its
        epilogue without sign term or addend)."""
        acc, v = self.dw_acc, self.v4
        c = [(np.copyto, (self.fill_dest, x[self.fill_index]), {})]
        c.append((c_einsum, (self.subscripts, self.window, self.taps), {"out": self.sums_out}))
        if self.scale is not None:
            c += [(np.copyto, (acc, self.sums), {}), (np.multiply, (acc, self.scale, acc), {})]
        c += [(np.add, (acc, self.const, acc), {}), (clip_ufunc, (v, self.lo, self.hi, v), {})]
        c.append((np.floor, (v, self.rows), {}))
        return (*c, *self.tail_calls(out))


def inlined(op: DepthwiseIntoRows | None) -> DepthwiseIntoRows | None:
    """``op`` as a DepthwiseRowsIntoRows when its depthwise (a DepthwiseConvQuantizedRows: ``fill``, ``groups``)
    fills its padded buffer with one copy and sums with one einsum and its epilogue has no sign term and no
    addend; else ``op`` unchanged."""
    if op is None:
        return None
    d, ep = op.depthwise, op.epilogue
    fills = getattr(d.fill, "fills", ())
    if type(d.fill).__name__ != "Fill" or len(fills) != 1 or len(d.groups) != 1:
        return op
    if ep.half is not None or ep.add is not None or ep.v is not ep.v4 or not np.shares_memory(ep.v4, d.acc):
        return op
    ((dest, index),) = fills
    ((subscripts, window, taps, sums_out),) = d.groups
    fields = {f: getattr(op, f) for f in DepthwiseIntoRows.__dataclass_fields__}
    return DepthwiseRowsIntoRows(
        **fields, fill_dest=dest, fill_index=index, subscripts=subscripts, window=window, taps=taps,
        sums_out=sums_out, sums=d.sums, scale=d.scale, const=d.const, dw_acc=d.acc, lo=ep.lo, hi=ep.hi, v4=ep.v4,
        rows=ep.rows,
    )  # fmt: skip
