"""WHILE, IF and CALL_ONCE in multi-subgraph models, against the oracle (every result is exact: the ops run
integer or exactly-rounded float arithmetic inside the subgraphs and copy values between them)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import litert_py
from litert_py import InvalidModelError, PrepareError
from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import oracle, run_both, run_ours
from tests.values import ints, uniform

#: Float tolerance per op: exact (the loop bodies use ADD/MUL on values that round the same way in both).
TOLERANCE = {"WHILE": 0.0, "IF": 0.0}

DTYPES = {"float32": np.float32, "int32": np.int32}
RESOURCE = dtypes.TensorType.RESOURCE
seeds = st.integers(0, 2**32 - 1)


def _values(rng, shape, dt):
    return uniform(rng, shape, dt, -2, 2) if np.dtype(dt).kind == "f" else ints(rng, shape, dt, -5, 5)


def _while_model(shape, dt, grow: bool = False) -> bytes:
    """(i, flags, x) -> WHILE flags[i]: i += 1, x = x * 2 + 1 (or x = concat(x, row) when ``grow``)."""
    b = ModelBuilder()
    i, flags, x = b.input("i", (), np.int32), b.input("flags", (6,), np.bool_), b.input("x", shape, dt)
    outs = [b.tensor("i_out", (), np.int32), b.tensor("flags_out", (6,), np.bool_), b.tensor("x_out", shape, dt)]
    b.op("WHILE", [i, flags, x], outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(*outs)
    b.subgraph("cond")
    ci, cf, _ = b.input("i", (), np.int32), b.input("flags", (6,), np.bool_), b.input("x", shape, dt)
    c = b.tensor("c", (), np.bool_)
    b.op("GATHER", [cf, ci], [c], dict(axis=0))
    b.output(c)
    b.subgraph("body")
    bi, bf, bx = b.input("i", (), np.int32), b.input("flags", (6,), np.bool_), b.input("x", shape, dt)
    i2 = b.tensor("i2", (), np.int32)
    b.op("ADD", [bi, b.const("one", np.int32(1))], [i2])
    x2 = b.tensor("x2", shape, dt)
    if grow:
        row = b.const("row", np.ones((1,) + tuple(shape[1:]), dt))
        b.op("CONCATENATION", [bx, row], [x2], dict(axis=0))
    else:
        x1 = b.tensor("x1", shape, dt)
        b.op("MUL", [bx, b.const("two", np.full((), 2, dt))], [x1])
        b.op("ADD", [x1, b.const("one_x", np.full((), 1, dt))], [x2])
    b.output(i2, bf, x2)
    return b.build()


def _flags(n: int) -> np.ndarray:
    return np.array([True] * n + [False] * (6 - n))


@given(
    seed=seeds,
    dtype=st.sampled_from(sorted(DTYPES)),
    start=st.integers(0, 5),
    shape=st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple),
)
def test_while_counted_loop(seed, dtype, start, shape):
    rng = np.random.default_rng(seed)
    dt = DTYPES[dtype]
    inputs = [np.int32(start), _flags(rng.integers(start, 6)), _values(rng, shape, dt)]
    ours, theirs = run_both(_while_model(shape, dt), inputs)
    assert_close(ours, theirs, rtol=TOLERANCE["WHILE"], atol=0)


@given(seed=seeds, dtype=st.sampled_from(sorted(DTYPES)), start=st.integers(0, 5), cols=st.integers(1, 3))
def test_while_loop_values_change_shape(seed, dtype, start, cols):
    """The body grows x by one row per iteration: cond and body are re-prepared, the outputs are dynamic."""
    rng = np.random.default_rng(seed)
    dt = DTYPES[dtype]
    inputs = [np.int32(start), _flags(rng.integers(start, 6)), _values(rng, (2, cols), dt)]
    model = _while_model((2, cols), dt, grow=True)
    ours, theirs = run_both(model, inputs)
    assert_close(ours, theirs, rtol=0, atol=0)
    assert ours[2].shape[0] == 2 + int(inputs[1].sum()) - start


def _invoke_all(it, inputs):
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def test_while_state_across_invokes_and_subgraph_tensors():
    """Repeated invokes with loops of different lengths (the grown shape changes between invokes), and
    get_tensor(i, subgraph_index=k) after each invoke. LiteRT's WHILE lends its buffers to cond and body
    (shallow copies), so their non-constant tensors read back as null or stale bytes there; litert_py keeps
    the values of the last run: cond's inputs hold the final loop values, which must equal the oracle's
    outputs. Constants of the subgraphs read back alike in both."""
    LiteRT, _ = oracle()
    model = _while_model((1, 2), np.float32, grow=True)
    runs = []
    for I in (LiteRT, litert_py.Interpreter):
        it = I(model_content=model)
        it.allocate_tensors()
        seen = []
        for start, n in [(0, 3), (1, 5), (2, 2), (0, 0)]:
            x = np.arange(2, dtype=np.float32).reshape(1, 2) + start
            seen.append(_invoke_all(it, [np.int32(start), _flags(n), x]))
            seen[-1].append(it.get_tensor(4, subgraph_index=2))  # the body's constant 1
            if I is litert_py.Interpreter:
                cond_inputs = [it.get_tensor(k, subgraph_index=1) for k in range(3)]
                assert_close(cond_inputs, seen[-1][:3], rtol=0, atol=0)
        runs.append(seen)
    for a, b in zip(*runs):
        assert_close(a, b, rtol=0, atol=0)


def _if_model(shape, dt, reshape_then: bool = False) -> bytes:
    """IF c: then x + y (or reshape(x, [-1]) when ``reshape_then``), else x * y."""
    b = ModelBuilder()
    c, x, y = b.input("c", (), np.bool_), b.input("x", shape, dt), b.input("y", shape, dt)
    out = b.tensor("out", shape, dt)
    b.op("IF", [c, x, y], [out], dict(then_subgraph_index=1, else_subgraph_index=2))
    b.output(out)
    for name in ("then", "else"):
        b.subgraph(name)
        bx, by = b.input("x", shape, dt), b.input("y", shape, dt)
        if name == "then" and reshape_then:
            r = b.tensor("r", (int(np.prod(shape)),), dt)
            b.op("RESHAPE", [bx, b.const("s", np.array([-1], np.int32))], [r])
        else:
            r = b.tensor("r", shape, dt)
            b.op("ADD" if name == "then" else "MUL", [bx, by], [r])
        b.output(r)
    return b.build()


@given(
    seed=seeds,
    dtype=st.sampled_from(sorted(DTYPES)),
    cond=st.booleans(),
    reshape_then=st.booleans(),
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
)
def test_if(seed, dtype, cond, reshape_then, shape):
    rng = np.random.default_rng(seed)
    dt = DTYPES[dtype]
    inputs = [np.bool_(cond), _values(rng, shape, dt), _values(rng, shape, dt)]
    ours, theirs = run_both(_if_model(shape, dt, reshape_then), inputs)
    assert_close(ours, theirs, rtol=TOLERANCE["IF"], atol=0)


def test_if_switches_branch_between_invokes():
    LiteRT, _ = oracle()
    model = _if_model((2, 3), np.float32, reshape_then=True)
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 3, np.float32)
    runs = []
    for I in (LiteRT, litert_py.Interpreter):
        it = I(model_content=model)
        it.allocate_tensors()
        runs.append([_invoke_all(it, [np.bool_(c), x, y]) for c in (True, False, True, False)])
    for a, b in zip(*runs):
        assert_close(a, b, rtol=0, atol=0)


def _nested_model() -> bytes:
    """WHILE flags[i]: i += 1; x = IF parity[i] (then x * 2, else x + 3): an IF inside a loop body."""
    b = ModelBuilder()
    i, flags, x = b.input("i", (), np.int32), b.input("flags", (6,), np.bool_), b.input("x", (3,), np.int32)
    outs = [b.tensor("i_out", (), np.int32), b.tensor("flags_out", (6,), np.bool_), b.tensor("x_out", (3,), np.int32)]
    b.op("WHILE", [i, flags, x], outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(*outs)
    b.subgraph("cond")
    ci, cf, _ = b.input("i", (), np.int32), b.input("flags", (6,), np.bool_), b.input("x", (3,), np.int32)
    c = b.tensor("c", (), np.bool_)
    b.op("GATHER", [cf, ci], [c], dict(axis=0))
    b.output(c)
    b.subgraph("body")
    bi, bf, bx = b.input("i", (), np.int32), b.input("flags", (6,), np.bool_), b.input("x", (3,), np.int32)
    i2, even, x2 = b.tensor("i2", (), np.int32), b.tensor("even", (), np.bool_), b.tensor("x2", (3,), np.int32)
    b.op("ADD", [bi, b.const("one", np.int32(1))], [i2])
    b.op("GATHER", [b.const("parity", np.arange(7) % 2 == 0), bi], [even], dict(axis=0))
    b.op("IF", [even, bx], [x2], dict(then_subgraph_index=3, else_subgraph_index=4))
    b.output(i2, bf, x2)
    for name, op, k in (("double", "MUL", 2), ("plus3", "ADD", 3)):
        b.subgraph(name)
        sx = b.input("x", (3,), np.int32)
        r = b.tensor("r", (3,), np.int32)
        b.op(op, [sx, b.const("k", np.int32(k))], [r])
        b.output(r)
    return b.build()


@given(seed=seeds, start=st.integers(0, 5))
def test_if_nested_in_while_body(seed, start):
    rng = np.random.default_rng(seed)
    inputs = [np.int32(start), _flags(rng.integers(start, 6)), rng.integers(-9, 10, 3).astype(np.int32)]
    ours, theirs = run_both(_nested_model(), inputs)
    assert_close(ours, theirs, rtol=0, atol=0)


def _swap_model(sum_first: bool) -> bytes:
    """Body (i, flags, a, b) -> (i + 1, flags, b, a + b), or (i + 1, flags, a + b, a) when ``sum_first``: a
    body output that is the body's input tensor at another position (Fibonacci-like, exact in int32)."""
    b = ModelBuilder()
    ins = [
        b.input("i", (), np.int32),
        b.input("flags", (6,), np.bool_),
        b.input("a", (2,), np.int32),
        b.input("b", (2,), np.int32),
    ]
    outs = [
        b.tensor(n, s, t)
        for n, s, t in (
            ("i_o", (), np.int32),
            ("f_o", (6,), np.bool_),
            ("a_o", (2,), np.int32),
            ("b_o", (2,), np.int32),
        )
    ]
    b.op("WHILE", ins, outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(*outs)
    for name in ("cond", "body"):
        b.subgraph(name)
        i, f, x, y = (
            b.input("i", (), np.int32),
            b.input("flags", (6,), np.bool_),
            b.input("a", (2,), np.int32),
            b.input("b", (2,), np.int32),
        )
        if name == "cond":
            c = b.tensor("c", (), np.bool_)
            b.op("GATHER", [f, i], [c], dict(axis=0))
            b.output(c)
        else:
            i2, s = b.tensor("i2", (), np.int32), b.tensor("s", (2,), np.int32)
            b.op("ADD", [i, b.const("one", np.int32(1))], [i2])
            b.op("ADD", [x, y], [s])
            b.output(*((i2, f, s, x) if sum_first else (i2, f, y, s)))
    return b.build()


@given(seed=seeds, start=st.integers(0, 5), sum_first=st.booleans())
def test_while_body_swaps_loop_values(seed, start, sum_first):
    """Loop values must not be written over each other between iterations. With (b, a + b) LiteRT agrees;
    with (a + b, a) ai-edge-litert 2.3.0 returns a == b (its WHILE lends the body's input buffer to two
    loop values), so that order is checked against the loop run in numpy instead."""
    rng = np.random.default_rng(seed)
    inputs = [
        np.int32(start),
        _flags(rng.integers(start, 6)),
        rng.integers(-5, 6, 2).astype(np.int32),
        rng.integers(-5, 6, 2).astype(np.int32),
    ]
    model = _swap_model(sum_first)
    if not sum_first:
        ours, theirs = run_both(model, inputs)
        assert_close(ours, theirs, rtol=0, atol=0)
        return
    i, flags, a, b = inputs
    while flags[i]:
        i, a, b = np.int32(i + 1), a + b, a
    assert_close(run_ours(model, inputs), [np.array(i), flags, a, b], rtol=0, atol=0)


def _accumulator_model() -> bytes:
    """A WHILE whose body adds x to a resource variable n times (the variable is set to 0 by CALL_ONCE);
    the main graph returns the variable after the loop: state shared by three subgraphs across invokes."""
    b = ModelBuilder()
    n, x = b.input("n", (), np.int32), b.input("x", (2,), np.float32)
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 3})
    n_out, x_out = b.tensor("n_out", (), np.int32), b.tensor("x_out", (2,), np.float32)
    b.op("WHILE", [n, x], [n_out, x_out], dict(cond_subgraph_index=1, body_subgraph_index=2))
    h = b.tensor("h", (), None, tensor_type=RESOURCE)
    b.op("VAR_HANDLE", [], [h], {"shared_name": "acc"})
    acc = b.tensor("acc", (2,), np.float32)
    b.op("READ_VARIABLE", [h], [acc])
    b.output(acc)
    b.subgraph("cond")  # n > 0, as GATHER of a constant [False, True, True, ...] at min(n, 7)
    cn, _ = b.input("n", (), np.int32), b.input("x", (2,), np.float32)
    m = b.tensor("m", (), np.int32)
    b.op("MINIMUM", [cn, b.const("seven", np.int32(7))], [m])
    c = b.tensor("c", (), np.bool_)
    b.op("GATHER", [b.const("table", np.array([False] + [True] * 7)), m], [c], dict(axis=0))
    b.output(c)
    b.subgraph("body")
    bn, bx = b.input("n", (), np.int32), b.input("x", (2,), np.float32)
    n2 = b.tensor("n2", (), np.int32)
    b.op("SUB", [bn, b.const("one", np.int32(1))], [n2])
    bh = b.tensor("h", (), None, tensor_type=RESOURCE)
    b.op("VAR_HANDLE", [], [bh], {"shared_name": "acc"})
    v, v2 = b.tensor("v", (2,), np.float32), b.tensor("v2", (2,), np.float32)
    b.op("READ_VARIABLE", [bh], [v])
    b.op("ADD", [v, bx], [v2])
    b.op("ASSIGN_VARIABLE", [bh, v2], [])
    b.output(n2, bx)
    b.subgraph("init")
    ih = b.tensor("h", (), None, tensor_type=RESOURCE)
    b.op("VAR_HANDLE", [], [ih], {"shared_name": "acc"})
    b.op("ASSIGN_VARIABLE", [ih, b.const("zero", np.zeros(2, np.float32))], [])
    return b.build()


