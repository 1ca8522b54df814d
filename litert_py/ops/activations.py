"""Activations: RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LOGISTIC, TANH, SOFTMAX, PRELU, LEAKY_RELU, HARD_SWISH:
registration, the shared checks and the float paths. The quantized paths are in activations_quantized.py (SOFTMAX's
in softmax.py); ELU / GELU in elu_gelu.py; LOG_SOFTMAX in log_softmax.py.

Float paths (ai-edge-litert 2.3.0, BUILTIN_REF):
- float32: every op. float16: LOGISTIC, TANH, SOFTMAX, computed in float32 and rounded to half once; SOFTMAX
  also rounds exp to half before dividing by the float32 sum, as LiteRT's half kernel does.
- RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 clamp; NaN passes through and -0.0 stays -0.0, as the C++
  comparisons leave them.
- LOGISTIC (reference/logistic.h): 1 above 16.619047 and ``exp(x)`` below -9 (not 1 / (1 + exp(-x)), which
  differs by up to 1.2e-4 relative there), ``1 / (1 + exp(-x))`` between, all in float32.
- TANH: ``std::tanh`` in float32.
- SOFTMAX (reference/softmax.h) over the last axis: ``exp((x - max) * beta) / sum`` in float32; beta is the
  option as given (0 when the options table is absent: a uniform output). Rank 0 is rejected.
- PRELU: ``x >= 0 ? x : x * alpha`` with alpha broadcast against x (the output must keep x's shape);
  alpha float32, constant or not. Broadcasting above rank 8 is rejected (LiteRT aborts).
- LEAKY_RELU: ``x > 0 ? x : x * alpha`` (so -0.0 * alpha for -0.0, and alpha may exceed 1 or be negative).
- HARD_SWISH: ``x * min(6, max(0, x + 3)) / 6`` in that order of float operations.

Sources matched: tflite/kernels/activations.cc; tflite/kernels/internal/reference/{logistic,tanh,softmax,
hard_swish,leaky_relu,prelu}.h; optimized_ops.h (Relu, LeakyRelu float, used by the reference resolver too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..schema.dtypes import TensorType, type_name
from ..schema.model import BuiltinOperator
from .activations_quantized import PREPARE_QUANTIZED, prepare_prelu_quantized
from .bound_plan import bound_plan
from .common import (
    Noop,
    broadcast_shape,
    clip_ufunc,
    operand_views,
    scalar_operand,
)
from .registry import OpContext, PreparedOp, TensorInfo, register
from .softmax_float import prepare_softmax_float

INPUT, ALPHA, OUTPUT = 0, 1, 0

#: LiteRT's broadcast loop handles at most this rank (reference/broadcast_loop.h)
MAX_BROADCAST_RANK = 8

_F32, _F16 = TensorType.FLOAT32, TensorType.FLOAT16
_U8, _I8, _I16 = TensorType.UINT8, TensorType.INT8, TensorType.INT16
_OP = BuiltinOperator

#: float types each op computes in floating point
FLOAT_TYPES: dict[int, frozenset] = {
    _OP.RELU: frozenset({_F32}),
    _OP.RELU6: frozenset({_F32}),
    _OP.RELU_N1_TO_1: frozenset({_F32}),
    _OP.RELU_0_TO_1: frozenset({_F32}),
    _OP.LOGISTIC: frozenset({_F32, _F16}),
    _OP.TANH: frozenset({_F32, _F16}),
    _OP.SOFTMAX: frozenset({_F32, _F16}),
    _OP.PRELU: frozenset({_F32}),
    _OP.LEAKY_RELU: frozenset({_F32}),
    _OP.HARD_SWISH: frozenset({_F32}),
}

#: integer types each op accepts as quantized tensors (LiteRT 2.3.0)
QUANTIZED_TYPES: dict[int, frozenset] = {
    _OP.RELU: frozenset({_U8, _I8, _I16}),
    _OP.RELU6: frozenset({_U8, _I8, _I16}),
    _OP.RELU_N1_TO_1: frozenset({_U8, _I8}),
    _OP.RELU_0_TO_1: frozenset({_U8, _I8}),
    _OP.LOGISTIC: frozenset({_U8, _I8, _I16}),
    _OP.TANH: frozenset({_U8, _I8, _I16}),
    _OP.SOFTMAX: frozenset({_U8, _I8, _I16}),
    _OP.PRELU: frozenset({_U8, _I8, _I16}),
    _OP.LEAKY_RELU: frozenset({_U8, _I8, _I16}),
    _OP.HARD_SWISH: frozenset({_U8, _I8}),
}

#: reference/logistic.h cutoffs: above, the result is 1; below, exp(x)
LOGISTIC_UPPER = np.float32(16.619047164916992188)
LOGISTIC_LOWER = np.float32(-9.0)

#: exp(-104) rounds to float32 0 (below half the smallest subnormal), as exp of every smaller argument does
_EXP_ZERO = np.float32(-104)
#: LOGISTIC's main branch clamps x to at most this: exp(-87) is a normal float32, 1 / (1 + exp(-87)) is 1
_MAIN_UPPER = np.float32(87)
assert np.float32(np.exp(np.float64(_EXP_ZERO))) == 0
_EXP_ZERO_64 = np.float64(_EXP_ZERO)


#: LogisticFloat runs the low branch's exp on the low values gathered below this fraction of the values
LOW_GATHER_MAX = 0.5

_A_ONE, _A_LOWER, _A_UPPER, _A_MAIN_UPPER, _A_EXP_ZERO = map(
    scalar_operand, (1, LOGISTIC_LOWER, LOGISTIC_UPPER, _MAIN_UPPER, _EXP_ZERO)
)
_A_ZERO, _A_THREE, _A_SIX = map(scalar_operand, (0, 3, 6))


# -- prepared ops ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ReluFloat:
    """RELU [0, inf), RELU6 [0, 6], RELU_N1_TO_1 [-1, 1]: a clamp that keeps NaN and -0.0."""

    lo: np.ndarray  # 0-d float32 (common.scalar_operand)
    hi: np.ndarray

    def __call__(self, inputs, outputs):
        clip_ufunc(inputs[INPUT], self.lo, self.hi, out=outputs[OUTPUT])


@dataclass(frozen=True, eq=False)
class TanhFloat:
    """std::tanh in float32 (float16 tensors: computed in float32, rounded back once)."""

    def __call__(self, inputs, outputs):
        np.tanh(inputs[INPUT], out=outputs[OUTPUT], dtype=np.float32)

    def after_arithmetic(self, ufunc, clamp) -> ArithmeticThenActivation:
        """This TANH reading a float32 ADD / SUB / MUL / DIV (elementwise.Arithmetic.feeding): both in one step,
        the arithmetic written into the output and the tanh taken there in place."""
        return ArithmeticThenActivation(ufunc, _kept_clamp(clamp), self, None)


def _kept_clamp(clamp: tuple) -> tuple | None:
    """The arithmetic's clamp, or None for the float32 range itself (ArithmeticThenActivation)."""
    return None if clamp[0] == -_FLT_MAX and clamp[1] == _FLT_MAX else clamp


