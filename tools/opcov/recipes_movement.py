"""Dashboard recipes: shapes and data movement."""

from __future__ import annotations

import numpy as np

from litert_py.schema.builder import quant

from .cases import ALL, NONE, TYPE, X4, Const, In, Out, P, case, coarse_gen, i32, i64, recipe

# ----------------------------------------------------------------------------------------------
# Shapes and data movement
# ----------------------------------------------------------------------------------------------


@recipe("RESHAPE")
def reshape(p: P):
    return [
        case(p.op, [p.x(X4), i32([4, 12])], [p.out((4, 12), same=True)], dict(new_shape=[4, 12]), label="shape-tensor"),
        case(p.op, [p.x(X4)], [p.out((2, 24), same=True)], dict(new_shape=[2, 24]), label="options-only"),
        case(p.op, [p.x(X4), i32([-1, 3])], [p.out((16, 3), same=True)], label="minus-one"),
    ]


@recipe("SQUEEZE")
def squeeze(p: P):
    return [
        case(p.op, [p.x((1, 4, 1, 3))], [p.out((1, 4, 3), same=True)], dict(squeeze_dims=[2]), label="dim2"),
        case(p.op, [p.x((1, 4, 1, 3))], [p.out((4, 3), same=True)], dict(squeeze_dims=[]), label="all"),
    ]


@recipe("EXPAND_DIMS")
def expand_dims(p: P):
    return [
        case(p.op, [p.x((4, 3)), i32([1])], [p.out((4, 1, 3), same=True)], label="axis1"),
        case(p.op, [p.x((4, 3)), i64(-1)], [p.out((4, 3, 1), same=True)], label="axis-1-int64"),
    ]


@recipe("CONCATENATION", "STABLEHLO_CONCATENATE")
def concatenation(p: P):
    shlo = p.op == "STABLEHLO_CONCATENATE"

    def opts(axis):
        return dict(dimension=axis) if shlo else dict(axis=axis, fused_activation_function=NONE)

    cases = [
        case(
            p.op,
            [p.x((1, 4, 4, 3)), p.x((1, 4, 4, 2))],
            [p.out((1, 4, 4, 5), same=True)],
            opts(3),
            label="last-axis-same-q",
        ),
        case(
            p.op,
            [p.x((1, 2, 4, 3)), p.x((1, 1, 4, 3)), p.x((1, 3, 4, 3))],
            [p.out((1, 6, 4, 3), same=True)],
            opts(1),
            label="axis1-3-inputs",
        ),
    ]
    if p.quantized and not shlo:
        cases.append(
            case(
                p.op, [p.x((1, 4, 4, 3), 0), p.x((1, 4, 4, 2), 1)], [p.out((1, 4, 4, 5))], opts(-1), label="requantize"
            )
        )
    return cases


@recipe("PACK")
def pack(p: P):
    return [
        case(p.op, [p.x((4, 3))] * 3, [p.out((3, 4, 3), same=True)], dict(values_count=3, axis=0), label="axis0"),
        case(p.op, [p.x((4, 3))] * 2, [p.out((4, 3, 2), same=True)], dict(values_count=2, axis=-1), label="axis-1"),
    ]


@recipe("UNPACK")
def unpack(p: P):
    return [
        case(p.op, [p.x((3, 4, 2))], [p.out((4, 2), same=True) for _ in range(3)], dict(num=3, axis=0), label="axis0"),
        case(
            p.op, [p.x((3, 4, 2))], [p.out((3, 4), same=True) for _ in range(2)], dict(num=2, axis=-1), label="axis-1"
        ),
    ]


@recipe("SPLIT")
def split(p: P):
    return [
        case(
            p.op,
            [i32(3), p.x((1, 4, 4, 6))],
            [p.out((1, 4, 4, 2), same=True) for _ in range(3)],
            dict(num_splits=3),
            label="last-axis",
        ),
        case(
            p.op,
            [i32(-3), p.x((1, 4, 4, 6))],
            [p.out((1, 2, 4, 6), same=True) for _ in range(2)],
            dict(num_splits=2),
            label="negative-axis",
        ),
    ]


