"""StableHLO ops that ai-edge-litert registers, and the builtin REDUCE_WINDOW, against the oracle.

One case table drives the differential test: each entry draws a model (shapes, options) and its inputs with
hypothesis. Every path is exact (no float op rounds differently in the two runtimes: the elementwise ops are
single IEEE operations and the reductions accumulate in the same order), so floats compare exactly. A few
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
from tests.compare import assert_close
from tests.ops._values import regimes
from tests.oracle import T, run_both, run_ours, single_op_model
from tests.values import values

# BUILTIN_REF lacks STABLEHLO_AND, STABLEHLO_SHIFT_LEFT, STABLEHLO_CASE and STABLEHLO_RNG_BIT_GENERATOR: their
# builtin kernels run without delegates.
RESOLVER = {
    "STABLEHLO_AND": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "STABLEHLO_SHIFT_LEFT": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "STABLEHLO_CASE": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "STABLEHLO_RNG_BIT_GENERATOR": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
}

#: float tolerance (rtol) per op: all exact (single IEEE operations, same accumulation order)
TOLERANCE: dict[str, float] = {}

BINARY_DTYPES = {
    "STABLEHLO_ADD": (np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_MULTIPLY": (np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_MAXIMUM": (np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_MINIMUM": (np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_AND": (np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_),
    "STABLEHLO_SHIFT_LEFT": (np.int8, np.int16, np.int32),
}
MOVE_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_)
RW_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_)


def _values(data, shape, dtype):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1), label="seed"))
    return values(rng, shape, dtype, None if dtype is np.bool_ else data.draw(regimes(dtype), label="regime"))


def _shape(data, min_rank=0, max_rank=4, max_dim=4, min_dim=0):
    rank = data.draw(st.integers(min_rank, max_rank), label="rank")
    return tuple(data.draw(st.lists(st.integers(min_dim, max_dim), min_size=rank, max_size=rank), label="shape"))


def binary_case(op, dtype, any_count=False):
    def build(data):
        shape = _shape(data, max_dim=9 if any_count else 4)  # sizes around 8: LiteRT's vector body and tail
        x = _values(data, shape, dtype)
        if op == "STABLEHLO_SHIFT_LEFT" and not any_count:  # counts in [0, bits), defined in C++
            y = np.random.default_rng(x.size).integers(0, np.iinfo(dtype).bits, shape).astype(dtype)
        else:
            y = _values(data, shape, dtype)
        return single_op_model(op, [T(shape, dtype), T(shape, dtype)], [T(shape, dtype)]), [x, y]

    return build


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


def _name(dt) -> str:
    return np.dtype(dt).name


CASES = [(f"{op[10:].lower()}-{_name(dt)}", op, binary_case(op, dt)) for op, dts in BINARY_DTYPES.items() for dt in dts]
CASES += [
    (f"shift_left-{_name(dt)}-any-count", "STABLEHLO_SHIFT_LEFT", binary_case("STABLEHLO_SHIFT_LEFT", dt, True))
    for dt in BINARY_DTYPES["STABLEHLO_SHIFT_LEFT"]
]  # undefined in C++: what LiteRT's build computes
CASES += [(f"pad-{_name(dt)}", "STABLEHLO_PAD", pad_case(dt)) for dt in MOVE_DTYPES]
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
    name, op, build = case
    model, inputs = build(data)
    ours, theirs = run_both(model, inputs, resolver=RESOLVER.get(op, "BUILTIN_REF"))
    assert_close(ours, theirs, rtol_each=TOLERANCE.get(name, 0.0))


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
        "and-float32",
        single_op_model("STABLEHLO_AND", [T((3,), np.float32), T((3,), np.float32)], [T((3,), np.float32)]),
    ),
    (
        "add-shape-mismatch",
        single_op_model("STABLEHLO_ADD", [T((3,), np.float32), T((1,), np.float32)], [T((3,), np.float32)]),
    ),
    (
        "add-type-mismatch",
        single_op_model("STABLEHLO_ADD", [T((3,), np.float32), T((3,), np.int32)], [T((3,), np.float32)]),
    ),
    (
        "shift_left-uint8",
        single_op_model("STABLEHLO_SHIFT_LEFT", [T((3,), np.uint8), T((3,), np.uint8)], [T((3,), np.uint8)]),
    ),
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


# --------------------------------------------------------------------------------------------------------
# Beyond LiteRT (no oracle): StableHLO elementwise ops against NumPy / Python formulations written here
# --------------------------------------------------------------------------------------------------------


def _wrap(v: int, dtype) -> int:
    """Python int -> two's complement value of ``dtype``."""
    bits = np.iinfo(dtype).bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if np.iinfo(dtype).min < 0 and v >> (bits - 1) else v


