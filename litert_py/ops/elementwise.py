"""Binary elementwise arithmetic: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM (FLOOR_DIV, FLOOR_MOD, POW,
SQUARED_DIFFERENCE, ATAN2 and ADD_N are in elementwise_misc.py).

Paths without quantization (what ai-edge-litert 2.3.0 accepts, BUILTIN_REF):
- ADD: float32, float16, int32, int64, int16 (int16 only when not quantized).
- SUB: float32, int32, int64 (LiteRT aborts on unquantized int16, so we reject it).
- MUL: float32, float16, int32, int64, uint32, complex64 (no fused activation), int16 (when not quantized).
- DIV: float32, int32.
- MAXIMUM / MINIMUM: float32, float16, int8, uint8, int16, int32, int64. Quantized tensors are compared as
  raw integers; LiteRT checks no scales, and neither do we.

Quantized paths (bit-exact with BUILTIN_REF; docs/quantized-arithmetic.md sections 2, 3, 5.1, 5.2, 5.18):
- ADD / SUB int8, uint8 and int16 "general": each input rescaled by ``MBQM((x - z) << ls, M_k, e_k)`` (ls 20 for
  8-bit, 15 for int16), the two added / subtracted in int32, then ``MBQM(., M_o, e_o) + zo`` and the fused
  activation's quantized clamp. Multipliers as add.cc / sub.cc: ``s_k / (2 max(s1, s2))`` and
  ``2 max / (2**ls s_out)`` divided in double, each through QuantizeMultiplierSmallerThanOneExp (which aborts
  LiteRT unless the multiplier is in (0, 1): rejected here; SUB's "> 1" branch is undefined behaviour in the
  kernel and rejected too).
- ADD / SUB int16 with ``pot_scale_int16`` (the default) and all three scales powers of two (CheckedLog2):
  zero points 0, one input rounded right by int16 ``RoundingDivideByPOT`` (for shifts >= 16 that yields +-1,
  as the int16 mask arithmetic does), then ``clamp(x1 +- x2)``. The POT ADD does not broadcast (LiteRT
  aborts); the POT SUB does. int16 zero points must be 0 on both paths.
- MUL int8, uint8, int16 (zero points 0): ``clamp(MBQM((x1 - z1)(x2 - z2), M, e) + zo)``, with
  ``(M, e) = QuantizeMultiplier(f32(s1 s2 / s_out))`` (float32, as mul.cc). int16 x int16 -> int8 / uint8 is
  the LSTM legacy path (``RDBPOT(SRDHM16(x1, x2), 8)``, scales unused, no broadcasting).
- DIV int8, uint8, int16: reference_ops::DivElementwise (GetReciprocal's Newton-Raphson, headroom
  normalisation) with ``(M, e) = QuantizeMultiplier(f32(s1 / (s2 s_out)))``. Its final rescaling exponent
  often leaves RoundingDivideByPOT's [0, 31] (e.g. 1/127 with all scales 1 gives 127, 0/127 gives 1);
  we reproduce what the x86-64 wheel computes there. A divisor equal to its zero point fails at invoke.
- Every 8-bit path is a 65536-entry table of the exact integer formula over all input pairs, built at
  prepare; eval is one gather. The int16 paths run in int64 with per-input 65536-entry tables.
- Per-channel quantization (several scales) is rejected; scales must be positive and finite.

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
tflite/kernels/internal/reference/{add,sub,mul,div,broadcast_loop,reference_ops}.h,
tflite/kernels/internal/reference/integer_ops/{add,mul}.h, tflite/kernels/internal/{common.h,
quantization_util.cc} (MultiplyByQuantizedMultiplier*, GetReciprocal, CheckedLog2), gemmlowp
fixedpoint/fixedpoint.h (RoundingDivideByPOT, one_over_one_plus_x_for_x_in_0_1).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InvokeError
from ..quant import (
    calculate_activation_range,
)
from ..schema.dtypes import TensorType
from ..schema.model import ActivationFunctionType as Act
from ..schema.model import BuiltinOperator
from .activation_fusion import intersect
from .bound_plan import BoundCalls2, bound_plan, contiguous_source
from .common import clip_ufunc, flat_views, operand_views, prepare_binary, scalar_operand
from .elementwise_quantized import (
    PREPARE_QUANTIZED,
)
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT1, INPUT2, OUTPUT = 0, 1, 0

_F32, _F16, _C64 = TensorType.FLOAT32, TensorType.FLOAT16, TensorType.COMPLEX64
_I8, _U8, _I16, _I32, _I64, _U32 = (
    TensorType.INT8,
    TensorType.UINT8,
    TensorType.INT16,
    TensorType.INT32,
    TensorType.INT64,
    TensorType.UINT32,
)
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
    clamp: tuple | None  # (lo, hi) of the output dtype: scalars, for float 0-d arrays

    _bound = None  # bind's (a, b, out, their calls as a bound plan), or None

    def bind(self, inputs, outputs) -> None:
        """The ufunc and the clamp as a bound plan (ops/bound_plan.bound_plan: partial objects, ``out`` by position)
        on the arrays of the step (ops/fusion.bind_steps), 1-d views where no operand broadcasts (common.flat_views):
        the same calls on the same memory, about 0.2 us less per call on a small tensor (a GRU's WHILE body)."""
        a, b, out = inputs[INPUT1], inputs[INPUT2], outputs[OUTPUT]
        bound = None
        if a is not None and b is not None and out is not None:
            o, x, y = flat_views(out, a, b)
            calls = [(self.ufunc, (x, y), {"out": o})]
            if self.clamp is not None:
                calls.append((clip_ufunc, (o, self.clamp[0], self.clamp[1]), {"out": o}))
            bound = (a, b, out, bound_plan(calls))
        object.__setattr__(self, "_bound", bound)

    def __call__(self, inputs, outputs):
        bound = self._bound
        if bound is not None and bound[0] is inputs[INPUT1] and bound[1] is inputs[INPUT2] and bound[2] is outputs[0]:
            for call in bound[3]:
                call()
            return
        out = outputs[OUTPUT]  # other arrays (a direct call, the dynamic path): the same calls, made now
        self.ufunc(inputs[INPUT1], inputs[INPUT2], out=out)
        if self.clamp is not None:
            clip_ufunc(out, self.clamp[0], self.clamp[1], out=out)

    def chain_calls(self, inputs, outputs) -> tuple | None:
        """The bound plan when bound to these arrays (ops/bound_chain.py), else None."""
        b = self._bound
        if b is not None and b[0] is inputs[INPUT1] and b[1] is inputs[INPUT2] and b[2] is outputs[OUTPUT]:
            return b[3]
        return None

    def with_clamp(self, lo, hi):
        """float32 only: this op clamping to [lo, hi] within its own range (ops/activation_fusion.py)."""
        return _narrowed(self, lo, hi)

    def feeding(self, consumer):
        """float32 only: the fused step when ``consumer``, the only reader of this op's output, offers
        ``after_arithmetic`` (LOGISTIC, TANH: ops/activations.py; ops/slice_views.fuse_feeding), else None."""
        after = getattr(consumer, "after_arithmetic", None)
        if after is None or self.clamp is None or getattr(self.clamp[0], "dtype", None) != np.float32:
            return None
        return after(self.ufunc, self.clamp)

    def reading_operands(self, indices: tuple) -> ArithmeticViews | None:
        """float32 only: this op reading input k as the view ``source[indices[k]]`` of its new input k where
        ``indices[k]`` is not None (ops/slice_views.fuse_slice_views: a SPLIT's outputs), else None."""
        if self.clamp is None or getattr(self.clamp[0], "dtype", None) != np.float32:
            return None
        return ArithmeticViews(self.ufunc, self.clamp, tuple(indices))


@dataclass(frozen=True, eq=False)
class ArithmeticViews:
    """float32 Arithmetic reading input k as the view ``inputs[k][indices[k]]`` where ``indices[k]`` is not None:
    a SPLIT's (or strided slice's) output read straight from its source, the slicing step dropped
    (ops/slice_views.fuse_slice_views; a GRU's gates in a WHILE body). The views are made once at bind
    (ops/fusion.bind_steps; the step exists only in a bound step list: called on other arrays, it binds to them),
    with the output as 1-d views when every operand is C-contiguous of one size (common.flat_views). Each view
    has the copy's shape (checked by the fusion), so broadcasting is unchanged, and the same ufunc runs
    elementwise on the same values: the same bits as Arithmetic on the copies, except which NaN propagates where
    both operands are NaN (numpy 1.x picks by its inner loop's lanes, which the views' alignment changes)."""

    ufunc: np.ufunc
    clamp: tuple  # (lo, hi): float32 0-d arrays
    indices: tuple  # per input: the basic index of its view, or None (read as bound)

    _args = None  # bind's (output, a, b) views
    _bound = None  # the (inputs, output) they were made of

    def bind(self, inputs, outputs) -> None:
        a, b = operand_views(inputs, self.indices)
        object.__setattr__(self, "_args", flat_views(outputs[OUTPUT], a, b))
        object.__setattr__(self, "_bound", (inputs[0], inputs[1], outputs[OUTPUT]))

    def __call__(self, inputs, outputs):
        bound = self._bound
        if bound is None or bound[0] is not inputs[0] or bound[1] is not inputs[1] or bound[2] is not outputs[OUTPUT]:
            self.bind(inputs, outputs)  # a direct call on other arrays: its own views
        out, a, b = self._args
        self.ufunc(a, b, out)
        clip_ufunc(out, self.clamp[0], self.clamp[1], out)

    def chain_calls(self, inputs, outputs) -> tuple | None:
        """The two calls on the views when bound to these arrays (ops/bound_chain.py), else None."""
        bound = self._bound
        if bound is None or bound[0] is not inputs[0] or bound[1] is not inputs[1] or bound[2] is not outputs[OUTPUT]:
            return None
        out, a, b = self._args
        return bound_plan([(self.ufunc, (a, b), {"out": out}), (clip_ufunc, (out, *self.clamp), {"out": out})])

    def with_clamp(self, lo, hi):
        """This op clamping to [lo, hi] within its own range (ops/activation_fusion.py)."""
        return _narrowed(self, lo, hi)

    def feeding(self, consumer):
        """Arithmetic.feeding's fused step (a LOGISTIC / TANH reading this op) reading the same views."""
        fused = Arithmetic.feeding(self, consumer)
        return None if fused is None else dataclasses.replace(fused, indices=self.indices)


@dataclass(frozen=True, eq=False)
class ArithmeticChannelRow(BoundCalls2):
    """float32 ``ufunc(a, b)`` where one operand holds one value per channel ((1, ..., 1, C), C < 64: an SE
    block's gate) and the other has the output's shape: the per-channel values are copied into one output row
    (W*C values) and the operation runs over (rows, W*C), whose inner loops are whole rows instead of C values
    (1.5-1.8x on 64x64x16 and 128x128x16; a loss below 16k values). Same elementwise operations:
    bit-identical."""

    ufunc: np.ufunc
    channel_first: bool  # the per-channel operand is input 1
    clamp: tuple | None
    row: np.ndarray  # (W, C) float32 scratch

    def bound_calls(self, x1: np.ndarray, x2: np.ndarray, out: np.ndarray) -> tuple:
        """The per-channel values into the row, the operation over (rows, W*C) views of these arrays (of a
        C-contiguous copy of an input that is not: bound_plan.contiguous_source), the clamp."""
        calls = []
        a, b = (x2, x1) if self.channel_first else (x1, x2)
        a, b = contiguous_source(a, calls), contiguous_source(b, calls)
        n = self.row.size
        flat, rows, full = self.row.reshape(n), out.reshape(-1, n), a.reshape(-1, n)
        calls.append((np.copyto, (self.row, b.reshape(1, -1)), {}))
        operands = (flat, full) if self.channel_first else (full, flat)
        calls.append((self.ufunc, operands, {"out": rows}))
        if self.clamp is not None:
            calls.append((clip_ufunc, (out, self.clamp[0], self.clamp[1]), {"out": out}))
        return tuple(calls)

    def with_clamp(self, lo, hi):
        """This op clamping to [lo, hi] within its own range (ops/activation_fusion.py)."""
        return _narrowed(self, lo, hi)


def _narrowed(op, lo, hi):
    """``op`` (float32 arithmetic, clamped last) with its clamp narrowed to [lo, hi], or None."""
    if op.clamp is None or op.clamp[0].dtype != np.float32 or op.ufunc not in _UFUNC.values():
        return None
    r = intersect(op.clamp[0], op.clamp[1], lo, hi)
    return None if r is None else dataclasses.replace(op, clamp=r)


#: ArithmeticChannelRow only for outputs of at least this many values (below, its extra copy costs more)
CHANNEL_ROW_MIN_ELEMENTS = 16384


def _channel_row(ufunc, a: TensorInfo, b: TensorInfo, out_shape, clamp) -> ArithmeticChannelRow | None:
    """ArithmeticChannelRow when one of a, b is a (1, ..., 1, C) operand of a float32 output of rank >= 2 with
    C < 64 and at least CHANNEL_ROW_MIN_ELEMENTS values, and the other has the output's shape; else None."""
    if a.type != _F32 or len(out_shape) < 2 or not 0 < out_shape[-1] < 64:
        return None
    if int(np.prod(out_shape)) < CHANNEL_ROW_MIN_ELEMENTS:
        return None
    c = out_shape[-1]
    for per_channel, full, first in ((b, a, False), (a, b, True)):
        if tuple(full.shape) == tuple(out_shape) and per_channel.size == c and per_channel.shape[-1:] == (c,):
            return ArithmeticChannelRow(ufunc, first, clamp, np.empty((out_shape[-2], c), np.float32))
    return None


@dataclass(frozen=True, eq=False)
class DivInt:
    """int32 DIV: C++ ``a / b`` (truncation toward zero), then the activation clamp.

    The quotient of two int32 values is computed in float64: |a/b| < 2**31 keeps the rounding error
    below the distance 1/|b| to the nearest integer boundary, so the truncated float64 quotient is the
    exact integer quotient.
    """

    lo: float
    hi: float
    #: LiteRT's kernel checks the divisor at eval, also on an empty output (the node runs; see runtime/subgraph)
    checks_values_at_eval: ClassVar[bool] = True

    def __call__(self, inputs, outputs):
        a, b = inputs[INPUT1], inputs[INPUT2]
        if not b.all():
            raise InvokeError("DIV: the divisor has a zero element (data[i] != zero_point was not true)")
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
            re[both_nan], im[both_nan] = _recover_infinities(ar[both_nan], ai[both_nan], br[both_nan], bi[both_nan])
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
def is_full_range(clamp: tuple, dtype: np.dtype) -> bool:
    info = np.iinfo(dtype)
    return clamp[0] == info.min and clamp[1] == info.max


def _op_word(ctx: OpContext) -> str:
    return ctx.op_name.capitalize()  # "Add", "Sub", "Mul", "Div", as LiteRT's messages spell them


# -- ADD, SUB, MUL, DIV -----------------------------------------------------------------------------
@register(BuiltinOperator.ADD)
@register(BuiltinOperator.SUB)
@register(BuiltinOperator.MUL)
@register(BuiltinOperator.DIV)
def prepare_arithmetic(ctx: OpContext) -> PreparedOp:
    op = ctx.builtin_code
    legacy_mul = op == BuiltinOperator.MUL and ctx.input(INPUT1).type == _I16  # int16 x int16 -> int8 / uint8
    a, b = prepare_binary(ctx, (_I8, _U8) if legacy_mul else ())
    t = a.type
    out = ctx.outputs[OUTPUT]
    # int16 is quantized when the output is (MUL), or when an input1 or the output is (ADD: Prepare looks at
    # input1, Eval at the output; with only one of them quantized LiteRT aborts, and so do we, at prepare)
    quantized = out.quantization.is_quantized or (op != BuiltinOperator.MUL and a.quantization.is_quantized)
    if t in (_I8, _U8) or (t == _I16 and (quantized or out.type != t)):
        return PREPARE_QUANTIZED[op](ctx, a, b)
    if t not in PLAIN_TYPES[op]:
        raise ctx.fail(f"Type {a.type_name} is unsupported by op {_op_word(ctx)}.")
    code = ctx.options.fused_activation_function
    if t == _C64:
        ctx.check(code == Act.NONE, "Activation is not allowed for COMPLEX64 input.")
        return MulComplex()
    clamp = calculate_activation_range(code, a.dtype)
    if op == BuiltinOperator.DIV and t == _I32:
        return DivInt(float(clamp[0]), float(clamp[1]))
    if t not in _FLOATS and is_full_range(clamp, a.dtype):
        clamp = None  # integer arithmetic wraps; the full-range clamp is a no-op
    elif t in _FLOATS:  # 0-d arrays: no scalar conversion per call (activation_fusion.float_bounds), same values
        clamp = (scalar_operand(clamp[0], a.dtype), scalar_operand(clamp[1], a.dtype))
    row = _channel_row(_UFUNC[op], a, b, ctx.outputs[OUTPUT].shape, clamp)
    return row if row is not None else Arithmetic(_UFUNC[op], clamp)


# -- MAXIMUM, MINIMUM -------------------------------------------------------------------------------
@register(BuiltinOperator.MAXIMUM)
@register(BuiltinOperator.MINIMUM)
def prepare_maximum_minimum(ctx: OpContext) -> PreparedOp:
    a, _ = prepare_binary(ctx)
    if a.type not in MINMAX_TYPES:
        raise ctx.fail(f"Type {a.type_name} is currently not supported by Maximum.")
    is_max = ctx.builtin_code == BuiltinOperator.MAXIMUM
    if a.type in _FLOATS:
        return MaximumMinimumFloat(np.maximum if is_max else np.minimum)
    return Arithmetic(np.maximum if is_max else np.minimum, None)