@recipe("SPLIT_V")
def split_v(p: P):
    return [
        case(
            p.op,
            [p.x((1, 4, 4, 6)), i32([1, 2, 3]), i32(3)],
            [p.out((1, 4, 4, k), same=True) for k in (1, 2, 3)],
            dict(num_splits=3),
            label="sizes",
        ),
        case(
            p.op,
            [p.x((2, 5, 3)), i32([2, -1]), i32(1)],
            [p.out((2, 2, 3), same=True), p.out((2, 3, 3), same=True)],
            dict(num_splits=2),
            label="minus-one",
        ),
    ]


@recipe("TRANSPOSE")
def transpose(p: P):
    return [
        case(p.op, [p.x(X4), i32([0, 3, 1, 2])], [p.out((1, 3, 4, 4), same=True)], label="4d"),
        case(p.op, [p.x((2, 3, 4)), i32([2, 0, 1])], [p.out((4, 2, 3), same=True)], label="3d"),
        case(p.op, [p.x((2, 3, 1, 2, 2)), i32([4, 2, 0, 3, 1])], [p.out((2, 1, 2, 2, 3), same=True)], label="5d"),
    ]


@recipe("SLICE")
def slice_op(p: P):
    return [
        case(p.op, [p.x(X4), i32([0, 1, 1, 0]), i32([1, 2, -1, 2])], [p.out((1, 2, 3, 2), same=True)], label="int32"),
        case(p.op, [p.x((3, 4)), i64([1, 0]), i64([2, 3])], [p.out((2, 3), same=True)], label="int64"),
    ]


@recipe("STRIDED_SLICE")
def strided_slice(p: P):
    return [
        case(
            p.op,
            [p.x(X4), i32([0, 1, 0, 0]), i32([1, 4, 4, 2]), i32([1, 2, 1, 1])],
            [p.out((1, 2, 4, 2), same=True)],
            label="strides",
        ),
        case(
            p.op,
            [p.x(X4), i32([0, 0, 0, 1]), i32([1, 0, 0, 3]), i32([1, 1, 1, 1])],
            [p.out((4, 4, 2), same=True)],
            dict(begin_mask=0b0110, end_mask=0b0110, shrink_axis_mask=0b0001),
            label="masks-shrink",
        ),
        case(
            p.op,
            [p.x(X4), i32([0, 3, 0, -1]), i32([1, 0, 4, -4]), i32([1, -1, 1, -1])],
            [p.out((1, 4, 4, 3), same=True)],
            dict(end_mask=0b0010),
            label="negative-strides",
        ),
        case(
            p.op,
            [p.x((3, 4)), i32([1, 0]), i32([3, 4]), i32([1, 2])],
            [p.out((2, 1, 2), same=True)],
            dict(new_axis_mask=0b10, begin_mask=0b10, end_mask=0b10),
            label="new-axis",
        ),
    ]


@recipe("PAD", "PADV2", "MIRROR_PAD")
def pad(p: P):
    pads = [[0, 0], [1, 1], [2, 0], [0, 1]]
    extra = [p.const(0.5)] if p.op == "PADV2" else []
    opts = [dict(mode=0), dict(mode=1)] if p.op == "MIRROR_PAD" else [None]
    cases = []
    for k, o in enumerate(opts):
        mode = f"-mode{k}" if o else ""
        cases.append(
            case(p.op, [p.x(X4), i32(pads)] + extra, [p.out((1, 6, 6, 4), same=True)], o, label="int32-paddings" + mode)
        )
        cases.append(
            case(
                p.op,
                [p.x((3, 4)), i64([[1, 0], [1, 2]])] + extra,
                [p.out((4, 7), same=True)],
                o,
                label="int64-paddings" + mode,
            )
        )
    return cases


@recipe("TILE")
def tile(p: P):
    return [
        case(p.op, [p.x((2, 3)), i32([2, 3])], [p.out((4, 9), same=True)], label="int32-multiples"),
        case(p.op, [p.x((1, 2, 3)), i64([2, 1, 2])], [p.out((2, 2, 6), same=True)], label="int64-multiples"),
    ]


@recipe("BROADCAST_TO")
def broadcast_to(p: P):
    # LiteRT registers BROADCAST_TO from version 2 on.
    return [
        case(p.op, [p.x((1, 3)), i32([4, 3])], [p.out((4, 3), same=True)], label="2d", version=2),
        case(
            p.op,
            [p.x((2, 1, 3)), i64([2, 2, 4, 3])],
            [p.out((2, 2, 4, 3), same=True)],
            label="rank-up-int64",
            version=2,
        ),
    ]


