"""Binary elementwise arithmetic: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM.

Paths without quantization (what ai-edge-litert 2.3.0 accepts, BUILTIN_REF):
- ADD: float32, float16, int32, int64, int16 (int16 only when not quantized).
- SUB: float32, int32, int64 (LiteRT aborts on unquantized int16, so we reject it).
- MUL: float32, float16, int32, int64, uint32, complex64 (no fused activation), int16 (when not quantized).
- DIV: float32, int32.
- MAXIMUM / MINIMUM: float32, float16, int8, uint8, int16, int32, int64. Quantized tensors are compared as
  raw integers; LiteRT checks no scales, and neither do we.
The int8 / uint8 and quantized int16 paths of ADD, SUB, MUL and DIV (fixed-point rescaling through
``litert_py.quant``) plug in at ``prepare_arithmetic_quantized``; until then they fail at prepare.

Semantics matched:
- Broadcasting follows NumPy (kernel_util.cc CalculateShapeForBroadcast). LiteRT's broadcast loop
  (reference/broadcast_loop.h, BroadcastBinaryOpSimple) CHECK-fails (aborts the process) above rank 8, so
  shapes that need broadcasting with an output rank above 8 are rejected at prepare. Equal shapes take the
  elementwise loop and have no rank limit.
- Fused activation: CalculateActivationRange<T> (kernel_util.h): RELU [0, max], RELU6 [0, 6],
  RELU_N1_TO_1 [-1, 1]; every other code (TANH and SIGN_BIT included) is the full range [lowest, max] of T,
  i.e. *ignored*. The float result is always clamped (ActivationFunctionWithMinMax), so an inf becomes
  +-FLT_MAX (+-65504 for float16) and NaN passes through; ``clip`` keeps the operand on ties, so -0.0
  survives as in the C++ ``min(max(x, lo), hi)``. Integer results wrap (WrappingAdd / WrappingMul); the clamp
  bounds are converted to T as C++ does, so RELU_N1_TO_1 on uint32 clamps to [4294967295, 1], i.e. to 1.
- DIV int32: C++ division truncating toward zero; any zero in the divisor fails at invoke
  ("data[i] != zero_point"), checked over the whole second input as LiteRT does. INT32_MIN / -1 gives
  INT32_MAX, as LiteRT 2.3.0 does. Float DIV by zero gives +-FLT_MAX (the clamped inf), 0/0 NaN.
- MAXIMUM / MINIMUM: ``a > b ? a : b`` / ``a < b ? a : b`` (maximum_minimum.cc): a NaN in the first input
  yields the second input, a NaN in the second input yields NaN.

Sources matched: tflite/kernels/{add,sub,mul,div,maximum_minimum}.cc, tflite/kernels/kernel_util.{h,cc},
tflite/kernels/internal/reference/{add,sub,mul,div,broadcast_loop}.h.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.dtypes import TensorType
from ..schema.model import ActivationFunctionType as Act
from ..schema.model import BuiltinOperator
from .common import broadcast_shape, clip_ufunc
from .registry import OpContext, TensorInfo, register

INPUT1, INPUT2, OUTPUT = 0, 1, 0

#: LiteRT's broadcast loop handles at most this rank (kMaxRank in reference/broadcast_loop.h).
MAX_BROADCAST_RANK = 8

_F32, _F16, _C64 = TensorType.FLOAT32, TensorType.FLOAT16, TensorType.COMPLEX64
_I8, _U8, _I16, _I32, _I64, _U32 = (TensorType.INT8, TensorType.UINT8, TensorType.INT16, TensorType.INT32,
                                    TensorType.INT64, TensorType.UINT32)
_FLOATS = frozenset({_F32, _F16})

_UFUNC = {
    BuiltinOperator.ADD: np.add,
    BuiltinOperator.SUB: np.subtract,
    BuiltinOperator.MUL: np.multiply,
    BuiltinOperator.DIV: np.divide,
}

#: Types each arithmetic op runs without quantization parameters (LiteRT 2.3.0).
PLAIN_TYPES = {
    BuiltinOperator.ADD: frozenset({_F32, _F16, _I32, _I64, _I16}),
    BuiltinOperator.SUB: frozenset({_F32, _I32, _I64}),
    BuiltinOperator.MUL: frozenset({_F32, _F16, _I32, _I64, _I16, _U32, _C64}),
    BuiltinOperator.DIV: frozenset({_F32, _I32}),
}

#: Types MAXIMUM and MINIMUM accept (raw values compared, quantized or not).
MINMAX_TYPES = frozenset({_F32, _F16, _I8, _U8, _I16, _I32, _I64})


# -- prepared ops ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Arithmetic:
    """``ufunc(a, b)`` with NumPy broadcasting, then the clamp to [lo, hi] (None: no clamp needed)."""

    ufunc: np.ufunc
    clamp: tuple | None  # (lo, hi) as scalars of the output dtype

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        self.ufunc(inputs[INPUT1], inputs[INPUT2], out=out)
        if self.clamp is not None:
            clip_ufunc(out, self.clamp[0], self.clamp[1], out=out)


@dataclass(frozen=True, eq=False)
class DivInt:
    """int32 DIV: C++ ``a / b`` (truncation toward zero), then the activation clamp.

    The quotient of two int32 values is computed in float64: |a/b| < 2**31 keeps the rounding error
    below the distance 1/|b| to the nearest integer boundary, so the truncated float64 quotient is the
    exact integer quotient.
    """

    lo: float
    hi: float

    def __call__(self, inputs, outputs):
        a, b = inputs[INPUT1], inputs[INPUT2]
        if not b.all():
            raise ZeroDivisionError("DIV: the divisor has a zero element (data[i] != zero_point was not true)")
        out = outputs[OUTPUT]
        q = np.empty(out.shape, np.float64)
        np.true_divide(a, b, out=q)
        np.trunc(q, out=q)
        clip_ufunc(q, self.lo, self.hi, out=q)  # also INT32_MIN / -1 -> INT32_MAX, as LiteRT gives
        np.copyto(out, q, casting="unsafe")


def _recover_infinities(a, b, c, d):
    """C99 Annex G recovery of (a+bi)(c+di) when both parts came out NaN (compiler-rt/libgcc __mulsc3)."""
    inf = np.float32(np.inf)

    def box(v, take):  # copysign(isinf(v) ? 1 : 0, v) where ``take``
        return np.where(take, np.copysign(np.isinf(v).astype(np.float32), v), v)

    def zero_nan(v, take):  # copysign(0, v) for NaN v where ``take``
        return np.where(take & np.isnan(v), np.copysign(np.float32(0), v), v)

    ab_inf = np.isinf(a) | np.isinf(b)
    a, b = box(a, ab_inf), box(b, ab_inf)
    c, d = zero_nan(c, ab_inf), zero_nan(d, ab_inf)
    cd_inf = np.isinf(c) | np.isinf(d)
    c, d = box(c, cd_inf), box(d, cd_inf)
    a, b = zero_nan(a, cd_inf), zero_nan(b, cd_inf)
    products_inf = np.isinf(a * c) | np.isinf(b * d) | np.isinf(a * d) | np.isinf(b * c)
    late = ~(ab_inf | cd_inf) & products_inf
    a, b, c, d = (zero_nan(v, late) for v in (a, b, c, d))
    recalc = ab_inf | cd_inf | late
    re = np.where(recalc, inf * (a * c - b * d), np.float32(np.nan))
    im = np.where(recalc, inf * (a * d + b * c), np.float32(np.nan))
    return re, im


@dataclass(frozen=True, eq=False)
class MulComplex:
    """complex64 MUL as std::complex<float> does it: (ac - bd) + (ad + bc)i with each product rounded on its
    own (NumPy's complex multiply fuses them and differs in the last bit), and the C99 Annex G recovery of
    infinities when both parts are NaN."""

    def __call__(self, inputs, outputs):
        a, b = np.broadcast_arrays(inputs[INPUT1], inputs[INPUT2])
        out = outputs[OUTPUT]
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        re, im, t = (np.empty(out.shape, np.float32) for _ in range(3))
        np.multiply(ar, br, out=re)
        re -= np.multiply(ai, bi, out=t)
        np.multiply(ar, bi, out=im)
        im += np.multiply(ai, br, out=t)
        both_nan = np.isnan(re) & np.isnan(im)
        if both_nan.any():
            re[both_nan], im[both_nan] = _recover_infinities(ar[both_nan], ai[both_nan], br[both_nan],
                                                             bi[both_nan])
        out.real = re
        out.imag = im


@dataclass(frozen=True, eq=False)
class MaximumMinimumFloat:
    """``a > b ? a : b`` (MAXIMUM, np.maximum) or ``a < b ? a : b`` (MINIMUM, np.minimum).

    np.maximum agrees except where ``a`` is NaN: it gives NaN, the C++ comparison gives ``b``; those
    elements are patched (a masked copy is ten times slower than the ufunc, so only when NaN shows up). On
    ties (+0.0 vs -0.0) both keep the second operand.
    """

    ufunc: np.ufunc

    def __call__(self, inputs, outputs):
        a, b = inputs[INPUT1], inputs[INPUT2]
        out = outputs[OUTPUT]
        self.ufunc(a, b, out=out)
        if np.isnan(out).any():
            np.copyto(out, b, where=np.isnan(a))


# -- helpers --------------------------------------------------------------------------------------
def activation_range(code: int, dtype: np.dtype) -> tuple:
    """CalculateActivationRange<T> (kernel_util.h): (lo, hi) as scalars of ``dtype``.

    Codes other than RELU, RELU6 and RELU_N1_TO_1 give the full range of T. Bounds are converted to T as
    C++ converts them (-1 wraps for unsigned types).
    """
    dtype = np.dtype(dtype)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    lowest, highest = info.min, info.max
    if code == Act.RELU:
        lo, hi = 0, highest
    elif code == Act.RELU6:
        lo, hi = 0, 6
    elif code == Act.RELU_N1_TO_1:
        lo, hi = -1, 1
    else:
        lo, hi = lowest, highest
    return np.array(lo).astype(dtype)[()], np.array(hi).astype(dtype)[()]


def is_full_range(clamp: tuple, dtype: np.dtype) -> bool:
    info = np.iinfo(dtype)
    return clamp[0] == info.min and clamp[1] == info.max


def prepare_binary(ctx: OpContext) -> tuple[TensorInfo, TensorInfo]:
    """Checks shared by the binary ops; sets the (broadcast) output shape. Returns the two inputs."""
    ctx.check_num(2, 1)
    a, b = ctx.input(INPUT1), ctx.input(INPUT2)
    out = ctx.outputs[OUTPUT]
    ctx.check(a.type == b.type, f"input1->type != input2->type ({a.type_name} != {b.type_name})")
    ctx.check(out.type == a.type, f"output type {out.type_name} differs from the inputs' type {a.type_name}")
    if a.shape == b.shape:
        shape = a.shape
    else:
        shape = broadcast_shape(ctx, a.shape, b.shape)
        ctx.check(len(shape) <= MAX_BROADCAST_RANK,
                  f"broadcasting is supported up to rank {MAX_BROADCAST_RANK}; shapes {list(a.shape)} and "
                  f"{list(b.shape)} broadcast to rank {len(shape)}")
    ctx.set_output_shape(OUTPUT, shape)
    return a, b


def _op_word(ctx: OpContext) -> str:
    return ctx.op_name.capitalize()  # "Add", "Sub", "Mul", "Div", as LiteRT's messages spell them


# -- ADD, SUB, MUL, DIV -----------------------------------------------------------------------------
def prepare_arithmetic_quantized(ctx: OpContext, a: TensorInfo, b: TensorInfo):
    """The int8 / uint8 / quantized int16 paths (fixed-point rescaling): added by the quantized-core work."""
    raise ctx.fail(f"{ctx.op_name} on quantized {a.type_name} tensors is not supported yet")


@register(BuiltinOperator.ADD)
@register(BuiltinOperator.SUB)
@register(BuiltinOperator.MUL)
@register(BuiltinOperator.DIV)
def prepare_arithmetic(ctx: OpContext):
    a, b = prepare_binary(ctx)
    op, t = ctx.builtin_code, a.type
    out = ctx.outputs[OUTPUT]
    quantized = a.quantization.is_quantized or out.quantization.is_quantized
    if t in (_I8, _U8) or (t == _I16 and quantized):
        return prepare_arithmetic_quantized(ctx, a, b)
    if t not in PLAIN_TYPES[op]:
        raise ctx.fail(f"Type {a.type_name} is unsupported by op {_op_word(ctx)}.")
    code = ctx.options.fused_activation_function
    if t == _C64:
        ctx.check(code == Act.NONE, "Activation is not allowed for COMPLEX64 input.")
        return MulComplex()
    clamp = activation_range(code, a.dtype)
    if op == BuiltinOperator.DIV and t == _I32:
        return DivInt(float(clamp[0]), float(clamp[1]))
    if t not in _FLOATS and is_full_range(clamp, a.dtype):
        clamp = None  # integer arithmetic wraps; the full-range clamp is a no-op
    return Arithmetic(_UFUNC[op], clamp)


# -- MAXIMUM, MINIMUM -------------------------------------------------------------------------------
@register(BuiltinOperator.MAXIMUM)
@register(BuiltinOperator.MINIMUM)
def prepare_maximum_minimum(ctx: OpContext):
    a, _ = prepare_binary(ctx)
    if a.type not in MINMAX_TYPES:
        raise ctx.fail(f"Type {a.type_name} is currently not supported by Maximum.")
    is_max = ctx.builtin_code == BuiltinOperator.MAXIMUM
    if a.type in _FLOATS:
        return MaximumMinimumFloat(np.maximum if is_max else np.minimum)
    return Arithmetic(np.maximum if is_max else np.minimum, None)
