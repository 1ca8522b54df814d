"""FULLY_CONNECTED's integer paths: int8 / uint8 / int16x8 with LiteRT's float requantization
(``FullyConnectedQuantized``, and ``FullyConnectedQuantizedFolded`` of fully_connected_folded.py when its GEMM is
exact) and int16 x int16 (``FullyConnectedInt16x16``), with their prepare-time checks (``prepare_quantized``).
The arithmetic, the models refused and the sources: fully_connected.py's docstring.

Speed. Integer products are summed by BLAS in floating point, which is exact while every partial sum is an
integer below 2**24 (float32) or 2**53 (float64): prepare proves the bound from the constant weights
(``max|x - zx| * max_c sum_k |w_ck - zw| + max|bias|``) and picks float32 when it can. The weights are
stored transposed with their zero point already subtracted; the input's zero point is subtracted in the
same pass that converts it to float, so no correction terms remain:
``sum_k (x - zx)(w - zw) = (x - zx) @ (W - zw)^T``. The epilogue is a few in-place passes over the
(batch, units) result (multiply by ``eff``, clamp, round half away, add ``zo``, store into the int8/int16
output with ``out=``). When prepare cannot prove that the int32 accumulator never wraps and that the
rounded value fits int32 (huge biases, pathological scales), ``__call__`` takes a general int64 path that
reproduces the wrap and x86's INT32_MIN for out-of-range casts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant import (
    dtype_range,
    multiply_by_quantized_multiplier_int64,
    multiply_by_quantized_multiplier_int64_ok,
    quantize_multiplier_array,
    round_away,
    trunc_to_int32,
    wrap32,
)
from ..quant.hybrid import HALF_DOWN_F64
from ..schema import dtypes
from .common import clip_ufunc, exact_gemm_dtype, quantized_activation_range
from .fully_connected_folded import FullyConnectedQuantizedFolded
from .fully_connected_tail import FullyConnectedOneValueTable
from .registry import OpContext, TensorInfo

INPUT, WEIGHTS, BIAS = 0, 1, 2

# TensorType numbers (schema.fbs) used by quantized_bias_type.
_FLOAT32, _INT32, _INT64 = 0, 2, 4

#: float32 / float64 represent every integer up to these exactly.
_I32_LIMIT = float(2**31 - 2)  # |t| below this: round_half_away(t) fits int32 with room for the product's ulp


# -------------------------------------------------------------------------------------------------------------
# Quantized with float requantization (int8, uint8, int16x8)
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantized:
    """int8 / uint8 / int16x8 FULLY_CONNECTED with LiteRT's reference float requantization (module docstring).

    ``weights_t`` is ``(W - zw)^T`` (depth, units) in ``weights_t.dtype`` (float32 or float64), proven exact at
    prepare for the fast path; ``bias`` is in the same dtype. ``exact`` False (or non-constant weights, then
    ``weights_t`` is None) selects the general int64 path.
    """

    weights_t: np.ndarray | None
    bias: np.ndarray | None
    bias_int: np.ndarray | None  # int64, for the general path
    x_zero_point: int
    w_zero_point: int  # applied to non-constant weights (0 for per-channel)
    eff: np.ndarray  # float64, (units,) or ()
    zo: int
    act_min: int
    act_max: int
    depth: int
    units: int
    acc_bits: int  # 32: the C++ accumulator is int32 and wraps; 64: int64
    clamp_before_zo: bool  # uint8 -> int16: clamp to [min - zo, max - zo], then add zo
    exact: bool

    def __call__(self, inputs, outputs):
        out2d = outputs[0].reshape(-1, self.units)
        x2 = inputs[INPUT].reshape(-1, self.depth)
        if not self.exact:
            self._general(x2, inputs, out2d)
            return
        wt = self.weights_t
        xf = np.subtract(x2, self.x_zero_point, dtype=wt.dtype) if self.x_zero_point else x2.astype(wt.dtype)
        acc = np.matmul(xf, wt)
        if self.bias is not None:
            acc += self.bias
        if acc.dtype == np.float64:
            t = np.multiply(acc, self.eff, out=acc)
        else:  # C++ multiplies double(acc) by the double eff: widen exactly first
            t = np.multiply(acc, self.eff, dtype=np.float64)
        # clamp(round(t) + zo, lo, hi) == round(clamp(t, lo - zo, hi - zo)) + zo: rounding is monotonic and the
        # bounds are integers; prepare proved round(t) fits int32, so C++'s cast and "+ zo" do not overflow.
        clip_ufunc(t, self.act_min - self.zo, self.act_max - self.zo, out=t)
        t += np.copysign(HALF_DOWN_F64, t)  # round half away = trunc(t +- h), see quant.hybrid.HALF_DOWN
        if self.zo:
            np.trunc(t, out=t)
            np.add(t, self.zo, out=out2d, casting="unsafe")
        else:
            np.copyto(out2d, t, casting="unsafe")  # the float -> int cast truncates

    def _general(self, x2, inputs, out2d):
        """Every C++ integer detail: int32 wrap of the accumulator, x86 INT32_MIN for out-of-range casts."""
        if self.weights_t is not None:
            wt = self.weights_t.astype(np.float64, copy=False)
            bias = self.bias_int
        else:
            wt = inputs[WEIGHTS].T.astype(np.float64) - self.w_zero_point
            b = inputs[BIAS] if len(inputs) > BIAS else None
            bias = None if b is None else b.astype(np.int64)
        # float64 holds these sums exactly: |terms| <= 2^16 * 2^8 and depth far below 2^29.
        acc = np.matmul(x2.astype(np.float64) - self.x_zero_point, wt).astype(np.int64)
        if bias is not None:
            acc += bias
        if self.acc_bits == 32:
            acc = wrap32(acc)
        with np.errstate(all="ignore"):
            r = trunc_to_int32(round_away(acc.astype(np.float64) * self.eff))
        if self.clamp_before_zo:
            r = np.clip(r, self.act_min - self.zo, self.act_max - self.zo) + self.zo
        else:
            r = np.clip(wrap32(r + self.zo), self.act_min, self.act_max)
        out2d[...] = r


def _fold_quantized(
    x: TensorInfo, wz: np.ndarray, bias_int, zx: int, eff, zo: int, act_min: int, act_max: int, out: TensorInfo
):
    """FullyConnectedQuantizedFolded (fully_connected_folded.py) for constant weights and bias when its GEMM is
    exact, else None."""
    units, depth = wz.shape
    row = -zx * wz.sum(axis=1)
    if bias_int is not None:
        row = row + bias_int
    lo, hi = dtype_range(x.dtype)
    ct = exact_gemm_dtype(np.abs(wz).sum(axis=1) * max(-lo, hi) + np.abs(row))
    if ct is None or units == 0 or depth == 0 or x.size % depth:
        return None
    rows = x.size // depth
    folded = FullyConnectedQuantizedFolded.build(rows, wz, row, ct, eff, zo, act_min - zo, act_max - zo, x.shape, out)
    return FullyConnectedOneValueTable.build(folded, x, out) or folded


# -------------------------------------------------------------------------------------------------------------
# int16 x int16 (MultiplyByQuantizedMultiplier, int64 overload)
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FullyConnectedInt16x16:
    weights_t: np.ndarray | None  # float64 (W - zw)^T, or None when the weights are not constant
    bias: np.ndarray | None  # int64
    x_zero_point: int
    w_zero_point: int
    multiplier: np.ndarray  # int64, (units,) or ()
    shift: np.ndarray
    zo: int
    act_min: int
    act_max: int
    depth: int
    units: int

    def __call__(self, inputs, outputs):
        out2d = outputs[0].reshape(-1, self.units)
        x2 = inputs[INPUT].reshape(-1, self.depth)
        wt = self.weights_t
        bias = self.bias
        if wt is None:
            wt = inputs[WEIGHTS].T.astype(np.float64) - self.w_zero_point
            b = inputs[BIAS] if len(inputs) > BIAS else None
            bias = None if b is None else b.astype(np.int64)
        acc = np.matmul(x2.astype(np.float64) - self.x_zero_point, wt).astype(np.int64)  # exact below 2^53
        if bias is not None:
            acc += bias
        r = multiply_by_quantized_multiplier_int64(acc, self.multiplier, self.shift)
        out2d[...] = np.clip(wrap32(r + self.zo), self.act_min, self.act_max)


# -------------------------------------------------------------------------------------------------------------
# Prepare
# -------------------------------------------------------------------------------------------------------------


def prepare_quantized(ctx: OpContext, x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, out: TensorInfo):
    """The integer paths of FULLY_CONNECTED (int8, uint8, int16 input): checks and the prepared op (before the
    zero-depth case, which the caller handles)."""
    combos = {
        (np.int8, np.int8, np.int8),
        (np.uint8, np.uint8, np.uint8),
        (np.uint8, np.uint8, np.int16),
        (np.int16, np.int8, np.int16),
        (np.int16, np.int16, np.int16),
    }
    key = (x.dtype.type, w.dtype.type, out.dtype.type)
    ctx.check(
        key in combos,
        f"FULLY_CONNECTED with input {x.type_name}, weights {w.type_name} and output "
        f"{out.type_name} is not supported (LiteRT reinterprets one of them)",
    )
    ctx.check(
        bool(x.quantization.scale) and bool(w.quantization.scale),
        "quantized FULLY_CONNECTED needs affine quantization on the input and the weights",
    )
    if w.type == dtypes.TensorType.INT4:
        ctx.check(all(z == 0 for z in w.quantization.zero_point), "Unsupported filter quantization zero-point value.")
    per_channel = _per_channel(ctx, x, w)
    if not per_channel:
        _check_bias_scale(ctx, x, w, bias, out)
    int16_io = x.dtype == np.int16 and out.dtype == np.int16
    if int16_io:
        ctx.check(x.zero_point == 0, f"input zero point must be 0 for INT16, got {x.zero_point}")
        ctx.check(out.zero_point == 0, f"output zero point must be 0 for INT16, got {out.zero_point}")
    acc_bits = _check_bias_type(ctx, x, w, bias, int16_io)
    act_min, act_max = quantized_activation_range(ctx, out)
    units, depth = w.shape
    zx = int(x.zero_point)
    zw = 0 if per_channel else int(w.zero_point)
    zo = int(out.zero_point)
    w_scales = np.asarray(w.quantization.scale, np.float32) if per_channel else np.float32(w.scale)
    if w.dtype == np.int16:
        return _prepare_int16x16(ctx, x, w, bias, out, per_channel, w_scales, zx, zw, zo, act_min, act_max)

    # eff[c] = f64(s_in) * f64(s_w[c]) / f64(s_out), as the reference kernel computes it per output
    with np.errstate(all="ignore"):
        eff = np.float64(np.float32(x.scale)) * np.asarray(w_scales, np.float64) / np.float64(np.float32(out.scale))
    u8_to_i16 = out.dtype == np.int16 and x.dtype == np.uint8

    def make(weights_t, bias_t, bias_int, exact: bool) -> FullyConnectedQuantized:
        return FullyConnectedQuantized(
            weights_t, bias_t, bias_int, zx, zw, eff, zo, act_min, act_max, depth, units, acc_bits, u8_to_i16, exact
        )

    if not (w.is_constant and (bias is None or bias.is_constant)):
        return make(None, None, None, False)
    wz = w.data.astype(np.float64) - zw  # (units, depth)
    bias_int = None if bias is None else bias.data.astype(np.int64).reshape(-1)
    bound = _bound(wz, _max_abs_input(x.dtype, zx), bias_int)
    ct = exact_gemm_dtype(bound)
    exact = (
        ct is not None
        and bool(np.all(np.isfinite(eff)))
        and (acc_bits == 64 or float(bound.max(initial=0)) < 2**31)
        and float(np.max(bound * eff, initial=0)) < _I32_LIMIT
    )
    ct = ct or np.dtype(np.float64)
    if exact and not u8_to_i16:
        folded = _fold_quantized(x, wz, bias_int, zx, eff, zo, act_min, act_max, out)
        if folded is not None:
            return folded
    bias_t = None if bias_int is None else bias_int.astype(ct)
    return make(np.ascontiguousarray(wz.T, dtype=ct), bias_t, bias_int, exact)


def _check_bias_scale(ctx: OpContext, x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, out: TensorInfo):
    """GetQuantizedConvolutionMultipler (kernel_util.cc), the per-tensor path's checks (on the bias's legacy scale:
    0 for a bias quantized with several scales, TensorInfo.legacy_scale)."""
    if bias is not None:
        product = np.float64(x.scale) * np.float64(w.scale)
        diff = abs(product - np.float64(bias.legacy_scale))
        ctx.check(
            bool(diff / np.float64(out.scale) <= 0.02),
            f"bias scale {bias.legacy_scale} is not input scale * weights scale ({product}) "
            "(kernel_util.cc: scale_diff / output_scale <= 0.02)",
        )
    ctx.check(float(np.float32(x.scale) * np.float32(w.scale)) >= 0, "input_product_scale >= 0 was not true.")


def _bound(w_minus_zw: np.ndarray, max_abs_x: float, bias: np.ndarray | None) -> np.ndarray:
    """Per output channel, a bound on |acc| = |sum_k (x - zx)(w - zw) + bias| over all inputs (float64)."""
    b = np.abs(w_minus_zw, dtype=np.float64).sum(axis=1) * max_abs_x
    if bias is not None:
        b += np.abs(bias.astype(np.float64))
    return b


def _max_abs_input(dtype, zero_point: int) -> int:
    lo, hi = dtype_range(dtype)
    return max(abs(lo - zero_point), abs(hi - zero_point))


def _per_channel(ctx: OpContext, x: TensorInfo, w: TensorInfo) -> bool:
    """PrepareImpl's per-channel rules: more than one scale; int8/int16 input; quantized_dimension 0."""
    n = len(w.quantization.scale)
    if n <= 1:
        return False
    ctx.check(x.dtype in (np.int8, np.int16), f"per-channel weights need INT8 or INT16 input, got {x.type_name}")
    ctx.check(w.dtype in (np.int8, np.int16), f"per-channel weights must be signed, got {w.type_name}")
    ctx.check(
        w.quantization.quantized_dimension == 0,
        f"per-channel weights must be quantized along dimension 0, got {w.quantization.quantized_dimension}",
    )
    ctx.check(n == w.shape[0], f"{n} weight scales for {w.shape[0]} units")
    return True


