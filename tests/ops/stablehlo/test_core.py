"""StableHLO ops of litert_py/ops/stablehlo/core.py that ai-edge-litert registers (pad, gather, scatter, composite,
case, rng_bit_generator, reduce_window) and the builtin REDUCE_WINDOW, against the oracle.

One case table drives the differential test: each entry draws a model (shapes, options) and its inputs with
hypothesis. Every path is exact (the reductions accumulate in the same order), so floats compare exactly. A few
spec examples (StableHLO spec, pad and gather) check the semantics independently of LiteRT.
"""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.oracle import T, run_ours, single_op_model

from ._models import _name, _shape, _values, check_oracle

MOVE_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_)
RW_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_)


def pad_case(dtype):
    def build(data):
        shape = _shape(data, 1, 3, 4, 1)  # an empty operand: LiteRT 2.3.0 keeps the output (0, 0) unresized
        rank = len(shape)
        ints = st.lists(st.integers(-2, 2), min_size=rank, max_size=rank)
        lo, hi = data.draw(ints, label="low"), data.draw(ints, label="high")
        it = data.draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank), label="interior")
        out = [lo[d] + hi[d] + shape[d] + max(shape[d] - 1, 0) * it[d] for d in range(rank)]
        assume(all(n >= 1 for n in out))  # LiteRT reads an empty output back as shape (0, 0)
        x = _values(data, shape, dtype)
        pv = _values(data, (), dtype)
        model = single_op_model(
            "STABLEHLO_PAD",
            [T(shape, dtype), T.const(pv, dtype)],
            [T(out, dtype)],
            dict(edge_padding_low=lo, edge_padding_high=hi, interior_padding=it),
        )
        return model, [x]

    return build


def gather_case(dtype, index_dtype=np.int32):
    def build(data):
        shape = _shape(data, 1, 3, 4, 1)
        rank = len(shape)
        sizes = [data.draw(st.integers(1, n), label="slice_size") for n in shape]
        collapsed = [d for d in range(rank) if sizes[d] == 1 and data.draw(st.booleans(), label="collapse")]
        smap = data.draw(st.permutations(range(rank)), label="perm")[: data.draw(st.integers(1, rank), label="m")]
        batch = list(data.draw(st.lists(st.integers(1, 3), max_size=2), label="batch"))
        m = len(smap)
        implicit = False  # index_vector_dim == rank(start_indices) crashes LiteRT 2.3.0: test_gather_implicit
        ivd = len(batch) if implicit else data.draw(st.integers(0, len(batch)), label="ivd")
        ind_shape = batch if implicit else batch[:ivd] + [m] + batch[ivd:]
        rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1), label="iseed"))
        hi = max(shape) + 2
        ind = rng.integers(-2, hi, ind_shape).astype(index_dtype)
        n_off = rank - len(collapsed)
        out_rank = len(batch) + n_off
        offset_dims = sorted(data.draw(st.permutations(range(out_rank)), label="offs")[:n_off])
        off_sizes = [s for d, s in enumerate(sizes) if d not in collapsed]
        out, bi = [], iter(batch)
        for k in range(out_rank):
            out.append(off_sizes[offset_dims.index(k)] if k in offset_dims else next(bi))
        x = _values(data, shape, dtype)
        opts = dict(
            offset_dims=offset_dims,
            collapsed_slice_dims=collapsed,
            start_index_map=list(smap),
            index_vector_dim=ivd,
            slice_sizes=sizes,
        )
        return single_op_model(
            "STABLEHLO_GATHER", [T(shape, dtype), T(ind.shape, index_dtype)], [T(out, dtype)], opts
        ), [x, ind]

    return build