_FLT_MAX = np.finfo(np.float32).max


@dataclass(frozen=True, eq=False)
class ArithmeticThenActivation:
    """A float32 ADD / SUB / MUL / DIV whose output only a LOGISTIC or TANH reads, as one step (fused by
    ops/slice_views.fuse_feeding through elementwise.Arithmetic.feeding): ``ufunc(a, b)`` into ``t`` (a scratch
    of its shape; TANH: the output, then a tanh in place), its clamp, then the activation on ``t``. Without a
    fused activation the arithmetic clamps to the float32 range (+-inf -> +-FLT_MAX, NaN kept); that clamp is
    skipped (``clamp`` None): both activations give the same bits for +-inf as for +-FLT_MAX (LOGISTIC 1 and 0,
    TANH +-1) and NaN reaches them either way, so the output is the unfused pair's (the tensor between them is
    not kept, as for every fused step). A narrower clamp (a fused RELU-type activation) is applied.

    ``indices`` (from elementwise.ArithmeticViews.feeding): input k is read as the view ``inputs[k][indices[k]]``
    where that is not None (a SPLIT's output read from the split's source, ops/slice_views.fuse_slice_views), the
    views made once at bind (ops/fusion.bind_steps; the step exists only in a bound step list: called on other
    inputs, it makes their views anew): the same values, of the same shape, as the copies, so the same bits but
    for which NaN propagates where both operands are NaN (numpy 1.x picks by its inner loop's lanes)."""

    ufunc: np.ufunc
    clamp: tuple | None
    act: object  # the LOGISTIC / TANH prepared op
    t: np.ndarray | None  # the intermediate's scratch; None: the output (TANH, in place)
    indices: tuple | None = None  # per input: the basic index of its view, or None (read as bound)
    _operands = None  # bind's (a, b) views when ``indices`` is set
    _sources = None  # the inputs they were made of
    _bound = None  # bind's (input 0, input 1, output, calls, LOGISTIC's main-branch calls or None)

    def bind(self, inputs, outputs) -> None:
        """The views (``indices``), the activation bound to the scratch, and the step's calls as one bound plan:
        the ufunc, the clamp, then TANH in place, or LogisticFloatSmall's check calls (its main-branch calls run
        when no value is flagged, else LogisticFloat's call, as LogisticFloatSmall's own call does)."""
        if self.indices is not None:
            object.__setattr__(self, "_operands", operand_views(inputs, self.indices))
            object.__setattr__(self, "_sources", (inputs[0], inputs[1]))
        bind = getattr(self.act, "bind", None)
        if bind is not None:
            bind([self.t], outputs)
        out, plan = outputs[OUTPUT], None
        a, b = self._operands if self.indices is not None else (inputs[0], inputs[1])
        if a is not None and b is not None and out is not None:
            t = out if self.t is None else self.t
            calls = [(self.ufunc, (a, b), {"out": t})]
            if self.clamp is not None:
                calls.append((clip_ufunc, (t, self.clamp[0], self.clamp[1]), {"out": t}))
            if self.t is None:
                plan = (inputs[0], inputs[1], out, bound_plan([*calls, (np.tanh, (t,), {"out": t})]), None)
            elif type(self.act) is LogisticFloatSmall and self.act._bound is not None:
                _, _, check, main = self.act._bound
                plan = (inputs[0], inputs[1], out, bound_plan(calls) + check, main)
        object.__setattr__(self, "_bound", plan)

    def __call__(self, inputs, outputs):
        p = self._bound
        if p is not None and p[0] is inputs[0] and p[1] is inputs[1] and p[2] is outputs[OUTPUT]:
            for call in p[3]:
                call()
            if p[4] is not None:
                if _count_nonzero(self.act.low):
                    LogisticFloat.__call__(self.act, [self.t], outputs)
                else:
                    for call in p[4]:
                        call()
            return
        self._unbound(inputs, outputs)

    @property
    def chainable(self) -> bool:
        """A TANH step's bound call is its plan alone (ops/bound_chain.py); a LOGISTIC's branches on its check."""
        return self.t is None

    def chain_calls(self, inputs, outputs) -> tuple | None:
        """The TANH step's bound plan when bound to these arrays (ops/bound_chain.py), else None."""
        p = self._bound
        if p is not None and p[4] is None and p[0] is inputs[0] and p[1] is inputs[1] and p[2] is outputs[OUTPUT]:
            return p[3]
        return None

    def _unbound(self, inputs, outputs):
        t = outputs[OUTPUT] if self.t is None else self.t
        if self.indices is None:
            a, b = inputs
        else:
            src = self._sources
            if src is None or src[0] is not inputs[0] or src[1] is not inputs[1]:  # a direct call: their views
                a, b = operand_views(inputs, self.indices)
            else:
                a, b = self._operands
        self.ufunc(a, b, t)
        if self.clamp is not None:
            clip_ufunc(t, self.clamp[0], self.clamp[1], t)
        if self.t is None:
            np.tanh(t, t)
        else:
            self.act([t], outputs)