def _int_div(a: int, b: int) -> int:
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_rem(a: int, b: int) -> int:
    return a if b == 0 else a - b * _int_div(a, b)


def _int_pow(a: int, b: int) -> int:
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return a**b


def _scalar_ref(fn):
    """Elementwise over Python ints, wrapped to the dtype."""

    def ref(a, b):
        out = [_wrap(fn(int(x), int(y)), a.dtype) for x, y in zip(a.ravel(), b.ravel())]
        return np.array(out, dtype=np.int64).astype(a.dtype).reshape(a.shape)

    return ref


def _f64(fn):
    """A float reference computed in float64 and rounded once to the input's type."""
    return lambda x: fn(x.astype(np.float64)).astype(x.dtype)


UNARY_REF = {
    "STABLEHLO_LOGISTIC": _f64(lambda x: np.exp(-np.logaddexp(0, -x))),
    "STABLEHLO_COSINE": _f64(np.cos),
    "STABLEHLO_EXPONENTIAL": _f64(np.exp),
    "STABLEHLO_LOG": _f64(np.log),
    "STABLEHLO_RSQRT": _f64(lambda x: np.sqrt(1 / x)),
    "STABLEHLO_TANH": _f64(np.tanh),
    "STABLEHLO_CBRT": _f64(lambda x: np.sign(x) * np.abs(x) ** (1 / 3)),
    "STABLEHLO_FLOOR": _f64(np.floor),
}
BEYOND_TOLERANCE = {  # rtol against a float64 reference rounded once: an ulp or two of the input's type
    np.dtype(np.float32): 3e-7,
    np.dtype(np.float16): 1e-3,
    np.dtype(np.float64): 1e-15,
}

BINARY_REF = {
    "STABLEHLO_SUBTRACT": (lambda a, b: (a.astype(np.float64) - b).astype(a.dtype), _scalar_ref(lambda x, y: x - y)),
    "STABLEHLO_DIVIDE": (lambda a, b: (a.astype(np.float64) / b).astype(a.dtype), _scalar_ref(_int_div)),
    "STABLEHLO_REMAINDER": (lambda a, b: np.fmod(a.astype(np.float64), b).astype(a.dtype), _scalar_ref(_int_rem)),
    "STABLEHLO_POWER": (lambda a, b: (a.astype(np.float64) ** b).astype(a.dtype), _scalar_ref(_int_pow)),
    "STABLEHLO_OR": (None, _scalar_ref(lambda x, y: x | y)),
}


def _beyond_values(data, shape, dtype, op=None):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1), label="seed"))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        if op == "STABLEHLO_POWER":
            return rng.integers(-3 if dt.kind == "i" else 0, 6, shape).astype(dt)
        info = np.iinfo(dt)
        pick = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
        small = rng.integers(max(info.min, -9), 10, shape).astype(dt)
        return np.where(rng.random(shape) < 0.5, pick, small)
    return (rng.standard_normal(shape) * 3).astype(dt)


def _assert_float(ours, ref, rtol):
    assert_close([ours.astype(np.float64)], [ref.astype(np.float64)], rtol_each=rtol)


BEYOND_UNARY = [(op, dt) for op in UNARY_REF for dt in (np.float32, np.float16)] + [
    ("STABLEHLO_ABS", np.int8),
    ("STABLEHLO_ABS", np.int32),
    ("STABLEHLO_ABS", np.float32),
    ("STABLEHLO_NEGATE", np.int16),
    ("STABLEHLO_NEGATE", np.int64),
    ("STABLEHLO_NEGATE", np.float32),
]


@pytest.mark.parametrize("case", BEYOND_UNARY, ids=[f"{o[10:].lower()}-{_name(d)}" for o, d in BEYOND_UNARY])
@given(data=st.data())
def test_beyond_unary(case, data):
    op, dtype = case
    shape = _shape(data, 0, 3)
    x = _beyond_values(data, shape, dtype)
    if op in ("STABLEHLO_LOG", "STABLEHLO_RSQRT"):
        x = np.abs(x)
    (out,) = run_ours(single_op_model(op, [T(shape, dtype)], [T(shape, dtype)]), [x])
    if op in UNARY_REF:
        with np.errstate(all="ignore"):
            _assert_float(out, UNARY_REF[op](x), BEYOND_TOLERANCE[np.dtype(dtype)])
    else:
        fn = abs if op == "STABLEHLO_ABS" else (lambda v: -v)
        expected = [_wrap(fn(int(v)), dtype) if np.dtype(dtype).kind == "i" else fn(v) for v in x.ravel()]
        np.testing.assert_array_equal(out, np.array(expected, dtype=dtype).reshape(shape))


