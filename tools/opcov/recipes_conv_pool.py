"""Dashboard recipes: convolutions and matrix products; pooling, reductions, normalization."""

from __future__ import annotations

import numpy as np

from litert_py.schema.builder import quant

from .cases import (
    ALL,
    NONE,
    QIN,
    RELU,
    RELU6,
    SAME,
    TYPE,
    VALID,
    X4,
    Const,
    Out,
    P,
    case,
    coarse_gen,
    f32,
    i32,
    i64,
    randv,
    recipe,
)

# ----------------------------------------------------------------------------------------------
# Convolutions and matrix products
# ----------------------------------------------------------------------------------------------

CONV_OUT = {"int8": quant(0.2, -3), "uint8": quant(0.2, 130), "int16": quant(0.01, 0)}
FC_OUT = {"int8": quant(0.1, -3), "uint8": quant(0.1, 130), "int16": quant(0.005, 0)}


def weights(p: P, shape, qdim: int, bias_len: int | None, per_channel: bool = True):
    """(filter, bias) constants for the path: int8 per-channel (zero point 0) with int32 bias for int8, int64
    bias for int16; uint8 per-tensor (zero point 120); float filter for float; int8 filter + float bias for
    hybrid; the path's own dtype otherwise."""
    n = shape[qdim]
    if p.path in ("int8", "int16", "hybrid"):
        ws = p.rand(n if per_channel else 1, 0.005, 0.02).astype(np.float64)
        w = Const(p.rng.integers(-127, 128, shape).astype(np.int8), np.int8, quant(ws, 0, qdim))
        if bias_len is None:
            return w, None
        if p.path == "hybrid":
            return w, f32(p.rand(bias_len, -1, 1))
        bscale = np.broadcast_to(ws * np.float64(np.float32(QIN[p.path][0].scale[0])), (bias_len,))
        bdt = np.int32 if p.path == "int8" else np.int64
        return w, Const(p.rng.integers(-300, 300, bias_len).astype(bdt), bdt, quant(bscale, 0))
    if p.path == "uint8":
        w = Const(p.rng.integers(0, 256, shape).astype(np.uint8), np.uint8, quant(0.01, 120))
        if bias_len is None:
            return w, None
        bscale = np.float64(np.float32(0.05)) * np.float64(np.float32(0.01))
        return w, Const(p.rng.integers(-300, 300, bias_len).astype(np.int32), np.int32, quant(bscale, 0))
    w = Const(randv(p, shape, -0.5, 0.5))
    return w, (Const(randv(p, (bias_len,))) if bias_len is not None else None)


@recipe("CONV_2D", paths=ALL)
def conv_2d(p: P):
    cases = []
    for label, xs, opts, oshape in (
        (
            "same-relu",
            (1, 5, 5, 3),
            dict(padding=SAME, stride_w=1, stride_h=1, fused_activation_function=RELU),
            (1, 5, 5, 4),
        ),
        ("valid-stride2", (1, 5, 5, 3), dict(padding=VALID, stride_w=2, stride_h=2), (1, 2, 2, 4)),
        (
            "dilation2-relu6",
            (2, 6, 6, 3),
            dict(
                padding=SAME,
                stride_w=1,
                stride_h=1,
                dilation_w_factor=2,
                dilation_h_factor=2,
                fused_activation_function=RELU6,
            ),
            (2, 6, 6, 4),
        ),
    ):
        w, b = weights(p, (4, 3, 3, 3), 0, 4)
        cases.append(case(p.op, [p.x(xs), w, b], [p.out(oshape, q=CONV_OUT.get(p.path))], opts, label=label))
    w, _ = weights(p, (4, 1, 1, 3), 0, None)
    cases.append(
        case(
            p.op,
            [p.x((1, 3, 3, 3)), w, None],
            [p.out((1, 3, 3, 4), q=CONV_OUT.get(p.path))],
            dict(padding=VALID, stride_w=1, stride_h=1),
            label="1x1-no-bias",
        )
    )
    return cases