@dataclass(frozen=True, eq=False)
class LogisticFloat:
    """reference/logistic.h in float32 (float16 tensors: computed in float32, rounded back once):
    ``x > 16.619047f ? 1 : x < -9 ? exp(x) : 1 / (1 + exp(-x))``.

    The main branch takes ``clip(x, -9, 87)``: exp(-87) is still a normal float32 and 1 / (1 + it) = 1 as the
    cutoff gives. Where x < -9 the result is exp(x) computed in float64 and rounded to float32 once: glibc's
    correctly rounded expf but for double-rounding ties (numpy's float32 exp is off by an ulp in about one value
    in six; the tests' tolerance covers both), and fast where the float32 results are subnormal (x < -87.3),
    where numpy's float32 exp drops to a scalar loop (2-10x slower over a segmentation mask's background).
    When fewer than half of the values are low (LOW_GATHER_MAX), the exp runs on them gathered; otherwise it runs
    over the whole array from ``clip(x, -104, -9)`` (exp(-104) rounds to 0, as the reference's expf does for every
    smaller argument). Both forms give identical values; which runs depends only on how many values are low. The
    whole-array form pays a float64 exp and a masked copy per value, the gathered one per low value:
    measured (1 thread, 32768 values, whole / gathered): 10% low 346 / 42 us, 50% 729 / 251 us, 90% 296 / 299 us,
    99% 162 / 882 us.

    The gathered exp reads ``max(x, -104)`` in float64 (the same zeros; libm's exp slows down 4x on arguments whose
    results underflow, efficientnet_b0's deep swish inputs reach -6000). The ones above the upper cutoff go in by
    ``max(r, x > 16.619047)`` (the mask cast to float32) instead of a masked copy: every result r so far is in
    [0, 1] or NaN, and np.maximum keeps r's NaN (the same bytes). efficientnet_b0 float's 65 LOGISTIC nodes,
    each alone (hot, median, interleaved runs): 3.8-5.6 -> 1.9-2.2 ms in all (its 1x2x2x1280 node 64-70 -> 30-33 us).

    Each value depends on its own branch only, so the passes of a branch no value takes are skipped (the same
    values): with every value low (a segmentation mask's background: 65536 values 200 -> ~85 us) the main branch
    and the masked copies go (the low results are copied whole), with none above the upper cutoff the pass
    placing the ones goes (25 us over 65536 values). The constants are 0-d arrays (``common.scalar_operand``)."""

    low: np.ndarray  # bool scratch of x's shape
    z: np.ndarray  # float32 scratch: the low branch's exp argument
    z64: np.ndarray  # float64 scratch: its exp
    t: np.ndarray | None  # float16 output: the float32 result; float32: None (written into the output)

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        low, z = self.low, self.z
        t = out if self.t is None else self.t
        np.less(x, _A_LOWER, out=low)
        n_low = np.count_nonzero(low)
        if n_low < low.size:
            clip_ufunc(x, _A_LOWER, _A_MAIN_UPPER, out=t)
            np.negative(t, out=t)
            np.exp(t, out=t)
            np.add(t, _A_ONE, out=t)
            np.divide(_A_ONE, t, out=t)
        if n_low:
            if n_low < low.size * LOW_GATHER_MAX:  # gathered (numpy's masked loops are scalar)
                at = np.flatnonzero(low)
                v = x.reshape(-1)[at].astype(np.float64)
                np.maximum(v, _EXP_ZERO_64, out=v)  # the same zeros, without libm's slow underflow path
                r = np.exp(v, out=v).astype(np.float32)
                if t.flags.c_contiguous:  # the interpreter's arrays: index assignment (3x faster than put)
                    t.reshape(-1)[at] = r
                else:  # a direct call's strided output (a flattening reshape would be a copy)
                    t.put(at, r)
            else:
                clip_ufunc(x, _A_EXP_ZERO, _A_LOWER, out=z)
                np.exp(z, out=self.z64, dtype=np.float64)
                if n_low == low.size:  # every value: no mask, and none can be above the upper cutoff
                    np.copyto(t, self.z64, casting="same_kind")
                else:
                    np.copyto(z, self.z64, casting="same_kind")  # a masked copy with a cast is 20x slower
                    np.copyto(t, z, where=low)
        if n_low < low.size:
            np.greater(x, _A_UPPER, out=low)
            if np.count_nonzero(low):  # every result so far is in [0, 1] or NaN: max(r, 1) = 1, max(r, 0) = r
                np.copyto(z, low)
                np.maximum(t, z, out=t)
        if self.t is not None:
            np.copyto(out, t, casting="same_kind")


