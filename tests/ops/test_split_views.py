"""A SPLIT whose outputs only float32 ADD / SUB / MUL steps read (elementwise.ArithmeticViews, and
activations.ArithmeticThenActivation where a LOGISTIC / TANH reads the arithmetic) is dropped, each reader taking
its operand as a view of the split's source at input 0, 1 or both (ops/slice_views.fuse_slice_views; a GRU's gates
in a WHILE body). The fused outputs equal the unfused graph's (every step run: experimental_preserve_all_tensors)
bit for bit, with broadcasting operands and strided views (two rows split along the last axis), and BUILTIN_REF's
within float tolerance. A split output read twice, or kept as a model output, is not read as a view."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.ops.bound_chain import member_ops
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import run_litert

F32 = np.float32
#: overflowing sums and products (clamped to +-FLT_MAX), NaN, infinities, signed zeros, denormals
SPECIAL = np.array([3e38, -3e38, np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-45, -1e-40, 0.5, -2.0], F32)


def _fc_split(b: ModelBuilder, rng, x: int, name: str, rows: int, depth: int, units: int) -> list[int]:
    """FULLY_CONNECTED (rows, depth) -> (rows, 3 units), SPLIT along the last axis into three (rows, units)."""
    w = b.const(f"w_{name}", rng.standard_normal((3 * units, depth)).astype(F32))
    bias = b.const(f"b_{name}", rng.standard_normal(3 * units).astype(F32))
    y = b.tensor(f"fc_{name}", (rows, 3 * units), F32)
    b.op("FULLY_CONNECTED", [x, w, bias], [y])
    parts = [b.tensor(f"{name}{k}", (rows, units), F32) for k in range(3)]
    b.op("SPLIT", [b.const(f"axis_{name}", np.array(1, np.int32)), y], parts, {"num_splits": 3})
    return parts


def _binary(b: ModelBuilder, op: str, a: int, c: int, shape, name: str, act: int = 0) -> int:
    t = b.tensor(name, shape, F32)
    b.op(op, [a, c], [t], {"fused_activation_function": act})
    return t


def _unary(b: ModelBuilder, op: str, a: int, shape, name: str) -> int:
    t = b.tensor(name, shape, F32)
    b.op(op, [a], [t])
    return t


def _gru_model(rows: int = 1, depth: int = 16, units: int = 32) -> bytes:
    """A GRU cell's body: the input's and the state's FC -> SPLIT, the gates reading the splits at input 0 and 1."""
    rng = np.random.default_rng(5)
    b = ModelBuilder()
    x, h = b.input("x", (rows, depth), F32), b.input("h", (rows, units), F32)
    xr, xz, xn = _fc_split(b, rng, x, "x", rows, depth, units)
    hr, hz, hn = _fc_split(b, rng, h, "h", rows, units, units)
    s = (rows, units)
    r = _unary(b, "LOGISTIC", _binary(b, "ADD", xr, hr, s, "r_in"), s, "r")
    z = _unary(b, "LOGISTIC", _binary(b, "ADD", hz, xz, s, "z_in"), s, "z")
    n = _unary(b, "TANH", _binary(b, "ADD", xn, _binary(b, "MUL", r, hn, s, "rh"), s, "n_in"), s, "n")
    keep = _binary(b, "MUL", z, h, s, "zh")
    new = _binary(b, "SUB", n, _binary(b, "MUL", z, n, s, "zn"), s, "nn")
    b.output(_binary(b, "ADD", keep, new, s, "h_new"))
    return b.build()


