"""The custom op ``NumericVerify`` (registered by default in ai-edge-litert 2.3.0, BUILTIN_REF included).

Matched against google-ai-edge/LiteRT tflite/kernels/numeric_verify.cc (Register_NUMERIC_VERIFY, the REF
variant on x86: DequantizeImpl<kReference>), its dequantization in tflite/kernels/dequantize.h,
tflite/kernels/internal/reference/dequantize.h and reference/integer_ops/dequantize.h; added to the default
resolver by tflite/core/kernels/register.cc ``AddCustom("NumericVerify")``.

Inputs: a quantized tensor (int8, uint8, int16 or float16) and its float32 reference; output: float32 of the
input's shape, ``dequantize(input) - reference`` in float32. Options (a FlexBuffer map in custom_options):
``tolerance`` (``AsFloat``) and ``log_if_failed`` (``AsBool``).

- Dequantization as LiteRT's reference kernels: per tensor ``f32(f64(scale) * (q - zp))`` (one table per
  input type, built at prepare), per channel (int8 / uint8, more than one scale) ``f32(scale[c]) * f32(q -
  zp[c])``, float16 widened exactly. The zero point of int16 is not checked (unlike DEQUANTIZE).
- ``log_if_failed and f64(tolerance) >= 0.1``: the first element (in flat order) with
  ``|dequant - reference| > f32(tolerance * params.scale)`` fails the invoke with LiteRT's message
  ("Mismatch: %f is quantized to %d with (%f, %d). abs(%f - %f) = %f > %f (tolerance) range percentage %f.").
  ``params`` are the legacy (single-scale) parameters: (0, 0) for a per-channel input, whose every nonzero
  difference then fails. A NaN difference never fails.
- Otherwise LiteRT only reports statistics of the differences through its error reporter (the Python
  wrapper shows them only with a later error); here they go to the ``litert_py.ops.custom.numeric_verify`` logger
  at INFO level, computed only when that level is enabled.
- A constant quantized input is evaluated once: later invokes keep the first output even when the
  reference changes (LiteRT's ``float_input_initialized``, set before the check, so an invoke after a failed
  one succeeds). The op is registered stateful so a node whose inputs are all constant is not folded at
  prepare either: a mismatch fails the first invoke, as in LiteRT. (LiteRT's "constant" is a tensor with a
  buffer in the model; one computed by nodes litert_py folded at prepare counts as constant here.)

LiteRT's default resolver (and AUTO) on x86 registers the NEON_2_SSE build's optimized variant
(Register_NUMERIC_VERIFY_OPT): its per-tensor int8 / uint8 dequantization computes ``f32(q) * f32(scale) +
f32(-zp * scale)`` in blocks of 8 values, up to an ulp or two from the reference numbers reproduced here
(tools/op_coverage.py lists the measured differences).

Refused at prepare where LiteRT would crash, read memory it does not own or fail at invoke on a type
question: empty or malformed custom options, a reference with fewer elements than the input (a reference
with more is read from the front, as in LiteRT), per-channel int16 / float16 inputs ("not supported for
per-channel" at invoke in LiteRT) and per-channel scales that do not match the quantized dimension.

The output is retyped to float32 at prepare whatever the model declares (TensorFlow's debug models declare it
INT8), as LiteRT's Prepare does (``output->type = kTfLiteFloat32``): get_tensor and the detail dicts show float32
after allocate_tensors, the model's type before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ...schema.dtypes import TensorType
from ..common import flex_bool, flex_float, flex_options, per_channel_params, table_domain, table_index
from ..registry import OpContext, PreparedOp, register

F32 = np.float32
INPUT, REF, OUTPUT = 0, 1, 0
_QUANTIZED = {np.dtype(t) for t in (np.uint8, np.int8, np.int16, np.float16)}
logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class NumericVerify:
    """``out = dequantize(q) - ref`` (float32), then the tolerance check or the statistics log."""

    table: np.ndarray | None  # per tensor: float32 dequantized value indexed by q's unsigned bit pattern
    scale: np.ndarray | None  # per channel: float32 scales, broadcast along the quantized dimension
    zero_point: np.ndarray | None  # per channel: float32 zero points (small integers, exact)
    ref_shape: tuple | None  # None when ref has the input's shape; else read its first n values
    check: bool  # log_if_failed and tolerance >= 0.1
    max_diff: np.float32  # f32(tolerance * params.scale)
    tolerance: float
    params: tuple  # legacy (scale, zero_point), as LiteRT prints them
    constant: bool  # the quantized input is a model constant: computed once
    cache: list = field(default_factory=list)  # [first output] once a constant input was evaluated

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        if self.cache:
            np.copyto(out, self.cache[0])
            return
        q, ref = inputs[INPUT], inputs[REF]
        if self.ref_shape is not None:
            ref = ref.reshape(-1)[: out.size].reshape(self.ref_shape)
        self._dequantize(q, out)
        out -= ref
        if self.constant:
            self.cache.append(out.copy())
        if self.check:
            bad = np.abs(out) > self.max_diff
            if bad.any():
                self._fail(q, ref, out, int(np.argmax(bad.reshape(-1))))
        elif logger.isEnabledFor(logging.INFO):
            self._log(out)

    def _dequantize(self, q, out):
        if self.table is not None:
            np.take(self.table, table_index(q), out=out, mode="wrap")
        else:
            np.copyto(out, q)  # float16 widening is exact; so are per-channel integers (|q| < 2^24)
            if self.scale is not None:
                out -= self.zero_point  # exact
                out *= self.scale  # one float32 rounding of the exact product, as f32(scale[c] * (q - zp))

    def _fail(self, q, ref, out, k: int):
        from ...errors import InvokeError

        dequant = np.empty(q.shape, F32)
        self._dequantize(q, dequant)
        value = int(q.reshape(-1)[k]) if q.dtype.kind in "iu" else 0  # GetQuantizedValue: 0 for float16
        reference, deq, diff = float(ref.reshape(-1)[k]), float(dequant.reshape(-1)[k]), float(out.reshape(-1)[k])
        raise InvokeError(
            f"Mismatch: {reference:f} is quantized to {value} with ({self.params[0]:f}, {self.params[1]}). "
            f"abs({reference:f} - {deq:f}) = {abs(diff):f} > {float(self.max_diff):f} (tolerance) range "
            f"percentage {self.tolerance:f}."
        )

    def _log(self, out):
        d = out.reshape(-1).astype(np.float64)
        with np.errstate(all="ignore"):
            mean = float(np.sum(d) / d.size) if d.size else float("nan")
            std = float(np.sqrt(np.sum((d - mean) ** 2) / d.size)) if d.size else float("nan")
        max_diff = float(np.max(np.abs(d), initial=0.0))
        logger.info(
            "std: %f, mean: %f, max_diff: %f (scale: %f, zero_point: %d).",
            std,
            mean,
            max_diff,
            self.params[0],
            self.params[1],
        )


@register("NumericVerify", stateful=True)
def prepare_numeric_verify(ctx: OpContext) -> PreparedOp:
    m = flex_options(ctx)  # Init: LiteRT parses the options before anything else
    tolerance = flex_float(ctx, m, "tolerance")
    log_if_failed = flex_bool(ctx, m, "log_if_failed")
    ctx.check(len(ctx.inputs) == 2, f"NumInputs(node) != 2 ({len(ctx.inputs)} != 2)")
    ctx.check(len(ctx.outputs) == 1, f"NumOutputs(node) != 1 ({len(ctx.outputs)} != 1)")
    x, ref = ctx.input(INPUT), ctx.input(REF)
    ctx.check(
        x.dtype in _QUANTIZED,
        "op_context.input->type == kTfLiteUInt8 || op_context.input->type == kTfLiteInt8 || "
        "op_context.input->type == kTfLiteInt16 || op_context.input->type == kTfLiteFloat16 was not true.",
    )
    ctx.check(ref.dtype == np.float32, "op_context.ref->type == kTfLiteFloat32 was not true.")
    ctx.set_output_type(OUTPUT, TensorType.FLOAT32)
    ctx.check(
        ref.size >= x.size,
        f"NumericVerify: the reference {list(ref.shape)} has fewer values than the input {list(x.shape)}",
    )
    ctx.set_output_shape(OUTPUT, x.shape)
    q = x.quantization
    params = (float(q.scale[0]), int(q.zero_point[0]) if q.zero_point else 0) if len(q.scale) == 1 else (0.0, 0)
    table = scale = zero_point = None
    if len(q.scale) > 1:  # IsQuantizedPerChannel
        ctx.check(x.dtype in (np.int8, np.uint8), f"Type {x.type_name} not supported for per-channel.")
        ctx.check(x.size > 0, f"NumericVerify per-channel of an empty input {list(x.shape)} (LiteRT segfaults)")
        scale, zp = per_channel_params(ctx, x)
        zero_point = zp.astype(F32)
    elif x.dtype != np.float16:
        domain = table_domain(x.dtype).astype(np.int64)
        table = (np.float64(params[0]) * (domain - params[1])).astype(F32)  # the f64 product is exact
    return NumericVerify(
        table,
        scale,
        zero_point,
        ref_shape=None if ref.shape == x.shape else x.shape,
        check=bool(log_if_failed and tolerance >= 0.1),
        max_diff=F32(F32(tolerance) * F32(params[0])),
        tolerance=tolerance,
        params=params,
        constant=x.is_constant,
    )
