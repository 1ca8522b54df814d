"""Bound plans of the one-batch hybrid (dynamic-range: float32 input, int8 filter) CONV_2D and DEPTHWISE_CONV_2D
(issue 16): `ConvHybridBound` and `DepthwiseConvHybridBound` wrap conv2d_quantized.ConvHybrid and
depthwise_quantized.DepthwiseConvHybrid (``general``), whose numpy calls they make once on the arrays
ops/fusion.bind_steps hands them (ops/bound_plan.bound_plan): the input quantized by
quant.hybrid.BatchRowQuantizer (4-6 calls instead of batch_quantize_floats' ~30 and a ``q - zp`` pass) straight into
the GEMM operand or the depthwise padded buffer, then the general op's GEMM / tap sums and epilogue, value for value
(the same calls in the same order on the same values). A batch whose range the quantizer declines (all zeros, tiny,
inf or NaN), more than one batch, arrays the plan cannot be bound to (ops/hybrid_fc.bindable; other bindable arrays
are bound anew) or a bias input that is not constant take ``general``: every result is byte-identical to it
(tests/ops/conv/test_conv_hybrid_bound.py). Measured (1 thread, process CPU, whole invokes, medians of 5 runs
alternated with the plain ops): mobilenet_v2_dynamic 2.97 -> 1.70 ms (its 1x1 hybrid convs 47-60 -> 17-25 us, its
depthwise 56-74 -> 26-45 us per step in sequence)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant.hybrid import BatchRowQuantizer
from ..bound_plan import bound_plan
from ..common import clip_ufunc
from ..hybrid_fc import bindable
from .common import INPUT, OUTPUT
from .conv2d_quantized import ConvHybrid, prepare_conv_hybrid
from .depthwise_quantized import DepthwiseConvHybrid, EinsumTaps, prepare_depthwise_hybrid


class _HybridRowBound:
    """The bind and __call__ shared by ConvHybridBound and DepthwiseConvHybridBound (frozen dataclasses with the
    fields ``general``, ``quantizer``, ``scale``, ``filter_scale``, ``in_shape``, ``out_shape``): ``rest_calls``
    (the subclass's) lists the calls after the quantization into the array it returns."""

    _bound = None  # (input, output, the row's scalars (RowScalars.bind), plan, plan for a nonneg row), or None

    def bind(self, inputs, outputs) -> None:
        """The row's scalars (quant.hybrid.RowScalars), the quantization (BatchRowQuantizer's ``calls``, or its
        ``nonneg_calls``) and ``rest_calls`` bound once to ``inputs[0]`` and ``outputs[0]`` (C-contiguous float32
        arrays of the op's sizes, else no plan: the general op)."""
        x, out = inputs[INPUT], outputs[OUTPUT]
        bound = None
        if bindable(x, out, int(np.prod(self.in_shape)), int(np.prod(self.out_shape))):
            x4 = x.reshape(self.in_shape)
            q, rest = self.rest_calls(out.reshape(self.out_shape))
            plans = [bound_plan(c(x4, q) + rest) for c in (self.quantizer.calls, self.quantizer.nonneg_calls)]
            bound = (x, out, self.quantizer.scalars.bind(x4), *plans)
        object.__setattr__(self, "_bound", bound)

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is None or b[0] is not inputs[INPUT] or b[1] is not outputs[OUTPUT]:
            self.bind(inputs, outputs)
            b = self._bound
            if b is None:
                return self.general(inputs, outputs)
        s = b[2]()
        if s is None:
            return self.general(inputs, outputs)
        sf = s[0]
        self.scale[()] = sf if self.filter_scale is None else sf * self.filter_scale
        for call in b[4] if s[2] else b[3]:
            call()


@dataclass(frozen=True, eq=False)
class ConvHybridBound(_HybridRowBound):
    """ConvHybrid for one batch with a constant bias: the quantized input ``q`` (``q - zp`` asymmetric) into
    ``q``, the im2col GEMM (Im2Col.calls), ``f32(acc)``, per channel ``* s_w[c]``, ``* sf`` (per tensor
    ``f32(sf * s_w)``, a double product of two floats rounded once to float32: the float32 product), ``+ bias``,
    the clamp: ConvHybrid's calls."""

    general: ConvHybrid
    quantizer: BatchRowQuantizer
    q: np.ndarray  # (1, H, W, C) float32: the quantized input
    scale: np.ndarray  # () float32: sf (per channel) or f32(sf * s_w) (per tensor)
    filter_scale: float | None  # per tensor, as a Python float; None: per channel
    in_shape: tuple
    out_shape: tuple

    @staticmethod
    def build(general: ConvHybrid, in_shape: tuple, out_shape: tuple) -> ConvHybridBound | ConvHybrid:
        if general.bias is None or in_shape[0] != 1:
            return general
        per_channel = general.channel_scale is not None
        return ConvHybridBound(
            general,
            BatchRowQuantizer.build(in_shape, per_channel, shows_negative_zero(general.bias)),
            np.zeros(in_shape, np.float32),
            np.zeros((), np.float32),
            None if per_channel else float(general.filter_scale),
            tuple(in_shape),
            tuple(out_shape),
        )

    def rest_calls(self, out: np.ndarray) -> tuple[np.ndarray, list]:
        g = self.general
        gemm = out if g.gemm is None else g.gemm
        calls = list(g.im2col.calls(self.q, g.weights, gemm))
        if gemm is not out:
            calls.append((np.copyto, (out, gemm), {"casting": "same_kind"}))
        if g.channel_scale is not None:
            calls.append((np.multiply, (out, g.channel_scale), {"out": out}))
        calls += [
            (np.multiply, (out, self.scale), {"out": out}),
            (np.add, (out, g.bias), {"out": out}),
            (clip_ufunc, (out, g.out_min, g.out_max), {"out": out}),
        ]
        return self.q, calls


@dataclass(frozen=True, eq=False)
class DepthwiseConvHybridBound(_HybridRowBound):
    """DepthwiseConvHybrid for one batch with a constant or no bias: ``q - zp`` straight into the taps' padded
    buffer (depth multiplier 1; else through ``q`` and the taps' fill), the exact tap sums (their
    exact_sum_calls), ``f32(acc)``, ``* f32(s_w[c] * sf)``, ``+ bias``, the clamp: DepthwiseConvHybrid's calls."""

    general: DepthwiseConvHybrid
    quantizer: BatchRowQuantizer
    q: np.ndarray | None  # (1, H, W, C) float32 for a depth multiplier > 1; None: into the padded buffer
    scale: np.ndarray  # () float32: sf
    channel_scale: np.ndarray  # (O,) float32: f32(s_w[c] * sf)
    in_shape: tuple
    out_shape: tuple
    filter_scale = None  # the scales are multiplied in a call

    @staticmethod
    def build(general: DepthwiseConvHybrid, in_shape: tuple, out_shape: tuple):
        if general.dynamic_bias or in_shape[0] != 1:
            return general
        taps = general.taps.taps if isinstance(general.taps, EinsumTaps) else general.taps
        direct = taps.fill is not None and taps.fill.shape == tuple(in_shape)
        return DepthwiseConvHybridBound(
            general,
            BatchRowQuantizer.build(in_shape, True, shows_negative_zero(general.bias)),
            None if direct else np.zeros(in_shape, np.float32),
            np.zeros((), np.float32),
            np.zeros(general.scale.shape, np.float32),
            tuple(in_shape),
            tuple(out_shape),
        )

    def rest_calls(self, out: np.ndarray) -> tuple[np.ndarray, list]:
        g = self.general
        taps = g.taps.taps if isinstance(g.taps, EinsumTaps) else g.taps
        q = taps.fill if self.q is None else self.q
        calls = [] if self.q is None else list(g.taps.fill_calls(self.q))
        sums = out if g.sums is None else g.sums
        calls += g.taps.exact_sum_calls(g.taps.tap_views(q), g.weights, sums, g.scratch)
        if sums is not out:
            calls.append((np.copyto, (out, sums), {"casting": "same_kind"}))
        calls += [
            (np.multiply, (g.scale, self.scale), {"out": self.channel_scale}),
            (np.multiply, (out, self.channel_scale), {"out": out}),
        ]
        if g.bias is not None:
            calls.append((np.add, (out, g.bias), {"out": out}))
        calls.append((clip_ufunc, (out, g.out_min, g.out_max), {"out": out}))
        return q, calls


def shows_negative_zero(bias: np.ndarray | None) -> bool:
    """Whether a sum of -0.0 products (``q - zp`` of -0.0) can reach the output: without a bias (``-0.0 * scale``
    stays a zero of its sign) or at a -0.0 bias element (``-0.0 + -0.0``); a bias without -0.0 adds to a zero of
    either sign the same float (BatchRowQuantizer's ``plus_zero``)."""
    return bias is None or bool(np.signbit(bias[bias == 0]).any())


def prepare_conv_hybrid_bound(ctx, geo, groups: int):
    """conv2d_quantized.prepare_conv_hybrid, its ConvHybrid wrapped in ConvHybridBound (one batch, constant bias)."""
    op = prepare_conv_hybrid(ctx, geo, groups)
    if not isinstance(op, ConvHybrid) or op.sse_fix is not None:  # -128 filter values: the general op's fix
        return op
    return ConvHybridBound.build(op, (geo.batches, geo.in_h, geo.in_w, geo.in_c), geo.out_shape)


def prepare_depthwise_hybrid_bound(ctx, geo, multiplier: int):
    """depthwise_quantized.prepare_depthwise_hybrid, wrapped in DepthwiseConvHybridBound (one batch, constant bias)."""
    op = prepare_depthwise_hybrid(ctx, geo, multiplier)
    if not isinstance(op, DepthwiseConvHybrid):
        return op
    return DepthwiseConvHybridBound.build(op, (geo.batches, geo.in_h, geo.in_w, geo.in_c), geo.out_shape)
