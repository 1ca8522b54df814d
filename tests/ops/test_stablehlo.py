"""StableHLO ops that ai-edge-litert registers, and the builtin REDUCE_WINDOW, against the oracle.

One case table drives the differential test: each entry draws a model (shapes, options) and its inputs with
hypothesis. Every path is exact (no float op rounds differently in the two runtimes: the elementwise ops are
single IEEE operations and the reductions accumulate in the same order), so floats compare exactly. A few
spec examples (StableHLO spec, pad and gather) check the semantics independently of LiteRT.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.schema.writer import ModelBuilder
from tests.ops._values import assert_matches, regimes, values
from tests.oracle import T, run_both, run_ours, single_op_model

# BUILTIN_REF lacks STABLEHLO_AND and STABLEHLO_SHIFT_LEFT: their builtin kernels run without delegates.
RESOLVER = {"STABLEHLO_AND": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
            "STABLEHLO_SHIFT_LEFT": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}

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
    if dtype is np.bool_:
        return rng.random(shape) < 0.5
    return values(rng, shape, dtype, data.draw(regimes(dtype), label="regime"))


def _shape(data, min_rank=0, max_rank=4, max_dim=4, min_dim=0):
    rank = data.draw(st.integers(min_rank, max_rank), label="rank")
    return tuple(data.draw(st.lists(st.integers(min_dim, max_dim), min_size=rank, max_size=rank), label="shape"))


def binary_case(op, dtype):
    def build(data):
        shape = _shape(data)
        x = _values(data, shape, dtype)
        if op == "STABLEHLO_SHIFT_LEFT":  # counts in [0, bits): beyond, C++ is undefined behaviour
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
        assume(all(n >= 0 for n in out))
        x = _values(data, shape, dtype)
        pv = _values(data, (), dtype)
        model = single_op_model("STABLEHLO_PAD", [T(shape, dtype), T.const(pv, dtype)], [T(out, dtype)],
                                dict(edge_padding_low=lo, edge_padding_high=hi, interior_padding=it))
        return model, [x]

    return build


def gather_case(dtype, index_dtype=np.int32):
    def build(data):
        shape = _shape(data, 1, 3, 4, 1)
        rank = len(shape)
        sizes = [data.draw(st.integers(1, n), label="slice_size") for n in shape]
        collapsed = [d for d in range(rank) if sizes[d] == 1 and data.draw(st.booleans(), label="collapse")]
        smap = data.draw(st.permutations(range(rank)), label="perm")[:data.draw(st.integers(1, rank), label="m")]
        batch = list(data.draw(st.lists(st.integers(1, 3), max_size=2), label="batch"))
        m = len(smap)
        implicit = m == 1 and data.draw(st.booleans(), label="implicit")
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
        opts = dict(offset_dims=offset_dims, collapsed_slice_dims=collapsed, start_index_map=list(smap),
                    index_vector_dim=ivd, slice_sizes=sizes)
        return single_op_model("STABLEHLO_GATHER", [T(shape, dtype), T(ind.shape, index_dtype)],
                               [T(out, dtype)], opts), [x, ind]

    return build


def _window(data, shape, base=(1,), pad=(0, 0)):
    rank = len(shape)
    lists = lambda lo, hi, n=rank: st.lists(st.integers(lo, hi), min_size=n, max_size=n)  # noqa: E731
    win = data.draw(lists(1, 3), label="window")
    strides = data.draw(lists(1, 2), label="strides")
    wdil = data.draw(lists(1, 2), label="window_dilations")
    bdil = data.draw(lists(*base), label="base_dilations") if len(base) == 2 else [1] * rank
    padding = data.draw(lists(*pad, 2 * rank), label="padding")
    sizes = [((n - 1) * b + 1 if n else 0) + padding[2 * d] + padding[2 * d + 1]
             for d, (n, b) in enumerate(zip(shape, bdil))]
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
        model = single_op_model("REDUCE_WINDOW", [T(shape, dtype), T.const(init, dtype), i64(win), i64(strides),
                                                  i64(wdil)], [T(out, dtype)], dict(reduce_function=RW_FUNCS[fn]))
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
        b.op("STABLEHLO_REDUCE_WINDOW", [xi, b.const("init", np.asarray(init, dtype))], [o],
             dict(window_dimensions=win, window_strides=strides, base_dilations=bdil, window_dilations=wdil,
                  padding=padding, body_subgraph_index=1))
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


CASES = [(f"{op[10:].lower()}-{_name(dt)}", op, binary_case(op, dt)) for op, dts in BINARY_DTYPES.items()
         for dt in dts]
CASES += [(f"pad-{_name(dt)}", "STABLEHLO_PAD", pad_case(dt)) for dt in MOVE_DTYPES]
CASES += [(f"gather-{_name(dt)}", "STABLEHLO_GATHER", gather_case(dt)) for dt in MOVE_DTYPES]
CASES += [("gather-float32-int64-indices", "STABLEHLO_GATHER", gather_case(np.float32, np.int64))]
CASES += [(f"reduce_window-{fn.lower()}-{_name(dt)}", "REDUCE_WINDOW", reduce_window_case(fn, dt))
          for dt in RW_DTYPES for fn in (("ALL", "ANY") if dt is np.bool_ else ("ADD", "MUL", "MINIMUM", "MAXIMUM"))]
CASES += [(f"stablehlo_reduce_window-{body.lower()}-{_name(dt)}", "STABLEHLO_REDUCE_WINDOW",
           stablehlo_reduce_window_case(body, dt))
          for body, dts in (("STABLEHLO_ADD", (np.float32, np.int8, np.int32)), ("ADD", (np.float32,)),
                            ("STABLEHLO_MAXIMUM", (np.float32, np.int16, np.int64, np.uint8)),
                            ("STABLEHLO_MINIMUM", (np.float32, np.int32)), ("STABLEHLO_MULTIPLY", (np.float32,)),
                            ("LOGICAL_AND", (np.bool_,)), ("LOGICAL_OR", (np.bool_,)))
          for dt in dts]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@given(data=st.data())
def test_stablehlo(case, data):
    name, op, build = case
    model, inputs = build(data)
    ours, theirs = run_both(model, inputs, resolver=RESOLVER.get(op, "BUILTIN_REF"))
    assert_matches(ours, theirs, rtol=TOLERANCE.get(name, 0.0))


# --------------------------------------------------------------------------------------------------------
# Spec examples (StableHLO specification): semantics checked without the oracle
# --------------------------------------------------------------------------------------------------------


def test_pad_spec_example():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    model = single_op_model("STABLEHLO_PAD", [T((2, 3), np.int32), T.const(np.int32(0))], [T((7, 5), np.int32)],
                            dict(edge_padding_low=[0, 1], edge_padding_high=[2, 1], interior_padding=[1, 2]))
    expected = [[0, 1, 0, 0, 2, 0, 0, 3, 0], [0] * 9, [0, 4, 0, 0, 5, 0, 0, 6, 0], [0] * 9, [0] * 9]
    # the spec's example: result shape [5, 9]; dims: 2 + 1*1 + 0 + 2 = 5, 3 + 2*2 + 1 + 1 = 9
    model = single_op_model("STABLEHLO_PAD", [T((2, 3), np.int32), T.const(np.int32(0))], [T((5, 9), np.int32)],
                            dict(edge_padding_low=[0, 1], edge_padding_high=[2, 1], interior_padding=[1, 2]))
    (out,) = run_ours(model, [x])
    np.testing.assert_array_equal(out, expected)


def test_gather_spec_example():
    operand = np.arange(24, dtype=np.int32).reshape(3, 4, 2) + 1
    idx = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]], np.int32)
    model = single_op_model("STABLEHLO_GATHER", [T((3, 4, 2), np.int32), T((2, 3, 2), np.int32)],
                            [T((2, 3, 2, 2), np.int32)],
                            dict(offset_dims=[2, 3], collapsed_slice_dims=[0], start_index_map=[1, 0],
                                 index_vector_dim=2, slice_sizes=[1, 2, 2]))
    (out,) = run_ours(model, [operand, idx])
    # independent formulation: out[b0, b1, o0, o1] = operand[clamp(i1), clamp(i0) + o0, o1]
    expected = np.empty((2, 3, 2, 2), np.int32)
    for b0, b1 in np.ndindex(2, 3):
        s1, s0 = idx[b0, b1]
        s0, s1 = min(max(s0, 0), 3 - 1), min(max(s1, 0), 4 - 2)
        expected[b0, b1] = operand[s0, s1:s1 + 2, 0:2]
    np.testing.assert_array_equal(out, expected)


def test_shift_left_out_of_range_counts_give_zero():
    x = np.array([3, -5, 7, 1], np.int32)
    s = np.array([32, -1, 40, 31], np.int32)
    model = single_op_model("STABLEHLO_SHIFT_LEFT", [T((4,), np.int32), T((4,), np.int32)], [T((4,), np.int32)])
    (out,) = run_ours(model, [x, s])
    np.testing.assert_array_equal(out, [0, 0, 0, np.int32(-(2**31))])


# --------------------------------------------------------------------------------------------------------
# Error paths: LiteRT rejects these at prepare, litert_py too
# --------------------------------------------------------------------------------------------------------

REJECTED = [
    ("and-float32", single_op_model("STABLEHLO_AND", [T((3,), np.float32), T((3,), np.float32)],
                                    [T((3,), np.float32)])),
    ("add-shape-mismatch", single_op_model("STABLEHLO_ADD", [T((3,), np.float32), T((1,), np.float32)],
                                           [T((3,), np.float32)])),
    ("add-type-mismatch", single_op_model("STABLEHLO_ADD", [T((3,), np.float32), T((3,), np.int32)],
                                          [T((3,), np.float32)])),
    ("shift_left-uint8", single_op_model("STABLEHLO_SHIFT_LEFT", [T((3,), np.uint8), T((3,), np.uint8)],
                                         [T((3,), np.uint8)])),
    ("pad-negative-interior", single_op_model(
        "STABLEHLO_PAD", [T((3,), np.float32), T.const(np.float32(0))], [T((3,), np.float32)],
        dict(edge_padding_low=[0], edge_padding_high=[0], interior_padding=[-1]))),
]


@pytest.mark.parametrize("model", [m for _, m in REJECTED], ids=[n for n, _ in REJECTED])
def test_rejected(model):
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
