"""WHILE's loop plan (control_flow.While._run_planned: static loop values, no swap): the outputs equal BUILTIN_REF's,
and every tensor of every subgraph reads back the bytes the general path (SubgraphRuntime.run per iteration)
leaves, also after a failing node or a cancel has left the loop: cond's inputs hold the loop values cond saw last,
the ones cond never reads (copied only when the loop is left) included. A body that swaps loop values or changes
their shapes takes the general path (just outside the plan's bound)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import litert_py
from litert_py.errors import CancelledError, DeadlineExceededError, InvokeError
from litert_py.ops.control_flow import While
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.ops.test_control_flow import _flags, _swap_model, _while_model
from tests.oracle import run_litert

F32, I32 = np.float32, np.int32


def _nested_model(shape) -> bytes:
    """(i, flags, x, y) -> WHILE flags[i]: i += 1, x = inner(x) * 2, y passed through (the body's output is its
    input); inner: WHILE j < 2: j += 1, x = x + 1 (j starts at a constant 0). cond reads i and flags only."""
    b = ModelBuilder()
    ins = [b.input("i", (), I32), b.input("flags", (6,), np.bool_), b.input("x", shape, F32), b.input("y", (3,), I32)]
    outs = [b.tensor("i_o", (), I32), b.tensor("f_o", (6,), np.bool_), b.tensor("x_o", shape, F32)]
    outs.append(b.tensor("y_o", (3,), I32))
    b.op("WHILE", ins, outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(*outs)
    b.subgraph("cond")
    ci, cf = b.input("i", (), I32), b.input("flags", (6,), np.bool_)
    b.input("x", shape, F32), b.input("y", (3,), I32)
    c = b.tensor("c", (), np.bool_)
    b.op("GATHER", [cf, ci], [c], dict(axis=0))
    b.output(c)
    b.subgraph("body")
    bi, bf, bx, by = (
        b.input("i", (), I32),
        b.input("f", (6,), np.bool_),
        b.input("x", shape, F32),
        b.input("y", (3,), I32),
    )
    i2, j_o, x1, x2 = (
        b.tensor("i2", (), I32),
        b.tensor("j_o", (), I32),
        b.tensor("x1", shape, F32),
        b.tensor("x2", shape, F32),
    )
    b.op("ADD", [bi, b.const("one", I32(1))], [i2])
    b.op("WHILE", [b.const("j0", I32(0)), bx], [j_o, x1], dict(cond_subgraph_index=3, body_subgraph_index=4))
    b.op("MUL", [x1, b.const("two", np.full((), 2, F32))], [x2])
    b.output(i2, bf, x2, by)
    b.subgraph("inner_cond")
    cj, _ = b.input("j", (), I32), b.input("x", shape, F32)
    c2 = b.tensor("c", (), np.bool_)
    b.op("LESS", [cj, b.const("two", I32(2))], [c2])
    b.output(c2)
    b.subgraph("inner_body")
    bj, ix = b.input("j", (), I32), b.input("x", shape, F32)
    j2, ix2 = b.tensor("j2", (), I32), b.tensor("x2", shape, F32)
    b.op("ADD", [bj, b.const("one", I32(1))], [j2])
    b.op("ADD", [ix, b.const("one_x", np.full((), 1, F32))], [ix2])
    b.output(j2, ix2)
    return b.build()


def _all_tensors(it) -> list[np.ndarray]:
    """Every tensor of every subgraph with an array, as get_tensor(i, subgraph_index=k) reads it back."""
    arrays = []
    for k, sub in enumerate(it._subgraphs):
        arrays.extend(it.get_tensor(i, subgraph_index=k) for i, a in enumerate(sub.tensors) if a is not None)
    return arrays


def _run(model: bytes, runs, general: bool, monkeypatch) -> tuple[list, list, list]:
    """(outputs, every subgraph tensor, the While steps' plans) after each of ``runs`` (input lists) in turn."""
    with monkeypatch.context() as m:
        if general:
            m.setattr(While, "_loop_plan", lambda self: None)
        it = litert_py.Interpreter(model_content=model)
        it.allocate_tensors()
        outs, tensors = [], []
        for inputs in runs:
            for d, x in zip(it.get_input_details(), inputs):
                it.set_tensor(d["index"], x)
            it.invoke()
            outs.append([it.get_tensor(d["index"]) for d in it.get_output_details()])
            tensors.append(_all_tensors(it))
        plans = [op._plan for sub in it._subgraphs for op in sub.prepared_ops.values() if isinstance(op, While)]
    return outs, tensors, plans


@given(
    seed=st.integers(0, 2**32 - 1),
    nested=st.booleans(),
    starts=st.lists(st.integers(0, 5), min_size=1, max_size=3),
    shape=st.sampled_from([(), (3,), (2, 2)]),
)
def test_planned_loop_matches_oracle_and_general_path(seed, nested, starts, shape):
    """Loops of several lengths (zero included) on one interpreter, a passthrough value (flags; y when nested), a
    WHILE nested in the body: BUILTIN_REF's outputs and the general path's tensors, bit for bit."""
    rng = np.random.default_rng(seed)
    model = _nested_model(shape) if nested else _while_model(shape, F32)
    runs = []
    for start in starts:
        run = [I32(start), _flags(rng.integers(start, 6)), rng.uniform(-2, 2, shape).astype(F32)]
        runs.append(run + [rng.integers(-5, 6, 3).astype(I32)] if nested else run)
    mp = pytest.MonkeyPatch()
    ours, tensors, plans = _run(model, runs, False, mp)
    _, general_tensors, general_plans = _run(model, runs, True, mp)
    assert plans[0] is not None  # the main graph's WHILE ran planned (the nested one too, once the body ran)
    assert all(p is None for p in general_plans)
    for inputs, out, mine, theirs in zip(runs, ours, tensors, general_tensors):
        assert_close(out, run_litert(model, inputs), rtol=0, atol=0)
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _both_paths(model: bytes, monkeypatch):
    """(general, an allocated interpreter of ``model``): on the planned path, then on the general path (no loop
    plan: SubgraphRuntime.run per iteration), each used while it is yielded."""
    for general in (False, True):
        with monkeypatch.context() as m:
            if general:
                m.setattr(While, "_loop_plan", lambda self: None)
            it = litert_py.Interpreter(model_content=model)
            it.allocate_tensors()
            yield general, it


def test_cond_inputs_after_a_failing_cond(monkeypatch):
    """flags all true: cond's GATHER reads flags[6] and fails. The error names cond's node; cond's inputs (x, which
    cond does not read, included) hold the values the failing cond saw, as on the general path; the interpreter
    stays usable."""
    model = _while_model((2,), F32)
    x = np.array([0.5, -1.25], F32)
    seen = []
    for _, it in _both_paths(model, monkeypatch):
        for k, v in enumerate([I32(1), _flags(6), x]):
            it.set_tensor(k, v)
        with pytest.raises(InvokeError, match=r"Node number 0 \(GATHER\) failed to invoke"):
            it.invoke()
        seen.append([it.get_tensor(k, subgraph_index=1) for k in range(3)])
        it.set_tensor(1, _flags(3))
        it.invoke()
        assert_close(
            [it.get_tensor(d["index"]) for d in it.get_output_details()],
            run_litert(model, [I32(1), _flags(3), x]),
            rtol=0,
            atol=0,
        )
    expected = x
    for _ in range(5):  # i = 1 .. 5 ran the body
        expected = expected * F32(2) + F32(1)
    for got in seen:
        assert int(got[0]) == 6 and got[1].all()
        np.testing.assert_array_equal(got[2], expected)
    assert seen[0][2].tobytes() == seen[1][2].tobytes()


def _counter(cancel_at_5: bool = False) -> bytes:
    """WHILE i >= 0: i += 1, x += 1 (cond reads only i): x - i stays what it was whenever cond's inputs are read.
    ``cancel_at_5``: the body writes x's output first, then i = LitertPyTestCancelAt5(i) + 1, cancelled inside
    the body of the iteration where i == 5, after x's output was written."""
    b = ModelBuilder()
    i, x = b.input("i", (), I32), b.input("x", (2,), F32)
    outs = [b.tensor("i_o", (), I32), b.tensor("x_o", (2,), F32)]
    b.op("WHILE", [i, x], outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(*outs)
    b.subgraph("cond")
    ci, _ = b.input("i", (), I32), b.input("x", (2,), F32)
    c = b.tensor("c", (), np.bool_)
    b.op("GREATER_EQUAL", [ci, b.const("zero", I32(0))], [c])
    b.output(c)
    b.subgraph("body")
    bi, bx = b.input("i", (), I32), b.input("x", (2,), F32)
    i2, x2 = b.tensor("i2", (), I32), b.tensor("x2", (2,), F32)
    b.op("ADD", [bx, b.const("one_x", np.full((), 1, F32))], [x2])
    if cancel_at_5:
        t = b.tensor("t", (), I32)
        b.op("CUSTOM", [bi], [t], custom_code="LitertPyTestCancelAt5")
        bi = t
    b.op("ADD", [bi, b.const("one", I32(1))], [i2])
    b.output(i2, x2)
    return b.build()


def test_cond_inputs_after_a_cancel():
    """A deadline stops the endless loop wherever it is (in cond, in the body, between them): cond's unread input x
    then holds the values of the iteration its read input i shows (x - i unchanged; exact below 2**24)."""
    it = litert_py.Interpreter(model_content=_counter())
    it.allocate_tensors()
    for trial in range(3):
        it.set_tensor(0, I32(3))
        it.set_tensor(1, np.array([0.0, 10.0], F32))
        with pytest.raises(DeadlineExceededError):
            it.invoke(timeout=0.02 * (trial + 1))
        i, x = it.get_tensor(0, subgraph_index=1), it.get_tensor(1, subgraph_index=1)
        assert 3 <= int(i) < 2**23
        np.testing.assert_array_equal(x - F32(int(i) - 3), np.array([0.0, 10.0], F32))
        assert it._subgraphs[0].prepared_ops[0]._plan is not None
    it.set_tensor(0, I32(-2))
    it.invoke()
    assert int(it.get_tensor(it.get_output_details()[0]["index"])) == -2


@dataclass(frozen=True)
class _CancelAt:
    """Copies its input; cancels the running invoke when the input equals ``at`` (the next node then stops it)."""

    interpreter: object
    at: int

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0]
        if int(inputs[0]) == self.at:
            assert self.interpreter.cancel() is True


def test_cond_inputs_after_a_cancel_inside_the_body(monkeypatch):
    """Cancelled in the body's third iteration after it wrote x's output: cond's inputs hold that iteration's values
    (i = 5, x = x0 + 2), not the half-written outputs, on both paths; the interpreter stays usable."""

    def prepare(ctx):
        ctx.set_output_shape(0, ctx.input(0).shape)
        return _CancelAt(ctx.runtime, 5)

    litert_py.register_custom_op("LitertPyTestCancelAt5", prepare)
    model = _counter(cancel_at_5=True)
    x0 = np.array([0.5, 10.0], F32)
    for general, it in _both_paths(model, monkeypatch):
        it.set_tensor(0, I32(3))
        it.set_tensor(1, x0)
        with pytest.raises(CancelledError):
            it.invoke()
        assert int(it.get_tensor(0, subgraph_index=1)) == 5
        np.testing.assert_array_equal(it.get_tensor(1, subgraph_index=1), x0 + F32(2))
        assert (it._subgraphs[0].prepared_ops[0]._plan is None) is general
        it.set_tensor(0, I32(-1))
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[1]["index"]), x0)