#: LogisticFloatSmall for float32 tensors of at most this many values (its check passes are wasted when some
#: value leaves the main branch; on small arrays the calls, not the passes, cost)
LOGISTIC_SMALL_MAX = 4096


@dataclass(frozen=True, eq=False)
class LogisticFloatSmall(LogisticFloat):
    """LogisticFloat on a small float32 tensor (a GRU's (1, 32) gates inside a WHILE body) whose values all take
    the main branch (``-9 <= x <= 16.619047``): ``t = clip(x, -9, 16.619047)`` equals x exactly then (NaN and
    every value outside compare unequal), and the main branch's four passes on t give the bytes LogisticFloat's
    ``clip(x, -9, 87)`` gives on the same in-range values. So: clip, compare, count, and when no value differs the
    four passes; else LogisticFloat's own call (every branch). Bound to its arrays once (``bind``,
    ops/fusion.bind_steps; other arrays take LogisticFloat's call): 7 numpy calls instead of 9 and no Python
    branches (3.4 -> 2.2 us on (1, 32), alone, hot)."""

    _bound = None  # bind's (the input, the output, the check calls, the main-branch calls), or None

    def after_arithmetic(self, ufunc, clamp) -> ArithmeticThenActivation:
        """This LOGISTIC reading a float32 ADD / SUB / MUL / DIV (elementwise.Arithmetic.feeding): both in one
        step, the arithmetic written into a scratch that this op is bound to."""
        return ArithmeticThenActivation(ufunc, _kept_clamp(clamp), self, np.empty(self.low.shape, np.float32))

    def bind(self, inputs, outputs) -> None:
        x, out, bound = inputs[INPUT], outputs[OUTPUT], None
        if x is not None and out is not None and x.shape == out.shape == self.low.shape:
            t, low = out, self.low
            check = bound_plan(
                [(clip_ufunc, (x, _A_LOWER, _A_UPPER), {"out": t}), (np.not_equal, (t, x), {"out": low})]
            )
            main = bound_plan(
                [
                    (np.negative, (t,), {"out": t}),
                    (np.exp, (t,), {"out": t}),
                    (np.add, (t, _A_ONE), {"out": t}),
                    (np.divide, (_A_ONE, t), {"out": t}),
                ]
            )
            bound = (x, out, check, main)
        object.__setattr__(self, "_bound", bound)

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is not None and b[0] is inputs[INPUT] and b[1] is outputs[OUTPUT]:
            for call in b[2]:
                call()
            if not _count_nonzero(self.low):
                for call in b[3]:
                    call()
                return
        LogisticFloat.__call__(self, inputs, outputs)