BEYOND_BINARY = [
    (op, dt)
    for op in BINARY_REF
    for dt in (np.float32, np.int8, np.int32, np.int64, np.uint8)
    if not (op == "STABLEHLO_OR" and dt is np.float32)
] + [("STABLEHLO_OR", np.bool_)]


@pytest.mark.parametrize("case", BEYOND_BINARY, ids=[f"{o[10:].lower()}-{_name(d)}" for o, d in BEYOND_BINARY])
@given(data=st.data())
def test_beyond_binary(case, data):
    op, dtype = case
    shape = _shape(data, 0, 3)
    a, b = _beyond_values(data, shape, dtype, op), _beyond_values(data, shape, dtype, op)
    (out,) = run_ours(single_op_model(op, [T(shape, dtype), T(shape, dtype)], [T(shape, dtype)]), [a, b])
    float_ref, int_ref = BINARY_REF[op]
    if np.dtype(dtype).kind == "f":
        with np.errstate(all="ignore"):
            _assert_float(out, float_ref(a, b), 0.0 if op != "STABLEHLO_POWER" else 3e-7)
    elif dtype is np.bool_:
        np.testing.assert_array_equal(out, a | b)
    else:
        np.testing.assert_array_equal(out, int_ref(a, b))


def test_beyond_integer_division_corner_cases():
    a = np.array([7, -7, 7, -7, -128, -128, 5, 0], np.int8)
    b = np.array([2, 2, -2, -2, -1, 0, 0, 3], np.int8)
    div = single_op_model("STABLEHLO_DIVIDE", [T((8,), np.int8)] * 2, [T((8,), np.int8)])
    rem = single_op_model("STABLEHLO_REMAINDER", [T((8,), np.int8)] * 2, [T((8,), np.int8)])
    np.testing.assert_array_equal(run_ours(div, [a, b])[0], [3, -3, -3, 3, -128, -1, -1, 0])
    np.testing.assert_array_equal(run_ours(rem, [a, b])[0], [1, -1, 1, -1, 0, -128, 5, 0])


COMPARE_DIRECTIONS = {0: "==", 1: "!=", 2: ">=", 3: ">", 4: "<=", 5: "<"}


def _total_key(v: float) -> tuple:
    """FLOAT_TOTAL_ORDER key: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN."""
    neg = np.signbit(v)
    rank = 2 if np.isnan(v) else 1
    return (-rank, -abs(v) if not np.isnan(v) else 0) if neg else (rank, v if not np.isnan(v) else 0)


COMPARE_CASES = [
    (np.float32, 1),
    (np.float32, 2),
    (np.int8, 3),
    (np.int8, 4),
    (np.int32, 0),
    (np.uint8, 4),
    (np.bool_, 0),
]


@pytest.mark.parametrize("case", COMPARE_CASES, ids=[f"compare-{_name(d)}-type{k}" for d, k in COMPARE_CASES])
@given(data=st.data(), direction=st.integers(0, 5))
def test_beyond_compare(case, data, direction):
    dtype, kind = case
    shape = _shape(data, 0, 3)
    a, b = _beyond_values(data, shape, dtype), _beyond_values(data, shape, dtype)
    if np.dtype(dtype).kind == "f" and a.size:
        a.ravel()[0] = np.nan
        a.ravel()[-1] = -0.0
        b.ravel()[-1] = 0.0
        b.ravel()[0] = -b.ravel()[0] if data.draw(st.booleans()) else np.float32(-np.nan)
    model = single_op_model(
        "STABLEHLO_COMPARE",
        [T(shape, dtype), T(shape, dtype)],
        [T(shape, np.bool_)],
        dict(comparison_direction=direction, compare_type=kind),
    )
    (out,) = run_ours(model, [a, b])
    sym = COMPARE_DIRECTIONS[direction]
    expected = []
    for x, y in zip(a.ravel(), b.ravel()):
        if kind == 2:
            x, y = _total_key(float(x)), _total_key(float(y))
        elif kind == 4 and np.dtype(dtype).kind == "i":
            x, y = int(x) % 2 ** np.iinfo(dtype).bits, int(y) % 2 ** np.iinfo(dtype).bits
        else:
            x, y = (float(x), float(y)) if np.dtype(dtype).kind == "f" else (int(x), int(y))
        expected.append(eval(f"x {sym} y"))  # noqa: S307 - a fixed operator from the table above
    np.testing.assert_array_equal(out, np.array(expected, bool).reshape(shape))