@recipe("REVERSE_V2")
def reverse_v2(p: P):
    return [
        case(p.op, [p.x(X4), i32([2])], [p.out(X4, same=True)], label="one-axis"),
        case(p.op, [p.x((2, 3, 4)), i32([0, 2])], [p.out((2, 3, 4), same=True)], label="two-axes"),
    ]


@recipe("GATHER")
def gather(p: P):
    return [
        case(p.op, [p.x((5, 3)), i32([0, 4, 2, 2])], [p.out((4, 3), same=True)], dict(axis=0), label="axis0"),
        case(
            p.op, [p.x((5, 3)), i64([[0, 2], [1, 1]])], [p.out((5, 2, 2), same=True)], dict(axis=1), label="axis1-int64"
        ),
        case(
            p.op,
            [p.x((2, 5, 3)), i32([[0, 4, 1, 1], [3, 2, 0, 4]])],
            [p.out((2, 4, 3), same=True)],
            dict(axis=1, batch_dims=1),
            label="batch-dims",
        ),
        case(p.op, [p.x((6,)), i32([5, 0, 3])], [p.out((3,), same=True)], dict(axis=0), label="1d"),
    ]


@recipe("GATHER_ND")
def gather_nd(p: P):
    return [
        case(p.op, [p.x((4, 3, 2)), i32([[0, 1], [3, 2]])], [p.out((2, 2), same=True)], label="int32"),
        case(p.op, [p.x((4, 3, 2)), i64([[1], [3]])], [p.out((2, 3, 2), same=True)], label="int64-slices"),
    ]


