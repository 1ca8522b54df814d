"""Unary math: LOG, SQRT, RSQRT, EXP, ABS, NEG, SQUARE, SIN, COS, FLOOR, CEIL.

Paths without quantization (what ai-edge-litert 2.3.0 accepts):
- float32: every op. float16: NEG, SIN, COS, FLOOR, computed in float32 and rounded back to float16 as
  LiteRT does (NumPy's own float16 sin/cos loops round differently, so they are not used).
- ABS: int32, and int16 without quantization parameters (|INT_MIN| wraps to INT_MIN, as std::abs does).
- NEG: int8, int16, int32, int64, raw negation whatever the quantization (-(-128) wraps to -128).
The quantized int8 / int16 paths of LOG, SQRT, RSQRT, EXP and ABS (lookup tables and rescaling built with
``litert_py.quant`` from ``FLOAT_FUNCTIONS``) plug in at ``prepare_unary_quantized``; until then they fail
at prepare. LiteRT crashes or fails on unquantized int16 LOG / SQRT / RSQRT, and so do we (at prepare).

Float semantics are the C library's: LOG(0) = -inf, LOG(x<0) = NaN, SQRT(-0.0) = -0.0, SQRT(x<0) = NaN,
RSQRT is ``1.f / std::sqrt(x)`` (two correctly rounded steps: RSQRT(0) = inf, RSQRT(-0.0) = -inf),
SQUARE is ``x * x``; NaN and inf propagate as IEEE 754 says. Transcendentals (LOG, EXP, SIN, COS) stay in
float32 like LiteRT's ``std::log(float)``; NumPy's float32 loops and glibc's differ by an ulp or two.

Sources matched: tflite/kernels/elementwise.cc (LOG, SQRT, RSQRT, ABS, SIN, COS, SQUARE), exp.cc,
neg.cc, floor.cc, ceil.cc; tflite/kernels/internal/reference/{exp,neg,floor,ceil}.h.
CEIL is not registered by BUILTIN_REF; its builtin kernel (BUILTIN_WITHOUT_DEFAULT_DELEGATES) is the one
matched (float32 only; the XNNPACK delegate of the default resolver also takes float16).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .registry import OpContext, TensorInfo, register

INPUT, OUTPUT = 0, 0

_F32, _F16 = TensorType.FLOAT32, TensorType.FLOAT16
_I8, _I16, _I32, _I64 = TensorType.INT8, TensorType.INT16, TensorType.INT32, TensorType.INT64


def rsqrt(x, out=None):
    """``1.f / std::sqrt(x)``: the square root rounded, then the reciprocal rounded."""
    r = np.sqrt(x, out=out)
    return np.divide(r.dtype.type(1), r, out=out)


#: op -> f(x, out=None) giving the real-valued result; the float paths run it on the tensor, the
#: quantized paths (LUTs) on dequantized values.
FLOAT_FUNCTIONS: dict[int, Callable] = {
    BuiltinOperator.LOG: np.log,
    BuiltinOperator.SQRT: np.sqrt,
    BuiltinOperator.RSQRT: rsqrt,
    BuiltinOperator.EXP: np.exp,
    BuiltinOperator.ABS: np.abs,
    BuiltinOperator.NEG: np.negative,
    BuiltinOperator.SQUARE: np.square,
    BuiltinOperator.SIN: np.sin,
    BuiltinOperator.COS: np.cos,
    BuiltinOperator.FLOOR: np.floor,
    BuiltinOperator.CEIL: np.ceil,
}

#: Types each op runs as a plain function of the stored values (int16 ABS: only without quantization).
PLAIN_TYPES: dict[int, frozenset] = {
    BuiltinOperator.LOG: frozenset({_F32}),
    BuiltinOperator.SQRT: frozenset({_F32}),
    BuiltinOperator.RSQRT: frozenset({_F32}),
    BuiltinOperator.EXP: frozenset({_F32}),
    BuiltinOperator.ABS: frozenset({_F32, _I32, _I16}),
    BuiltinOperator.NEG: frozenset({_F32, _F16, _I8, _I16, _I32, _I64}),
    BuiltinOperator.SQUARE: frozenset({_F32}),
    BuiltinOperator.SIN: frozenset({_F32, _F16}),
    BuiltinOperator.COS: frozenset({_F32, _F16}),
    BuiltinOperator.FLOOR: frozenset({_F32, _F16}),
    BuiltinOperator.CEIL: frozenset({_F32}),
}

#: Types with a quantized path in LiteRT (int16: only with quantization parameters).
QUANTIZED_TYPES: dict[int, frozenset] = {
    BuiltinOperator.LOG: frozenset({_I8, _I16}),
    BuiltinOperator.SQRT: frozenset({_I8, _I16}),
    BuiltinOperator.RSQRT: frozenset({_I8, _I16}),
    BuiltinOperator.EXP: frozenset({_I8, _I16}),
    BuiltinOperator.ABS: frozenset({_I8, _I16}),
}

#: LiteRT's spelling of the op in its messages ("Type INT16 is unsupported by op Rsqrt.")
_NAMES = {BuiltinOperator.RSQRT: "Rsqrt", BuiltinOperator.SQUARE: "Square"}


@dataclass(frozen=True, eq=False)
class UnaryPlain:
    """``fn(x, out=y)``: one NumPy ufunc (RSQRT: two) over the stored values."""

    fn: Callable

    def __call__(self, inputs, outputs):
        self.fn(inputs[INPUT], out=outputs[OUTPUT])


def prepare_unary_quantized(ctx: OpContext, x: TensorInfo):
    """The int8 / int16 quantized paths (LUTs over ``FLOAT_FUNCTIONS``): added by the quantized-core work."""
    raise ctx.fail(f"{ctx.op_name} on quantized {x.type_name} tensors is not supported yet")


@register(BuiltinOperator.LOG)
@register(BuiltinOperator.SQRT)
@register(BuiltinOperator.RSQRT)
@register(BuiltinOperator.EXP)
@register(BuiltinOperator.ABS)
@register(BuiltinOperator.NEG)
@register(BuiltinOperator.SQUARE)
@register(BuiltinOperator.SIN)
@register(BuiltinOperator.COS)
@register(BuiltinOperator.FLOOR)
@register(BuiltinOperator.CEIL)
def prepare_unary(ctx: OpContext):
    ctx.check_num(1, 1)
    x = ctx.input(INPUT)
    y = ctx.outputs[OUTPUT]
    op = ctx.builtin_code
    ctx.check(y.type == x.type, f"output type {y.type_name} differs from the input type {x.type_name}")
    ctx.set_output_shape(OUTPUT, x.shape)
    quantized = x.quantization.is_quantized or y.quantization.is_quantized
    if x.type in QUANTIZED_TYPES.get(op, ()) and (quantized or x.type == _I8):
        return prepare_unary_quantized(ctx, x)
    if x.type not in PLAIN_TYPES[op]:
        raise ctx.fail(f"Type {x.type_name} is unsupported by op {_NAMES.get(op, ctx.op_name.capitalize())}.")
    fn = FLOAT_FUNCTIONS[op]
    if x.type == _F16:
        fn = partial(fn, dtype=np.float32)  # static_cast<half>(std::sin(static_cast<float>(h)))
    return UnaryPlain(fn)