def scatter_case(body, dtype, index_dtype=np.int32):
    def build(data):
        shape = _shape(data, 1, 3, 4, 1)
        rank = len(shape)
        inserted = [d for d in range(rank) if data.draw(st.booleans(), label="insert")]
        win = [data.draw(st.integers(1, shape[d]), label="window") for d in range(rank) if d not in inserted]
        sdod = data.draw(st.permutations(range(rank)), label="perm")[: data.draw(st.integers(1, rank), label="m")]
        batch = list(data.draw(st.lists(st.integers(1, 3), max_size=2), label="batch"))
        ivd = data.draw(st.integers(0, len(batch)), label="ivd")
        ind_shape = batch[:ivd] + [len(sdod)] + batch[ivd:]
        rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1), label="iseed"))
        ind = rng.integers(-2, max(shape) + 2, ind_shape).astype(index_dtype)
        urank = len(batch) + len(win)
        uwd = sorted(data.draw(st.permutations(range(urank)), label="uwd")[: len(win)])
        ushape, bi = [], iter(batch)
        for k in range(urank):
            ushape.append(win[uwd.index(k)] if k in uwd else next(bi))
        x, u = _values(data, shape, dtype), _values(data, ushape, dtype)
        b = ModelBuilder()
        xi, ii, ui = b.input("x", shape, dtype), b.input("i", ind.shape, index_dtype), b.input("u", ushape, dtype)
        o = b.tensor("out", shape, dtype)
        b.op(
            "STABLEHLO_SCATTER",
            [xi, ii, ui],
            [o],
            dict(
                update_window_dims=uwd,
                inserted_window_dims=inserted,
                scatter_dims_to_operand_dims=list(sdod),
                index_vector_dim=ivd,
                update_computation_subgraph_index=1,
            ),
        )
        b.output(o)
        b.subgraph("update")
        a, c = b.input("a", (), dtype), b.input("b", (), dtype)
        if body is None:  # no kernel: the region returns the update
            b.output(c)
        else:
            r = b.tensor("r", (), dtype)
            b.op(body, [a, c], [r])
            b.output(r)
        return b.build(), [x, ind, u]

    return build


def composite_case(dtype):
    """(x, y) -> composite "test.fma": (x * y + x, y); the decomposition subgraph has two builtin ops."""

    def build(data):
        shape = _shape(data, 0, 3)
        x, y = _values(data, shape, dtype), _values(data, shape, dtype)
        b = ModelBuilder()
        xi, yi = b.input("x", shape, dtype), b.input("y", shape, dtype)
        o1, o2 = b.tensor("o1", shape, dtype), b.tensor("o2", shape, dtype)
        attrs = bytes(flexbuffers.Dumps({"k": 1}))  # LiteRT requires the attributes (a flexbuffer map)
        b.op(
            "STABLEHLO_COMPOSITE",
            [xi, yi],
            [o1, o2],
            dict(name="test.fma", decomposition_subgraph_index=1, composite_attributes=attrs, version=1),
        )
        b.output(o1, o2)
        b.subgraph("decomposition")
        a, c = b.input("a", shape, dtype), b.input("b", shape, dtype)
        m, r = b.tensor("m", shape, dtype), b.tensor("r", shape, dtype)
        b.op("MUL", [a, c], [m])
        b.op("ADD", [m, a], [r])
        b.output(r, c)
        return b.build(), [x, y]

    return build


def case_case(dtype):
    """(index, x, y) -> branch index of [x + x, x * y, max(x, y)]; out-of-range indices take the last."""

    def build(data):
        shape = _shape(data, 0, 3)
        x, y = _values(data, shape, dtype), _values(data, shape, dtype)
        index = np.int32(data.draw(st.integers(-2, 4), label="index"))
        b = ModelBuilder()
        ii, xi, yi = b.input("i", (), np.int32), b.input("x", shape, dtype), b.input("y", shape, dtype)
        o = b.tensor("o", shape, dtype)
        b.op("STABLEHLO_CASE", [ii, xi, yi], [o], dict(branch_subgraph_indices=[1, 2, 3]))
        b.output(o)
        for op, second in (("STABLEHLO_ADD", 0), ("STABLEHLO_MULTIPLY", 1), ("STABLEHLO_MAXIMUM", 1)):
            b.subgraph(op)
            a = [b.input("a", shape, dtype), b.input("b", shape, dtype)]
            r = b.tensor("r", shape, dtype)
            b.op(op, [a[0], a[second]], [r])
            b.output(r)
        return b.build(), [index, x, y]

    return build


def rng_case(algorithm, out_dtype):
    def build(data):
        n_state = 2 if algorithm == 2 else data.draw(st.sampled_from([2, 3]), label="state size")
        words = data.draw(
            st.lists(
                st.sampled_from([0, 1, 0xFFFFFFFE, 0xFFFFFFFF]) | st.integers(0, 2**32 - 1),
                min_size=2 * n_state,
                max_size=2 * n_state,
            ),
            label="state words",
        )
        state = np.array(words, np.uint32).view(np.uint64)  # near-wrap counters exercise the carry
        shape = _shape(data, 0, 3, 5, 0)
        model = single_op_model(
            "STABLEHLO_RNG_BIT_GENERATOR",
            [T(state.shape, np.uint64)],
            [T(state.shape, np.uint64), T(shape, out_dtype)],
            dict(algorithm=algorithm),
        )
        return model, [state]

    return build


