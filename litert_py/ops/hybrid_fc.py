"""FULLY_CONNECTED's hybrid product (float input, int8 weights: dynamic-range quantization), prepared once: the
kernel of FULLY_CONNECTED's hybrid path, and the matrix products of the hybrid RNN, SVDF and LSTM kernels
(``hybrid_matvec``); ``FullyConnectedHybridRow``: one input row with constant weights in about half the numpy
calls (256 -> 128 units: 18-21 -> 7-11 us; asymmetric 34-48 -> 13-14 us), its numpy calls bound once to the
runtime's arrays, the row's scalars from quant.hybrid.RowScalars (shared with the one-batch hybrid conv plans:
one uint32 max reduction tells a row without a sign bit, whose quantization takes 3 calls); a signed asymmetric
row quantized as ``q - zp`` in 5 calls (dense_ae_dynamic's ten 128-wide layers: 95 -> 74 -> 62 us per invoke);
``FullyConnectedHybridRows`` (hybrid_fc_rows.py): a fixed number of asymmetric rows with constant weights.
Semantics and sources: see fully_connected.py and litert_py/quant/hybrid.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant import SseMinus128Fix, batch_quantize_floats, sse_reduction_sum_vector
from ..quant.hybrid import (
    BatchRowQuantizer,
    RowScalars,
)
from ..schema import dtypes
from .bound_plan import bound_plan
from .common import apply_activation_to_vector, exact_gemm_dtype
from .registry import OpContext, TensorInfo

INPUT, WEIGHTS = 0, 1


@dataclass(frozen=True, eq=False)
class FullyConnectedHybrid:
    """The hybrid product ``x -> f32(dot(q(x), w)) * f32(sf * w_scale) + bias``, activation applied.

    The int8 dot products are one BLAS product in float32 or float64 (exact: every partial sum is an integer
    below the type's 2^24 / 2^53, ``product_bound``, checked at prepare), computed as ``W @ q.T`` on the weights
    in their own (units, depth) layout: a matrix-vector product for one row, 2-7x faster than ``q @ W.T`` with
    W transposed into a copy (1024 -> 512 units: float64 107 -> 47 us, float32 29 -> 14 us)."""

    weights_t: np.ndarray | None  # (depth, units): the transposed view of the C-contiguous (units, depth) float32 /
    # float64 array holding the int8 weights; None: not constant
    row_sums: np.ndarray | None  # (units,) same dtype, sse_reduction_sum_vector (asymmetric inputs only)
    sse_fix: SseMinus128Fix | None
    w_scale: np.ndarray  # float32: () per tensor, (units,) per channel
    bias: np.ndarray | None  # float32 (units,)
    asymmetric: bool
    depth: int
    units: int
    activation: object
    #: EvalHybrid's IsZeroVector shortcut (fully_connected.cc): an all-zero input (every element == 0.0, -0.0
    #: too, over the whole input, not per row) leaves ``output = bias`` (or 0.0f), activation applied. It differs
    #: from ``bias + 0 * scale`` only at a -0.0 bias element or a non-finite weight scale; checked only then.
    zero_shortcut: bool = False

    def __call__(self, inputs, outputs):
        out2d = outputs[0].reshape(-1, self.units)
        x2 = inputs[INPUT].reshape(-1, self.depth)
        if self.zero_shortcut and not x2.any():
            out2d[...] = self.bias if self.bias is not None else np.float32(0)
            if self.activation is not None:
                self.activation(out2d)
            return
        wt, row_sums, fix = self.weights_t, self.row_sums, self.sse_fix
        if wt is None:
            w = hybrid_weights(inputs[WEIGHTS])
            wt = w.astype(np.float64).T
            row_sums = sse_reduction_sum_vector(w).astype(np.float64) if self.asymmetric else None
            fix = SseMinus128Fix.build(w, np.float64)
        q, sf, zp = batch_quantize_floats(x2, self.asymmetric)
        # exact int32 dot products, (units, rows) transposed back to a (rows, units) view
        dot = np.dot(wt.T, (q if wt.dtype == np.float32 else q.astype(wt.dtype)).T).T
        if fix is not None:
            fix.apply(q, dot)
        if zp is not None:
            dot -= zp.astype(wt.dtype)[:, None] * row_sums
        if dot.dtype != np.float32:
            dot = dot.astype(np.float32)  # int32 -> float conversion of `dotprod * scale`
        if self.w_scale.ndim:  # per channel: scale = f32(w_scale[c] * sf[b])
            scale = np.multiply(sf[:, None], self.w_scale, dtype=np.float32)
        else:  # per tensor: scaling_factors[b] *= filter scale
            scale = np.multiply(sf, self.w_scale, dtype=np.float32)[:, None]
        dot *= scale
        # result = bias (or 0.0f), then result += dot * scale
        np.add(dot, self.bias if self.bias is not None else np.float32(0), out=out2d)
        if self.activation is not None:
            self.activation(out2d)


def product_bound(wi: np.ndarray, row_sums: np.ndarray | None) -> np.ndarray:
    """Per unit, a bound on every partial sum FullyConnectedHybrid's product computes for the int8 weights ``wi``
    (units, depth): the dot product with q (|q| <= 127, asymmetric 128) is at most q_max * L1; the SSE -128 fix
    (SseMinus128Fix) adds 256 * min(q, 0) per -128 weight in the 16-wide blocks, at most q_max * 256 * cnt; the
    asymmetric zero-point term zp * row_sum is at most 128 * |row_sum|, the difference sum((q - zp) * w) at most
    255 * L1. The sum of these terms bounds each of them and every partial sum."""
    q_max = 127.0 if row_sums is None else 128.0
    l1 = np.abs(wi, dtype=np.float64).sum(axis=1)
    cnt = (wi[:, : wi.shape[1] & ~15] == -128).sum(axis=1)
    bound = q_max * (l1 + 256.0 * cnt)
    if row_sums is not None:
        bound += 128.0 * np.abs(row_sums) + 255.0 * l1
    return bound


def hybrid_weights(w: np.ndarray) -> np.ndarray:
    return w.view(np.int8) if w.dtype == np.uint8 else w  # LiteRT reads uint8 hybrid weights as int8


def hybrid_matvec(w: np.ndarray, scale, asymmetric: bool) -> FullyConnectedHybrid:
    """A prepared hybrid product ``x -> f32(dot(q(x), w)) * f32(sf * scale)`` for the int8 matrix ``w``;
    ``scale``: one float, or one per row of ``w`` (float32)."""
    wi = w.view(np.int8) if w.dtype == np.uint8 else w
    return FullyConnectedHybrid(
        np.ascontiguousarray(wi, dtype=np.float64).T,
        sse_reduction_sum_vector(wi).astype(np.float64) if asymmetric else None,
        SseMinus128Fix.build(wi, np.float64),
        np.asarray(scale, dtype=np.float32),
        None,
        asymmetric,
        wi.shape[1],
        wi.shape[0],
        None,
    )


def prepare_hybrid(ctx: OpContext, x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, out: TensorInfo):
    """FULLY_CONNECTED's hybrid path (float32 input, int8 / INT4 / uint8 weights): checks and the prepared op."""
    ctx.check(out.dtype == np.float32, f"hybrid FULLY_CONNECTED needs a FLOAT32 output, got {out.type_name}")
    ctx.check(
        bias is None or bias.dtype == np.float32,
        f"bias must be FLOAT32 for hybrid FULLY_CONNECTED, got {bias and bias.type_name}",
    )
    ctx.check(bool(w.quantization.scale), "hybrid FULLY_CONNECTED needs quantized weights")
    if w.type == dtypes.TensorType.INT4:
        ctx.check(all(z == 0 for z in w.quantization.zero_point), "Unsupported filter quantization zero-point value.")
    units, depth = w.shape
    scales = np.asarray(w.quantization.scale, np.float32)
    if scales.size > 1:  # VerifyPerChannelQuantization; the scale of row `c` is scales[c]
        ctx.check(
            w.quantization.quantized_dimension == 0 and scales.size == units,
            f"{scales.size} weight scales along dimension {w.quantization.quantized_dimension} for {units} units",
        )
        w_scale = scales
    else:
        w_scale = np.float32(scales[0])
    asym = bool(ctx.options.asymmetric_quantize_inputs)
    b = None if bias is None else (bias.data.astype(np.float32).reshape(-1) if bias.is_constant else None)
    ctx.check(bias is None or b is not None, "hybrid FULLY_CONNECTED needs a constant bias")
    activation = apply_activation_to_vector(ctx.options.fused_activation_function)
    zero_shortcut = bool(b is not None and np.signbit(b[b == 0]).any()) or not np.isfinite(w_scale).all()
    if not w.is_constant:
        return FullyConnectedHybrid(
            None, None, None, np.asarray(w_scale), b, asym, depth, units, activation, zero_shortcut
        )
    wi = hybrid_weights(w.data)
    row_sums = sse_reduction_sum_vector(wi) if asym else None
    ct = exact_gemm_dtype(product_bound(wi, row_sums)) or np.dtype(np.float64)
    wt = np.ascontiguousarray(wi, dtype=ct).T
    general = FullyConnectedHybrid(
        wt,
        None if row_sums is None else row_sums.astype(ct),
        SseMinus128Fix.build(wi, ct),
        np.asarray(w_scale),
        b,
        asym,
        depth,
        units,
        activation,
        zero_shortcut,
    )
    if x.shape and int(np.prod(x.shape)) == depth and not x.dynamic and depth:
        return FullyConnectedHybridRow.build(general, wi)
    rows = int(np.prod(x.shape)) // depth if depth and x.shape and not x.dynamic else 0
    if asym and rows >= 2 and rows * depth == int(np.prod(x.shape)):
        from .hybrid_fc_rows import FullyConnectedHybridRows  # that module imports this one

        return FullyConnectedHybridRows.build(general, wi, rows)
    return general


def augmented_weights(general: FullyConnectedHybrid, wi: np.ndarray) -> np.ndarray:
    """``[W, 256 M, -row_sums]`` (units, depth + len(fix cols) [+ 1]) C-contiguous, float32 where every partial
    sum of its product with ``[q, min(q[cols], 0), zp]`` (factors at most q_max in magnitude: 127 for symmetric
    inputs, |q| <= 127; 128 for asymmetric ones, q and zp in [-128, 127]) is at most ``q_max * sum|w_aug|``
    <= 2^24, else float64 (see FullyConnectedHybridRow)."""
    parts = [wi.astype(np.float64)]
    if general.sse_fix is not None:
        parts.append(256.0 * general.sse_fix.mask_t.T)
    if general.asymmetric:
        parts.append(-sse_reduction_sum_vector(wi).astype(np.float64).reshape(wi.shape[0], 1))
    w_aug = np.concatenate(parts, axis=1)
    # |q|, |min(q, 0)|, |zp| <= q_max: every partial sum of the augmented product is at most q_max * sum|w_aug|,
    # often within float32's 2^24 where the general product's bound (product_bound) is not (half the bytes)
    q_max = 128.0 if general.asymmetric else 127.0
    ct = exact_gemm_dtype(q_max * np.abs(w_aug).sum(axis=1)) or np.dtype(np.float64)
    return np.ascontiguousarray(w_aug, dtype=ct)


def _shifted_exact(wi: np.ndarray, row_sums: np.ndarray, dtype) -> bool:
    """Whether FullyConnectedHybridRow may multiply its rows shifted, ``q - zp`` with a zero point column of 0: a
    row with min >= 0 (zero point -128) as ``q + 128 = trunc(v + half)`` in [0, 255] (one call less: no
    ``- 128``), a signed row as ``clip(round(v), -128 - zp, 127 - zp)`` (5 calls instead of 7). The product
    ``sum (q - zp) w`` equals ``sum q w - zp * row_sums`` when the SSE row sums are the true sums (no int16 lane
    wrapped), and is exact in ``dtype`` when ``255 * sum|w|`` (every partial sum's bound: |q - zp| <= 255) is.
    Without the SSE -128 fix (the caller's test), whose columns read q itself."""
    exact = np.abs(wi, dtype=np.float64).sum(axis=1) * 255.0
    same = np.array_equal(np.asarray(row_sums, np.float64), wi.sum(axis=1, dtype=np.float64))
    return same and exact_gemm_dtype(exact) in (np.dtype(dtype), np.dtype(np.float32))


def product_calls(lhs, rhs, dot, scale, bias, activation, out: np.ndarray) -> list:
    """The bound calls of ``f32(f32(lhs @ rhs) * scale) + bias`` into ``out``, the activation: the product in
    ``out`` (float32) or in ``dot`` (float64, then rounded once to float32 by the scaling's input cast)."""
    if dot is None:
        calls = [(np.dot, (lhs, rhs), {"out": out}), (np.multiply, (out, scale), {"out": out})]
    else:  # f32(f32(dot) * scale)
        calls = [(np.dot, (lhs, rhs), {"out": dot}), (np.multiply, (dot, scale), {"out": out, "dtype": F32})]
    calls.append((np.add, (bias, out), {"out": out}))
    if activation is not None:
        calls.append((activation, (out,), {}))
    return calls


def bindable(x, out, x_size: int, out_size: int) -> bool:
    """Arrays a plan can be bound to: C-contiguous float32 arrays of the op's sizes (their reshapes are views)."""
    return (
        x is not None
        and out is not None
        and x.size == x_size
        and out.size == out_size
        and x.dtype == np.float32
        and out.dtype == np.float32
        and x.flags.c_contiguous
        and out.flags.c_contiguous
    )


def bound_to(op, inputs, outputs):
    """``op._bound`` for these arrays: bound to them first when they are not the ones it holds; None: no plan."""
    b = op._bound
    if b is None or b[0] is not inputs[INPUT] or b[1] is not outputs[0]:
        op.bind(inputs, outputs)
        b = op._bound
    return b


F32 = np.float32
CM128 = np.array(-128, F32)


@dataclass(frozen=True, eq=False)
class FullyConnectedHybridRow:
    """FullyConnectedHybrid for one input row with constant weights, in about ten numpy calls on buffers made at
    prepare (the general path makes about twenty):

    - the row's scalars: quant.hybrid.RowScalars (one uint32 max reduction of the row's bits, a second float max
      reduction where the row holds a negative value, Python doubles rounded to float32 through 0-d buffers);
      per tensor ``f32(sf * w_scale)`` likewise (the double product of two floats is exact);
    - the quantization: quant.hybrid.BatchRowQuantizer's calls (the one-batch hybrid conv plans' routine), the
      rounding of ``neon_round_inplace``: ``trunc(f32(v + copysign(half, v)))`` on ``v = f32(x * inv)``,
      ``half`` 0.5 on the 8-wide part, HALF_DOWN (roundf) on the tail; for a row RowScalars calls nonneg (no
      sign bit, or asymmetric with min >= 0) ``trunc(f32(v + half))``;
    - symmetric, no clamp to [-127, 127]: ``|x| <= R`` gives ``|f32(x * inv)| <= f32(127 (1 + 2^-24)) < 127.5``;
      asymmetric: ``clip(round(v), -128 - zp, 127 - zp)`` (q - zp), ``+ zp`` after it where the product reads q
      (not ``shifted``: see below);
    - the SSE -128 fix and the asymmetric zero point as extra product columns:
      ``[q, min(q[cols], 0), zp] @ [W, 256 M, -row_sums]`` (one GEMV); every factor on the left is at most
      q_max in magnitude (127 symmetric, 128 asymmetric), so every partial sum is at most ``q_max * sum|w_aug|``
      per unit: float32 where that is within 2^24 (often so where ``product_bound``, which bounds the general
      path's separate zero-point subtraction by ``255 * L1``, asks for float64: a 1280 -> 1000 classifier's 10 MB
      of float64 weights, memory-bound, become 5 MB), else float64;
    - asymmetric, ``shifted`` (no SSE fix, the SSE row sums the true sums, ``255 * sum|w|`` exact in the product's
      type: ``_shifted_exact``; no -0.0 bias element): the product multiplies ``q - zp`` with a zero point column
      of 0 (``sum (q - zp) w = sum q w - zp * row_sums``): a nonneg row's ``q + 128 = trunc(v + half)`` in 3
      quantize calls, a signed row's ``clip(round(v), -128 - zp, 127 - zp)`` in 5. That ``q - zp`` may be -0.0
      (``round(v)`` of a v in (-0.5, 0], q = zp) where the reference's q is not: it changes the dot product only
      where every term is a zero, to -0.0, and ``f32(dot) * scale + bias`` only at a -0.0 bias element;
    - rows RowScalars declines (all zeros, tiny, inf or NaN) take the general path (``general``), so every
      result equals FullyConnectedHybrid's."""

    general: FullyConnectedHybrid
    w_aug: np.ndarray  # (units, depth + len(fix_cols) [+ 1]) C-contiguous float32 / float64
    fix_cols: np.ndarray | None  # input columns of the SSE -128 fix
    quantizer: BatchRowQuantizer  # the row's scalars (RowScalars) and its quantize calls, (depth,) float32
    w_scale: float | None  # per tensor, as a Python float; None: per channel (general.w_scale)
    bias: np.ndarray  # (units,) float32 (zeros without bias: 0 + (-0.0) is +0.0 as in C++)
    activation: object
    # scratch
    a: np.ndarray  # (depth,) float32: v = f32(x * inv), rounded
    qq: np.ndarray  # (depth + len(fix_cols) [+ 1],) w_aug's dtype: q (shifted: q - zp), min(q[cols], 0) [, zp]
    scale: np.ndarray  # () or (units,) float32
    dot: np.ndarray | None  # (units,) float64 when the product runs in float64
    writes_zp: bool  # asymmetric, not shifted: the zero point's column holds the row's zp
    shifted: bool  # asymmetric: the product multiplies q - zp with a zero point column of 0

    @staticmethod
    def build(general: FullyConnectedHybrid, wi: np.ndarray) -> FullyConnectedHybridRow:
        units, depth = wi.shape
        fix = general.sse_fix
        w_aug = augmented_weights(general, wi)
        ct = w_aug.dtype
        per_tensor = general.w_scale.ndim == 0
        bias = np.zeros(units, F32) if general.bias is None else general.bias
        shifted = (
            general.asymmetric
            and fix is None
            and not np.signbit(bias[bias == 0]).any()
            and _shifted_exact(wi, general.row_sums, ct)
        )
        return FullyConnectedHybridRow(
            general,
            w_aug,
            None if fix is None else fix.cols,
            BatchRowQuantizer.build((depth,), general.asymmetric, plus_zero=False),
            float(general.w_scale) if per_tensor else None,
            bias,
            general.activation,
            np.empty(depth, F32),
            np.zeros(w_aug.shape[1], ct),
            np.zeros(() if per_tensor else units, F32),
            None if ct == np.float32 else np.empty(units, ct),
            general.asymmetric and not shifted,
            shifted,
        )

    _bound = None  # bind's (input, output, the row's scalars (RowScalars.bind), the calls after them, those of a
    # nonneg row) as partial objects, or None

    def bind(self, inputs, outputs) -> None:
        """The row's scalars and the numpy calls after them bound once to ``inputs[0]`` and ``outputs[0]`` (views of
        their memory; C-contiguous float32 arrays of this op's size, else no plan: the general path)."""
        x, out = inputs[INPUT], outputs[0]
        depth, units = self.a.shape[0], self.bias.shape[0]
        bound = None
        if bindable(x, out, depth, units):
            x1, o1 = x.reshape(-1), out.reshape(-1)
            rest = self.product_calls(o1)
            if self.w_scale is None:  # per channel: scale = f32(w_scale[c] * sf)
                rest.insert(0, (np.multiply, (self.general.w_scale, self.row.sf), {"out": self.scale}))
            plans = [bound_plan(c(x1) + self.fix_calls() + rest) for c in (self.quantize_calls, self.nonneg_calls)]
            bound = (x, out, self.row.bind(x1), *plans)
        object.__setattr__(self, "_bound", bound)

    @property
    def row(self) -> RowScalars:
        return self.quantizer.scalars

    def product_calls(self, out: np.ndarray) -> list:
        """The product, its scaling, the bias and the activation into ``out`` (1-d)."""
        return product_calls(self.w_aug, self.qq, self.dot, self.scale, self.bias, self.activation, out)

    def quantize_calls(self, x: np.ndarray) -> list:
        """q (shifted: q - zp) into ``qq`` once the row's scalars are set: quant.hybrid.BatchRowQuantizer's calls
        (asymmetric: ``clip(round(v), -128 - zp, 127 - zp)``, i.e. q - zp; where the zero point's column holds the
        row's zp, ``+ zp`` after it: ``clip(r + zp, -128, 127)`` for integers r, zp; without ``+ 0.0``: see
        ``shifted``)."""
        q = self.qq[: self.a.shape[0]]
        calls = self.quantizer.calls(x, self.a, q)
        if self.writes_zp:  # the zero point's column: set by _scalars
            calls.append((np.add, (q, self.qq[-1:]), {"out": q}))
        return calls

    def nonneg_calls(self, x: np.ndarray) -> list:
        """``quantize_calls`` for a row RowScalars calls nonneg, once ``inv`` holds its value:
        BatchRowQuantizer.nonneg_calls, ``trunc(f32(v + half))`` (in float32 scratch whatever the product's type:
        the tie rule needs the float32 sum's rounding); ``v`` stays below 127.5 (symmetric) or 255.5
        (BatchRowQuantizer's bound), so asymmetric ``q = trunc(v + half) - 128`` is within [-128, 127]: no
        clamp."""
        q = self.qq[: self.a.shape[0]]
        calls = self.quantizer.nonneg_calls(x, self.a, q)
        return [*calls, (np.add, (q, CM128), {"out": q})] if self.writes_zp else calls

    def fix_calls(self) -> list:
        """The SSE -128 fix's columns ``min(q[cols], 0)`` of the quantized row."""
        if self.fix_cols is None:
            return []
        depth = self.a.shape[0]
        fq = self.qq[depth : depth + self.fix_cols.shape[0]]
        return [(np.take, (self.qq[:depth], self.fix_cols), {"out": fq}), (np.minimum, (fq, 0.0), {"out": fq})]

    def _scalars(self, b: tuple) -> tuple | None:
        """The row's scalars (RowScalars; ``scale`` per tensor, the zero point's column) for the bound plans ``b``;
        returns the plan to run (``b[4]`` for a nonneg row), or None for a row the general path takes."""
        s = b[2]()
        if s is None:
            return None
        if self.writes_zp:
            self.qq[-1] = s[1]
        if self.w_scale is not None:
            self.scale[()] = s[0] * self.w_scale
        return b[4] if s[2] else b[3]

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is None or b[0] is not inputs[INPUT] or b[1] is not outputs[0]:
            b = bound_to(self, inputs, outputs)
            if b is None:
                return self.general(inputs, outputs)
        plan = self._scalars(b)
        if plan is None:
            return self.general(inputs, outputs)
        for call in plan:
            call()
