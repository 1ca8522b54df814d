"""ELU and GELU (LOG_SOFTMAX is in log_softmax.py).

- ELU float32: ``x < 0 ? expm1(x) : x``; int8: LUTPopulate of ``x < 0 ? expm1f(x) : x`` (activations.cc
  EluPrepare). LiteRT's BUILTIN_REF resolver does not register ELU (tests use BUILTIN_WITHOUT_DEFAULT_DELEGATES).
- GELU (gelu.cc, reference/gelu.h): float32 ``0.5 * x * erfc(-x / sqrt 2)`` or, ``approximate``, ``0.5 * x * (1 +
  tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`` as Eigen evaluates them in LiteRT's wheel (``GeluFloat``: the first bit
  for bit, with Eigen's float erfc from eigen_erfc.py; the second with numpy's tanh, within a few ulps); float16:
  the same expression in half arithmetic, bit for bit (``GeluHalf``); int8 / uint8: LUTPopulate (256 entries) of
  the float32 transforms (glibc ``erfcf`` / ``tanhf``); int16: the 513-entry interpolated LUTPopulate<int16_t>
  (float32), tabulated over every input.

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
from .bound_plan import BoundCalls
from .common import (
    Noop,
    check_same_type,
)
from .eigen_erfc import ErfcWork, eigen_erfc
from .eigen_math import PACKET_SIZE
from .registry import OpContext, PreparedOp, register

INPUT, OUTPUT = 0, 0

_F32, _F16 = TensorType.FLOAT32, TensorType.FLOAT16
_U8, _I8, _I16 = TensorType.UINT8, TensorType.INT8, TensorType.INT16
_ONE = np.float32(1)


# the C library's float32 functions (what LiteRT's kernels call), used at prepare only; see litert_py/libm.py
_expm1f = libm_float("expm1f")
_tanhf = libm_float("tanhf")

_SQRT1_2 = np.float32(0.70710678118654752440)
_SQRT_2_OVER_PI = np.float32(1.12837916709551257390 * 0.70710678118654752440)
_GELU_C = np.float32(0.044715)
_HALF = np.float32(0.5)
# GeluFloat's operands: 0-d arrays (a numpy scalar operand costs more per ufunc call)
_F32_NP = np.dtype(np.float32)
_NEG_SQRT1_2, _HALF_0D, _ONE_0D = np.array(-_SQRT1_2), np.array(_HALF), np.array(_ONE)
_GELU_C_0D, _SQRT_2_OVER_PI_0D = np.array(_GELU_C), np.array(_SQRT_2_OVER_PI)
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
    """erfc in float64 with a relative error below 1.2e-7 everywhere (Chebyshev fit, Numerical Recipes ``erfcc``):
    ``erfcf``'s stand-in for the 8/16-bit GELU tables where no C library loads (litert_py.libm). NumPy has no
    erfc."""
    a = np.asarray(x, np.float64)
    z = np.abs(a)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.zeros_like(t)
    for c in _ERFC_COEFFS[:-1]:
        poly = (poly + c) * t
    ans = t * np.exp(poly - z * z + _ERFC_COEFFS[-1])
    return np.where(a < 0, 2.0 - ans, ans)


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


#: values per pass of GeluFloat's calls: bounded scratch (ErfcWork keeps 12 float32 buffers of a pass) that stays
#: in the caches; a multiple of 4, so every pass but the last is whole packets, as Eigen's traversal of the tensor
GELU_CHUNK = 2048 * PACKET_SIZE


@dataclass(frozen=True, eq=False)
class GeluFloat(BoundCalls):
    """reference/gelu.h ``Gelu<float>``, as Eigen evaluates it in LiteRT's wheel:

    - not approximate, bit for bit: ``(0.5 * x) * erfc(x * -f32(M_SQRT1_2))`` with Eigen's float erfc
      (eigen_erfc.ErfcWork): equal to ai-edge-litert 2.3.0 (x86-64 Linux) on all 2^32 float32 bit patterns, NaN
      payloads included (tensors of 2^22 values, BUILTIN_REF), and on every tensor length 1..40 under BUILTIN_REF
      and BUILTIN_WITHOUT_DEFAULT_DELEGATES (tests/ops/test_gelu_float.py keeps the lengths, special values and
      shapes);
    - approximate: ``(0.5 * x) * (1 + tanh(kSqrt2dPi * (x + 0.044715 * (x * (x * x)))))``, each operation in
      float32 in that order (Eigen's ``cube()`` is ``a * (a * a)``), kSqrt2dPi = f32(M_2_SQRTPI * M_SQRT1_2), with
      numpy's tanh where Eigen's is ``ptanh_float``: within a few ulps of 1 times |x| of LiteRT (the tolerance of
      tests/ops/test_log_softmax_elu_gelu.py); for x in about (-5.4, -4.84) Eigen's tanh is exactly -1 and LiteRT
      gives -0.0 where this gives tiny negative values (down to about -6e-7). eigen_math's bit-exact ``_Tanh``
      gives all 2^32 inputs LiteRT's bits too (measured), but its 15 numpy calls made the op 2.6x slower (4096
      values: 6.5 -> 18.8 us), and issue 16 keeps every model at least as fast as before it.

    The calls run over passes of at most GELU_CHUNK values, each on scratch made at prepare for the static shape
    (``scratch``: pass length -> (work, buffer)); arrays of another size get theirs when bound. The tensor's last
    ``size % 4`` values take Eigen's scalar path (for erfc: ``expf``). A direct call outside an invoke (whose fp
    errors are quiet) may warn: the large branch's ``1 / x2`` runs on every lane, x = 0 included."""

    approximate: bool
    scratch: dict

    @staticmethod
    def build(approximate: bool, size: int | None = None) -> GeluFloat:
        op = GeluFloat(approximate, {})
        for i, j in _passes(size or 0):
            op.work(j - i)
        return op

    def work(self, n: int) -> tuple:
        """(the erfc scratch or None, a float32 buffer) for a pass of ``n`` values (made once, at most 8 lengths kept:
        plans bound before hold their own)."""
        w = self.scratch.get(n)
        if w is None:
            if len(self.scratch) >= 8:
                self.scratch.clear()
            w = self.scratch[n] = (None if self.approximate else ErfcWork(n), np.empty(n, _F32_NP))
        return w

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> list:
        """The calls on these arrays (a strided x is copied first, into a buffer made here)."""
        calls = []
        if not x.flags.c_contiguous:
            xc = np.empty(x.shape, _F32_NP)
            calls.append((np.copyto, (xc, x), {}))
            x = xc
        xf, of, mul, add = x.reshape(-1), out.reshape(-1), np.multiply, np.add
        for i, j in _passes(xf.size):
            work, t = self.work(j - i)
            xs, os = xf[i:j], of[i:j]
            if self.approximate:
                calls += [
                    (mul, (xs, xs, t), {}),
                    (mul, (xs, t, t), {}),  # cube: x * (x * x)
                    (mul, (t, _GELU_C_0D), {"out": t}),
                    (add, (xs, t, t), {}),
                    (mul, (t, _SQRT_2_OVER_PI_0D), {"out": t}),
                    (np.tanh, (t,), {"out": t}),  # not Eigen's ptanh_float: see the class docstring
                    (add, (t, _ONE_0D), {"out": t}),
                ]
            else:
                calls += [(mul, (xs, _NEG_SQRT1_2), {"out": t}), *work.calls(t, t)]
            calls += [(mul, (xs, _HALF_0D), {"out": os}), (mul, (os, t, os), {})]  # (0.5 * x) * ...
        return calls