def _window(data, shape, base=(1,), pad=(0, 0)):
    rank = len(shape)
    lists = lambda lo, hi, n=rank: st.lists(st.integers(lo, hi), min_size=n, max_size=n)  # noqa: E731
    win = data.draw(lists(1, 3), label="window")
    strides = data.draw(lists(1, 2), label="strides")
    wdil = data.draw(lists(1, 2), label="window_dilations")
    bdil = data.draw(lists(*base), label="base_dilations") if len(base) == 2 else [1] * rank
    padding = data.draw(lists(*pad, 2 * rank), label="padding")
    sizes = [
        ((n - 1) * b + 1 if n else 0) + padding[2 * d] + padding[2 * d + 1] for d, (n, b) in enumerate(zip(shape, bdil))
    ]
    assume(all(s >= 0 for s in sizes))
    out = [(s - ((w - 1) * dl + 1)) // st_ + 1 for s, w, dl, st_ in zip(sizes, win, wdil, strides)]
    assume(all(n >= 1 for n in out))  # LiteRT's get_tensor cannot read an empty output
    return win, strides, wdil, bdil, padding, out


RW_FUNCS = {"ADD": 1, "MUL": 2, "MINIMUM": 3, "MAXIMUM": 4, "ALL": 5, "ANY": 6}


def reduce_window_case(fn, dtype):
    def build(data):
        shape = _shape(data, 1, 4, 5, 1)
        win, strides, wdil, _, _, out = _window(data, shape)
        x = _values(data, shape, dtype)
        init = _values(data, (), dtype)
        i64 = lambda v: T.const(np.asarray(v, np.int64))  # noqa: E731
        model = single_op_model(
            "REDUCE_WINDOW",
            [T(shape, dtype), T.const(init, dtype), i64(win), i64(strides), i64(wdil)],
            [T(out, dtype)],
            dict(reduce_function=RW_FUNCS[fn]),
        )
        return model, [x]

    return build


def stablehlo_reduce_window_case(body, dtype):
    def build(data):
        shape = _shape(data, 1, 3, 4, 1)
        win, strides, wdil, bdil, padding, out = _window(data, shape, base=(1, 2), pad=(-1, 2))
        x = _values(data, shape, dtype)
        init = _values(data, (), dtype)
        b = ModelBuilder()
        xi = b.input("x", shape, dtype)
        o = b.tensor("out", out, dtype)
        b.op(
            "STABLEHLO_REDUCE_WINDOW",
            [xi, b.const("init", np.asarray(init, dtype))],
            [o],
            dict(
                window_dimensions=win,
                window_strides=strides,
                base_dilations=bdil,
                window_dilations=wdil,
                padding=padding,
                body_subgraph_index=1,
            ),
        )
        b.output(o)
        b.subgraph("body")
        a, c = b.input("a", (), dtype), b.input("b", (), dtype)
        r = b.tensor("r", (), dtype)
        b.op(body, [a, c], [r])
        b.output(r)
        return b.build(), [x]

    return build


CASES = [(f"pad-{_name(dt)}", "STABLEHLO_PAD", pad_case(dt)) for dt in MOVE_DTYPES]
CASES += [(f"gather-{_name(dt)}", "STABLEHLO_GATHER", gather_case(dt)) for dt in MOVE_DTYPES]
CASES += [("gather-float32-int64-indices", "STABLEHLO_GATHER", gather_case(np.float32, np.int64))]
CASES += [
    (f"scatter-{(body or 'update')[10:].lower() or 'update'}-{_name(dt)}", "STABLEHLO_SCATTER", scatter_case(body, dt))
    for body in (None, "STABLEHLO_ADD", "STABLEHLO_MULTIPLY", "STABLEHLO_MAXIMUM", "STABLEHLO_MINIMUM")
    for dt in (np.float32, np.int8, np.int32, np.bool_)
]
CASES += [("scatter-add-int64-int64-indices", "STABLEHLO_SCATTER", scatter_case("STABLEHLO_ADD", np.int64, np.int64))]
CASES += [(f"composite-{_name(dt)}", "STABLEHLO_COMPOSITE", composite_case(dt)) for dt in (np.float32, np.int32)]
CASES += [(f"case-{_name(dt)}", "STABLEHLO_CASE", case_case(dt)) for dt in (np.float32, np.int8, np.bool_)]
CASES += [
    (f"rng_bit_generator-alg{a}-{_name(dt)}", "STABLEHLO_RNG_BIT_GENERATOR", rng_case(a, dt))
    for a in (0, 1, 2)
    for dt in (np.uint32, np.int64)
] + [
    ("rng_bit_generator-alg2-int32", "STABLEHLO_RNG_BIT_GENERATOR", rng_case(2, np.int32)),
    ("rng_bit_generator-alg1-uint64", "STABLEHLO_RNG_BIT_GENERATOR", rng_case(1, np.uint64)),
]
CASES += [
    (f"reduce_window-{fn.lower()}-{_name(dt)}", "REDUCE_WINDOW", reduce_window_case(fn, dt))
    for dt in RW_DTYPES
    for fn in (("ALL", "ANY") if dt is np.bool_ else ("ADD", "MUL", "MINIMUM", "MAXIMUM"))
]
CASES += [
    (
        f"stablehlo_reduce_window-{body.lower()}-{_name(dt)}",
        "STABLEHLO_REDUCE_WINDOW",
        stablehlo_reduce_window_case(body, dt),
    )
    for body, dts in (
        ("STABLEHLO_ADD", (np.float32, np.int8, np.int32)),
        ("ADD", (np.float32,)),
        ("STABLEHLO_MAXIMUM", (np.float32, np.int16, np.int64, np.uint8)),
        ("STABLEHLO_MINIMUM", (np.float32, np.int32)),
        ("STABLEHLO_MULTIPLY", (np.float32,)),
        ("LOGICAL_AND", (np.bool_,)),
        ("LOGICAL_OR", (np.bool_,)),
    )
    for dt in dts
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@given(data=st.data())
def test_stablehlo(case, data):
    check_oracle(case, data)


# --------------------------------------------------------------------------------------------------------
# Spec examples (StableHLO specification): semantics checked without the oracle
# --------------------------------------------------------------------------------------------------------


def test_pad_spec_example():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    expected = [[0, 1, 0, 0, 2, 0, 0, 3, 0], [0] * 9, [0, 4, 0, 0, 5, 0, 0, 6, 0], [0] * 9, [0] * 9]
    # the spec's example: result shape [5, 9]; dims: 2 + 1*1 + 0 + 2 = 5, 3 + 2*2 + 1 + 1 = 9
    model = single_op_model(
        "STABLEHLO_PAD",
        [T((2, 3), np.int32), T.const(np.int32(0))],
        [T((5, 9), np.int32)],
        dict(edge_padding_low=[0, 1], edge_padding_high=[2, 1], interior_padding=[1, 2]),
    )
    (out,) = run_ours(model, [x])
    np.testing.assert_array_equal(out, expected)


def test_gather_spec_example():
    operand = np.arange(24, dtype=np.int32).reshape(3, 4, 2) + 1
    idx = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]], np.int32)
    model = single_op_model(
        "STABLEHLO_GATHER",
        [T((3, 4, 2), np.int32), T((2, 3, 2), np.int32)],
        [T((2, 3, 2, 2), np.int32)],
        dict(
            offset_dims=[2, 3],
            collapsed_slice_dims=[0],
            start_index_map=[1, 0],
            index_vector_dim=2,
            slice_sizes=[1, 2, 2],
        ),
    )
    (out,) = run_ours(model, [operand, idx])
    # independent formulation: out[b0, b1, o0, o1] = operand[clamp(i1), clamp(i0) + o0, o1]
    expected = np.empty((2, 3, 2, 2), np.int32)
    for b0, b1 in np.ndindex(2, 3):
        s1, s0 = idx[b0, b1]
        s0, s1 = min(max(s0, 0), 3 - 1), min(max(s1, 0), 4 - 2)
        expected[b0, b1] = operand[s0, s1 : s1 + 2, 0:2]
    np.testing.assert_array_equal(out, expected)


