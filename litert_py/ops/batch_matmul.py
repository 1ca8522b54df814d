"""BATCH_MATMUL: float32, int8 (int8 or int32 output), int16 (int16 x int16 and int16 x int8) and hybrid
(float32 lhs, int8 rhs).

``out[..., a, c] = sum_k lhs[..., a, k] * rhs[..., k, c]`` after ``adj_x`` / ``adj_y`` (transpose the last two
dims of lhs / rhs) with numpy-style broadcasting of the batch dims; both inputs have rank 2 to 5. The output
shape is the broadcast batch shape followed by (rows of lhs, columns of rhs).

Paths (prepared ops):

- ``BatchMatMulFloat``: one ``np.matmul`` (a constant rhs is transposed once at prepare).
- ``BatchMatMulQuantized``: int8: ``acc = sum (l - zl)(r - zr)`` in int32 (wraps), then
  ``clamp(MultiplyByQuantizedMultiplier(acc, M, e) + zo, -128, 127)`` (double rounding; ``litert_py.quant.Requantizer``
  runs ``litert_py.quant.requantize``'s exact float64 formulation with its constants computed at prepare; when the
  unsaturated accumulators are at most TABLE_MAX integers, ``RequantizeTable`` reads the result from a table of
  them instead);
  int16 x int16 and int16 x int8 (all zero points 0): int64 accumulator and the int64 overload of
  MultiplyByQuantizedMultiplier (shifts up to 14), clamped to int16;
  int8 x int8 -> int32: the plain sum of raw products (zero points ignored). ``(M, e)`` is QuantizeMultiplier
  of ``f64(f32(s_lhs * s_rhs)) / f64(s_out)``; there is no fused activation. The products are summed by
  BLAS in float32 or float64, exact by a bound proved at prepare (as in fully_connected.py).
- ``BatchMatMulHybrid``: each row of lhs (length K) is quantized to int8 on its own (``batch_quantize_floats``,
  symmetric or ``asymmetric_quantize_inputs``), the int32 dot products with the int8 rhs are exact, then
  ``out = f32(f32(scale) * f32(total))`` with ``scale = f32(sf_row * s_rhs)`` (per channel:
  ``f32(sf_row * s_rhs[c])``) and, for asymmetric inputs,
  ``total = int32(f32(f32(dot) - f32(row_sum[c]) * f32(zp_row)))``. The row sums are ``SseReductionSumVector``'s.

LiteRT quirks reproduced (ai-edge-litert 2.3.0, x86-64; checked against the oracle in the tests):

- The hybrid kernel finds the scaling factor / zero point of an lhs row at ``sum_i b_i * A + a`` where ``b_i``
  runs over the (five-dim extended) output batch indices whose lhs dim is not 1 and A is the number of lhs
  rows, instead of the row's flat index. The two agree when at most one lhs batch dim exceeds 1 (after
  the kernel's folding of lhs ``[..., Q, R, K]`` into ``[..., Q*R, K]`` when ``adj_x`` is false and the rhs dim
  before its matrix is 1), so e.g. lhs ``[2, 3, A, K]`` with a rank-2 rhs uses other rows' scales. The row sums
  (asymmetric inputs) are indexed the same way over the rhs batch dims.
- Row sums are computed only for the rhs matrices of extended dims 1 and 2 (dim 0 is skipped); for a 5-D rhs
  whose first dim exceeds 1 LiteRT reads uninitialized sums in the asymmetric case. We use the true sums.
- The hybrid row sums are computed once per prepare: with a non-constant rhs LiteRT keeps using the first
  invoke's sums; we recompute them on every invoke.

Sources matched: tflite/kernels/batch_matmul.cc (Prepare, ResizeOutputTensor, EvalHybrid, EvalInt8Int8,
EvalInt8Int32, EvalInt16, EvalInt16Int8, Eval with its rhs/lhs role swap and the [..., 1, X, Y] folding),
tflite/kernels/internal/reference/batch_matmul.h (the three BatchMatMul templates),
tflite/kernels/kernel_util.cc (GetQuantizedConvolutionMultipler), tflite/kernels/internal/common.cc
(MultiplyByQuantizedMultiplier int32 and int64 overloads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..quant import (
    INT32_MAX,
    Requantizer,
    batch_quantize_floats,
    multiply_by_quantized_multiplier_int64,
    multiply_by_quantized_multiplier_int64_ok,
    quantize_multiplier,
    requantize,
    sse_reduction_sum_vector,
    wrap32,
)
from ..schema.model import BuiltinOperator
from .common import exact_gemm_dtype
from .into_reshape import is_reshape_copy
from .registry import OpContext, PreparedOp, TensorInfo, register

LHS, RHS = 0, 1
_MAX_RANK = 5


def _swap(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


# -------------------------------------------------------------------------------------------------------------
# Float
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BatchMatMulFloat:
    rhs: np.ndarray | None  # constant rhs as (..., K, C), contiguous; None: read (and transpose) each invoke
    adj_x: bool
    adj_y: bool

    def __call__(self, inputs, outputs):
        lhs = inputs[LHS]
        if self.adj_x:
            lhs = _swap(lhs)
        rhs = self.rhs
        if rhs is None:
            rhs = _swap(inputs[RHS]) if self.adj_y else inputs[RHS]
        np.matmul(lhs, rhs, out=outputs[0])


# -------------------------------------------------------------------------------------------------------------
# Quantized: int8 -> int8 / int32, int16 x int16 / int8 -> int16
# -------------------------------------------------------------------------------------------------------------


#: RequantizeTable's longest table (int8 entries): longer ones (tiny output multipliers) keep the Requantizer
TABLE_MAX = 1 << 16
#: Outputs of more values keep the Requantizer: the clipped gather slows down where many accumulators saturate
#: (32768 values of accumulator std 45000: 139 vs 87 us; (1, 8, 256, 256) whole invokes 3.2 vs 2.67 ms), while an
#: attention's (1, 4, 32, 32) gains (25 -> 18 us)
TABLE_MAX_OUTPUTS = 1 << 14


@dataclass(frozen=True, eq=False)
class RequantizeTable:
    """The int8 output requantization ``clamp(MultiplyByQuantizedMultiplier(acc, M, e) + zo, lo, hi)`` as one
    table read: ``table[i]`` is litert_py.quant.requantize of the accumulator ``first + i``, for every integer
    from ``first`` to ``first + len(table) - 1``; the invoke computes ``acc - first`` (float64, exact: integers
    below 2^53) cast to intp, then ``np.take(table, ., mode='clip')`` into the output: 2 numpy calls instead of
    the Requantizer's 7 (astype, scale, copysign, two adds, clip, floor).

    Exactness: for M >= 0, MBQM (SRDHM then RoundingDivideByPOT) is non-decreasing in acc, so is the clamped
    result; :meth:`build` checks at prepare that the table starts at the smallest possible accumulator or at an
    entry already equal to ``lo``, and ends at the largest one or at an entry equal to ``hi``: every accumulator
    below (above) the table then gives ``lo`` (``hi``), which is what the clipped index reads. The table is
    built only where MBQM's int32 product does not wrap (|acc| * 2^left_shift <= INT32_MAX: LiteRT shifts the
    accumulator left in int32 first, and a wrapped product is not monotone) and for at most TABLE_MAX entries;
    otherwise None and the Requantizer runs."""

    table: np.ndarray  # int8 requantized outputs of first .. first + len - 1
    first: np.ndarray  # 0-d float64
    index: np.ndarray  # intp scratch of the output's shape
    first32: np.ndarray = None  # 0-d float32: ``first`` for float32 accumulators (see __call__)

    @staticmethod
    def build(m: int, shift: int, zo: int, lo: int, hi: int, acc_bound: float, out_shape) -> RequantizeTable | None:
        if m <= 0 or acc_bound * 2.0 ** max(shift, 0) > INT32_MAX:
            return None
        bound = int(acc_bound)
        real = m * 2.0 ** (shift - 31)
        # both ends inside [-bound, bound] (a zero point far outside the output's range puts the unclamped
        # accumulators beyond the bound: a one-entry table)
        a0 = min(bound, max(-bound, math.floor((lo - zo - 2) / real)))
        a1 = max(-bound, min(bound, math.ceil((hi - zo + 2) / real)))
        if a1 - a0 + 1 > TABLE_MAX:
            return None
        table = requantize(np.arange(a0, a1 + 1, dtype=np.int64), m, shift, zo, lo, hi).astype(np.int8)
        if not (a0 == -bound or table[0] == lo) or not (a1 == bound or table[-1] == hi):
            return None
        return RequantizeTable(table, np.array(float(a0)), np.empty(out_shape, np.intp), np.array(a0, np.float32))

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        """float32 accumulators (the GEMM's exact float32 type: |acc| <= 2^24) subtract ``first`` in float32, without
        the float64 widening (4096 values 4.3 -> 2.6 us): ``acc - first`` is an integer of magnitude at most 2^25,
        exact up to 2^24 and otherwise rounded monotonically to a value of magnitude >= 2^24 > TABLE_MAX, which the
        clip maps to the same end of the table as the exact difference (0 and the table's length are exact)."""
        if acc.dtype == np.float32:
            np.subtract(acc, self.first32, out=self.index, casting="unsafe")
        else:
            np.subtract(acc, self.first, out=self.index, dtype=np.float64, casting="unsafe")
        self.table.take(self.index, out=out, mode="clip")


@dataclass(frozen=True, eq=False)
class BatchMatMulQuantized:
    """``kind``: "int8" (int32 acc, MBQM), "int32" (raw products, int32 output), "int16" (int64 acc, MBQM64)."""

    kind: str
    rhs: np.ndarray | None  # constant (rhs - zr) as (..., K, C) in `dtype`, or None
    dtype: np.dtype  # GEMM dtype (float32 / float64), exact for every input (proved at prepare)
    lhs_zero_point: int
    rhs_zero_point: int
    adj_x: bool
    adj_y: bool
    multiplier: int
    shift: int
    zo: int
    qmin: int
    qmax: int
    requant: Requantizer | None  # int8 output (it wraps an int32 accumulator that may overflow itself)
    wraps: bool  # int32 output: the int32 accumulator may overflow, reproduce the wrap
    table: RequantizeTable | None = None  # int8 output: requant as one table read, when build proves it exact

    def feeding(self, consumer):
        """This op storing into the output of the RESHAPE / SQUEEZE / EXPAND_DIMS copy (shape.CopyReshaped) that
        alone reads its output (ops/slice_views.py's fuse_feeding; the copy dropped): ``__call__`` writes through
        that output viewed with the product's shape, a C-order reshape (the same values in the same order);
        None for other readers."""
        return self if is_reshape_copy(consumer) else None

    def __call__(self, inputs, outputs):
        out = outputs[0]
        lhs = inputs[LHS]
        if self.adj_x:
            lhs = _swap(lhs)
        dt = self.dtype
        lf = np.subtract(lhs, self.lhs_zero_point, dtype=dt) if self.lhs_zero_point else lhs.astype(dt)
        rhs = self.rhs
        if rhs is None:
            r = _swap(inputs[RHS]) if self.adj_y else inputs[RHS]
            rhs = np.subtract(r, self.rhs_zero_point, dtype=dt) if self.rhs_zero_point else r.astype(dt)
        acc = np.matmul(lf, rhs)
        if out.shape != acc.shape:  # a reshape's output (``feeding``): the same values in C order
            if not out.flags.c_contiguous:  # no view of it has acc's shape (a direct call's array): via a buffer
                buffer = np.empty(acc.shape, out.dtype)
                self._store(acc, buffer)
                np.copyto(out, buffer.reshape(out.shape))
                return
            out = out.reshape(acc.shape)
        self._store(acc, out)

    def _store(self, acc: np.ndarray, out: np.ndarray) -> None:
        """The requantized product ``acc`` into ``out`` (acc's shape)."""
        if self.kind == "int16":
            r = multiply_by_quantized_multiplier_int64(acc.astype(np.int64), self.multiplier, self.shift)
            np.clip(wrap32(r + self.zo), self.qmin, self.qmax, out=out, casting="unsafe")
            return
        if self.wraps:
            acc = wrap32(acc.astype(np.int64))
        if self.kind == "int32":
            np.copyto(out, acc, casting="unsafe")
            return
        if self.table is not None and out.shape == self.table.index.shape:
            self.table(acc, out)
            return
        self.requant(acc, out)


# -------------------------------------------------------------------------------------------------------------
# Hybrid: float32 lhs, int8 rhs
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BatchMatMulHybrid:
    rhs: np.ndarray | None  # constant int8 rhs as float (1, 1, 1|D0.., K, C) 5-D view, or None
    row_sums: np.ndarray | None  # float32 (n_matrices * C,) SseReductionSumVector of each (C, K) matrix
    w_scale: np.ndarray  # float32 () or (C,)
    asymmetric: bool
    adj_x: bool
    adj_y: bool
    lhs5: tuple[int, ...]  # lhs (after adj_x) as 5-D (d0, d1, d2, A, K), after LiteRT's folding
    rhs5: tuple[int, ...]  # rhs (after adj_y) as 5-D (d0, d1, d2, K, C)
    out5: tuple[int, ...]
    scale_index: np.ndarray  # (D0, D1, D2, A) index of each row's scaling factor, LiteRT's way
    sum_index: np.ndarray  # (D0, D1, D2, C) index of each column's row sum, LiteRT's way

    def __call__(self, inputs, outputs):
        lhs = inputs[LHS]
        if self.adj_x:
            lhs = np.ascontiguousarray(_swap(lhs))
        k = self.lhs5[-1]
        q, sf, zp = batch_quantize_floats(lhs.reshape(-1, k), self.asymmetric)
        rhs, row_sums = self.rhs, self.row_sums
        if rhs is None:
            r = _swap(inputs[RHS]) if self.adj_y else inputs[RHS]
            rhs = r.astype(np.float64).reshape(self.rhs5)
            if self.asymmetric:
                mats = np.ascontiguousarray(_swap(r)).reshape(-1, k)  # (n_matrices * C, K), LiteRT's layout
                row_sums = sse_reduction_sum_vector(mats).astype(np.float32)
        dot = np.matmul(q.reshape(self.lhs5).astype(rhs.dtype, copy=False), rhs)  # exact int32 sums
        total = dot.astype(np.float32)
        if zp is not None:  # total -= row_sum * batch_offset: a float product, then int32 truncation
            rs = row_sums[self.sum_index][..., None, :]
            off = zp[self.scale_index][..., :, None]
            total -= rs * off
            np.trunc(total, out=total)
        if self.w_scale.ndim:  # scale = f32(sf * per_channel_scale[c])
            scale = np.multiply(sf[self.scale_index][..., :, None], self.w_scale, dtype=np.float32)
        else:  # scaling_factors[b] *= filter scale, then one scale per row
            scale = np.multiply(sf, self.w_scale, dtype=np.float32)[self.scale_index][..., :, None]
        np.multiply(scale, total, out=outputs[0].reshape(self.out5))


def _extend5(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (1,) * (_MAX_RANK - len(shape)) + tuple(shape)


def _litert_index(out_batch: tuple[int, int, int], operand_batch: tuple[int, int, int], stride: int) -> np.ndarray:
    """``sum_i b_i * (stride if operand_batch[i] != 1 else 0)`` over the output batch grid (reference/
    batch_matmul.h: ioff_ext / woff_ext), shape out_batch."""
    grids = np.meshgrid(*(np.arange(n) for n in out_batch), indexing="ij")
    base = np.zeros(out_batch, dtype=np.int64)
    for g, n in zip(grids, operand_batch):
        if n != 1:
            base += g * stride
    return base


def _prepare_hybrid(ctx: OpContext, lhs: TensorInfo, rhs: TensorInfo, adj_x: bool, adj_y: bool):
    out = ctx.outputs[0]
    ctx.check(out.dtype == np.float32, f"hybrid BATCH_MATMUL needs a FLOAT32 output, got {out.type_name}")
    ctx.check(bool(rhs.quantization.scale), "hybrid BATCH_MATMUL needs a quantized rhs")
    scales = np.asarray(rhs.quantization.scale, dtype=np.float32)
    rank = len(rhs.shape)
    c_dim = rank - 2 if adj_y else rank - 1
    if scales.size > 1:
        qd = rhs.quantization.quantized_dimension
        ctx.check(
            qd == c_dim and scales.size == rhs.shape[c_dim],
            f"{scales.size} rhs scales along dimension {qd}; per-channel hybrid BATCH_MATMUL needs one per "
            f"output column (dimension {c_dim}, size {rhs.shape[c_dim]})",
        )
        w_scale = scales
    else:
        w_scale = np.asarray(np.float32(scales[0]))
    # LiteRT's shapes: lhs after adj_x is (..., A, K); rhs after adj_y is (..., K, C); then the folding.
    lshape = list(lhs.shape)
    if adj_x:
        lshape[-1], lshape[-2] = lshape[-2], lshape[-1]
    rshape = list(rhs.shape)
    if adj_y:
        rshape[-1], rshape[-2] = rshape[-2], rshape[-1]
    if not adj_x and len(rshape) > 2 and len(lshape) > 2 and rhs.shape[-3] == 1:
        lshape = lshape[:-3] + [lshape[-3] * lshape[-2], lshape[-1]]
        rshape = rshape[:-3] + rshape[-2:]
    lhs5, rhs5 = _extend5(lshape), _extend5(rshape)
    out_batch = tuple(int(np.broadcast_shapes((a,), (b,))[0]) for a, b in zip(lhs5[:3], rhs5[:3]))
    rows, k, cols = lhs5[3], lhs5[4], rhs5[4]
    out5 = out_batch + (rows, cols)
    scale_index = _litert_index(out_batch, lhs5[:3], rows)[..., None] + np.arange(rows)
    sum_index = _litert_index(out_batch, rhs5[:3], cols)[..., None] + np.arange(cols)
    asym = bool(ctx.options.asymmetric_quantize_inputs)
    rhs_c, row_sums = None, None
    if rhs.is_constant:
        r = _swap(rhs.data) if adj_y else rhs.data  # (..., K, C)
        bound = 128.0 * float(np.abs(r, dtype=np.float64).sum(axis=-2).max(initial=0))
        dt = exact_gemm_dtype(bound) or np.dtype(np.float64)
        rhs_c = np.ascontiguousarray(r, dtype=dt).reshape(rhs5)
        if asym:
            mats = np.ascontiguousarray(_swap(r)).reshape(-1, k)
            row_sums = sse_reduction_sum_vector(mats).astype(np.float32)
    return BatchMatMulHybrid(rhs_c, row_sums, w_scale, asym, adj_x, adj_y, lhs5, rhs5, out5, scale_index, sum_index)


# -------------------------------------------------------------------------------------------------------------
# Prepare
# -------------------------------------------------------------------------------------------------------------


@register(BuiltinOperator.BATCH_MATMUL)
def prepare_batch_matmul(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    lhs, rhs = ctx.input(LHS), ctx.input(RHS)
    out = ctx.outputs[0]
    adj_x, adj_y = bool(ctx.options.adj_x), bool(ctx.options.adj_y)
    if lhs.dtype == np.int16:
        ctx.check(
            lhs.zero_point == 0 and rhs.zero_point == 0 and out.zero_point == 0,
            "INT16 BATCH_MATMUL needs zero points 0 (lhs, rhs and output)",
        )
    allowed = (np.float32, np.int8, np.int16)
    ctx.check(
        lhs.dtype in allowed and rhs.dtype in allowed,
        f"BATCH_MATMUL supports FLOAT32, INT8 and INT16 inputs, got {lhs.type_name} and {rhs.type_name}",
    )
    ctx.check(
        (lhs.dtype == np.float32 and rhs.dtype == np.int8)
        or lhs.dtype == rhs.dtype
        or (lhs.dtype == np.int16 and rhs.dtype == np.int8),
        f"BATCH_MATMUL with lhs {lhs.type_name} and rhs {rhs.type_name} is not supported",
    )
    lr, rr = len(lhs.shape), len(rhs.shape)
    ctx.check(
        2 <= lr <= _MAX_RANK and 2 <= rr <= _MAX_RANK,
        f"BATCH_MATMUL inputs must have rank 2 to {_MAX_RANK}, got {lr} and {rr}",
    )
    rank = max(lr, rr)
    l5, r5 = (1,) * (rank - lr) + tuple(lhs.shape), (1,) * (rank - rr) + tuple(rhs.shape)
    batch = []
    for a, b in zip(l5[:-2], r5[:-2]):
        ctx.check(a == b or a == 1 or b == 1, f"batch dims {list(lhs.shape)} and {list(rhs.shape)} do not broadcast")
        batch.append(b if (a != b and a == 1) else a)
    k_l = l5[-2] if adj_x else l5[-1]
    k_r = r5[-1] if adj_y else r5[-2]
    ctx.check(k_l == k_r, f"contraction dims differ: lhs {k_l}, rhs {k_r}")
    rows = l5[-1] if adj_x else l5[-2]
    cols = r5[-2] if adj_y else r5[-1]
    ctx.set_output_shape(0, tuple(batch) + (rows, cols))

    if lhs.dtype == np.float32 and rhs.dtype == np.float32:
        ctx.check(out.dtype == np.float32, f"float BATCH_MATMUL needs a FLOAT32 output, got {out.type_name}")
        r = None
        if rhs.is_constant:
            r = np.ascontiguousarray(_swap(rhs.data) if adj_y else rhs.data, dtype=np.float32)
        return BatchMatMulFloat(r, adj_x, adj_y)
    if lhs.dtype == np.float32:
        return _prepare_hybrid(ctx, lhs, rhs, adj_x, adj_y)
    return _prepare_quantized(ctx, lhs, rhs, out, adj_x, adj_y, k_l, tuple(batch) + (rows, cols))


def _prepare_quantized(
    ctx, lhs: TensorInfo, rhs: TensorInfo, out: TensorInfo, adj_x, adj_y, depth: int, acc_shape: tuple
):
    if lhs.dtype == np.int8:
        ctx.check(out.dtype in (np.int8, np.int32), f"INT8 BATCH_MATMUL outputs INT8 or INT32, got {out.type_name}")
        kind = "int8" if out.dtype == np.int8 else "int32"
    else:
        ctx.check(out.dtype == np.int16, f"INT16 BATCH_MATMUL outputs INT16, got {out.type_name}")
        kind = "int16"
    m, shift, qmin, qmax = 0, 0, 0, 0
    if kind != "int32":
        ctx.check(
            bool(lhs.quantization.scale) and bool(rhs.quantization.scale) and bool(out.quantization.scale),
            "quantized BATCH_MATMUL needs scales on lhs, rhs and output",
        )
        product = np.float32(lhs.scale) * np.float32(rhs.scale)  # GetQuantizedConvolutionMultipler: f32
        ctx.check(float(product) >= 0, "input_product_scale >= 0 was not true.")
        with np.errstate(all="ignore"):
            real = np.float64(product) / np.float64(np.float32(out.scale))
        ctx.check(bool(np.isfinite(real)), f"output multiplier {real} is not finite")
        m, shift = quantize_multiplier(float(real))
        ctx.check(-31 <= shift <= (14 if kind == "int16" else 30), f"output multiplier {real} out of range")
        info = np.iinfo(out.dtype)
        qmin, qmax = int(info.min), int(info.max)
    zl = 0 if kind == "int32" else int(lhs.zero_point)
    zr = 0 if kind == "int32" else int(rhs.zero_point)
    li, ri = np.iinfo(lhs.dtype), np.iinfo(rhs.dtype)
    max_l = max(abs(int(li.min) - zl), abs(int(li.max) - zl))
    rhs_c = None
    if rhs.is_constant:
        r = (_swap(rhs.data) if adj_y else rhs.data).astype(np.float64) - zr
        col_l1 = np.abs(r).sum(axis=-2)  # (..., C)
        bound = max_l * float(col_l1.max(initial=0))
    else:
        bound = float(depth) * max_l * max(abs(int(ri.min) - zr), abs(int(ri.max) - zr))
    dt = exact_gemm_dtype(bound)
    ctx.check(dt is not None, "BATCH_MATMUL accumulation too deep for an exact float64 sum")
    if kind == "int16":
        ctx.check(
            multiply_by_quantized_multiplier_int64_ok(shift, bound),
            f"output multiplier {real} out of range for the int64 MultiplyByQuantizedMultiplier",
        )
    if rhs.is_constant:
        rhs_c = np.ascontiguousarray(r, dtype=dt)
    wraps = kind == "int32" and bound >= 2**31
    zo = int(out.zero_point)
    requant = Requantizer.build(m, shift, zo, qmin, qmax, bound, acc_shape) if kind == "int8" else None
    small = int(np.prod(acc_shape)) <= TABLE_MAX_OUTPUTS
    table = RequantizeTable.build(m, shift, zo, qmin, qmax, bound, acc_shape) if kind == "int8" and small else None
    return BatchMatMulQuantized(kind, rhs_c, dt, zl, zr, adj_x, adj_y, m, shift, zo, qmin, qmax, requant, wraps, table)