def _check_bias_type(ctx: OpContext, x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, int16_io: bool) -> int:
    """Bias dtype rules; returns the C++ accumulator width (32 or 64) of the float-requant kernels."""
    if bias is not None:
        ctx.check(
            bias.dtype in (np.int32, np.int64),
            f"bias must be INT32 or INT64 for quantized FULLY_CONNECTED, got {bias.type_name} "
            "(fully_connected.cc: is_optional_bias_int)",
        )
    if not int16_io:
        if x.dtype == np.uint8:
            ctx.check(
                bias is not None or ctx.outputs[0].dtype != np.int16,
                "uint8 -> int16 FULLY_CONNECTED needs a bias (LiteRT's reference kernel reads it unconditionally)",
            )
        ctx.check(
            bias is None or bias.dtype == np.int32,
            f"bias must be INT32 with {x.type_name} input, got {bias and bias.type_name} "
            "(LiteRT would read it as int32)",
        )
        return 32
    qbt = ctx.options.quantized_bias_type
    if qbt != _FLOAT32:
        ctx.check(qbt in (_INT32, _INT64), f"quantized_bias_type must be INT32 or INT64, got {qbt}")
        ctx.check(
            bias is None or bias.type == qbt,
            f"bias type {bias and bias.type_name} does not match quantized_bias_type {qbt}",
        )
    if w.dtype == np.int16:  # int16 weights: int32 bias unless quantized_bias_type says INT64
        want = np.int64 if qbt == _INT64 else np.int32
    else:  # int8 weights: int64 bias unless quantized_bias_type says INT32
        want = np.int32 if qbt == _INT32 else np.int64
    ctx.check(
        bias is None or bias.dtype == want,
        f"bias of type {bias and bias.type_name} with INT16 input and {w.type_name} weights needs "
        f"quantized_bias_type {'INT32' if want == np.int32 else 'INT64'} (LiteRT would read it as "
        f"{np.dtype(want).name})",
    )
    return 32 if want == np.int32 else 64