# GeluHalf's constants: the C++ ``static_cast<Eigen::half>`` of each (a double, or the float kSqrt2dPi)
_H = np.float16
_NEG_SQRT1_2_H, _HALF_H, _ONE_H = _H(-0.70710678118654752440), _H(0.5), _H(1.0)
_GELU_C_H, _SQRT_2_OVER_PI_H = _H(0.044715), _H(_SQRT_2_OVER_PI)


@dataclass(frozen=True, eq=False)
class GeluHalf:
    """reference/gelu.h ``Gelu<Eigen::half>`` (float16 tensors), as LiteRT 2.3.0's wheel runs it: the same Eigen
    expression over ``Eigen::half``, each operation computed in float32 and rounded to half (numpy's float16 ufuncs
    do the same), ``erfc`` / ``tanh`` of a half computed in float32 and rounded once: ``(0.5 * x) * erfc(x * c)``
    or ``(0.5 * x) * (1 + tanh(K * (x + C * (x * (x * x)))))``, c, C, K the halves of -M_SQRT1_2, 0.044715 and
    kSqrt2dPi. erfc is Eigen's float erfc (eigen_erfc), tanh numpy's: equal to LiteRT on all 65536 float16 inputs,
    both forms, under BUILTIN_REF and BUILTIN_WITHOUT_DEFAULT_DELEGATES (tests/ops/test_gelu_float.py; any float32
    erfc / tanh within a few ulps rounds to the same halves there). Temporaries per invoke: float16 GELU is rare."""

    approximate: bool

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        if self.approximate:
            t = x * (x * x)
            t *= _GELU_C_H
            t += x
            t *= _SQRT_2_OVER_PI_H
            t = np.tanh(t.astype(np.float32)).astype(_H)
            t += _ONE_H
        else:
            t = eigen_erfc((x * _NEG_SQRT1_2_H).astype(np.float32)).reshape(x.shape).astype(_H)
        np.multiply(x, _HALF_H, out=out)
        out *= t


def _passes(n: int) -> list:
    """GeluFloat's passes over n values: (start, stop) pairs of GELU_CHUNK values, the last one shorter."""
    return [(i, min(i + GELU_CHUNK, n)) for i in range(0, n, GELU_CHUNK)]


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
        x.type in (_F32, _F16, _I8, _U8, _I16),
        f"Only float32, float16, int8, int16 and uint8 supported currently, got {x.type_name}.",
    )
    check_same_type(ctx, x, y)
    ctx.set_output_shape(OUTPUT, x.shape)
    approximate = bool(ctx.options.approximate) if ctx.options else False
    if x.type == _F32:
        prepared = GeluFloat.build(approximate, None if x.dynamic else x.size)
    elif x.type == _F16:
        prepared = GeluHalf(approximate)
    else:
        prepared = lut_activation(ctx, x, y, _gelu_tanh_f32 if approximate else _gelu_exact_f32)
    return Noop() if x.size == 0 else prepared
