"""Signal-style float ops: RFFT2D and FAKE_QUANT.

RFFT2D (tensorflow/lite/kernels/rfft2d.cc): float32 input of rank >= 2, int32 ``fft_length`` [fft_h, fft_w]
(both powers of two, as the fft2d library needs; fft_w 1 is refused: LiteRT runs it but its numbers are not
a DFT); each innermost 2-D slice is cropped or zero-padded to
(fft_h, fft_w) and transformed; complex64 output ``[..., fft_h, fft_w / 2 + 1]``. LiteRT computes in double
(Ooura's rdft2d) and rounds to complex64; numpy's pocketfft in double agrees to within float rounding.
A non-constant ``fft_length`` makes the output dynamic.

FAKE_QUANT (tensorflow/lite/kernels/fake_quant.cc, reference_ops::FakeQuant,
tensorflow/lite/kernels/internal/quantization_util.cc NudgeQuantizationRange / FakeQuantizeArray): float32
only; ``narrow_range`` is refused at prepare as LiteRT does. The nudged range is computed in float32
exactly as the source (``scale = (max - min) / (qmax - qmin)``, the zero point ``round(qmin - min / scale)``
clamped to [qmin, qmax] and truncated to uint16), then ``round((clamp(x) - nudged_min) * (1 / scale)) *
scale + nudged_min`` elementwise in float32 with round-half-away-from-zero (TfLiteRound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register

F32 = np.float32


# ----------------------------------------------------------------------------------------------
# RFFT2D
# ----------------------------------------------------------------------------------------------


def _is_power_of_two(v: int) -> bool:
    v &= 0xFFFFFFFF  # IsPowerOfTwo(uint32_t)
    return v != 0 and (v & (v - 1)) == 0


@dataclass(frozen=True, eq=False)
class Rfft2dFloat:
    fft_length: tuple[int, int] | None  # None: read from the input at eval (dynamic output)

    def __call__(self, inputs, outputs):
        x = inputs[0]
        fh, fw = self.fft_length or tuple(int(v) for v in inputs[1].reshape(-1)[:2])
        x = x[..., :fh, :fw].astype(np.float64)
        res = np.fft.rfft2(x, s=(fh, fw), axes=(-2, -1))
        if self.fft_length is None:
            outputs[0] = res.astype(np.complex64)
        else:
            outputs[0][...] = res


@register(BuiltinOperator.RFFT2D)
def prepare_rfft2d(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, fl = ctx.input(0), ctx.input(1)
    ctx.check(len(x.shape) >= 2, "NumDimensions(input) >= 2 was not true.")
    ctx.check(x.dtype == np.float32, f"Type '{x.type_name}' for input is not supported by rfft2d.")
    ctx.check(len(fl.shape) == 1 and fl.shape[0] == 2, "fft_length must be a 1-D tensor of 2 elements")
    ctx.check(fl.dtype == np.int32, f"Type '{fl.type_name}' for fft_length is not supported by rfft2d.")
    ctx.check(ctx.outputs[0].dtype == np.complex64, "rfft2d output must be complex64")
    if not fl.is_constant:
        ctx.set_output_dynamic(0)
        return Rfft2dFloat(None)
    fh, fw = (int(v) for v in np.asarray(fl.data).reshape(-1))
    ctx.check(_is_power_of_two(fh) and _is_power_of_two(fw), "IsPowerOfTwo(fft_length_data) was not true.")
    # Ooura's rdft2d needs an even row length: LiteRT accepts fft_width 1 but its output is then not a DFT
    # (e.g. x - x*j for a 1x1 input), so we refuse it rather than return different numbers.
    ctx.check(fw >= 2, "fft_length[1] must be at least 2 (LiteRT's rdft2d gives no DFT for width 1)")
    ctx.set_output_shape(0, x.shape[:-2] + (fh, fw // 2 + 1))
    return Rfft2dFloat((fh, fw))


# ----------------------------------------------------------------------------------------------
# FAKE_QUANT
# ----------------------------------------------------------------------------------------------


def _round_half_away(x):
    """TfLiteRound (std::round) on float32 values, exact: floor plus the comparison of the exact fraction."""
    a = np.abs(x)
    f = np.floor(a)
    f += (a - f) >= F32(0.5)
    return np.copysign(f, x)


def nudge_quantization_range(rmin: float, rmax: float, quant_min: int, quant_max: int):
    """NudgeQuantizationRange in float32: (nudged_min, nudged_max, nudged_scale)."""
    qmin_f, qmax_f = F32(quant_min), F32(quant_max)
    scale = (F32(rmax) - F32(rmin)) / (qmax_f - qmin_f)
    zp_from_min = qmin_f - F32(rmin) / scale
    if zp_from_min < qmin_f:
        zp = quant_min
    elif zp_from_min > qmax_f:
        zp = quant_max
    else:
        zp = int(_round_half_away(zp_from_min)) if np.isfinite(zp_from_min) else 0  # NaN: C++ UB
    zp &= 0xFFFF  # static_cast<uint16_t>
    return (qmin_f - F32(zp)) * scale, (qmax_f - F32(zp)) * scale, scale


@dataclass(frozen=True, eq=False)
class FakeQuantFloat:
    nudged_min: np.float32
    nudged_max: np.float32
    nudged_scale: np.float32
    inv_scale: np.float32

    def __call__(self, inputs, outputs):
        out = outputs[0]
        # std::min(nudged_max, std::max(nudged_min, x)) with C++'s comparisons (NaN becomes nudged_min).
        x = inputs[0]
        np.copyto(out, x)
        np.copyto(out, self.nudged_min, where=~(x > self.nudged_min))
        np.copyto(out, self.nudged_max, where=~(out < self.nudged_max))
        out -= self.nudged_min
        out *= self.inv_scale
        np.copyto(out, _round_half_away(out))
        out *= self.nudged_scale
        out += self.nudged_min


@register(BuiltinOperator.FAKE_QUANT)
def prepare_fake_quant(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    o = ctx.options
    if o.narrow_range:
        raise ctx.fail(
            "narrow_range FakeQuant is not currently supported at runtime. narrow_range is only "
            "meant to be applied to weights, not activations"
        )
    x = ctx.input(0)
    ctx.check(x.dtype == np.float32, f"Type {x.type_name} is unsupported by op FakeQuant (float32 only).")
    ctx.check(ctx.outputs[0].dtype == np.float32, "FakeQuant output must be float32")
    num_bits = int(o.num_bits)
    ctx.check(0 < num_bits < 32, f"num_bits must be in [1, 31], got {num_bits}")
    with np.errstate(all="ignore"):  # min == max gives LiteRT's NaNs, not an error
        nmin, nmax, scale = nudge_quantization_range(float(o.min), float(o.max), 0, (1 << num_bits) - 1)
        inv = F32(1.0) / scale
    ctx.set_output_shape(0, x.shape)
    return FakeQuantFloat(nmin, nmax, scale, inv)