_count_nonzero = np.count_nonzero


def _logistic_float(ctx, x) -> LogisticFloat:
    half = x.type == _F16
    if not half and x.size <= LOGISTIC_SMALL_MAX:
        return LogisticFloatSmall(
            np.empty(x.shape, bool), np.empty(x.shape, np.float32), np.empty(x.shape, np.float64), None
        )
    return LogisticFloat(
        np.empty(x.shape, bool),
        np.empty(x.shape, np.float32),
        np.empty(x.shape, np.float64),
        np.empty(x.shape, np.float32) if half else None,
    )


@dataclass(frozen=True, eq=False)
class PreluFloat:
    """``x >= 0 ? x : x * alpha``, alpha (inputs[1]) broadcast to x's shape.

    ``pick`` avoids the masked copy (ten times slower than a ufunc) when the constant alpha allows:
    with every alpha in (-inf, 1] but 0 the result is max(x * alpha, x), with every alpha > 1 it is
    min(x * alpha, x); ties (x = +-0.0) keep the second operand, x, as ``x >= 0`` does. None: the masked
    select, exact for any alpha (0, NaN, mixed, or not constant).
    """

    pick: np.ufunc | None = None
    alpha: np.ndarray | None = None  # a constant alpha tiled over x's last two axes (_tile_rows); None: inputs[1]

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.multiply(x, inputs[ALPHA] if self.alpha is None else self.alpha, out=out)
        if self.pick is None:
            np.copyto(out, x, where=x >= 0)
        else:
            self.pick(out, x, out=out)


