"""FULLY_CONNECTED's hybrid product (float input, int8 weights: dynamic-range quantization), prepared once: the
kernel of FULLY_CONNECTED's hybrid path, and the matrix products of the hybrid RNN, SVDF and LSTM kernels
(``hybrid_matvec``). Semantics and sources: see fully_connected.py and litert_py/quant/hybrid.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant import SseMinus128Fix, batch_quantize_floats, sse_reduction_sum_vector
from ..schema import dtypes
from .common import apply_activation_to_vector, exact_gemm_dtype
from .registry import OpContext, TensorInfo

INPUT, WEIGHTS = 0, 1


@dataclass(frozen=True, eq=False)
class FullyConnectedHybrid:
    weights_t: np.ndarray | None  # (depth, units) float32/float64 holding the int8 weights; None: not constant
    row_sums: np.ndarray | None  # (units,) same dtype, sse_reduction_sum_vector (asymmetric inputs only)
    sse_fix: SseMinus128Fix | None
    w_scale: np.ndarray  # float32: () per tensor, (units,) per channel
    bias: np.ndarray | None  # float32 (units,)
    asymmetric: bool
    depth: int
    units: int
    activation: object

    def __call__(self, inputs, outputs):
        out2d = outputs[0].reshape(-1, self.units)
        x2 = inputs[INPUT].reshape(-1, self.depth)
        wt, row_sums, fix = self.weights_t, self.row_sums, self.sse_fix
        if wt is None:
            w = hybrid_weights(inputs[WEIGHTS])
            wt = w.T.astype(np.float64)
            row_sums = sse_reduction_sum_vector(w).astype(np.float64) if self.asymmetric else None
            fix = SseMinus128Fix.build(w, np.float64)
        q, sf, zp = batch_quantize_floats(x2, self.asymmetric)
        dot = np.matmul(q if wt.dtype == np.float32 else q.astype(wt.dtype), wt)  # exact int32 dot products
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


def hybrid_weights(w: np.ndarray) -> np.ndarray:
    return w.view(np.int8) if w.dtype == np.uint8 else w  # LiteRT reads uint8 hybrid weights as int8


def hybrid_matvec(w: np.ndarray, scale, asymmetric: bool) -> FullyConnectedHybrid:
    """A prepared hybrid product ``x -> f32(dot(q(x), w)) * f32(sf * scale)`` for the int8 matrix ``w``;
    ``scale``: one float, or one per row of ``w`` (float32)."""
    wi = w.view(np.int8) if w.dtype == np.uint8 else w
    return FullyConnectedHybrid(
        np.ascontiguousarray(wi.T, dtype=np.float64),
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
    if not w.is_constant:
        return FullyConnectedHybrid(None, None, None, np.asarray(w_scale), b, asym, depth, units, activation)
    wi = hybrid_weights(w.data)
    row_sums = sse_reduction_sum_vector(wi) if asym else None
    # |dot| <= 128 * L1 (+ 256 * 128 * #(-128 weights) <= 2 * 128 * L1 with the SSE quirk); asymmetric inputs
    # also subtract |zp * row_sum| <= 128 * max(L1, |row_sum|).
    l1 = np.abs(wi, dtype=np.float64).sum(axis=1)
    bound = 256.0 * l1 + (128.0 * np.maximum(l1, np.abs(row_sums)) if asym else 0.0)
    ct = exact_gemm_dtype(bound) or np.dtype(np.float64)
    wt = np.ascontiguousarray(wi.T, dtype=ct)
    return FullyConnectedHybrid(
        wt,
        None if row_sums is None else row_sums.astype(ct),
        SseMinus128Fix.build(wi, ct),
        np.asarray(w_scale),
        b,
        asym,
        depth,
        units,
        activation,
    )
