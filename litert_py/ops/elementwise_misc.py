"""The other binary elementwise ops: FLOOR_DIV, FLOOR_MOD, POW, SQUARED_DIFFERENCE, ATAN2, ADD_N (ADD, SUB,
MUL, DIV, MAXIMUM and MINIMUM are in elementwise.py, whose broadcasting rules and rank limit these share through
its prepare_binary).

FLOOR_DIV (float32, int32, int16, int8), FLOOR_MOD (float32, int64, int32, int16, int8), POW (float32, int32),
SQUARED_DIFFERENCE (float32, int32, int8 quantized: ADD's recipe with left shift 7, no activation, 8-bit
table), ATAN2 (float32, float16; equal shapes only), ADD_N (float32, int32; >= 2 equal-shape inputs):
see each prepared op's docstring for zero divisors, integer overflow, NaN and the clamps; the last five
broadcast as NumPy does (ATAN2 and ADD_N not at all). Sources: tflite/kernels/{floor_div,floor_mod,pow,
squared_difference,atan2,add_n}.cc, reference/{floor_div,floor_mod}.h, optimized_ops.h (AddN,
BroadcastPow4D).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InputValueError, InvokeError
from ..quant import calculate_activation_range, multiply_by_quantized_multiplier, wrap32
from ..schema.dtypes import TensorType
from ..schema.model import ActivationFunctionType as Act
from ..schema.model import BuiltinOperator
from .common import clip_ufunc, prepare_binary
from .elementwise_quantized import check_scales, smaller_than_one_exp, table8, table_op
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT1, INPUT2, OUTPUT = 0, 1, 0
_F32, _F16 = TensorType.FLOAT32, TensorType.FLOAT16
_I8, _I16, _I32, _I64 = TensorType.INT8, TensorType.INT16, TensorType.INT32, TensorType.INT64


def _prepare_binary_typed(ctx: OpContext, allowed) -> tuple[TensorInfo, TensorInfo]:
    """prepare_binary (NumPy broadcasting; the wheel's broadcast helpers take 5-D and 6-D shapes too) with the
    inputs' type one of ``allowed``."""
    a, b = prepare_binary(ctx)
    if a.type not in allowed:
        raise ctx.fail(f"Type {a.type_name} is not supported by {ctx.op_name.lower()}.")
    return a, b


def _floor_quotients(inputs, out_shape) -> np.ndarray:
    """FLOOR_DIV's ``floor(double(a) / double(b))`` (float64, the output's shape); any zero divisor (+-0.0) fails,
    as floor_div.cc checks every element of input2 with ``equal_to(d, 0)`` at eval."""
    a, b = inputs[INPUT1], inputs[INPUT2]
    if not b.all():
        raise InvokeError("FLOOR_DIV: division by zero")
    q = np.empty(out_shape, np.float64)
    with np.errstate(all="ignore"):
        np.divide(a, b, out=q, dtype=np.float64)  # dtype: the loop itself in double; integers: exact (see DivInt)
    return np.floor(q, out=q)


@dataclass(frozen=True, eq=False)
class FloorDivFloat:
    """float32 FLOOR_DIV: ``std::floor(double(a) / double(b))`` stored as float32; a zero divisor fails at invoke."""

    #: LiteRT's kernel checks the divisor at eval, also on an empty output (the node runs; see runtime/subgraph)
    checks_values_at_eval: ClassVar[bool] = True

    def __call__(self, inputs, outputs):
        np.copyto(outputs[OUTPUT], _floor_quotients(inputs, outputs[OUTPUT].shape), casting="unsafe")


@dataclass(frozen=True, eq=False)
class FloorDivInt:
    """int8 / int16 / int32 FLOOR_DIV: ``floor(double(a) / double(b))`` converted back to T; a zero divisor fails
    at invoke. The one quotient outside T (T_MIN / -1) converts as x86-64 does: to T_MIN."""

    #: LiteRT's kernel checks the divisor at eval, also on an empty output (the node runs; see runtime/subgraph)
    checks_values_at_eval: ClassVar[bool] = True

    def __call__(self, inputs, outputs):
        q = _floor_quotients(inputs, outputs[OUTPUT].shape)
        np.copyto(outputs[OUTPUT], q.astype(np.int64), casting="unsafe")  # 2**(bits-1) wraps to T_MIN


@dataclass(frozen=True, eq=False)
class FloorMod:
    """FLOOR_MOD: ``r = fmod(a, b)`` (C++ ``%`` for integers), then ``r + b`` where r is non-zero and its sign
    differs from b's (reference/floor_mod.h). Integer zero divisors fail at invoke; float ones give NaN."""

    integer: bool

    @property
    def checks_values_at_eval(self) -> bool:
        """The integer kernel checks the divisor at eval, also on an empty output (see runtime/subgraph)."""
        return self.integer

    def __call__(self, inputs, outputs):
        a, b = inputs[INPUT1], inputs[INPUT2]
        out = outputs[OUTPUT]
        if self.integer and not b.all():
            raise InvokeError("FLOOR_MOD: division by zero")
        with np.errstate(invalid="ignore", divide="ignore"):
            np.fmod(a, b, out=out)
            fix = (out != 0) & ((b < 0) != (out < 0))
            np.add(out, b, out=out, where=fix)


@dataclass(frozen=True, eq=False)
class PowFloat:
    """float32 POW: ``std::pow(float, float)`` (powf), as NumPy's float32 power. Broadcasting a single exponent
    (``scalar_exponent``: the wheel's BroadcastPow4D scalar path, both builtin resolvers) whose value is a whole
    number in [0, 2^31) clamps to [-FLT_MAX, FLT_MAX] (measured: an overflow or an infinite base gives +-FLT_MAX,
    NaN passes, -0.0 stays; a fractional, negative or larger exponent keeps +-inf); that path's last bits may
    differ from powf's (within the float tolerance)."""

    scalar_exponent: bool = False
    clamp: tuple = (np.float32(-np.finfo(np.float32).max), np.float32(np.finfo(np.float32).max))

    def __call__(self, inputs, outputs):
        out, b = outputs[OUTPUT], inputs[INPUT2]
        with np.errstate(all="ignore"):
            np.power(inputs[INPUT1], b, out=out)
        if self.scalar_exponent:
            e = float(b.reshape(-1)[0])  # the exponent is a tensor: its value decides the path, as in the kernel
            if 0 <= e < 2**31 and e.is_integer():  # an int exponent: from 2^31 on powf's path again
                clip_ufunc(out, self.clamp[0], self.clamp[1], out=out)


@dataclass(frozen=True, eq=False)
class PowInt:
    """int32 POW. Equal shapes (reference_ops::Pow): ``static_cast<int>(std::pow(double(a), double(b)))``, exact
    in double below 2**31, a result outside int32 converting as x86-64 does, to INT32_MIN; the same with
    broadcasting, except when the exponent is a single broadcast value: then square-and-multiply with wrapping
    int32 products (IntegerPow), as the wheel does. A negative exponent fails at invoke (pow.cc CheckValue: "POW
    does not support negative value for int32.")."""

    wrap: bool  # broadcasting a single exponent (optimized_ops::BroadcastPow4D's scalar path, IntegerPow)
    #: pow.cc's Eval checks the exponent (CheckValue) before it looks at the output: an empty output fails too,
    #: and so does a constant exponent (at invoke, not allocate_tensors); see runtime/subgraph
    checks_values_at_eval: ClassVar[bool] = True

    def __call__(self, inputs, outputs):
        b = inputs[INPUT2]
        if (b < 0).any():
            raise InputValueError("POW does not support negative value for int32.")
        out = outputs[OUTPUT]
        if self.wrap:  # NumPy's integer power multiplies with wrap-around too
            np.power(inputs[INPUT1], b, out=out)
            return
        r = np.empty(out.shape, np.float64)
        with np.errstate(all="ignore"):
            np.power(inputs[INPUT1], b, out=r, dtype=np.float64)
        r[~(np.abs(r) < 2.0**31)] = -(2.0**31)  # also NaN
        np.copyto(out, r, casting="unsafe")


@dataclass(frozen=True, eq=False)
class SquaredDifference:
    """float32 / int32 SQUARED_DIFFERENCE: ``d = a - b; d * d`` in T (int32 wraps)."""

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        np.subtract(inputs[INPUT1], inputs[INPUT2], out=out)
        np.multiply(out, out, out=out)


@dataclass(frozen=True, eq=False)
class Atan2:
    """ATAN2 (float32 / float16): ``std::atan2`` elementwise on same-shape inputs (y first), float16 through
    float32 as Eigen::half does."""

    def __call__(self, inputs, outputs):
        y, x = inputs[INPUT1], inputs[INPUT2]
        if y.dtype == np.float16:
            y, x = y.astype(np.float32), x.astype(np.float32)
        np.arctan2(y, x, out=outputs[OUTPUT], casting="unsafe")


@dataclass(frozen=True, eq=False)
class AddN:
    """ADD_N (float32 / int32): ``((in0 + in1) + in2) + ...`` elementwise in T (int32 wraps); every float32 partial
    sum is clamped to [-FLT_MAX, FLT_MAX] (optimized_ops::AddN adds with the full-range activation clamp; NaN
    passes), so an overflow to inf becomes FLT_MAX and can come back down. One thread: LiteRT splits the inputs
    among up to num_inputs / 2 threads, which changes the order of additions."""

    clamp: tuple | None

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        np.copyto(out, inputs[0])
        for x in inputs[1:]:
            np.add(out, x, out=out)
            if self.clamp is not None:
                clip_ufunc(out, self.clamp[0], self.clamp[1], out=out)


@register(BuiltinOperator.FLOOR_DIV)
def prepare_floor_div(ctx: OpContext) -> PreparedOp:
    a, _ = _prepare_binary_typed(ctx, (_F32, _I32, _I16, _I8))
    return FloorDivFloat() if a.type == _F32 else FloorDivInt()


@register(BuiltinOperator.FLOOR_MOD)
def prepare_floor_mod(ctx: OpContext) -> PreparedOp:
    a, _ = _prepare_binary_typed(ctx, (_F32, _I64, _I32, _I16, _I8))
    return FloorMod(a.type != _F32)


@register(BuiltinOperator.POW)
def prepare_pow(ctx: OpContext) -> PreparedOp:
    a, b = _prepare_binary_typed(ctx, (_F32, _I32))
    scalar_exponent = a.shape != b.shape and b.size == 1  # optimized_ops::BroadcastPow4D's scalar path
    return PowFloat(scalar_exponent) if a.type == _F32 else PowInt(scalar_exponent)


@register(BuiltinOperator.SQUARED_DIFFERENCE)
def prepare_squared_difference(ctx: OpContext) -> PreparedOp:
    a, b = _prepare_binary_typed(ctx, (_F32, _I32, _I8))
    if a.type != _I8:
        return SquaredDifference()
    out = ctx.outputs[OUTPUT]
    check_scales(ctx, a, b, out)
    z1, z2, zo = a.zero_point, b.zero_point, out.zero_point
    for name, z in (("input1", z1), ("input2", z2), ("output", zo)):
        ctx.check(-128 <= z <= 127, f"{name} zero point {z} is outside [-128, 127]")
    left_shift = 7
    s1, s2, so = (np.float32(t.scale) for t in (a, b, out))
    twice_max = float(np.float32(2) * max(s1, s2))  # a float product, then used in double
    m1, e1 = smaller_than_one_exp(ctx, float(s1) / twice_max, "input1")
    m2, e2 = smaller_than_one_exp(ctx, float(s2) / twice_max, "input2")
    mo, eo = smaller_than_one_exp(ctx, twice_max * twice_max / ((1 << 2 * left_shift) * float(so)), "output")

    def squared_difference(x1, x2):  # SquaredDifference(int8_t, int8_t, params), per pair
        r1 = multiply_by_quantized_multiplier((x1 - z1) << left_shift, m1, e1)
        r2 = multiply_by_quantized_multiplier((x2 - z2) << left_shift, m2, e2)
        d = r1 - r2
        return multiply_by_quantized_multiplier(wrap32(d * d), mo, eo) + zo

    return table_op(table8(squared_difference, a.dtype, -128, 127, out.dtype), a, b, out)


@register(BuiltinOperator.ATAN2)
def prepare_atan2(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2, 1)
    y, x, out = ctx.input(INPUT1), ctx.input(INPUT2), ctx.outputs[OUTPUT]
    ctx.check(
        y.shape == x.shape,
        f"ATAN2: input shapes differ ({list(y.shape)} vs {list(x.shape)}); LiteRT's atan2 does not broadcast",
    )
    ctx.check(y.type == x.type, f"input_y->type != input_x->type ({y.type_name} != {x.type_name})")
    ctx.check(out.type == y.type, f"input_y->type != output->type ({y.type_name} != {out.type_name})")
    ctx.check(y.type in (_F32, _F16), f"Unsupported datatype for atan2 output: {y.type_name}")
    ctx.set_output_shape(OUTPUT, y.shape)
    return Atan2()


@register(BuiltinOperator.ADD_N)
def prepare_add_n(ctx: OpContext) -> PreparedOp:
    n = len(ctx.inputs)
    ctx.check(n >= 2, f"ADD_N needs at least 2 inputs, got {n}")
    ctx.check(len(ctx.outputs) == 1, f"ADD_N has 1 output, got {len(ctx.outputs)}")
    first = ctx.input(0)
    for i in range(1, n):
        t = ctx.input(i)
        ctx.check(t.shape == first.shape, f"input {i} shape {list(t.shape)} != input 0 shape {list(first.shape)}")
        ctx.check(t.type == first.type, f"input {i} type {t.type_name} != input 0 type {first.type_name}")
    out = ctx.outputs[OUTPUT]
    ctx.check(out.type == first.type, f"output type {out.type_name} differs from the inputs' type")
    ctx.check(out.type in (_F32, _I32), f"AddN only supports FLOAT32|INT32 now, got {out.type_name}.")
    ctx.set_output_shape(OUTPUT, first.shape)
    return AddN(calculate_activation_range(Act.NONE, np.float32) if out.type == _F32 else None)