@given(data=st.data(), scalar_pred=st.booleans())
def test_beyond_select(data, scalar_pred):
    shape = _shape(data, 0, 3)
    pshape = () if scalar_pred else shape
    p = _beyond_values(data, pshape, np.bool_)
    t, f = _beyond_values(data, shape, np.int16), _beyond_values(data, shape, np.int16)
    model = single_op_model(
        "STABLEHLO_SELECT", [T(pshape, np.bool_), T(shape, np.int16), T(shape, np.int16)], [T(shape, np.int16)]
    )
    (out,) = run_ours(model, [p, t, f])
    pb = np.broadcast_to(p, shape)
    expected = [x if c else y for c, x, y in zip(pb.ravel(), t.ravel(), f.ravel())]
    np.testing.assert_array_equal(out, np.array(expected, np.int16).reshape(shape))


@given(data=st.data(), scalar_bounds=st.booleans(), dtype=st.sampled_from([np.float32, np.int32]))
def test_beyond_clamp(data, scalar_bounds, dtype):
    shape = _shape(data, 0, 3)
    bshape = () if scalar_bounds else shape
    lo, x, hi = (_beyond_values(data, s, dtype) for s in (bshape, shape, bshape))
    model = single_op_model("STABLEHLO_CLAMP", [T(bshape, dtype), T(shape, dtype), T(bshape, dtype)], [T(shape, dtype)])
    (out,) = run_ours(model, [lo, x, hi])
    los, his = np.broadcast_to(lo, shape).ravel(), np.broadcast_to(hi, shape).ravel()
    expected = [min(max(v, lo_), hi_) for v, lo_, hi_ in zip(x.ravel().tolist(), los.tolist(), his.tolist())]
    np.testing.assert_array_equal(out, np.array(expected, dtype).reshape(shape))


CONVERT_CASES = [
    (np.float32, np.int32),
    (np.float32, np.int8),
    (np.float32, np.bool_),
    (np.int32, np.float32),
    (np.int64, np.float16),
    (np.int32, np.int8),
    (np.uint8, np.int8),
    (np.bool_, np.float32),
    (np.float32, np.float16),
    (np.int8, np.uint16),
]


@pytest.mark.parametrize("case", CONVERT_CASES, ids=[f"convert-{_name(a)}-to-{_name(b)}" for a, b in CONVERT_CASES])
@given(data=st.data())
def test_beyond_convert(case, data):
    src, dst = case
    shape = _shape(data, 0, 3)
    x = _beyond_values(data, shape, src)
    if np.dtype(src).kind == "f":
        x = x * np.float32(30)
    (out,) = run_ours(single_op_model("STABLEHLO_CONVERT", [T(shape, src)], [T(shape, dst)]), [x])
    dk = np.dtype(dst).kind
    expected = []
    for v in x.ravel().tolist():
        if dk == "b":
            expected.append(v != 0)
        elif dk in "iu" and isinstance(v, float):
            info = np.iinfo(dst)
            expected.append(min(max(int(v), info.min), info.max))  # int() truncates toward zero
        elif dk in "iu":
            expected.append(_wrap(int(v), dst))
        else:
            expected.append(float(v))
    np.testing.assert_array_equal(
        out, np.array(expected, dtype=np.float64 if dk == "f" else object).astype(dst).reshape(shape)
    )


# --------------------------------------------------------------------------------------------------------
# Beyond LiteRT: StableHLO data movement and dot_general against formulations written here
# --------------------------------------------------------------------------------------------------------

STRUCT_DTYPES = st.sampled_from([np.float32, np.int8, np.int64, np.bool_])


def _loop_ref(out_shape, fn, dtype):
    """An array built element by element from ``fn(index tuple)``: the plainest formulation there is."""
    out = np.empty(out_shape, dtype)
    for ix in np.ndindex(*out_shape):
        out[ix] = fn(ix)
    return out


