"""CONCATENATION, PAD, PADV2, TRANSPOSE, TILE, PACK, UNPACK, REVERSE_V2, REVERSE_SEQUENCE, MIRROR_PAD against the
oracle (all registered by BUILTIN_REF). STRIDED_SLICE, SPLIT, SPLIT_V, GATHER, SLICE (ops/slicing.py) are in
test_slicing.py.

One table (CASES) drives the differential test: each entry draws a model and its inputs with hypothesis.
Data movement is exact for every dtype (tolerance 0); the uint8 CONCATENATION rescale is bit-exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, InvokeError, PrepareError
from tests.ops._diff import ALL_DTYPES, chain_model, check_both
from tests.ops._movement import OUT_OF_BOUNDS_REFUSED, WIDE_DTYPES, _i32, _q, check_rejected, seeds, shapes
from tests.oracle import T, quant, run_litert, run_ours, single_op_model
from tests.values import values

#: Float tolerance per op: every op here moves bytes, so all are exact.
TOLERANCE = {
    "CONCATENATION": 0.0,
    "PAD": 0.0,
    "PADV2": 0.0,
    "TRANSPOSE": 0.0,
    "STRIDED_SLICE": 0.0,
    "SPLIT": 0.0,
    "SPLIT_V": 0.0,
    "GATHER": 0.0,
    "TILE": 0.0,
    "PACK": 0.0,
    "UNPACK": 0.0,
    "SLICE": 0.0,
    "REVERSE_V2": 0.0,
    "REVERSE_SEQUENCE": 0.0,
    "MIRROR_PAD": 0.0,
}

NUMERIC = [k for k in ALL_DTYPES if k != "string"]
WIDE = [k for k in WIDE_DTYPES if k != "string"]


# -- case builders: each returns (model, inputs, skip_ours) ------------------------------------------


@st.composite
def concatenation(draw, dtypes=tuple(k for k in NUMERIC if k != "float16") + ("float16",)):
    name = draw(st.sampled_from(dtypes))
    dt = ALL_DTYPES[name]
    base = draw(shapes())
    rank = len(base)
    axis = draw(st.integers(-rank, rank - 1))
    n = draw(st.integers(1, 4))
    q = _q(name, draw)
    ins = []
    for _ in range(n):
        s = list(base)
        s[axis] = draw(st.integers(0 if n > 1 else 1, 4))
        ins.append(tuple(s))
    out = list(base)
    out[axis] = sum(s[axis] for s in ins)
    model = single_op_model("CONCATENATION", [T(s, dt, q=q) for s in ins], [T(out, dt, q=q)], {"axis": axis})
    rng = np.random.default_rng(draw(seeds))
    return model, [values(rng, s, dt) for s in ins], ()


@st.composite
def concatenation_rescaled(draw):
    """uint8 inputs with their own scales and zero points: ConcatenationWithScaling (bit-exact), and
    int16 with different scales (copied) and int8 (LiteRT rejects different params)."""
    name = draw(st.sampled_from(["uint8", "uint8", "int16", "int8"]))
    dt = ALL_DTYPES[name]
    n = draw(st.integers(1, 4))
    base = draw(shapes(max_rank=3))
    axis = draw(st.integers(0, len(base) - 1))
    zp_range = (0, 255) if name == "uint8" else (0, 0) if name == "int16" else (-128, 127)

    def qp():
        return quant(draw(st.floats(1e-3, 4.0)), draw(st.integers(*zp_range)))

    out_q = qp()
    qs = [draw(st.sampled_from([out_q, qp()])) for _ in range(n)]
    ins = [tuple(d if k != axis else draw(st.integers(1, 3)) for k, d in enumerate(base)) for _ in range(n)]
    out = list(base)
    out[axis] = sum(s[axis] for s in ins)
    model = single_op_model(
        "CONCATENATION", [T(s, dt, q=q) for s, q in zip(ins, qs)], [T(out, dt, q=out_q)], {"axis": axis}
    )
    rng = np.random.default_rng(draw(seeds))
    return model, [values(rng, s, dt) for s in ins], ()


@st.composite
def pad(draw, v2=False):
    name = draw(st.sampled_from(WIDE))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(max_rank=5, min_side=0))
    pdt = draw(st.sampled_from([np.int32, np.int64, np.int8]))
    pads = np.array([[draw(st.integers(0, 3)), draw(st.integers(0, 3))] for _ in shape], dtype=pdt)
    out = tuple(d + a + b for d, (a, b) in zip(shape, pads.tolist()))
    q = _q(name, draw)
    rng = np.random.default_rng(draw(seeds))
    ins = [T(shape, dt, q=q), T.const(pads)]
    data = [values(rng, shape, dt)]
    if v2:
        cv = values(rng, (), dt) if draw(st.booleans()) else values(rng, (1,), dt)
        if draw(st.booleans()):
            ins.append(T.const(cv, dtype=dt, q=q))
        else:
            ins.append(T(cv.shape, dt, q=q))
            data.append(cv)
    model = single_op_model("PADV2" if v2 else "PAD", ins, [T(out, dt, q=q)])
    return model, data, ()


@st.composite
def transpose(draw):
    name = draw(st.sampled_from(WIDE))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(max_rank=6, max_side=3))
    perm = draw(st.permutations(range(len(shape))))
    perm = [p - len(shape) if draw(st.booleans()) else p for p in perm]  # negative entries count from the end
    out = tuple(shape[p] for p in perm)
    model = single_op_model("TRANSPOSE", [T(shape, dt), T.const(np.array(perm, np.int32))], [T(out, dt)])
    rng = np.random.default_rng(draw(seeds))
    return model, [values(rng, shape, dt)], ()


def _other_q(q, draw):
    """The same quantization, or (sometimes) another one: LiteRT rejects mismatches where it moves raw bytes."""
    if q is not None and draw(st.integers(0, 4)) == 0:
        if draw(st.booleans()):
            return quant(q.scale[0] * 2, q.zero_point[0])
        return quant(q.scale[0], q.zero_point[0] + 1)
    return q


@st.composite
def tile(draw):
    name = draw(st.sampled_from(list(WIDE_DTYPES)))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(min_rank=1, max_rank=4, min_side=0 if draw(st.booleans()) else 1, max_side=3))
    mult = np.array(
        [draw(st.integers(0 if draw(st.booleans()) else 1, 3)) for _ in shape],
        draw(st.sampled_from([np.int32, np.int64])),
    )
    q = _q(name, draw)
    rng = np.random.default_rng(draw(seeds))
    x = values(rng, shape, dt)
    if draw(st.booleans()) or name == "string":
        out = tuple(d * m for d, m in zip(shape, mult.tolist()))
        return single_op_model("TILE", [T(shape, dt, q=q), T.const(mult)], [T(out, dt, q=_other_q(q, draw))]), [x], ()
    return chain_model("TILE", [T(shape, dt, q=q), T(mult.shape, mult.dtype)], 1), [x, mult], ()


@st.composite
def pack(draw):
    name = draw(st.sampled_from(WIDE))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(min_rank=0, max_rank=4, max_side=3))
    n = draw(st.integers(1, 4))
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    q = _q(name, draw)
    qs = [_other_q(q, draw) for _ in range(n)]
    rng = np.random.default_rng(draw(seeds))
    ax = axis + len(shape) + 1 if axis < 0 else axis
    out = shape[:ax] + (n,) + shape[ax:]
    model = single_op_model(
        "PACK", [T(shape, dt, q=qq) for qq in qs], [T(out, dt, q=q)], {"values_count": n, "axis": axis}
    )
    data = [values(rng, shape, dt) for _ in range(n)]
    return model, data, ()


@st.composite
def unpack(draw):
    name = draw(st.sampled_from(WIDE))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(min_rank=1, max_rank=4, max_side=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    q = _q(name, draw)
    out = shape[: axis % len(shape)] + shape[axis % len(shape) + 1 :]
    model = single_op_model(
        "UNPACK", [T(shape, dt, q=q)], [T(out, dt, q=_other_q(q, draw)) for _ in range(n)], {"num": n, "axis": axis}
    )
    return model, [values(np.random.default_rng(draw(seeds)), shape, dt)], ()


@st.composite
def reverse_v2(draw):
    name = draw(st.sampled_from(WIDE))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(min_rank=1, max_rank=5, max_side=4))
    rank = len(shape)
    n = draw(st.integers(1, min(rank, 3)))
    start = draw(st.integers(0, rank - n))
    axes = draw(st.permutations(range(start, start + n)))  # LiteRT reverses one run of consecutive axes
    if n > 1 and draw(st.integers(0, 5)) == 0:  # a gap or a repeat: both refuse
        axes[-1] = draw(st.sampled_from([axes[0], (max(axes) + 2) % rank]))
    axes = [a - rank if draw(st.booleans()) else a for a in axes]
    q = _q(name, draw)
    rng = np.random.default_rng(draw(seeds))
    av = np.array(axes, np.int32)
    if draw(st.booleans()):
        return (
            single_op_model("REVERSE_V2", [T(shape, dt, q=q), T.const(av)], [T(shape, dt, q=_other_q(q, draw))]),
            [values(rng, shape, dt)],
            (),
        )
    return (
        single_op_model("REVERSE_V2", [T(shape, dt, q=q), T(av.shape, np.int32)], [T(shape, dt, q=q)]),
        [values(rng, shape, dt), av],
        (),
    )


@st.composite
def reverse_sequence(draw):
    name = draw(st.sampled_from(WIDE))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(min_rank=2, max_rank=4, max_side=4))
    seq_dim, batch_dim = draw(st.permutations(range(len(shape))))[:2]
    ldt = draw(st.sampled_from([np.int32, np.int64]))
    rng = np.random.default_rng(draw(seeds))
    lengths = rng.integers(-1, shape[seq_dim] + 1, shape[batch_dim]).astype(ldt)
    opts = {"seq_dim": seq_dim, "batch_dim": batch_dim}
    x = values(rng, shape, dt)
    if draw(st.booleans()):
        return (
            single_op_model("REVERSE_SEQUENCE", [T(shape, dt), T.const(lengths)], [T(shape, dt)], opts),
            [x],
            OUT_OF_BOUNDS_REFUSED,
        )
    return (
        single_op_model("REVERSE_SEQUENCE", [T(shape, dt), T(lengths.shape, ldt)], [T(shape, dt)], opts),
        [x, lengths],
        (),
    )


@st.composite
def mirror_pad(draw):
    name = draw(st.sampled_from(WIDE))
    dt = WIDE_DTYPES[name]
    shape = draw(shapes(min_rank=1, max_rank=4, max_side=4))
    mode = draw(st.integers(0, 1))
    off = 1 if mode == 0 else 0
    pads = np.array(
        [[draw(st.integers(0, max(d - off, 0))), draw(st.integers(0, max(d - off, 0)))] for d in shape],
        draw(st.sampled_from([np.int32, np.int64])),
    )
    if draw(st.integers(0, 5)) == 0:  # too wide or negative: both refuse
        pads[draw(st.integers(0, len(shape) - 1)), draw(st.integers(0, 1))] = draw(st.sampled_from([-1, 5]))
    q = _q(name, draw)
    rng = np.random.default_rng(draw(seeds))
    x = values(rng, shape, dt)
    out = tuple(d + a + b for d, (a, b) in zip(shape, pads.tolist()))
    if draw(st.booleans()):
        model = single_op_model(
            "MIRROR_PAD", [T(shape, dt, q=q), T.const(pads)], [T(out, dt, q=_other_q(q, draw))], {"mode": mode}
        )
        return model, [x], ()
    model = chain_model("MIRROR_PAD", [T(shape, dt, q=q), T(pads.shape, pads.dtype)], 1, {"mode": mode})
    return model, [x, pads], ()


CASES = {
    "concatenation-any": concatenation(),
    "concatenation-quantized-rescale": concatenation_rescaled(),
    "pad-any": pad(),
    "padv2-any": pad(v2=True),
    "transpose-any": transpose(),
    "tile-any": tile(),
    "pack-any": pack(),
    "unpack-any": unpack(),
    "reverse_v2-any": reverse_v2(),
    "reverse_sequence-any": reverse_sequence(),
    "mirror_pad-any": mirror_pad(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_movement(case, data):
    model, inputs, skip = data.draw(CASES[case])
    check_both(model, inputs, skip_ours=skip)


# -- dynamic output shapes: the index tensor is a graph input --------------------------------------------


@st.composite
def dynamic(draw):
    rng = np.random.default_rng(draw(seeds))
    which = draw(st.sampled_from(["PAD", "TRANSPOSE", "STRIDED_SLICE", "SPLIT", "SPLIT_V"]))
    shape = draw(shapes(min_rank=2, max_rank=4))
    x = values(rng, shape, np.float32)
    if which == "PAD":
        p = rng.integers(0, 3, (len(shape), 2)).astype(np.int32)
        return chain_model("PAD", [T(shape), T(p.shape, np.int32)], 1), [x, p], 1
    if which == "TRANSPOSE":
        p = rng.permutation(len(shape)).astype(np.int32)
        return chain_model("TRANSPOSE", [T(shape), T(p.shape, np.int32)], 1), [x, p], 1
    if which == "STRIDED_SLICE":
        n = len(shape)
        b = rng.integers(-4, 4, n).astype(np.int32)
        e = rng.integers(-4, 5, n).astype(np.int32)
        s = rng.choice(np.array([1, 2, -1, -2], np.int32), n)
        opts = {"begin_mask": int(rng.integers(0, 1 << n)), "end_mask": int(rng.integers(0, 1 << n))}
        model = chain_model("STRIDED_SLICE", [T(shape), T((n,), np.int32), T((n,), np.int32), T.const(s)], 1, opts)
        return model, [x, b, e], 1
    axis = np.array([int(rng.integers(-len(shape), len(shape)))], np.int32)
    if which == "SPLIT":
        n = shape[axis[0]]
        return (
            chain_model("SPLIT", [T((1,), np.int32), T(shape)], n, {"num_splits": n}, out_dtype=np.float32),
            [axis, x],
            n,
        )
    sizes = np.array([1, -1], np.int32)
    return (
        chain_model("SPLIT_V", [T(shape), T((2,), np.int32), T((1,), np.int32)], 2, {"num_splits": 2}),
        [x, sizes, axis],
        2,
    )


@given(case=dynamic())
def test_movement_dynamic_shapes(case):
    model, inputs, _ = case
    check_both(model, inputs)


# -- exact rescale probe, error paths ------------------------------------------------------------------


def test_concatenation_uint8_rescale_all_values():
    """Every uint8 value through ConcatenationWithScaling with awkward scales: ties of the float rounding."""
    x = np.arange(256, dtype=np.uint8).reshape(1, 256)
    for s_in, z_in, s_out, z_out in [
        (0.5, 3, 0.25, 7),
        (0.1, 128, 0.3, 120),
        (1 / 3, 0, 2 / 3, 0),
        (0.7, 200, 0.05, 10),
        (2.5, 17, 1.0, 255),
    ]:
        model = single_op_model(
            "CONCATENATION",
            [T((1, 256), np.uint8, q=quant(s_in, z_in)), T((1, 256), np.uint8, q=quant(s_out, z_out))],
            [T((2, 256), np.uint8, q=quant(s_out, z_out))],
            {"axis": 0},
        )
        assert check_both(model, [x, x]) is not None


def test_concatenation_uint8_rescale_takes_tables():
    """The rescaled uint8 concatenation gathers from one 256-entry table per rescaled input (an input with the
    output's params is copied), every value against the oracle in both positions."""
    x = np.arange(256, dtype=np.uint8).reshape(1, 4, 64)
    model = single_op_model(
        "CONCATENATION",
        [
            T(x.shape, np.uint8, q=quant(0.3, 120)),
            T(x.shape, np.uint8, q=quant(0.1, 128)),
            T(x.shape, np.uint8, q=quant(0.5, 3)),
        ],
        [T((1, 4, 192), np.uint8, q=quant(0.1, 128))],
        {"axis": 2},
    )
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op,) = [op for _, op in it._subgraphs[0].steps_nodes]
    assert type(op).__name__ == "ConcatenationUInt8Rescaled"
    assert [t is None for t in op.tables] == [False, True, False]
    assert check_both(model, [x, x[..., ::-1].copy(), x]) is not None