@dataclass(frozen=True, eq=False)
class LeakyReluFloat:
    """``x > 0 ? x : x * alpha``. ``pick``: max(x, x * alpha) for alpha <= 1, min(x, x * alpha) for alpha > 1
    (ties, x = +-0.0, keep the second operand, x * alpha, as ``x > 0`` does); None (alpha 0 or NaN, where
    0 * inf is NaN but the result must be inf): the masked select."""

    alpha: np.float32
    pick: np.ufunc | None = None

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.multiply(x, self.alpha, out=out)
        if self.pick is None:
            np.copyto(out, x, where=x > 0)
        else:
            self.pick(x, out, out=out)


def _tile_rows(alpha: np.ndarray, x_shape) -> np.ndarray:
    """A constant per-channel alpha as whole rows: broadcast over x's last two axes (W, C) when it does not
    vary along the others, so numpy's inner loops run over W*C values instead of C (the same products: 196 ->
    ~100 us on a 96x96x16 PRELU); else alpha unchanged."""
    a = np.asarray(alpha, np.float32)
    lead = len(x_shape) - 2
    if lead < 1 or a.ndim > len(x_shape) or any(d != 1 for d in a.shape[: max(0, a.ndim - 2)]):
        return a
    return np.ascontiguousarray(np.broadcast_to(a.reshape(a.shape[-2:] if a.ndim >= 2 else a.shape), x_shape[-2:]))


def _pick_for(alpha) -> np.ufunc | None:
    """The ufunc that selects between x and x * alpha by the sign of x for every alpha, or None. Needs finite
    nonzero alphas (0 * inf and inf * 0 are NaN where the reference returns x)."""
    alpha = np.asarray(alpha)
    if not alpha.size or not np.all(np.isfinite(alpha) & (alpha != 0)):
        return None
    if np.all(alpha <= 1):
        return np.maximum
    if np.all(alpha > 1):
        return np.minimum
    return None


@dataclass(frozen=True, eq=False)
class PreluFloatSigned:
    """PRELU float with constant alphas mixing values <= 1 and > 1, all finite and nonzero: with s = -1 where
    alpha > 1 and +1 elsewhere, ``out = s * max(s*alpha * x, s * x)``, bit-identical to ``x >= 0 ? x : x *
    alpha`` (incl. +-0, +-inf, NaN and denormal x): for s = +1 it is PreluFloat's max(x * alpha, x), for s = -1
    min(x * alpha, x) with both operands negated (exact) and the result negated back; numpy's maximum keeps
    its second operand on ties, s * x, so +-0 inputs come back as x. 4 ufunc passes instead of a masked copy
    (843 -> ~200 us on a 96x96x32 layer)."""

    sign: np.ndarray  # float32 +-1, alpha's shape
    signed_alpha: np.ndarray  # float32 s * alpha (exact)
    scratch: np.ndarray  # float32, the input's shape

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.multiply(x, self.signed_alpha, out=out)
        np.multiply(x, self.sign, out=self.scratch)
        np.maximum(out, self.scratch, out=out)
        np.multiply(out, self.sign, out=out)


@dataclass(frozen=True, eq=False)
class HardSwishFloat:
    """``x * min(6, max(0, x + 3)) / 6`` with the reference kernel's order of float operations."""

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        np.add(x, _A_THREE, out=out)
        clip_ufunc(out, _A_ZERO, _A_SIX, out=out)
        np.multiply(out, x, out=out)
        np.divide(out, _A_SIX, out=out)


# -- prepare --------------------------------------------------------------------------------------
def _unsupported(ctx: OpContext, x: TensorInfo):
    """LiteRT's words: "Only float32, uint8, int8 and int16 are supported currently, got INT32." """
    names = sorted(type_name(t).lower() for t in FLOAT_TYPES[ctx.builtin_code] | QUANTIZED_TYPES[ctx.builtin_code])
    return ctx.fail(f"Only {', '.join(names[:-1])} and {names[-1]} are supported currently, got {x.type_name}.")


def _prepare(ctx: OpContext, make_float: Callable[[OpContext, TensorInfo], object]):
    """Checks shared by the one-input activations; the float path is ``make_float(ctx, x)``."""
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    if ctx.builtin_code == _OP.SOFTMAX:
        ctx.check(len(x.shape) >= 1, "NumDimensions(input) >= 1 was not true.")
    ctx.set_output_shape(OUTPUT, x.shape)
    if x.type in QUANTIZED_TYPES[ctx.builtin_code]:
        prepared = PREPARE_QUANTIZED[ctx.builtin_code](ctx, x, y)
        return Noop() if x.size == 0 else prepared
    if x.type not in FLOAT_TYPES[ctx.builtin_code]:
        raise _unsupported(ctx, x)
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    if x.size == 0:
        return Noop()
    return make_float(ctx, x)