@recipe("DEPTHWISE_CONV_2D", paths=ALL)
def depthwise_conv_2d(p: P):
    cases = []
    for label, xs, opts, oshape in (
        (
            "same-mult2-relu",
            (1, 5, 5, 3),
            dict(padding=SAME, stride_w=1, stride_h=1, depth_multiplier=2, fused_activation_function=RELU),
            (1, 5, 5, 6),
        ),
        ("valid-stride2", (1, 5, 5, 3), dict(padding=VALID, stride_w=2, stride_h=2, depth_multiplier=2), (1, 2, 2, 6)),
        (
            "dilation2",
            (2, 6, 6, 3),
            dict(padding=SAME, stride_w=1, stride_h=1, depth_multiplier=2, dilation_w_factor=2, dilation_h_factor=2),
            (2, 6, 6, 6),
        ),
    ):
        w, b = weights(p, (1, 3, 3, 6), 3, 6)
        cases.append(case(p.op, [p.x(xs), w, b], [p.out(oshape, q=CONV_OUT.get(p.path))], opts, label=label))
    return cases


@recipe("FULLY_CONNECTED", paths=ALL)
def fully_connected(p: P):
    cases = []
    for label, xs, opts, oshape, bias in (
        ("2d", (2, 8), dict(fused_activation_function=NONE), (2, 4), True),
        ("keep-num-dims-relu", (1, 2, 8), dict(keep_num_dims=True, fused_activation_function=RELU), (1, 2, 4), True),
        ("flatten-no-bias", (3, 2, 4), dict(), (3, 4), False),
    ):
        w, b = weights(p, (4, 8), 0, 4 if bias else None, per_channel=False)
        cases.append(case(p.op, [p.x(xs), w, b], [p.out(oshape, q=FC_OUT.get(p.path))], opts, label=label))
    if p.path in ("int8", "int16", "hybrid"):
        w, b = weights(p, (4, 8), 0, 4, per_channel=True)
        cases.append(case(p.op, [p.x((2, 8)), w, b], [p.out((2, 4), q=FC_OUT.get(p.path))], {}, label="per-channel"))
    if p.path == "hybrid":
        w, b = weights(p, (4, 8), 0, 4, per_channel=False)
        cases.append(
            case(
                p.op,
                [p.x((2, 8)), w, b],
                [p.out((2, 4))],
                dict(asymmetric_quantize_inputs=True),
                label="asymmetric-inputs",
            )
        )
    return cases


@recipe("BATCH_MATMUL", paths=ALL)
def batch_matmul(p: P):
    q = {"int8": quant(0.5, 0), "uint8": quant(0.5, 128), "int16": quant(0.1, 0)}.get(p.path)
    if p.path == "hybrid":
        w = Const(p.rng.integers(-127, 128, (4, 5)).astype(np.int8), np.int8, quant(0.02, 0))
        return [
            case(p.op, [p.x((2, 3, 4)), w], [p.out((2, 3, 5))], label="const-int8-rhs"),
            case(
                p.op,
                [p.x((2, 3, 4)), w],
                [p.out((2, 3, 5))],
                dict(asymmetric_quantize_inputs=True),
                label="asymmetric-inputs",
            ),
        ]
    rq = {"int8": quant(0.04, 0), "uint8": quant(0.04, 128), "int16": quant(0.0008, 0)}.get(p.path)
    return [
        case(p.op, [p.x((2, 3, 4)), p.x((2, 4, 5), q=rq)], [p.out((2, 3, 5), q=q)], label="batched"),
        case(p.op, [p.x((2, 3, 4)), p.x((2, 5, 4), q=rq)], [p.out((2, 3, 5), q=q)], dict(adj_y=True), label="adj-y"),
        case(
            p.op,
            [p.x((2, 4, 3)), p.x((4, 5), q=rq)],
            [p.out((2, 3, 5), q=q)],
            dict(adj_x=True),
            label="adj-x-broadcast",
        ),
    ]


@recipe("TRANSPOSE_CONV", paths=ALL)
def transpose_conv(p: P):
    cases = []
    for label, opts, oshape, bias in (
        ("same-stride2", dict(padding=SAME, stride_w=2, stride_h=2), (1, 8, 8, 4), True),
        ("valid-stride1-no-bias", dict(padding=VALID, stride_w=1, stride_h=1), (1, 6, 6, 4), False),
    ):
        w, b = weights(p, (4, 3, 3, 3), 0, 4 if bias else None)
        ins = [i32(oshape), w, p.x((1, 4, 4, 3))] + ([b] if bias else [])
        cases.append(case(p.op, ins, [p.out(oshape, q=CONV_OUT.get(p.path))], opts, label=label))
    return cases