@given(data=st.data(), dtype=STRUCT_DTYPES)
def test_beyond_transpose_reshape(data, dtype):
    shape = _shape(data, 1, 4, 3, 1)
    x = _beyond_values(data, shape, dtype)
    perm = data.draw(st.permutations(range(len(shape))), label="perm")
    out_shape = [shape[p] for p in perm]
    (out,) = run_ours(
        single_op_model("STABLEHLO_TRANSPOSE", [T(shape, dtype)], [T(out_shape, dtype)], dict(permutation=perm)), [x]
    )
    np.testing.assert_array_equal(
        out, _loop_ref(out_shape, lambda ix: x[tuple(ix[perm.index(d)] for d in range(len(shape)))], dtype)
    )
    flat = [int(np.prod(shape))]
    (r,) = run_ours(single_op_model("STABLEHLO_RESHAPE", [T(shape, dtype)], [T(flat, dtype)]), [x])
    np.testing.assert_array_equal(r, [x[ix] for ix in np.ndindex(*shape)])  # row-major order


@given(data=st.data(), dtype=STRUCT_DTYPES)
def test_beyond_slice(data, dtype):
    shape = _shape(data, 1, 3, 5, 1)
    x = _beyond_values(data, shape, dtype)
    start = [data.draw(st.integers(0, n), label="start") for n in shape]
    limit = [data.draw(st.integers(s, n), label="limit") for s, n in zip(start, shape)]
    strides = [data.draw(st.integers(1, 3), label="stride") for _ in shape]
    out_shape = [len(range(s, lim, k)) for s, lim, k in zip(start, limit, strides)]
    model = single_op_model(
        "STABLEHLO_SLICE",
        [T(shape, dtype)],
        [T(out_shape, dtype)],
        dict(start_indices=start, limit_indices=limit, strides=strides),
    )
    (out,) = run_ours(model, [x])
    np.testing.assert_array_equal(
        out, _loop_ref(out_shape, lambda ix: x[tuple(s + i * k for i, s, k in zip(ix, start, strides))], dtype)
    )


@given(data=st.data(), dtype=STRUCT_DTYPES, n=st.integers(1, 3))
def test_beyond_concatenate(data, dtype, n):
    shape = _shape(data, 1, 3, 3, 0)
    d = data.draw(st.integers(0, len(shape) - 1), label="dim")
    parts = []
    for _ in range(n):
        s = list(shape)
        s[d] = data.draw(st.integers(0, 3), label="len")
        parts.append(_beyond_values(data, s, dtype))
    out_shape = list(shape)
    out_shape[d] = sum(p.shape[d] for p in parts)
    model = single_op_model(
        "STABLEHLO_CONCATENATE", [T(p.shape, dtype) for p in parts], [T(out_shape, dtype)], dict(dimension=d)
    )
    (out,) = run_ours(model, parts)
    offsets = np.cumsum([0] + [p.shape[d] for p in parts])

    def elem(ix):
        k = int(np.searchsorted(offsets, ix[d], side="right")) - 1
        return parts[k][ix[:d] + (ix[d] - offsets[k],) + ix[d + 1 :]]

    np.testing.assert_array_equal(out, _loop_ref(out_shape, elem, dtype))


@given(data=st.data(), dtype=STRUCT_DTYPES)
def test_beyond_broadcast_in_dim(data, dtype):
    out_shape = _shape(data, 1, 4, 3, 1)
    k = data.draw(st.integers(0, len(out_shape)), label="operand rank")
    dims = data.draw(st.permutations(range(len(out_shape))), label="dims")[:k]
    shape = [out_shape[d] if data.draw(st.booleans(), label="keep") else 1 for d in dims]
    x = _beyond_values(data, shape, dtype)
    model = single_op_model(
        "STABLEHLO_BROADCAST_IN_DIM", [T(shape, dtype)], [T(out_shape, dtype)], dict(broadcast_dimensions=dims)
    )
    (out,) = run_ours(model, [x])
    np.testing.assert_array_equal(
        out, _loop_ref(out_shape, lambda ix: x[tuple(0 if shape[i] == 1 else ix[d] for i, d in enumerate(dims))], dtype)
    )


@given(data=st.data(), dtype=st.sampled_from([np.float32, np.int32, np.int64]))
def test_beyond_iota(data, dtype):
    out_shape = _shape(data, 1, 3, 4, 1)
    d = data.draw(st.integers(0, len(out_shape) - 1), label="dim")
    (out,) = run_ours(single_op_model("STABLEHLO_IOTA", [], [T(out_shape, dtype)], dict(iota_dimension=d)), [])
    np.testing.assert_array_equal(out, _loop_ref(out_shape, lambda ix: ix[d], dtype))


