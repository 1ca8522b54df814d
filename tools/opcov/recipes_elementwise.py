"""Dashboard recipes: elementwise arithmetic and comparisons, unary elementwise ops and activations."""

from __future__ import annotations

import numpy as np

from litert_py.schema.builder import quant

from .cases import (
    ALL,
    BROADCAST_SHAPES,
    NONE,
    NP,
    QIN,
    QOUT,
    TYPE,
    X4,
    Const,
    In,
    Out,
    P,
    binary,
    case,
    coarse_gen,
    nonzero_gen,
    positive,
    recipe,
    unary,
)

# ----------------------------------------------------------------------------------------------
# Elementwise arithmetic and comparisons
# ----------------------------------------------------------------------------------------------

ACT = {"fused_activation_function": NONE}


# Output scales for products: the default output scale would saturate most of MUL's outputs.
PRODUCT_OUT = {"int8": quant(0.3, 0), "uint8": quant(0.3, 128), "int16": quant(0.04, 0)}
SQUARE_OUT = {"int8": quant(0.6, -128), "uint8": quant(0.6, 0), "int16": quant(0.05, 0)}


@recipe("ADD", "SUB")
def add_sub(p: P):
    return binary(p, p.op, dict(ACT))


@recipe("MUL")
def mul(p: P):
    return binary(p, p.op, dict(ACT), out_q=PRODUCT_OUT.get(p.path))


@recipe("DIV")
def div(p: P):
    return binary(p, "DIV", dict(ACT), y=lambda p, s: p.x(s, 1, gen=nonzero_gen(p, s)))


@recipe("MAXIMUM", "MINIMUM")
def maximum_minimum(p: P):
    return binary(
        p,
        p.op,
        same_q=True,
        y=lambda p, s: p.x(s, 0, gen=coarse_gen(p, s)),
        x=lambda p, s: p.x(s, 0, gen=coarse_gen(p, s)),
    )


@recipe("SQUARED_DIFFERENCE")
def squared_difference(p: P):
    return binary(p, p.op, out_q=SQUARE_OUT.get(p.path))


@recipe("ATAN2")
def atan2(p: P):
    # LiteRT's ATAN2 does not broadcast (nor check shapes): a broadcasting model reads past the smaller
    # input and returns heap garbage, so only equal shapes are attempted.
    return binary(p, p.op, shapes=BROADCAST_SHAPES[:1])


@recipe(
    "STABLEHLO_ADD",
    "STABLEHLO_SUBTRACT",
    "STABLEHLO_MULTIPLY",
    "STABLEHLO_MAXIMUM",
    "STABLEHLO_MINIMUM",
    "STABLEHLO_AND",
    "STABLEHLO_OR",
    "BITWISE_XOR",
    "LOGICAL_AND",
    "LOGICAL_OR",
)
def plain_binary(p: P):
    same = p.op in ("STABLEHLO_MAXIMUM", "STABLEHLO_MINIMUM")
    shapes = BROADCAST_SHAPES[:1] if p.op.startswith("STABLEHLO_") else BROADCAST_SHAPES  # no implicit broadcast
    return binary(p, p.op, same_q=same, shapes=shapes, out_q=PRODUCT_OUT.get(p.path) if "MULT" in p.op else None)


@recipe("FLOOR_DIV", "FLOOR_MOD", "STABLEHLO_DIVIDE", "STABLEHLO_REMAINDER")
def division_like(p: P):
    shapes = BROADCAST_SHAPES[:1] if p.op.startswith("STABLEHLO_") else BROADCAST_SHAPES
    return binary(p, p.op, y=lambda p, s: p.x(s, 1, gen=nonzero_gen(p, s)), shapes=shapes)


@recipe("POW", "STABLEHLO_POWER")
def power(p: P):
    shapes = BROADCAST_SHAPES[:1] if p.op.startswith("STABLEHLO_") else BROADCAST_SHAPES
    if np.dtype(p.dtype).kind in "iu" and not p.quantized:
        return binary(p, p.op, x=lambda p, s: p.x(s, 0, -3, 3), y=lambda p, s: p.x(s, 1, 0, 3), shapes=shapes)
    return binary(p, p.op, x=lambda p, s: p.x(s, 0, 0.25, 3.0), y=lambda p, s: p.x(s, 1, -2, 2), shapes=shapes)


@recipe("RIGHT_SHIFT", "STABLEHLO_SHIFT_LEFT")
def shift(p: P):
    shapes = BROADCAST_SHAPES[:1] if p.op.startswith("STABLEHLO_") else BROADCAST_SHAPES
    return binary(p, p.op, y=lambda p, s: p.x(s, 1, 0, 7), shapes=shapes)