@recipe("CONV_3D", paths=ALL)
def conv_3d(p: P):
    w, b = weights(p, (2, 2, 2, 2, 3), 4, 3)
    return [
        case(
            p.op,
            [p.x((1, 3, 4, 4, 2)), w, b],
            [p.out((1, 3, 4, 4, 3), q=CONV_OUT.get(p.path))],
            dict(padding=SAME, stride_d=1, stride_w=1, stride_h=1),
            label="same",
        ),
        case(
            p.op,
            [p.x((1, 3, 4, 4, 2)), w, b],
            [p.out((1, 1, 2, 2, 3), q=CONV_OUT.get(p.path))],
            dict(padding=VALID, stride_d=2, stride_w=2, stride_h=2),
            label="valid-stride2",
        ),
    ]


@recipe("CONV_3D_TRANSPOSE", paths=ALL)
def conv_3d_transpose(p: P):
    w, b = weights(p, (2, 2, 2, 2, 3), 3, 2)
    return case(
        p.op,
        [i32((1, 6, 8, 8, 2)), w, p.x((1, 3, 4, 4, 3)), b],
        [p.out((1, 6, 8, 8, 2), q=CONV_OUT.get(p.path))],
        dict(padding=SAME, stride_d=2, stride_w=2, stride_h=2),
    )


# ----------------------------------------------------------------------------------------------
# Pooling, reductions, normalization
# ----------------------------------------------------------------------------------------------


@recipe("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
def pool(p: P):
    same = p.op != "L2_POOL_2D"
    return [
        case(
            p.op,
            [p.x(X4)],
            [p.out((1, 2, 2, 3), same=same)],
            dict(padding=VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2),
            label="valid-2x2-s2",
        ),
        case(
            p.op,
            [p.x(X4, lo=-8, hi=8)],
            [p.out(X4, same=same)],
            dict(
                padding=SAME, stride_w=1, stride_h=1, filter_width=3, filter_height=3, fused_activation_function=RELU6
            ),
            label="same-3x3-s1-relu6",
        ),
        case(
            p.op,
            [p.x((2, 5, 5, 2))],
            [p.out((2, 2, 3, 2), same=same)],
            dict(padding=SAME, stride_w=2, stride_h=3, filter_width=2, filter_height=3),
            label="same-uneven",
        ),
    ]


REDUCE_SAME_Q = ("REDUCE_MAX", "REDUCE_MIN")


@recipe("MEAN", "SUM", "REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ANY", "REDUCE_ALL")
def reduce(p: P):
    lo, hi = None, None
    if p.op == "REDUCE_PROD":  # products of 16 values stay in range
        lo, hi = (-2, 2) if np.dtype(p.dtype).kind in "iu" and not p.quantized else (0.85, 1.15)
    elif p.op == "SUM" and p.quantized:
        # Sums that stay inside the output range: LiteRT's reference int8 SUM wraps where its optimized
        # kernel saturates (a full-range sum of 16 int8 values gives -1 in BUILTIN_REF).
        lo, hi = -0.4, 0.4
    same = p.op in REDUCE_SAME_Q
    return [
        case(
            p.op,
            [p.x(X4, 0, lo, hi), i32([1, 2])],
            [p.out((1, 1, 1, 3), same=same)],
            dict(keep_dims=True),
            label="axes12-keepdims",
        ),
        case(
            p.op,
            [p.x(X4, 0, lo, hi), i32([-1])],
            [p.out((1, 4, 4), same=same)],
            dict(keep_dims=False),
            label="last-axis",
        ),
        case(
            p.op,
            [p.x((2, 3, 4), 0, lo, hi), i32([0, 2])],
            [p.out((3,), same=same)],
            dict(keep_dims=False),
            label="axes02",
        ),
    ]


@recipe("ARG_MAX", "ARG_MIN")
def arg_max_min(p: P):
    return [
        case(
            p.op,
            [p.x(X4, gen=coarse_gen(p, X4)), i32([3])],
            [Out((1, 4, 4), np.int32)],
            dict(output_type=TYPE["int32"]),
            label="last-axis-int32",
        ),
        case(
            p.op, [p.x(X4), i64([1])], [Out((1, 4, 3), np.int64)], dict(output_type=TYPE["int64"]), label="axis1-int64"
        ),
    ]


@recipe("CUMSUM")
def cumsum(p: P):
    return [
        case(
            p.op,
            [p.x((2, 3, 4)), i32(1)],
            [p.out((2, 3, 4), same=True)],
            dict(exclusive=e, reverse=r),
            label=f"exclusive={e}-reverse={r}",
        )
        for e in (False, True)
        for r in (False, True)
    ]