@given(data=st.data(), dtype=STRUCT_DTYPES, update=st.booleans())
def test_beyond_dynamic_slice(data, dtype, update):
    shape = _shape(data, 1, 3, 4, 1)
    x = _beyond_values(data, shape, dtype)
    sizes = [data.draw(st.integers(0, n), label="size") for n in shape]
    starts = [np.int32(data.draw(st.integers(-2, n + 2), label="start")) for n in shape]
    clamped = [min(max(int(s), 0), n - k) for s, n, k in zip(starts, shape, sizes)]
    scalars = [T((), np.int32) for _ in shape]
    if update:
        u = _beyond_values(data, sizes, dtype)
        model = single_op_model(
            "STABLEHLO_DYNAMIC_UPDATE_SLICE", [T(shape, dtype), T(sizes, dtype)] + scalars, [T(shape, dtype)]
        )
        (out,) = run_ours(model, [x, u] + starts)

        def elem(ix):
            rel = [i - c for i, c in zip(ix, clamped)]
            inside = all(0 <= r < k for r, k in zip(rel, sizes))
            return u[tuple(rel)] if inside else x[ix]

        np.testing.assert_array_equal(out, _loop_ref(shape, elem, dtype))
    else:
        model = single_op_model(
            "STABLEHLO_DYNAMIC_SLICE", [T(shape, dtype)] + scalars, [T(sizes, dtype)], dict(slice_sizes=sizes)
        )
        (out,) = run_ours(model, [x] + starts)
        np.testing.assert_array_equal(
            out, _loop_ref(sizes, lambda ix: x[tuple(i + c for i, c in zip(ix, clamped))], dtype)
        )


def _free_in_order(perm, free) -> list:
    perm, free = list(perm), set(free)
    slots = [k for k, v in enumerate(perm) if v in free]
    for k, v in zip(slots, sorted(perm[k] for k in slots)):
        perm[k] = v
    return perm


@given(data=st.data(), dtype=st.sampled_from([np.float32, np.int32]))
def test_beyond_dot_general(data, dtype):
    nb, nc = data.draw(st.integers(0, 2), label="batch dims"), data.draw(st.integers(0, 2), label="contracting")
    nlf, nrf = data.draw(st.integers(0, 2), label="lhs free"), data.draw(st.integers(0, 2), label="rhs free")
    size = st.integers(1, 3)
    b = [data.draw(size) for _ in range(nb)]
    c = [data.draw(size) for _ in range(nc)]
    lf, rf = [data.draw(size) for _ in range(nlf)], [data.draw(size) for _ in range(nrf)]
    # lay the dims out in a drawn order in each operand
    lperm = data.draw(st.permutations(range(nb + nlf + nc)), label="lhs order")
    rperm = data.draw(st.permutations(range(nb + nc + nrf)), label="rhs order")
    # free dims appear in the result in their operand order (spec): keep them in order within each layout
    lperm, rperm = _free_in_order(lperm, range(nb, nb + nlf)), _free_in_order(rperm, range(nb + nc, nb + nc + nrf))
    lsizes, rsizes = b + lf + c, b + c + rf
    lshape, rshape = [lsizes[i] for i in lperm], [rsizes[i] for i in rperm]
    pos_l, pos_r = {r: k for k, r in enumerate(lperm)}, {r: k for k, r in enumerate(rperm)}
    lb, lc = [pos_l[i] for i in range(nb)], [pos_l[nb + nlf + i] for i in range(nc)]
    rb, rc = [pos_r[i] for i in range(nb)], [pos_r[nb + i] for i in range(nc)]
    x = (_beyond_values(data, lshape, dtype) % 7).astype(dtype)
    y = (_beyond_values(data, rshape, dtype) % 7).astype(dtype)
    out_shape = b + lf + rf
    model = single_op_model(
        "STABLEHLO_DOT_GENERAL",
        [T(lshape, dtype), T(rshape, dtype)],
        [T(out_shape, dtype)],
        dict(
            lhs_batching_dimensions=lb,
            rhs_batching_dimensions=rb,
            lhs_contracting_dimensions=lc,
            rhs_contracting_dimensions=rc,
        ),
    )
    (out,) = run_ours(model, [x, y])

    def elem(ix):
        bi, li, ri = ix[:nb], ix[nb : nb + nlf], ix[nb + nlf :]
        total = 0.0
        for ci in np.ndindex(*c):
            lr, rr = bi + li + ci, bi + ci + ri  # logical index -> physical through the permutations
            total += float(x[tuple(lr[i] for i in lperm)]) * float(y[tuple(rr[i] for i in rperm)])
        return total

    np.testing.assert_allclose(out, _loop_ref(out_shape, elem, np.float64), rtol=1e-6)