def test_variable_updated_in_loop_body_across_invokes_and_reset():
    LiteRT, _ = oracle()
    model = _accumulator_model()
    x = np.array([1.0, -0.5], np.float32)
    runs = []
    for I in (LiteRT, litert_py.Interpreter):
        it = I(model_content=model)
        it.allocate_tensors()
        seen = []
        for k, n in enumerate([2, 3, 0, 1, 4]):
            if k == 3:
                it.reset_all_variables()
            seen.append(_invoke_all(it, [np.int32(n), x]))
        runs.append(seen)
    for k, (a, b) in enumerate(zip(*runs)):
        np.testing.assert_array_equal(a[0], b[0], err_msg=f"invoke {k}")
    assert runs[1][1][0].tolist() == [5.0, -2.5]


def test_signature_runners_on_different_subgraphs():
    """Two signatures, each on its own subgraph; runners called in turn keep their own shapes."""
    b = ModelBuilder()
    x, y = b.input("x", (2,), np.float32), b.input("y", (2,), np.float32)
    s = b.tensor("s", (2,), np.float32)
    b.op("ADD", [x, y], [s])
    b.output(s)
    b.signature("add", {"x": x, "y": y}, {"sum": s}, subgraph=0)
    b.subgraph("mul")
    a, c = b.input("a", (3,), np.int32), b.input("b", (3,), np.int32)
    p = b.tensor("p", (3,), np.int32)
    b.op("MUL", [a, c], [p])
    b.output(p)
    b.signature("mul", {"a": a, "b": c}, {"product": p}, subgraph=1)
    model = b.build()
    LiteRT, _ = oracle()
    runs = []
    for I in (LiteRT, litert_py.Interpreter):
        it = I(model_content=model)
        add, mul = it.get_signature_runner("add"), it.get_signature_runner("mul")
        runs.append(
            [
                add(x=np.array([1, 2], np.float32), y=np.array([3, 4], np.float32))["sum"],
                mul(a=np.array([1, 2, 3], np.int32), b=np.array([4, 5, 6], np.int32))["product"],
                mul(a=np.arange(5, dtype=np.int32), b=np.arange(5, dtype=np.int32))["product"],
                add(x=np.array([0.5], np.float32), y=np.array([0.25], np.float32))["sum"],
            ]
        )
        assert it.get_signature_list() == {
            "add": {"inputs": ["x", "y"], "outputs": ["sum"]},
            "mul": {"inputs": ["a", "b"], "outputs": ["product"]},
        }
    assert_close(runs[1], runs[0], rtol=0, atol=0)