@recipe("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
def comparison(p: P):
    return binary(
        p,
        p.op,
        same_q=True,
        out_dtype=np.bool_,
        x=lambda p, s: p.x(s, 0, gen=coarse_gen(p, s)),
        y=lambda p, s: p.x(s, 0, gen=coarse_gen(p, s)),
    )


@recipe("STABLEHLO_COMPARE")
def stablehlo_compare(p: P):
    kind = {"f": 1, "i": 3, "u": 4, "b": 4}.get(np.dtype(p.dtype).kind, 0)
    cases = []
    for direction in range(6):
        x, y = p.x(X4, 0, gen=coarse_gen(p, X4)), p.x(X4, 0, gen=coarse_gen(p, X4))
        cases.append(
            case(
                p.op,
                [x, y],
                [Out(X4, np.bool_)],
                dict(comparison_direction=direction, compare_type=kind),
                label=f"direction{direction}",
            )
        )
    return cases


# ----------------------------------------------------------------------------------------------
# Unary elementwise and activations
# ----------------------------------------------------------------------------------------------


# Input ranges that keep outputs away from saturation (quantized paths draw the full range otherwise).
UNARY_RANGE = {
    "TANH": (-3, 3),
    "STABLEHLO_TANH": (-3, 3),
    "LOGISTIC": (-6, 6),
    "STABLEHLO_LOGISTIC": (-6, 6),
    "EXP": (-3, 2),
    "STABLEHLO_EXPONENTIAL": (-3, 2),
}


@recipe(
    "ABS",
    "NEG",
    "EXP",
    "SIN",
    "COS",
    "SQUARE",
    "FLOOR",
    "CEIL",
    "ROUND",
    "SIGN",
    "ELU",
    "HARD_SWISH",
    "LOGISTIC",
    "TANH",
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RELU_0_TO_1",
    "ZEROS_LIKE",
    "STABLEHLO_ABS",
    "STABLEHLO_COSINE",
    "STABLEHLO_EXPONENTIAL",
    "STABLEHLO_FLOOR",
    "STABLEHLO_NEGATE",
    "STABLEHLO_TANH",
    "STABLEHLO_LOGISTIC",
    "STABLEHLO_CBRT",
    "LOGICAL_NOT",
)
def plain_unary(p: P):
    lo, hi = UNARY_RANGE.get(p.op, (None, None))
    return unary(p, p.op, lo=lo, hi=hi)


@recipe("LOG", "SQRT", "RSQRT", "STABLEHLO_LOG", "STABLEHLO_RSQRT")
def positive_unary(p: P):
    return unary(p, p.op, lo=positive(p)[0], hi=positive(p)[1])


@recipe("LEAKY_RELU")
def leaky_relu(p: P):
    return [
        unary(p, p.op, options={"alpha": 0.2}, label="alpha0.2"),
        unary(p, p.op, options={"alpha": 1.5}, label="alpha1.5"),
    ]


@recipe("GELU")
def gelu(p: P):
    return [unary(p, p.op, options={"approximate": a}, label=f"approximate={a}") for a in (False, True)]


@recipe("PRELU")
def prelu(p: P):
    aq = {"int8": quant(0.01, 0), "uint8": quant(0.01, 128), "int16": quant(0.01, 0)}.get(p.path)
    cases = []
    for label, ashape in (("alpha-per-channel", (1, 1, 3)), ("alpha-full", (4, 4, 3))):
        if p.path == "int16":  # LiteRT's int16 PRELU takes an int8 alpha (as its own tests build it)
            alpha = p.rand(ashape, 0.05, 0.5)
            a = Const(np.clip(np.round(alpha / 0.01), -128, 127).astype(np.int8), np.int8, aq)
        else:
            a = p.const(p.rand(ashape, 0.05, 0.5), q=aq)
        cases.append(case(p.op, [p.x(X4), a], [p.out(X4)], label=label))
    return cases


@recipe("SOFTMAX")
def softmax(p: P):
    return [
        unary(p, p.op, (2, 5), options={"beta": 1.0}, label="2d"),
        unary(p, p.op, (1, 2, 2, 8), options={"beta": 0.5}, label="4d-beta0.5"),
    ]


@recipe("LOG_SOFTMAX")
def log_softmax(p: P):
    return [unary(p, p.op, (2, 5), label="2d"), unary(p, p.op, (1, 2, 2, 8), label="4d")]


@recipe("L2_NORMALIZATION")
def l2_normalization(p: P):
    return [unary(p, p.op, (1, 2, 2, 6), label="4d"), unary(p, p.op, (3, 5), label="2d")]


@recipe("LOCAL_RESPONSE_NORMALIZATION")
def lrn(p: P):
    return unary(p, p.op, (1, 2, 2, 6), options=dict(radius=2, bias=1.0, alpha=0.5, beta=0.75))


@recipe("CAST", "STABLEHLO_CONVERT")
def cast(p: P):
    cases = []
    for name in (
        "float32",
        "int32",
        "int64",
        "int16",
        "int8",
        "uint8",
        "bool",
        "float16",
        "float64",
        "uint16",
        "uint32",
    ):
        dt = np.dtype(name if name != "bool" else np.bool_)
        lo = 0 if dt.kind in "ub" or np.dtype(p.dtype).kind == "u" else -3
        x = In((2, 6), p.dtype, None, lo, 5)
        opts = dict(in_data_type=TYPE.get(p.path, 0), out_data_type=TYPE[name]) if p.op == "CAST" else None
        cases.append(case(p.op, [x], [Out((2, 6), dt)], opts, label=f"to-{name}"))
    return cases


@recipe("DEQUANTIZE", paths=("float32", "int8", "uint8", "int16"), not_applicable=ALL)
def dequantize(p: P):
    if p.path == "float32":
        return case(p.op, [In((2, 3, 4), np.float16)], [Out((2, 3, 4), np.float32)], label="float16")
    cases = [case(p.op, [p.x((2, 3, 4))], [Out((2, 3, 4), np.float32)], label="per-tensor")]
    if p.path == "int8":
        w = Const(p.rand((3, 4), -127, 127, np.int8), np.int8, quant([0.1, 0.2, 0.3], 0, 0))
        cases.append(case(p.op, [w], [Out((3, 4), np.float32)], label="per-channel-constant"))
    return cases


@recipe("QUANTIZE", paths=("int8", "uint8", "int16"), not_applicable=ALL)
def quantize_op(p: P):
    other = {"int8": "uint8", "uint8": "int8", "int16": "int8"}[p.path]
    return [
        case(p.op, [In((2, 3, 4), np.float32, None, -5, 5)], [p.out((2, 3, 4), same=True)], label="from-float32"),
        case(p.op, [p.x((2, 3, 4))], [p.out((2, 3, 4))], label="requantize"),
        case(p.op, [p.x((2, 3, 4), lo=-8, hi=8)], [Out((2, 3, 4), NP[other], QOUT[other])], label=f"to-{other}"),
        case(p.op, [In((2, 3, 4), NP[other], QIN[other][0], -8, 8)], [p.out((2, 3, 4))], label=f"from-{other}"),
    ]


@recipe("FAKE_QUANT", paths=("float32",), not_applicable=ALL)
def fake_quant(p: P):
    # FakeQuant is a float op: LiteRT does not check the input type and reads any buffer as float (heap
    # corruption and aborts for narrower types), so only float32 is attempted.
    return [
        unary(p, p.op, options=dict(min=-2.0, max=2.0, num_bits=8, narrow_range=n), label=f"narrow={n}")
        for n in (False, True)
    ]


@recipe("STABLEHLO_CLAMP")
def stablehlo_clamp(p: P):
    return [
        case(p.op, [p.x(X4, 0, -1, 0), p.x(X4), p.x(X4, 0, 0, 1)], [p.out(X4, same=True)], label="elementwise"),
        case(p.op, [p.const(-0.5), p.x(X4), p.const(0.7)], [p.out(X4, same=True)], label="scalar-bounds"),
    ]


@recipe("SELECT", "SELECT_V2", "STABLEHLO_SELECT")
def select_op(p: P):
    cases = [case(p.op, [In(X4, np.bool_), p.x(X4), p.x(X4)], [p.out(X4, same=True)], label="same-shape")]
    if p.op == "SELECT_V2":
        cases.append(
            case(
                p.op,
                [In((1, 1, 4, 1), np.bool_), p.x((1, 4, 1, 3)), p.x((4, 1, 1))],
                [p.out(X4, same=True)],
                label="broadcast",
            )
        )
    if p.op == "SELECT":
        cases.append(case(p.op, [In((1,), np.bool_), p.x(X4), p.x(X4)], [p.out(X4, same=True)], label="rank1-cond"))
    return cases


@recipe("ADD_N")
def add_n(p: P):
    return case(p.op, [p.x((2, 3, 4)), p.x((2, 3, 4)), p.x((2, 3, 4))], [p.out((2, 3, 4), same=True)])