REJECTED = {
    "concatenation-relu": (
        "CONCATENATION",
        [T((2, 3)), T((2, 3))],
        [T((4, 3))],
        {"axis": 0, "fused_activation_function": 1},
    ),
    "concatenation-int8-different-scales": (
        "CONCATENATION",
        [T((2,), np.int8, q=quant(0.5, 0)), T((2,), np.int8, q=quant(0.25, 0))],
        [T((4,), np.int8, q=quant(0.5, 0))],
        {"axis": 0},
    ),
    "concatenation-int16-zero-point": (
        "CONCATENATION",
        [T((2,), np.int16, q=quant(0.5, 3))],
        [T((2,), np.int16, q=quant(0.5, 3))],
        {"axis": 0},
    ),
    "concatenation-shape-mismatch": ("CONCATENATION", [T((2, 3)), T((2, 4))], [T((4, 3))], {"axis": 0}),
    "concatenation-axis": ("CONCATENATION", [T((2, 3))], [T((2, 3))], {"axis": 2}),
    "concatenation-string": ("CONCATENATION", [T((2,), np.bytes_)], [T((2,), np.bytes_)], {"axis": 0}),
    "pad-negative": ("PAD", [T((2, 3)), T.const(np.array([[0, -1], [0, 0]], np.int32))], [T((1, 3))], None),
    "pad-rank6": ("PAD", [T((1,) * 6), T.const(np.zeros((6, 2), np.int32))], [T((1,) * 6)], None),
    "pad-paddings-shape": ("PAD", [T((2, 3)), T.const(np.zeros((3, 2), np.int32))], [T((2, 3))], None),
    "pad-float-paddings": ("PAD", [T((2, 3)), T.const(np.zeros((2, 2), np.float32))], [T((2, 3))], None),
    "padv2-quantized-value-params": (
        "PADV2",
        [
            T((2,), np.int8, q=quant(0.5, 1)),
            T.const(np.zeros((1, 2), np.int32)),
            T.const(np.array([3], np.int8), q=quant(0.25, 1)),
        ],
        [T((2,), np.int8, q=quant(0.5, 1))],
        None,
    ),
    "transpose-perm-out-of-range": ("TRANSPOSE", [T((2, 3)), T.const(np.array([0, 2], np.int32))], [T((2, 3))], None),
    "transpose-perm-length": ("TRANSPOSE", [T((2, 3)), T.const(np.array([0], np.int32))], [T((2, 3))], None),
    "transpose-string": (
        "TRANSPOSE",
        [T((2,), np.bytes_), T.const(np.array([0], np.int32))],
        [T((2,), np.bytes_)],
        None,
    ),
    "tile-negative": ("TILE", [T((2, 3)), _i32([1, -1])], [T((2, 3))], None),
    "tile-float-multiples": ("TILE", [T((2, 3)), T.const(np.array([1, 1], np.float32))], [T((2, 3))], None),
    "tile-multiples-length": ("TILE", [T((2, 3)), _i32([1])], [T((2, 3))], None),
    "pack-axis": ("PACK", [T((3,)), T((3,))], [T((2, 3))], {"values_count": 2, "axis": 2}),
    "pack-shapes": ("PACK", [T((3,)), T((2,))], [T((2, 3))], {"values_count": 2, "axis": 0}),
    "pack-bool": (
        "PACK",
        [T((3,), np.bool_), T((3,), np.bool_)],
        [T((2, 3), np.bool_)],
        {"values_count": 2, "axis": 0},
    ),
    "pack-count": ("PACK", [T((3,)), T((3,))], [T((2, 3))], {"values_count": 3, "axis": 0}),
    "pack-quantization": (
        "PACK",
        [T((3,), np.int8, q=quant(0.5, 1)), T((3,), np.int8, q=quant(0.5, 2))],
        [T((2, 3), np.int8, q=quant(0.5, 1))],
        {"values_count": 2, "axis": 0},
    ),
    "unpack-num": ("UNPACK", [T((2, 3))], [T((3,)), T((3,)), T((3,))], {"num": 3, "axis": 0}),
    "unpack-int64": ("UNPACK", [T((2, 3), np.int64)], [T((3,), np.int64), T((3,), np.int64)], {"num": 2, "axis": 0}),
    "unpack-axis": ("UNPACK", [T((2, 3))], [T((2,)), T((2,))], {"num": 2, "axis": 2}),
    "reverse_v2-axis": ("REVERSE_V2", [T((2, 3)), _i32([2])], [T((2, 3))], None),
    "reverse_v2-string": ("REVERSE_V2", [T((2,), np.bytes_), _i32([0])], [T((2,), np.bytes_)], None),
    "reverse_v2-int64-axis": ("REVERSE_V2", [T((2, 3)), T.const(np.array([0], np.int64))], [T((2, 3))], None),
    "reverse_v2-gap": ("REVERSE_V2", [T((2, 3, 2)), _i32([0, 2])], [T((2, 3, 2))], None),
    "reverse_v2-repeat": ("REVERSE_V2", [T((2, 3, 2)), _i32([0, 0])], [T((2, 3, 2))], None),
    "reverse_v2-too-many": ("REVERSE_V2", [T((2, 3)), _i32([0, 1, 1])], [T((2, 3))], None),
    "reverse_sequence-same-dims": (
        "REVERSE_SEQUENCE",
        [T((2, 3)), _i32([1, 2])],
        [T((2, 3))],
        {"seq_dim": 0, "batch_dim": 0},
    ),
    "reverse_sequence-int8": (
        "REVERSE_SEQUENCE",
        [T((2, 3), np.int8), _i32([1, 2])],
        [T((2, 3), np.int8)],
        {"seq_dim": 1, "batch_dim": 0},
    ),
    "reverse_sequence-long": (
        "REVERSE_SEQUENCE",
        [T((2, 3)), _i32([4, 2])],
        [T((2, 3))],
        {"seq_dim": 1, "batch_dim": 0},
    ),
    "reverse_sequence-batch-size": (
        "REVERSE_SEQUENCE",
        [T((2, 3)), _i32([1, 2, 1])],
        [T((2, 3))],
        {"seq_dim": 1, "batch_dim": 0},
    ),
    "mirror_pad-too-wide": ("MIRROR_PAD", [T((2, 3)), _i32([[2, 0], [0, 0]])], [T((4, 3))], {"mode": 0}),
    "mirror_pad-negative": ("MIRROR_PAD", [T((2, 3)), _i32([[0, -1], [0, 0]])], [T((1, 3))], {"mode": 1}),
    "mirror_pad-string": ("MIRROR_PAD", [T((2,), np.bytes_), _i32([[1, 1]])], [T((4,), np.bytes_)], {"mode": 1}),
    "mirror_pad-int16-zero-point": (
        "MIRROR_PAD",
        [T((2,), np.int16, q=quant(0.5, 3)), _i32([[1, 1]])],
        [T((4,), np.int16, q=quant(0.5, 3))],
        {"mode": 1},
    ),
    "mirror_pad-float-paddings": (
        "MIRROR_PAD",
        [T((2, 3)), T.const(np.zeros((2, 2), np.float32))],
        [T((2, 3))],
        {"mode": 0},
    ),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_movement_rejected_at_prepare(case):
    check_rejected(*REJECTED[case])


def test_concatenation_of_constant_scalars():
    """Rank-0 inputs are accepted only when all are constant: stacked into a vector at prepare."""
    model = single_op_model(
        "CONCATENATION", [T.const(np.float32(1.5)), T.const(np.float32(-2.0))], [T((2,))], {"axis": 0}
    )
    out = check_both(model, [])
    assert out is not None and out[0].tolist() == [1.5, -2.0]
    model = single_op_model("CONCATENATION", [T(()), T(())], [T((2,))], {"axis": 0})
    with pytest.raises(RuntimeError):
        run_litert(model, [np.float32(1), np.float32(2)])
    with pytest.raises(PrepareError):
        run_ours(model, [np.float32(1), np.float32(2)])


def test_dynamic_output_shapes_reported_after_each_invoke():
    """TILE / SLICE / MIRROR_PAD with graph-input shape operands: the reported output shape follows each invoke,
    and the values equal LiteRT's for each of them."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    from litert_py import Interpreter

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    runs = [
        ("TILE", [T((3, 4)), T((2,), np.int32)], {}, [[1, 2], [2, 1], [3, 1]]),
        ("SLICE", [T((3, 4)), T((2,), np.int64), T((2,), np.int64)], {}, [([0, 1], [2, -1]), ([1, 0], [1, 4])]),
        ("MIRROR_PAD", [T((3, 4)), T((2, 2), np.int32)], {"mode": 1}, [[[0, 1], [2, 3]], [[3, 0], [0, 0]]]),
    ]
    for op, ins, opts, operand_sets in runs:
        model = single_op_model(op, ins, [T(())], opts)
        ours = Interpreter(model_content=model)
        theirs = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        for it in (ours, theirs):
            it.allocate_tensors()
        for operands in operand_sets:
            operands = operands if op == "SLICE" else (operands,)
            feeds = [x] + [np.array(v, t.dtype) for v, t in zip(operands, ins[1:])]
            shapes_seen = []
            for it in (ours, theirs):
                for d, v in zip(it.get_input_details(), feeds):
                    it.set_tensor(d["index"], v)
                it.invoke()
                out = it.get_output_details()[0]
                shapes_seen.append((tuple(out["shape"]), it.get_tensor(out["index"])))
            assert shapes_seen[0][0] == shapes_seen[1][0] == shapes_seen[0][1].shape
            np.testing.assert_array_equal(shapes_seen[0][1], shapes_seen[1][1])


def test_reverse_sequence_long_length_fails_at_invoke():
    """LiteRT checks only seq_lengths[0] and reads past the input for a later, longer one: litert_py fails."""
    model = single_op_model(
        "REVERSE_SEQUENCE", [T((2, 3)), T((2,), np.int32)], [T((2, 3))], {"seq_dim": 1, "batch_dim": 0}
    )
    with pytest.raises(InvokeError, match="seq_lengths"):
        run_ours(model, [np.zeros((2, 3), np.float32), np.array([1, 4], np.int32)])


@pytest.mark.parametrize(
    "shape, perm",
    [
        ((1, 32, 32, 64), (0, 3, 1, 2)),  # NHWC -> NCHW: (1024, 64) -> (64, 1024)
        ((1, 64, 32, 32), (0, 2, 3, 1)),  # NCHW -> NHWC
        ((3, 2000, 40), (0, 2, 1)),  # a batch of 2-D transposes, the last block shorter
        ((2, 1, 1000, 1, 70), (0, 4, 3, 1, 2)),  # axes of size 1 anywhere
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "int8", "int64"])
def test_transpose_blocked(shape, perm, dtype):
    """Transposes that collapse to a swap of two axes copy in blocks of rows (TransposeBlocked): equal to LiteRT."""
    dt = np.dtype(dtype)
    out = tuple(shape[p] for p in perm)
    model = single_op_model("TRANSPOSE", [T(shape, dt), T.const(np.array(perm, np.int32))], [T(out, dt)])
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    assert type(prepared).__name__ == "TransposeBlocked"
    x = values(np.random.default_rng(len(shape)), shape, dt)
    np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert(model, [x])[0])
    np.testing.assert_array_equal(run_ours(model, [x])[0], np.transpose(x, perm))


@pytest.mark.parametrize("shape, perm", [((0, 3, 0), (2, 0, 1)), ((1, 0, 5), (0, 2, 1)), ((4, 0), (1, 0))])
def test_transpose_of_zero_values(shape, perm):
    """A zero-size input has no rows to copy in blocks: prepare gives the plain Transpose (the block size once
    divided by a zero dimension; found by tools/fuzz_graphs.py), and the output has LiteRT's shape."""
    out = tuple(shape[p] for p in perm)
    model = single_op_model("TRANSPOSE", [T(shape), T.const(np.array(perm, np.int32))], [T(out)])
    x = np.zeros(shape, np.float32)
    (ours,), (theirs,) = run_ours(model, [x]), run_litert(model, [x])
    assert ours.shape == theirs.shape == out


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float32])
def test_transpose_of_a_scalar_copies_it(dtype):
    """An empty perm on a rank-0 tensor: the output is the value (LiteRT leaves it uninitialized, so the value is
    checked, not LiteRT's output: docs/litert-differences.md)."""
    model = single_op_model("TRANSPOSE", [T((), dtype), T.const(np.zeros(0, np.int32))], [T((), dtype)])
    for v in (np.array(k, dtype) for k in (6, 1, 0)):
        (got,) = run_ours(model, [v])
        assert got.shape == () and got.dtype == dtype and got == v
