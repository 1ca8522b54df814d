"""CAST and BITCAST.

CAST (every pair of float32, float16, float64, int8, int16, int32, int64, uint8, uint16, uint32, bool and
complex64, as ai-edge-litert 2.3.0; complex128 is rejected), matching tflite/kernels/cast.cc:
- float -> integer (not bool) saturates (``SafeCast``): truncation toward zero, values beyond the type's range
  become its min / max, NaN becomes the max. (Not the raw x86 ``cvttss2si`` INT_MIN of a plain static_cast.)
- -> float16 goes through float32 first (``fp16_ieee_from_fp32_value(static_cast<float>(a))``), so float64 and
  int64 / int32 inputs are rounded twice, as LiteRT does.
- complex64 -> real type: the real part, then the rule above; real -> complex64: ``(float(a), 0)``.
- -> bool: ``a != 0`` (NaN is true); integer -> integer wraps (two's complement); the rest are C++ static_casts,
  which NumPy's ``astype`` reproduces (round to nearest even for int -> float, exact widening).
Quantization parameters are ignored: CAST converts stored values.

BITCAST reinterprets bytes (tflite/kernels/bitcast.cc): equal element sizes keep the shape; a wider input
gains a last dimension ``in_size / out_size``; a narrower input must end in a dimension ``out_size / in_size``,
which is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register

INPUT, OUTPUT = 0, 0

_CAST_TYPES = frozenset(
    {
        TensorType.FLOAT32,
        TensorType.FLOAT16,
        TensorType.FLOAT64,
        TensorType.INT8,
        TensorType.INT16,
        TensorType.INT32,
        TensorType.INT64,
        TensorType.UINT8,
        TensorType.UINT16,
        TensorType.UINT32,
        TensorType.BOOL,
        TensorType.COMPLEX64,
    }
)


@dataclass(frozen=True, eq=False)
class CastPlain:
    """``out[...] = x`` (NumPy's unsafe cast equals the C++ static_cast here), optionally via ``via``."""

    via: type | None = None

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.dtype.kind == "c" and outputs[OUTPUT].dtype.kind != "c":
            x = x.real
        if self.via is not None:
            x = x.astype(self.via)
        np.copyto(outputs[OUTPUT], x, casting="unsafe")


@dataclass(frozen=True, eq=False)
class CastFloatToInt:
    """Saturating float -> integer: truncate, clamp to [lo, hi], NaN -> hi (cast.cc SafeCast)."""

    lo: float
    safe_hi: float  # the largest float64 <= hi (hi itself for every type narrower than int64)
    bound: float  # hi + 1 = 2**k: y >= bound (or NaN) saturates to hi
    hi: int

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.dtype.kind == "c":
            x = x.real
        y = x.astype(np.float64)  # float16 / float32 / float64 values are exact in float64
        big = ~(y < self.bound)  # includes NaN
        np.clip(y, self.lo, self.safe_hi, out=y)
        y[big] = 0.0
        out = outputs[OUTPUT]
        np.copyto(out, y, casting="unsafe")  # truncates toward zero, every value now in range
        out[big] = self.hi


@dataclass(frozen=True, eq=False)
class CastFloatToIntNarrow:
    """The same for targets narrower than int64, whose bounds are exact in float64: ``fmin`` maps NaN to hi."""

    lo: float
    hi: float

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.dtype.kind == "c":
            x = x.real
        y = np.fmax(np.fmin(x, self.hi, dtype=np.float64), self.lo)
        np.copyto(outputs[OUTPUT], y, casting="unsafe")  # truncates toward zero


@register(BuiltinOperator.CAST)
def prepare_cast(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    for t in (x, y):
        if t.type not in _CAST_TYPES:
            raise ctx.fail(f"Type {t.type_name} is unsupported by op Cast.")
    ctx.set_output_shape(OUTPUT, x.shape)
    src, dst = x.dtype, y.dtype
    if src.kind in "fc" and dst.kind in "iu":
        info = np.iinfo(dst)
        if dst.itemsize < 8:
            return CastFloatToIntNarrow(float(info.min), float(info.max))
        hi = int(info.max)
        safe_hi = float(np.nextafter(np.float64(2.0**63), 0)) if hi == 2**63 - 1 else float(hi)
        return CastFloatToInt(float(info.min), safe_hi, float(hi) + 1.0, hi)
    if dst == np.float16 and src not in (np.float16, np.float32, np.bool_):
        return CastPlain(np.float32)  # static_cast<float> first, then to half: two roundings
    if dst.kind == "c" and src.kind in "iu" and src.itemsize >= 4:
        return CastPlain(np.float32)  # complex<float>(static_cast<float>(a)), rounded once
    return CastPlain()


@dataclass(frozen=True, eq=False)
class Bitcast:
    """Copy the bytes: ``out.view(uint8)[...] = x.view(uint8)``."""

    def __call__(self, inputs, outputs):
        src = np.ascontiguousarray(inputs[INPUT]).reshape(-1).view(np.uint8)
        outputs[OUTPUT].reshape(-1).view(np.uint8)[...] = src


@register(BuiltinOperator.BITCAST)
def prepare_bitcast(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    for t in (x, y):
        ctx.check(t.dtype.kind in "biufc", f"BITCAST does not support type {t.type_name}")
    a, b = x.dtype.itemsize, y.dtype.itemsize
    if a > b:
        shape = x.shape + (a // b,)
    elif a < b:
        ctx.check(
            len(x.shape) >= 1 and x.shape[-1] == b // a,
            f"input's last dimension must be {b // a} to bitcast {x.type_name} to {y.type_name}, "
            f"got shape {list(x.shape)}",
        )
        shape = x.shape[:-1]
    else:
        shape = x.shape
    ctx.set_output_shape(OUTPUT, shape)
    return Bitcast()