# -- errors -----------------------------------------------------------------------------------------
def _recursive_model(indirect: bool) -> bytes:
    """Subgraph 0 runs WHILE with body 1; body 1 calls subgraph 0 again (through IF when ``indirect``: then
    subgraph 0 itself is reached through subgraph 2)."""
    b = ModelBuilder()
    x = b.input("x", (), np.bool_)
    o = b.tensor("o", (), np.bool_)
    b.op("WHILE", [x], [o], dict(cond_subgraph_index=1, body_subgraph_index=2 if indirect else 0))
    b.output(o)
    b.subgraph("cond")
    c = b.input("x", (), np.bool_)
    b.output(c)
    b.subgraph("body")
    bx = b.input("x", (), np.bool_)
    bo = b.tensor("o", (), np.bool_)
    b.op("IF", [bx, bx], [bo], dict(then_subgraph_index=0, else_subgraph_index=1))
    b.output(bo)
    return b.build()


@pytest.mark.parametrize("indirect", [False, True], ids=["while-body-is-caller", "while-body-if-calls-caller"])
def test_recursive_subgraphs_rejected(indirect, monkeypatch):
    model = _recursive_model(indirect)
    with pytest.raises(InvalidModelError, match="cycle"):  # the reader sees the cycle first
        litert_py.Interpreter(model_content=model)
    # past the reader (e.g. a model read by other means), prepare still refuses the recursion
    monkeypatch.setattr("litert_py.schema.validate._find_cycle", lambda edges: None)
    it = litert_py.Interpreter(model_content=model)
    with pytest.raises(PrepareError, match="recursively"):
        it.allocate_tensors()


