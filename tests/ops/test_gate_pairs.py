"""ops/gate_pairs.fuse_logistic_pairs: two arithmetic -> LOGISTIC steps reading adjacent slices of the same two
FULLY_CONNECTED outputs (a GRU's update and reset gates) as one LogisticPair step. The outputs equal the unfused
graph's (every step run: experimental_preserve_all_tensors) bit for bit and BUILTIN_REF's within the logistic's
float tolerance, with values in and out of LOGISTIC's main branch, overflowing sums and NaN; slices that are not
adjacent in order, swapped sources, a TANH or a broadcasting operand keep the two steps (just outside the bound)."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.ops.bound_chain import member_ops
from litert_py.ops.gate_pairs import LogisticPair
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.ops.test_bound_chain import _run as run_feeds
from tests.ops.test_split_views import _binary, _fc_split, _unary
from tests.oracle import run_litert

F32 = np.float32


def _gates_model(first: int, second: int, op: str = "ADD", act2: str = "LOGISTIC", swap: bool = False, rows=1):
    """x (rows, 8), h (rows, 4): each through FC -> SPLIT into three (rows, 4) parts; gate A = LOGISTIC(op(x_first,
    h_first)), read by a MUL with h before gate B = act2(op(x_second, h_second)) is computed (``swap``: B's operands
    in the other order); outputs A * h and B."""
    rng = np.random.default_rng(first * 3 + second)
    b = ModelBuilder()
    x, h = b.input("x", (rows, 8), F32), b.input("h", (rows, 4), F32)
    xs = _fc_split(b, rng, x, "x", rows, 8, 4)
    hs = _fc_split(b, rng, h, "h", rows, 4, 4)
    s = (rows, 4)
    a = _unary(b, "LOGISTIC", _binary(b, op, xs[first], hs[first], s, "a_in"), s, "a")
    ah = _binary(b, "MUL", a, h, s, "ah")
    pair = (hs[second], xs[second]) if swap else (xs[second], hs[second])
    g = _unary(b, act2, _binary(b, op, *pair, s, "b_in"), s, "b")
    b.output(ah, g)
    return b.build()


def _run(model: bytes, feeds, **kw):
    """Our step ops' names (a BoundChain's members named: ops/bound_chain.py) and outputs on each feed in turn."""
    it, outs = run_feeds(model, feeds, **kw)
    return [type(op).__name__ for op in member_ops(it._subgraphs[0].steps_nodes)], outs


def _feeds(rng, rows: int) -> list:
    """Values in LOGISTIC's main branch, far out of it (sums below -9 and above 16.6), overflowing, and a NaN row."""
    feeds = []
    for scale in (1.0, 30.0, 1e36):
        feeds.append([(rng.standard_normal((rows, 8)) * scale).astype(F32), rng.standard_normal((rows, 4)).astype(F32)])
    nan = feeds[0][0].copy()
    nan[0, 3] = np.nan  # one operand NaN (the x part): NaN through both gates
    feeds.append([nan, feeds[0][1]])
    return feeds


def _check(model: bytes, rows: int) -> list[str]:
    feeds = _feeds(np.random.default_rng(rows), rows)
    names, fused = _run(model, feeds)
    _, unfused = _run(model, feeds, experimental_preserve_all_tensors=True)
    for values, ours, plain in zip(feeds, fused, unfused):
        for a, c in zip(ours, plain):
            assert a.dtype == c.dtype == F32 and a.shape == c.shape
            assert a.tobytes() == c.tobytes(), (a, c)
        assert_close(ours, run_litert(model, values, "BUILTIN_REF"), rtol_each=1e-5, atol=1e-6)
    return names


@pytest.mark.parametrize("rows", [1, 2])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("first,second", [(0, 1), (1, 2)])
def test_adjacent_gates_fused(first, second, op, rows):
    names = _check(_gates_model(first, second, op, rows=rows), rows)
    assert names.count("LogisticPair") == 1 and "ArithmeticThenActivation" not in names, names


@pytest.mark.parametrize(
    "first,second,act2,swap",
    [(0, 2, "LOGISTIC", False), (1, 0, "LOGISTIC", False), (0, 1, "TANH", False), (0, 1, "LOGISTIC", True)],
    ids=["not-adjacent", "second-before-first", "tanh", "swapped-sources"],
)
def test_gates_outside_the_bound_stay_apart(first, second, act2, swap):
    names = _check(_gates_model(first, second, act2=act2, swap=swap), 1)
    assert "LogisticPair" not in names and names.count("ArithmeticThenActivation") == 2, names


def test_broadcasting_operand_stays_apart():
    """Gate B adds a (4,) input instead of its h slice: not a slice of the union."""
    rng = np.random.default_rng(9)
    b = ModelBuilder()
    x, h, c = b.input("x", (1, 8), F32), b.input("h", (1, 4), F32), b.input("c", (4,), F32)
    xs, hs = _fc_split(b, rng, x, "x", 1, 8, 4), _fc_split(b, rng, h, "h", 1, 4, 4)
    a = _unary(b, "LOGISTIC", _binary(b, "ADD", xs[0], hs[0], (1, 4), "a_in"), (1, 4), "a")
    g = _unary(b, "LOGISTIC", _binary(b, "ADD", xs[1], c, (1, 4), "b_in"), (1, 4), "b")
    b.output(a, g)
    feeds = [[rng.standard_normal((1, 8)).astype(F32), rng.standard_normal((1, 4)).astype(F32), np.ones(4, F32)]]
    names, fused = _run(b.build(), feeds)
    _, unfused = _run(b.build(), feeds, experimental_preserve_all_tensors=True)
    assert "LogisticPair" not in names, names
    assert all(a.tobytes() == c.tobytes() for a, c in zip(fused[0], unfused[0]))


def test_direct_call_on_other_arrays():
    """The prepared LogisticPair called on arrays it was not bound to gives the bound call's values (new views)."""
    model = _gates_model(0, 1)
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    sub = it._subgraphs[0]
    ((op, ins, outs),) = [s for s in sub.steps if isinstance(s[0], LogisticPair)]
    rng = np.random.default_rng(3)
    other_ins = [(rng.standard_normal(a.shape) * 4).astype(F32) for a in ins]
    for a, v in zip(ins, other_ins):
        a[...] = v
    op(ins, outs)  # the bound arrays (the arena's: written over by later steps after an invoke)
    expected = [o.copy() for o in outs]
    other_outs = [np.full_like(o, 7.0) for o in outs]
    op(other_ins, other_outs)
    for a, c in zip(other_outs, expected):
        assert a.tobytes() == c.tobytes()
    other_ins[0][...] = 0.0  # the other arrays' own views: zero sums now
    op(other_ins, other_outs)
    assert not np.array_equal(other_outs[0], expected[0])
    op(ins, outs)  # the bound arrays again
    for a, c in zip(outs, expected):
        assert a.tobytes() == c.tobytes()