def _prepare_int16x16(ctx, x, w, bias, out, per_channel, w_scales, zx, zw, zo, act_min, act_max):
    s_in, s_out = np.float64(np.float32(x.scale)), np.float64(np.float32(out.scale))
    if per_channel:
        real = s_in * np.asarray(w_scales, np.float64) / s_out
    else:  # GetQuantizedConvolutionMultipler: the product in float32
        real = np.float64(np.float32(x.scale) * np.float32(w.scale)) / s_out
    ctx.check(bool(np.all(np.isfinite(real))), "non-finite output multiplier")
    m, shift = quantize_multiplier_array(real)
    units, depth = w.shape
    bound = depth * float(_max_abs_input(x.dtype, zx)) * float(_max_abs_input(w.dtype, zw))
    if bias is not None and bias.is_constant:
        bound += float(np.abs(bias.data.astype(np.float64)).max(initial=0))
    elif bias is not None:
        bound += 2.0**63 if bias.dtype == np.int64 else 2.0**31
    ctx.check(
        multiply_by_quantized_multiplier_int64_ok(shift, bound),
        f"output multiplier {np.max(real)} out of range for the int64 MultiplyByQuantizedMultiplier",
    )
    if w.is_constant and (bias is None or bias.is_constant):
        wt = np.ascontiguousarray(w.data.T.astype(np.float64) - zw)
        b = None if bias is None else bias.data.astype(np.int64).reshape(-1)
    else:
        wt, b = None, None
    return FullyConnectedInt16x16(wt, b, zx, zw, m, shift, zo, act_min, act_max, depth, units)