def _both_reject(model: bytes, oracle_rejects: bool = True) -> None:
    LiteRT, _ = oracle()
    if oracle_rejects:
        with pytest.raises(RuntimeError):
            LiteRT(model_content=model).allocate_tensors()
    with pytest.raises(PrepareError):
        litert_py.Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize(
    "case", ["if-int32-condition", "if-branch-input-type", "while-cond-not-bool", "while-body-output-type"]
)
def test_invalid_control_flow_rejected(case):
    b = ModelBuilder()
    if case.startswith("if"):
        c = b.input("c", (), np.int32 if case == "if-int32-condition" else np.bool_)
        x = b.input("x", (2,), np.float32)
        o = b.tensor("o", (2,), np.float32)
        b.op("IF", [c, x], [o], dict(then_subgraph_index=1, else_subgraph_index=1))
        b.output(o)
        b.subgraph("branch")
        bx = b.input("x", (2,), np.int32 if case == "if-branch-input-type" else np.float32)
        b.output(bx)
    else:
        x = b.input("x", (2,), np.float32)
        o = b.tensor("o", (2,), np.float32)
        b.op("WHILE", [x], [o], dict(cond_subgraph_index=1, body_subgraph_index=2))
        b.output(o)
        b.subgraph("cond")
        cx = b.input("x", (2,), np.float32)
        if case == "while-cond-not-bool":
            b.output(cx)
        else:
            b.output(b.const("false", np.bool_(False)))
        b.subgraph("body")
        bx = b.input("x", (2,), np.float32)
        if case == "while-body-output-type":
            b.output(b.const("k", np.zeros(2, np.int32)))
        else:
            b.output(bx)
    # LiteRT copies the node's input types over a branch's declared input types (CopyTensorsShapeAndType)
    # and so runs "if-branch-input-type"; litert_py keeps the model's types and refuses the mismatch.
    _both_reject(b.build(), oracle_rejects=case != "if-branch-input-type")