@recipe("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def resize(p: P):
    cases = []
    for label, opts in (
        ("default", {}),
        ("align-corners", dict(align_corners=True)),
        ("half-pixel-centers", dict(half_pixel_centers=True)),
    ):
        cases.append(case(p.op, [p.x(X4), i32([8, 6])], [p.out((1, 8, 6, 3), same=True)], opts, label=label))
    cases.append(
        case(
            p.op,
            [p.x((2, 5, 5, 2)), i32([3, 2])],
            [p.out((2, 3, 2, 2), same=True)],
            dict(half_pixel_centers=True),
            label="downscale",
        )
    )
    return cases


@recipe("DEPTH_TO_SPACE")
def depth_to_space(p: P):
    return case(p.op, [p.x((1, 2, 3, 8))], [p.out((1, 4, 6, 2), same=True)], dict(block_size=2))


@recipe("SPACE_TO_DEPTH")
def space_to_depth(p: P):
    return case(p.op, [p.x((1, 4, 6, 2))], [p.out((1, 2, 3, 8), same=True)], dict(block_size=2))


@recipe("BATCH_TO_SPACE_ND")
def batch_to_space_nd(p: P):
    return [
        case(
            p.op,
            [p.x((4, 2, 2, 3)), i32([2, 2]), i32([[0, 0], [0, 0]])],
            [p.out((1, 4, 4, 3), same=True)],
            label="no-crop",
        ),
        case(
            p.op,
            [p.x((4, 3, 3, 2)), i32([2, 2]), i32([[1, 0], [0, 2]])],
            [p.out((1, 5, 4, 2), same=True)],
            label="crops",
        ),
    ]


@recipe("SPACE_TO_BATCH_ND")
def space_to_batch_nd(p: P):
    return [
        case(p.op, [p.x(X4), i32([2, 2]), i32([[0, 0], [0, 0]])], [p.out((4, 2, 2, 3), same=True)], label="no-pad"),
        case(
            p.op,
            [p.x((1, 5, 4, 2)), i32([2, 2]), i32([[1, 0], [0, 2]])],
            [p.out((4, 3, 3, 2), same=True)],
            label="paddings",
        ),
    ]


@recipe("SHAPE")
def shape(p: P):
    return [
        case(p.op, [p.x(X4)], [Out((4,), np.int32)], dict(out_type=TYPE["int32"]), label="int32"),
        case(p.op, [p.x((2, 3))], [Out((2,), np.int64)], dict(out_type=TYPE["int64"]), label="int64"),
    ]


@recipe("RANK")
def rank(p: P):
    return case(p.op, [p.x(X4)], [Out((), np.int32)])


@recipe("FILL")
def fill(p: P):
    # ai-edge-litert's set_tensor garbles a rank-0 string input, so the string value is a constant
    value = p.const(np.array(3)) if p.path == "string" else p.x(())
    return [
        case(p.op, [i32([2, 3]), value], [p.out((2, 3), same=True)], label="int32-dims"),
        case(p.op, [i64([3, 1, 2]), value], [p.out((3, 1, 2), same=True)], label="int64-dims"),
    ]


@recipe("RANGE")
def range_op(p: P):
    if np.dtype(p.dtype).kind == "f":
        vals = [(0.5, 4.0, 0.75), (3.0, -1.0, -0.5)]
    else:
        vals = [(1, 10, 2), (5, -3, -3)]
    cases = []
    for k, (a, b, d) in enumerate(vals):
        ins = [Const(np.asarray(v).astype(p.dtype), p.dtype) for v in (a, b, d)]
        n = int(np.ceil((b - a) / d))
        cases.append(case(p.op, ins, [Out((n,), p.dtype)], label=f"const-{k}"))
    ins = [In((), p.dtype, gen=lambda rng, v=v: np.asarray(v)) for v in vals[0]]
    cases.append(case(p.op, ins, [Out((1,), p.dtype)], label="inputs"))
    return cases


@recipe("WHERE")
def where(p: P):
    return [
        case(p.op, [p.x((3, 4), gen=coarse_gen(p, (3, 4)))], [Out((1, 2), np.int64)], label="2d"),
        case(p.op, [p.x((6,), gen=coarse_gen(p, (6,)))], [Out((1, 1), np.int64)], label="1d"),
    ]


@recipe("ONE_HOT")
def one_hot(p: P):
    on, off = (np.asarray(v).astype(p.dtype) for v in ((1, 0) if p.path != "string" else (b"on", b"off")))
    idx = In((4,), np.int32, gen=lambda rng: rng.integers(-1, 5, 4))
    return [
        case(p.op, [idx, i32(5), Const(on), Const(off)], [Out((4, 5), p.dtype)], dict(axis=-1), label="last-axis"),
        case(
            p.op,
            [In((2, 3), np.int64, gen=lambda rng: rng.integers(0, 4, (2, 3))), i32(4), Const(on), Const(off)],
            [Out((4, 2, 3), p.dtype)],
            dict(axis=0),
            label="axis0-int64",
        ),
    ]


@recipe("MATRIX_DIAG")
def matrix_diag(p: P):
    return case(p.op, [p.x((2, 3))], [p.out((2, 3, 3), same=True)])


@recipe("MATRIX_SET_DIAG")
def matrix_set_diag(p: P):
    return [
        case(p.op, [p.x((2, 3, 3)), p.x((2, 3))], [p.out((2, 3, 3), same=True)], label="square"),
        case(p.op, [p.x((2, 3, 4)), p.x((2, 3))], [p.out((2, 3, 4), same=True)], label="wide"),
    ]


@recipe("REVERSE_SEQUENCE")
def reverse_sequence(p: P):
    return [
        case(
            p.op,
            [p.x((3, 4, 2)), i32([4, 2, 1])],
            [p.out((3, 4, 2), same=True)],
            dict(seq_dim=1, batch_dim=0),
            label="seq1-batch0",
        ),
        case(
            p.op,
            [p.x((4, 3, 2)), i64([1, 3, 4])],
            [p.out((4, 3, 2), same=True)],
            dict(seq_dim=0, batch_dim=1),
            label="seq0-batch1-int64",
        ),
    ]


@recipe("SCATTER_ND")
def scatter_nd(p: P):
    return [
        case(p.op, [i32([[1], [3]]), p.x((2, 3)), i32([5, 3])], [p.out((5, 3), same=True)], label="rows"),
        case(
            p.op,
            [i32([[0, 1], [2, 2], [0, 1]]), p.x((3,)), i32([3, 3])],
            [p.out((3, 3), same=True)],
            label="elements-duplicate",
        ),
    ]


@recipe("SEGMENT_SUM")
def segment_sum(p: P):
    return case(p.op, [p.x((4, 3)), i32([0, 0, 1, 2])], [p.out((3, 3), same=True)])


@recipe("UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN")
def unsorted_segment(p: P):
    return case(p.op, [p.x((5, 3)), i32([0, 2, 0, 1, 2]), i32(4)], [p.out((4, 3), same=True)])


@recipe("TOPK_V2")
def topk(p: P):
    return [
        case(p.op, [p.x((2, 6)), i32(3)], [p.out((2, 3), same=True), Out((2, 3), np.int32)], label="k3"),
        case(
            p.op,
            [p.x((2, 3, 5), gen=coarse_gen(p, (2, 3, 5))), i32(2)],
            [p.out((2, 3, 2), same=True), Out((2, 3, 2), np.int32)],
            label="ties",
        ),
    ]


@recipe("UNIQUE")
def unique(p: P):
    return [
        case(
            p.op,
            [p.x((8,), gen=coarse_gen(p, (8,)))],
            [p.out((1,), same=True), Out((8,), np.int32)],
            dict(idx_out_type=TYPE["int32"]),
            label="int32-idx",
        ),
        case(
            p.op,
            [p.x((8,), gen=coarse_gen(p, (8,)))],
            [p.out((1,), same=True), Out((8,), np.int64)],
            dict(idx_out_type=TYPE["int64"]),
            label="int64-idx",
        ),
    ]


@recipe("SPARSE_TO_DENSE")
def sparse_to_dense(p: P):
    return [
        case(
            p.op, [i32([[0, 1], [2, 3]]), i32([3, 4]), p.x((2,)), p.const(0.25)], [p.out((3, 4), same=True)], label="2d"
        ),
        case(p.op, [i64([1, 4]), i64([6]), p.x((2,)), p.const(0.0)], [p.out((6,), same=True)], label="1d-int64"),
    ]


@recipe("DYNAMIC_UPDATE_SLICE")
def dynamic_update_slice(p: P):
    return [
        case(p.op, [p.x((4, 4)), p.x((2, 2)), i32([1, 2])], [p.out((4, 4), same=True)], label="int32"),
        case(p.op, [p.x((4, 4)), p.x((2, 3)), i64([3, 3])], [p.out((4, 4), same=True)], label="clamped-int64"),
    ]


@recipe("EMBEDDING_LOOKUP", paths=ALL)
def embedding_lookup(p: P):
    ids = In((3,), np.int32, gen=lambda rng: rng.integers(0, 5, 3))
    if p.path == "hybrid":
        table = Const(p.rng.integers(-127, 128, (5, 4)).astype(np.int8), np.int8, quant(0.02, 0))
        per_channel = Const(
            p.rng.integers(-127, 128, (5, 4)).astype(np.int8),
            np.int8,
            quant(p.rand(5, 0.01, 0.03).astype(np.float64), 0, 0),
        )
        return [
            case(p.op, [ids, table], [Out((3, 4), np.float32)], label="int8-table"),
            case(p.op, [ids, per_channel], [Out((3, 4), np.float32)], label="per-channel"),
        ]
    return case(p.op, [ids, p.x((5, 4))], [p.out((3, 4), same=True)])


@recipe("BUCKETIZE")
def bucketize(p: P):
    return case(p.op, [p.x((2, 5))], [Out((2, 5), np.int32)], dict(boundaries=[-1.0, 0.0, 1.5]))


@recipe("BITCAST")
def bitcast(p: P):
    partner = {
        "float32": np.int32,
        "int32": np.float32,
        "int64": np.float64,
        "int8": np.uint8,
        "uint8": np.int8,
        "int16": np.uint16,
        "bool": np.uint8,
        "string": np.bytes_,
    }[p.path]
    return [
        case(p.op, [In((2, 4), p.dtype)], [Out((2, 4), partner)], label="same-size"),
        case(p.op, [In((2, 4), p.dtype)], [Out((2, 4, np.dtype(p.dtype).itemsize), np.uint8)], label="to-bytes"),
    ]


@recipe("BROADCAST_ARGS")
def broadcast_args(p: P):
    a = In((3,), p.dtype, gen=lambda rng: np.array([1, 4, 1]))
    b = In((3,), p.dtype, gen=lambda rng: np.array([3, 1, 5]))
    return case(p.op, [a, b], [Out((3,), p.dtype)])