def test_gather_implicit_index_vector_dim():
    """index_vector_dim == rank(start_indices): each index is a scalar (LiteRT 2.3.0 segfaults on it)."""
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    ind = np.array([[0, 4], [-3, 9]], np.int32)
    model = single_op_model(
        "STABLEHLO_GATHER",
        [T((5, 4), np.float32), T((2, 2), np.int32)],
        [T((2, 2, 2, 4), np.float32)],
        dict(offset_dims=[2, 3], collapsed_slice_dims=[], start_index_map=[0], index_vector_dim=2, slice_sizes=[2, 4]),
    )
    (out,) = run_ours(model, [x, ind])
    starts = np.clip(ind, 0, 3)
    np.testing.assert_array_equal(out, np.stack([x[starts], x[starts + 1]], axis=2))


# --------------------------------------------------------------------------------------------------------
# Error paths: LiteRT rejects these at prepare, litert_py too
# --------------------------------------------------------------------------------------------------------

REJECTED = [
    (
        "pad-negative-interior",
        single_op_model(
            "STABLEHLO_PAD",
            [T((3,), np.float32), T.const(np.float32(0))],
            [T((3,), np.float32)],
            dict(edge_padding_low=[0], edge_padding_high=[0], interior_padding=[-1]),
        ),
    ),
]


@pytest.mark.parametrize("model", [m for _, m in REJECTED], ids=[n for n, _ in REJECTED])
def test_rejected(model):
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
