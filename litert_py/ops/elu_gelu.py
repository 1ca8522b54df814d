"""ELU and GELU (LOG_SOFTMAX is in log_softmax.py).

- ELU float32: ``x < 0 ? expm1(x) : x``; int8: LUTPopulate of ``x < 0 ? expm1f(x) : x`` (activations.cc
  EluPrepare). LiteRT's BUILTIN_REF resolver does not register ELU (tests use BUILTIN_WITHOUT_DEFAULT_DELEGATES).
- GELU (gelu.cc, reference/gelu.h): float32 ``0.5 * x * erfc(-x / sqrt 2)`` or, ``approximate``, ``0.5 * x * (1 +
  tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``; int8 / uint8: LUTPopulate (256 entries) of the float32 transforms
  (glibc ``erfcf`` / ``tanhf``); int16: the 513-entry interpolated LUTPopulate<int16_t> (float32), tabulated over
  every input.

Sources matched: tflite/kernels/activations.cc (EluPrepare, Elu); tflite/kernels/gelu.cc; reference/gelu.h;
tflite/kernels/internal/common.h (LUTPopulate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..libm import libm_float
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .activations_quantized import lut_activation
from .bound_plan import bound_plan, run_calls
from .common import (
    Noop,
    check_same_type,
)
from .registry import OpContext, PreparedOp, register

INPUT, OUTPUT = 0, 0

_F32 = TensorType.FLOAT32
_U8, _I8, _I16 = TensorType.UINT8, TensorType.INT8, TensorType.INT16
_ONE = np.float32(1)


# the C library's float32 functions (what LiteRT's kernels call), used at prepare only; see litert_py/libm.py
_expm1f = libm_float("expm1f")
_tanhf = libm_float("tanhf")

_SQRT1_2 = np.float32(0.70710678118654752440)
_SQRT_2_OVER_PI = np.float32(1.12837916709551257390 * 0.70710678118654752440)
_GELU_C = np.float32(0.044715)
_HALF = np.float32(0.5)
_ERFC_COEFFS = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
)


def _erfc_f64(x: np.ndarray) -> np.ndarray:
    """erfc in float64 with a relative error below 1.2e-7 everywhere (Chebyshev fit, Numerical Recipes
    ``erfcc``): NumPy has no erfc; enough for the float32 GELU path (rounded to float32 afterwards)."""
    a = np.asarray(x, np.float64)
    out = np.empty(a.shape)
    _erfc_into(a, np.empty(a.shape), np.empty(a.shape), np.empty(a.shape, bool), out)
    return out


def _erfc_into(a: np.ndarray, z: np.ndarray, t: np.ndarray, neg: np.ndarray, out: np.ndarray) -> None:
    """``out = erfcc(a)`` (``_erfc_f64``) for float64 ``a``: ``_erfc_calls`` run at once."""
    run_calls(_erfc_calls(a, z, t, neg, out))


def _erfc_calls(a: np.ndarray, z: np.ndarray, t: np.ndarray, neg: np.ndarray, out: np.ndarray) -> list:
    """The numpy calls of ``out = erfcc(a)`` (``_erfc_f64``) for float64 ``a`` as (function, args, kwargs) triples,
    every step one in-place call on the scratch arrays ``z``, ``t`` (float64) and ``neg`` (bool) of a's shape:
    ``z = |a|``, ``t = 1 / (1 + z/2)``, the Horner polynomial ``p = (..((c0 t + c1) t + c2) t .. + c8) t``,
    ``ans = t exp(p - z^2 + c9)``, ``2 - ans`` where ``a < 0``. Each value is the one the textbook form
    ``(poly + c) * t`` from ``poly = 0`` gives: 0 + c0 is c0; t is computed as 2 / (2 + z), the same double (z/2
    is exact, 2 + z = 2 (1 + z/2) rounds to twice the same double, and 2 / 2s rounds as 1 / s); ``2 - ans`` is
    computed everywhere (into ``z``, free by then) and put where ``a < 0`` (np.putmask: about 4 us less than a
    ``where=`` subtract on 4096 values of random sign, the same values); a NaN lane keeps ``ans``, the same NaN."""
    o = "out"
    calls = [
        (np.abs, (a,), {o: z}),
        (np.add, (z, 2.0), {o: t}),
        (np.divide, (2.0, t), {o: t}),
        (np.multiply, (t, _ERFC_COEFFS[0]), {o: out}),
    ]
    for c in _ERFC_COEFFS[1:-1]:
        calls += [(np.add, (out, c), {o: out}), (np.multiply, (out, t), {o: out})]
    return calls + [
        (np.multiply, (z, z), {o: z}),
        (np.subtract, (out, z), {o: out}),
        (np.add, (out, _ERFC_COEFFS[-1]), {o: out}),
        (np.exp, (out,), {o: out}),
        (np.multiply, (out, t), {o: out}),
        (np.less, (a, 0.0), {o: neg}),
        (np.subtract, (2.0, out), {o: z}),
        (np.putmask, (out, neg, z), {}),
    ]


_erfcf = libm_float("erfcf", _erfc_f64)


def _gelu_exact_f32(v: np.ndarray) -> np.ndarray:
    """reference/gelu.h GeluTransform: ``0.5f * x * erfcf(x * -f32(M_SQRT1_2))`` (glibc erfcf at prepare)."""
    return _HALF * v * _erfcf(v * -_SQRT1_2)


def _gelu_tanh_f32(v: np.ndarray) -> np.ndarray:
    """reference/gelu.h GeluTransformApproximate: ``0.5f*x*(1 + tanhf(sqrt(2/pi) * (x + 0.044715f*x*x*x)))``."""
    return _HALF * v * (_ONE + _tanhf(_SQRT_2_OVER_PI * (v + _GELU_C * v * v * v)))


def _elu_f32(v: np.ndarray) -> np.ndarray:
    """EluPrepare's int8 LUT transform ``value < 0 ? std::expm1(value) : value`` in float32 (expm1f, not
    expf - 1: they differ by an ulp near 0, enough to move an entry)."""
    return np.where(v < 0, _expm1f(v), v)


@dataclass(frozen=True, eq=False)
class EluFloat:
    """``x < 0 ? expm1(x) : x`` in float32 (reference_ops / optimized_ops Elu)."""

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.expm1(x, out=out)
        np.copyto(out, x, where=~(x < 0))


#: GeluFloatExact keeps 33 bytes of scratch per value for the interpreter's life: larger inputs (a ViT-B MLP's
#: (1, 197, 3072)) keep GeluFloat's temporaries, made and freed per invoke
GELU_EXACT_MAX_VALUES = 1 << 16


@dataclass(frozen=True, eq=False)
class GeluFloatExact:
    """GeluFloat (not approximate) for a static shape, its float64 intermediates in buffers made at prepare:
    ``a = x * -(1/sqrt 2)`` in float64 (one call, x widened inside it), ``_erfc_into``, then ``(0.5f * x) *
    float32(erfc)`` with the rounding to float32 inside the product's call (``dtype=float32``): 30 numpy calls
    and no allocation instead of about 35 calls making 25 temporaries. Byte-identical to GeluFloat: the same
    float64 values (see ``_erfc_into``) and the same float32 products. An input of another shape goes to
    ``general``."""

    a: np.ndarray  # float64 scratch, the input's shape
    z: np.ndarray
    t: np.ndarray
    p: np.ndarray
    neg: np.ndarray  # bool
    general: GeluFloat
    erfc_plan: tuple  # _erfc_calls on the scratch arrays (a -> p), as bound_plan partial objects

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        if x.shape != self.a.shape:
            return self.general(inputs, outputs)
        p = self.p
        np.multiply(x, -0.70710678118654752440, out=self.a, dtype=np.float64)
        for call in self.erfc_plan:
            call()
        np.multiply(x, _HALF, out=out)
        np.multiply(out, p, out=out, dtype=np.float32, casting="same_kind")

    @staticmethod
    def build(shape: tuple) -> GeluFloatExact:
        a, z, t, p = (np.empty(shape) for _ in range(4))
        neg = np.empty(shape, bool)
        return GeluFloatExact(a, z, t, p, neg, GeluFloat(False), bound_plan(_erfc_calls(a, z, t, neg, p)))


@dataclass(frozen=True, eq=False)
class GeluFloat:
    """reference/gelu.h Gelu float32: ``0.5 * x * erfc(-x / sqrt 2)`` (erfc in float64, see ``_erfc_f64``) or,
    approximate, ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`` in float32."""

    approximate: bool

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        if self.approximate:
            np.multiply(x, x, out=out)
            out *= x
            out *= _GELU_C
            out += x
            out *= _SQRT_2_OVER_PI
            np.tanh(out, out=out)
            out += _ONE
            out *= _HALF  # (0.5 * x) * (1 + t): halving first is exact and keeps x * 2 from overflowing
            out *= x
        else:  # (0.5f * x) * erfc(-x / sqrt 2)
            np.multiply(x, _HALF, out=out)
            out *= _erfc_f64(x.astype(np.float64) * -0.70710678118654752440).astype(np.float32)


@register(BuiltinOperator.ELU)
def prepare_elu(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(x.type in (_F32, _I8), f"Only float32 and int8 is supported currently, got {x.type_name}.")
    check_same_type(ctx, x, y)
    ctx.set_output_shape(OUTPUT, x.shape)
    prepared = EluFloat() if x.type == _F32 else lut_activation(ctx, x, y, _elu_f32)
    return Noop() if x.size == 0 else prepared


@register(BuiltinOperator.GELU)
def prepare_gelu(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(
        x.type in (_F32, _I8, _U8, _I16), f"Only float32, int8, int16 and uint8 supported currently, got {x.type_name}."
    )
    check_same_type(ctx, x, y)
    ctx.set_output_shape(OUTPUT, x.shape)
    approximate = bool(ctx.options.approximate) if ctx.options else False
    if x.type == _F32:
        exact = not (approximate or x.dynamic) and x.size <= GELU_EXACT_MAX_VALUES
        prepared = GeluFloatExact.build(tuple(x.shape)) if exact else GeluFloat(approximate)
    else:
        prepared = lut_activation(ctx, x, y, _gelu_tanh_f32 if approximate else _gelu_exact_f32)
    return Noop() if x.size == 0 else prepared