def _region_model(op, inputs, outputs, options, regions):
    """``op`` over graph inputs ``inputs`` [(shape, dtype)], then one subgraph per region: (arg types, body op,
    body options, result dtype) with scalar arguments."""
    b = ModelBuilder()
    ins = [b.input(f"x{k}", s, d) for k, (s, d) in enumerate(inputs)]
    outs = [b.tensor(f"o{k}", s, d) for k, (s, d) in enumerate(outputs)]
    b.op(op, ins, outs, options)
    b.output(*outs)
    for args, body, opts, res in regions:
        b.subgraph("region")
        a = [b.input(f"a{k}", (), d) for k, d in enumerate(args)]
        r = b.tensor("r", (), res)
        b.op(body, a[:2], [r], opts)
        b.output(r)
    return b.build()


REDUCE_BODIES = {
    "STABLEHLO_ADD": lambda v: sum(v),
    "STABLEHLO_MAXIMUM": max,
    "STABLEHLO_MINIMUM": min,
    "STABLEHLO_MULTIPLY": lambda v: int(np.prod(np.array(v, dtype=object))),
}


@given(data=st.data(), body=st.sampled_from(sorted(REDUCE_BODIES)), dtype=st.sampled_from([np.int32, np.int8]))
def test_beyond_reduce(data, body, dtype):
    shape = _shape(data, 1, 3, 3, 0)
    x = _beyond_values(data, shape, dtype)
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)), label="dims"))
    init = _beyond_values(data, (), dtype)
    out_shape = [n for d, n in enumerate(shape) if d not in dims]
    b = ModelBuilder()
    xi = b.input("x", shape, dtype)
    o = b.tensor("o", out_shape, dtype)
    b.op(
        "STABLEHLO_REDUCE",
        [xi, b.const("init", np.asarray(init, dtype))],
        [o],
        dict(dimensions=dims, body_subgraph_index=1),
    )
    b.output(o)
    b.subgraph("body")
    a, c = b.input("a", (), dtype), b.input("b", (), dtype)
    r = b.tensor("r", (), dtype)
    b.op(body, [a, c], [r])
    b.output(r)
    (out,) = run_ours(b.build(), [x])

    def elem(ix):
        vals = [int(init)]
        for full in np.ndindex(*shape):
            if tuple(full[d] for d in range(len(shape)) if d not in dims) == ix:
                vals.append(int(x[full]))
        return _wrap(REDUCE_BODIES[body](vals), dtype)

    np.testing.assert_array_equal(out, _loop_ref(out_shape, elem, dtype))


@given(data=st.data(), descending=st.booleans(), dtype=st.sampled_from([np.float32, np.int8]))
def test_beyond_sort(data, descending, dtype):
    shape = _shape(data, 1, 3, 4, 1)
    d = data.draw(st.integers(0, len(shape) - 1), label="dim")
    keys = (_beyond_values(data, shape, dtype) % 4).astype(dtype)  # many ties: stability matters
    payload = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    model = _region_model(
        "STABLEHLO_SORT",
        [(shape, dtype), (shape, np.int32)],
        [(shape, dtype), (shape, np.int32)],
        dict(dimension=d, is_stable=True, comparator_subgraph_index=1),
        [
            (
                (dtype, dtype, np.int32, np.int32),
                "STABLEHLO_COMPARE",
                dict(comparison_direction=3 if descending else 5),
                np.bool_,
            )
        ],
    )
    k_out, p_out = run_ours(model, [keys, payload])
    for line in np.ndindex(*[n for k, n in enumerate(shape) if k != d]):
        sel = line[:d] + (slice(None),) + line[d:]
        pairs = sorted(zip(keys[sel].tolist(), payload[sel].tolist()), key=lambda kv: -kv[0] if descending else kv[0])
        np.testing.assert_array_equal(k_out[sel], [k for k, _ in pairs])  # sorted() is stable
        np.testing.assert_array_equal(p_out[sel], [p for _, p in pairs])