def _relu(lo: float, hi: float):
    return lambda ctx, x: ReluFloat(scalar_operand(lo), scalar_operand(hi))


_MAKE_FLOAT: dict[int, Callable[[OpContext, TensorInfo], object]] = {
    _OP.RELU: _relu(0, np.inf),
    _OP.RELU6: _relu(0, 6),
    _OP.RELU_N1_TO_1: _relu(-1, 1),
    _OP.RELU_0_TO_1: _relu(0, 1),
    _OP.TANH: lambda ctx, x: TanhFloat(),
    _OP.LOGISTIC: _logistic_float,
    _OP.SOFTMAX: lambda ctx, x: prepare_softmax_float(ctx.options.beta, tuple(x.shape), half=x.type == _F16),
    _OP.LEAKY_RELU: lambda ctx, x: LeakyReluFloat(
        np.float32(ctx.options.alpha), _pick_for(np.float32(ctx.options.alpha))
    ),
    _OP.HARD_SWISH: lambda ctx, x: HardSwishFloat(),
}


@register(BuiltinOperator.RELU)
@register(BuiltinOperator.RELU6)
@register(BuiltinOperator.RELU_N1_TO_1)
@register(BuiltinOperator.RELU_0_TO_1)
@register(BuiltinOperator.TANH)
@register(BuiltinOperator.LOGISTIC)
@register(BuiltinOperator.SOFTMAX)
@register(BuiltinOperator.LEAKY_RELU)
@register(BuiltinOperator.HARD_SWISH)
def prepare_activation(ctx: OpContext) -> PreparedOp:
    x = ctx.input(INPUT)
    if ctx.builtin_code == _OP.SOFTMAX and x is not None and x.type == TensorType.FLOAT32:
        ctx.check(
            not x.shape or x.shape[-1] > 0 or 0 in x.shape[:-1],
            f"SOFTMAX float32 over an empty last dimension {list(x.shape)} (LiteRT reads outside the input: "
            "it segfaults or returns garbage)",
        )
    return _prepare(ctx, _MAKE_FLOAT[ctx.builtin_code])


@register(BuiltinOperator.PRELU)
def prepare_prelu(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    x, alpha, y = ctx.input(INPUT), ctx.input(ALPHA), ctx.outputs[OUTPUT]
    shape = broadcast_shape(ctx, x.shape, alpha.shape)
    ctx.check(
        shape == x.shape,
        f"alpha of shape {list(alpha.shape)} would broadcast the input "
        f"{list(x.shape)} to {list(shape)}: HaveSameShapes(input, output) was not true.",
    )
    ctx.check(
        x.shape == alpha.shape or len(shape) <= MAX_BROADCAST_RANK,
        f"broadcasting is supported up to rank {MAX_BROADCAST_RANK}, got rank {len(shape)}",
    )
    ctx.set_output_shape(OUTPUT, shape)
    if x.type in QUANTIZED_TYPES[_OP.PRELU]:
        prepared = prepare_prelu_quantized(ctx, x, alpha, y)
        return Noop() if x.size == 0 else prepared
    if x.type not in FLOAT_TYPES[_OP.PRELU]:
        raise _unsupported(ctx, x)
    ctx.check(alpha.type == x.type, f"alpha must be {x.type_name} like the input, got {alpha.type_name}")
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    if alpha.is_constant:
        pick = _pick_for(alpha.data)
        a = np.asarray(alpha.data, np.float32)
        if pick is None and a.size and np.all(np.isfinite(a) & (a != 0)):
            sign = np.where(a > 1, np.float32(-1), np.float32(1)).astype(np.float32)
            return PreluFloatSigned(_tile_rows(sign, shape), _tile_rows(sign * a, shape), np.empty(shape, np.float32))
        return PreluFloat(pick, _tile_rows(alpha.data, shape) if x.type == TensorType.FLOAT32 else None)
    return PreluFloat(None)