def _run(model: bytes, feeds, **kw):
    """Our steps' names and outputs on ``feeds``, invoked after an invoke on other values (the views made at bind
    read each invoke's values); ``_run.read``: the tensors the steps read."""
    it = litert_py.Interpreter(model_content=model, **kw)
    it.allocate_tensors()
    steps = it._subgraphs[0].steps_nodes
    _run.read = {i for node, _ in steps for i in node.operator.inputs}
    for values in ([x[::-1] * F32(0.5) for x in feeds], feeds):
        for d, x in zip(it.get_input_details(), values):
            it.set_tensor(d["index"], np.ascontiguousarray(x))
        it.invoke()
    names = [type(op).__name__ for op in member_ops(steps)]  # a BoundChain's members (ops/bound_chain.py)
    return names, [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def _check(model: bytes, feeds) -> list[str]:
    """Our outputs equal the unfused graph's bit for bit and BUILTIN_REF's within float tolerance; our step names."""
    names, fused = _run(model, feeds)
    read = _run.read
    unfused_names, unfused = _run(model, feeds, experimental_preserve_all_tensors=True)
    assert "Split" in unfused_names, unfused_names
    for a, c in zip(fused, unfused):
        assert a.dtype == c.dtype == F32 and a.shape == c.shape
        assert np.array_equal(a.view(np.uint32), c.view(np.uint32)), (a, c)
    assert_close(fused, run_litert(model, feeds, "BUILTIN_REF"), rtol_each=1e-5, atol=1e-6)
    _check.read = read  # the tensors our fused steps read
    return names


@pytest.mark.parametrize("rows", [1, 2], ids=["row", "two-rows-strided"])
def test_gru_body_reads_the_splits_as_views(rows):
    rng = np.random.default_rng(rows)
    model = _gru_model(rows)
    for _ in range(3):
        feeds = [rng.standard_normal((rows, 16)).astype(F32) * 2, rng.standard_normal((rows, 32)).astype(F32)]
        names = _check(model, feeds)
    assert "Split" not in names, names
    assert names.count("ArithmeticThenActivation") == 3 and "ArithmeticViews" in names, names


def _split_arith_model(op: str, position: str, other_shape: tuple, act: int = 0):
    """x (2, 8) -> FC -> SPLIT into three (2, 4); ``op`` reads split outputs at ``position`` (0, 1 or both), the
    other operand an input of ``other_shape`` (broadcasting); the outputs are the arithmetic's."""
    rng = np.random.default_rng(2)
    b = ModelBuilder()
    x = b.input("x", (2, 8), F32)
    o = b.input("o", other_shape, F32)
    parts = _fc_split(b, rng, x, "x", 2, 8, 4)
    operands = {"0": (parts[0], o), "1": (o, parts[1]), "both": (parts[2], parts[0])}[position]
    shapes = {"0": ((2, 4), other_shape), "1": (other_shape, (2, 4)), "both": ((2, 4), (2, 4))}[position]
    out = _binary(b, op, *operands, np.broadcast_shapes(*shapes), "y", act)
    rest = [_unary(b, "NEG", p, (2, 4), f"neg{k}") for k, p in enumerate(parts) if p not in operands]
    b.output(out, *rest)
    return b.build()


SHAPES = [(2, 4), (4,), (3, 1, 1)]
CASES = [(op, pos, s) for op in ("ADD", "SUB", "MUL") for pos in ("0", "1", "both") for s in SHAPES]


@pytest.mark.parametrize("op,position,other", CASES, ids=[f"{o.lower()}-in{p}-{len(s)}d{s[0]}" for o, p, s in CASES])
def test_arithmetic_reads_split_outputs_at_each_position(op, position, other):
    rng = np.random.default_rng(len(op) + len(position) + len(other))
    model = _split_arith_model(op, position, other, act=1 if other == (4,) else 0)
    x = rng.standard_normal((2, 8)).astype(F32)
    o = rng.choice(SPECIAL, other).astype(F32)
    names = _check(model, [x, o])
    assert names.count("ArithmeticViews") == 1, names
    if position == "both":  # the third output is read by a NEG (not a view reader): the split stays
        assert "Split" in names, names
    x[0, :] = 1e36  # large operands: the products overflow and clamp to +-FLT_MAX
    _check(model, [x, o])


def test_split_dropped_when_every_output_is_read_as_a_view():
    b = ModelBuilder()
    x = b.input("x", (2, 8), F32)
    p0, p1, p2 = _fc_split(b, np.random.default_rng(4), x, "x", 2, 8, 4)
    y = _binary(b, "MUL", _binary(b, "ADD", p0, p1, (2, 4), "s"), p2, (2, 4), "y")
    b.output(y)
    names = _check(b.build(), [np.random.default_rng(6).standard_normal((2, 8)).astype(F32)])
    assert "Split" not in names and names.count("ArithmeticViews") == 2, names


@pytest.mark.parametrize("case", ["read-twice", "same-operand-twice", "model-output"])
def test_not_read_as_a_view(case):
    """A split output read by two steps (or twice by one), or kept as a model output, stays a copy that its
    readers read (the split's other outputs are read as views)."""
    b = ModelBuilder()
    x = b.input("x", (2, 8), F32)
    p0, p1, p2 = _fc_split(b, np.random.default_rng(4), x, "x", 2, 8, 4)
    s = (2, 4)
    if case == "read-twice":
        outs = [_binary(b, "ADD", p0, p1, s, "y"), _binary(b, "MUL", p2, p0, s, "z")]
    elif case == "same-operand-twice":
        outs = [_binary(b, "ADD", p0, p0, s, "y"), _binary(b, "ADD", p1, p2, s, "z")]
    else:
        outs = [_binary(b, "ADD", p0, p1, s, "y"), p0]  # p0 kept: a copy; p2 unread
    b.output(*outs)
    names = _check(b.build(), [np.random.default_rng(8).standard_normal((2, 8)).astype(F32)])
    assert "Split" in names, names
    assert p0 in _check.read and p1 not in _check.read, (names, _check.read)
    assert names.count("ArithmeticViews") == (2 if case == "read-twice" else 1), names


def test_int32_arithmetic_keeps_the_split():
    """Only float32 Arithmetic reads views: an int32 ADD of split outputs keeps SPLIT and its copies (against
    BUILTIN_REF exactly)."""
    from tests.oracle import run_ours

    b = ModelBuilder()
    x = b.input("x", (2, 12), np.int32)
    parts = [b.tensor(f"p{k}", (2, 4), np.int32) for k in range(3)]
    b.op("SPLIT", [b.const("axis", np.array(1, np.int32)), x], parts, {"num_splits": 3})
    y = b.tensor("y", (2, 4), np.int32)
    b.op("ADD", [parts[0], parts[1]], [y], {"fused_activation_function": 0})
    b.output(y, parts[2])
    model = b.build()
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    names = [type(s).__name__ for s in member_ops(it._subgraphs[0].steps_nodes)]
    assert "Split" in names and "ArithmeticViews" not in names, names
    xv = np.arange(24, dtype=np.int32).reshape(2, 12) * 7 - 40
    for got, want in zip(run_ours(model, [xv]), run_litert(model, [xv])):
        np.testing.assert_array_equal(got, want)