@pytest.mark.parametrize("case", ["swap", "grow"])
def test_outside_the_plan(case, monkeypatch):
    """A body output that is another position's input (swap) or loop values that change shape: no plan, the
    general path's results (against BUILTIN_REF: the swap order LiteRT 2.3.0 gets right)."""
    if case == "swap":
        model = _swap_model(False)
        inputs = [I32(0), _flags(4), np.array([1, 2], I32), np.array([3, -4], I32)]
    else:
        model = _while_model((2, 2), F32, grow=True)
        inputs = [I32(1), _flags(4), np.ones((2, 2), F32)]
    ours, _, plans = _run(model, [inputs], False, monkeypatch)
    assert plans == [None]
    assert_close(ours[0], run_litert(model, inputs), rtol=0, atol=0)


def test_cond_shared_with_an_inner_loop_takes_the_general_loop():
    """One cond subgraph (i < 3) used by an outer WHILE over (i, x[2]) and by a WHILE inside its body over (j, y[3]):
    the inner loop re-prepares cond for y's shape mid-loop, so the outer loop is not planned (a plan would read a
    stale flag and never end). LiteRT refuses this model; by hand: the inner loop gives y = [3, 3, 3] (sum 9), the
    outer adds it three times: x = [1, 2] + 27."""
    from litert_py.schema.builder import ModelBuilder

    i32, f32 = np.int32, np.float32
    b = ModelBuilder()
    i, x = b.input("i", (), i32), b.input("x", (2,), f32)
    outs = [b.tensor("io", (), i32), b.tensor("xo", (2,), f32)]
    b.op("WHILE", [i, x], outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(*outs)
    b.subgraph("cond")
    ci = b.input("i", (), i32)
    b.input("v", (2,), f32)
    c = b.tensor("c", (), np.bool_)
    b.op("LESS", [ci, b.const("three", i32(3))], [c])
    b.output(c)
    b.subgraph("body")
    bi, bx = b.input("i", (), i32), b.input("x", (2,), f32)
    i2, x2, j_o, y_o, s = (
        b.tensor(n, sh, t)
        for n, sh, t in (("i2", (), i32), ("x2", (2,), f32), ("jo", (), i32), ("yo", (3,), f32), ("s", (1,), f32))
    )
    b.op("ADD", [bi, b.const("one", i32(1))], [i2])
    inner = dict(cond_subgraph_index=1, body_subgraph_index=3)
    b.op("WHILE", [b.const("j0", i32(0)), b.const("y0", np.zeros(3, f32))], [j_o, y_o], inner)
    b.op("SUM", [y_o, b.const("ax", np.array([0], i32))], [s], dict(keep_dims=True))
    b.op("ADD", [bx, s], [x2])
    b.output(i2, x2)
    b.subgraph("inner_body")
    bj, by = b.input("j", (), i32), b.input("y", (3,), f32)
    j2, y2 = b.tensor("j2", (), i32), b.tensor("y2", (3,), f32)
    b.op("ADD", [bj, b.const("one", i32(1))], [j2])
    b.op("ADD", [by, b.const("onef", np.ones(3, f32))], [y2])
    b.output(j2, y2)
    it = litert_py.Interpreter(model_content=b.build())
    it.allocate_tensors()
    for _ in range(3):  # the second invoke hung with a plan
        it.set_tensor(0, i32(0))
        it.set_tensor(1, np.array([1.0, 2.0], f32))
        it.invoke()
        got = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        assert int(got[0]) == 3 and got[1].tolist() == [28.0, 29.0]