def test_beyond_while_counts_and_doubles():
    b = ModelBuilder()
    i, x = b.input("i", (), np.int32), b.input("x", (2, 3), np.float32)
    oi, ox = b.tensor("oi", (), np.int32), b.tensor("ox", (2, 3), np.float32)
    b.op("STABLEHLO_WHILE", [i, x], [oi, ox], dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(oi, ox)
    b.subgraph("cond")
    ci, _ = b.input("i", (), np.int32), b.input("x", (2, 3), np.float32)
    c = b.tensor("c", (), np.bool_)
    b.op("STABLEHLO_COMPARE", [ci, b.const("three", np.int32(3))], [c], dict(comparison_direction=5))
    b.output(c)
    b.subgraph("body")
    bi, bx = b.input("i", (), np.int32), b.input("x", (2, 3), np.float32)
    i2, x2 = b.tensor("i2", (), np.int32), b.tensor("x2", (2, 3), np.float32)
    b.op("STABLEHLO_ADD", [bi, b.const("one", np.int32(1))], [i2])
    b.op("STABLEHLO_ADD", [bx, bx], [x2])
    b.output(i2, x2)
    x0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    for start, expected_doublings in ((0, 3), (2, 1), (5, 0)):
        oi_, ox_ = run_ours(b.build(), [np.int32(start), x0])
        assert int(oi_) == max(start, 3)
        np.testing.assert_array_equal(ox_, x0 * 2.0**expected_doublings)


@given(data=st.data(), dtype=st.sampled_from([np.float32, np.int32]))
def test_beyond_convolution(data, dtype):
    ns = data.draw(st.integers(1, 2), label="spatial dims")
    small = st.integers(1, 3)
    groups = data.draw(st.integers(1, 2), label="groups")
    n, ic, ocg = data.draw(small), data.draw(small), data.draw(small)
    sp = [data.draw(st.integers(1, 4)) for _ in range(ns)]
    ks = [data.draw(small) for _ in range(ns)]
    strides, ldil, rdil = ([data.draw(st.integers(1, 2)) for _ in range(ns)] for _ in range(3))
    pad = [data.draw(st.integers(-1, 2)) for _ in range(2 * ns)]
    padded = [(s - 1) * d + 1 + pad[2 * i] + pad[2 * i + 1] for i, (s, d) in enumerate(zip(sp, ldil))]
    osz = [(p - ((k - 1) * r + 1)) // s + 1 for p, k, r, s in zip(padded, ks, rdil, strides)]
    assume(all(m >= 1 for m in osz))
    c, oc = ic * groups, ocg * groups
    # logical layouts (N, C, S...), (O, I, K...), (N, O, S...) stored in drawn physical orders
    rank = ns + 2
    ip, kp, op = (data.draw(st.permutations(range(rank)), label=f"{w} layout") for w in ("in", "kernel", "out"))
    lx = (_beyond_values(data, [n, c, *sp], dtype) % 5).astype(dtype)
    lk = (_beyond_values(data, [oc, ic, *ks], dtype) % 3).astype(dtype)
    x, k = np.transpose(lx, np.argsort(ip)), np.transpose(lk, np.argsort(kp))  # logical axis j lives at ip[j]
    out_log = [n, oc, *osz]
    out_shape = [0] * rank
    for j, ax in enumerate(op):
        out_shape[ax] = out_log[j]
    opts = dict(
        window_strides=strides,
        padding=pad,
        lhs_dilation=ldil,
        rhs_dilation=rdil,
        input_batch_dimension=ip[0],
        input_feature_dimension=ip[1],
        input_spatial_dimensions=list(ip[2:]),
        kernel_output_feature_dimension=kp[0],
        kernel_input_feature_dimension=kp[1],
        kernel_spatial_dimensions=list(kp[2:]),
        output_batch_dimension=op[0],
        output_feature_dimension=op[1],
        output_spatial_dimensions=list(op[2:]),
        feature_group_count=groups,
        batch_group_count=1,
    )
    model = single_op_model(
        "STABLEHLO_CONVOLUTION", [T(x.shape, dtype), T(k.shape, dtype)], [T(out_shape, dtype)], opts
    )
    (out,) = run_ours(model, [x, k])

    def xval(b, ch, pos):  # the dilated, padded input by its definition
        idx = []
        for i, p in enumerate(pos):
            q = p - pad[2 * i]
            if q < 0 or q % ldil[i] or q // ldil[i] >= sp[i]:
                return 0
            idx.append(q // ldil[i])
        return int(lx[(b, ch, *idx)]) if dtype is np.int32 else float(lx[(b, ch, *idx)])

    def elem(ix):
        b, o_, ys = ix[0], ix[1], ix[2:]
        g = o_ // ocg
        total = 0
        for i in range(ic):
            for t in np.ndindex(*ks):
                pos = [y * s + tt * r for y, s, tt, r in zip(ys, strides, t, rdil)]
                total += xval(b, g * ic + i, pos) * lk[(o_, i, *t)].item()
        return total

    expected = np.transpose(_loop_ref(out_log, elem, np.float64), np.argsort(op))
    np.testing.assert_allclose(out, expected.astype(dtype), rtol=1e-5)
