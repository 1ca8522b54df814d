"""ops/bound_chain.fuse_bound_chains: consecutive steps whose bound call is a fixed list of numpy calls (float and
integer arithmetic, arithmetic -> TANH, the row FULLY_CONNECTED, a RESHAPE copy) run as one BoundChain step. The
outputs equal the unfused graph's (every step run: experimental_preserve_all_tensors) bit for bit, with special
values, and BUILTIN_REF's (exactly for the arithmetic-only chain); a LOGISTIC between them splits the chain (just
outside); the chain called on other arrays calls its members (their own unbound paths)."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.ops.bound_chain import BoundChain
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import run_litert

F32, I32 = np.float32, np.int32
SPECIAL = np.array([3e38, -3e38, np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-45, 0.5, -2.0], F32)


def _chain_model(middle: str | None, fc: bool) -> bytes:
    """x (1, 8), h (1, 8), n (): [FC(x) ->] ADD(x, h) -> MUL(., h) -> SUB(1, .) -> [``middle`` activation of
    DIV(., h) ->] RESHAPE (8,) -> MUL(., 2); an int32 ADD n + 1 after it. Outputs: the last MUL, the SUB, n + 1 and
    the RESHAPE's (a model output stays a copy, a chain member; an intermediate would share its input's bytes and
    split the chain: runtime/subgraph._unmodified_aliases)."""
    rng = np.random.default_rng(1)
    b = ModelBuilder()
    x, h, n = b.input("x", (1, 8), F32), b.input("h", (1, 8), F32), b.input("n", (), I32)

    def t(name, shape=(1, 8), dtype=F32):
        return b.tensor(name, shape, dtype)

    if fc:
        y = t("fc")
        w, bias = b.const("w", rng.standard_normal((8, 8)).astype(F32)), b.const("b", np.ones(8, F32))
        b.op("FULLY_CONNECTED", [x, w, bias], [y])
        x = y
    s, p, d = t("s"), t("p"), t("d")
    b.op("ADD", [x, h], [s])
    b.op("MUL", [s, h], [p])
    b.op("SUB", [b.const("one", np.ones((), F32)), p], [d])
    if middle is not None:
        q, a = t("q"), t("a")
        b.op("DIV", [d, h], [q])
        b.op(middle, [q], [a])
        d2 = a
    else:
        d2 = d
    r, o, n1 = t("r", (8,)), t("o", (8,)), t("n1", (), I32)
    b.op("RESHAPE", [d2, b.const("shape", np.array([8], I32))], [r])
    b.op("MUL", [r, b.const("two", np.full((), 2, F32))], [o])
    b.op("ADD", [n, b.const("one_i", I32(1))], [n1])
    b.output(o, d, n1, r)
    return b.build()


def _run(model: bytes, feeds, **kw):
    it = litert_py.Interpreter(model_content=model, **kw)
    it.allocate_tensors()
    outs = []
    for values in feeds:
        for d, v in zip(it.get_input_details(), values):
            it.set_tensor(d["index"], v)
        it.invoke()
        outs.append([it.get_tensor(d["index"]) for d in it.get_output_details()])
    return it, outs


def _feeds(rng, special_x: bool = True) -> list:
    """Three feeds, the last with special values in h (and in x unless it goes through the FC: a NaN or inf
    there is the FULLY_CONNECTED's own case)."""
    feeds = []
    for k in range(3):
        x, h = rng.standard_normal((1, 8)).astype(F32), rng.uniform(0.5, 2, (1, 8)).astype(F32)
        if k == 2:
            h = rng.choice(SPECIAL, (1, 8)).astype(F32)
            x = rng.choice(SPECIAL, (1, 8)).astype(F32) if special_x else x
        feeds.append([x, h, I32(k - 1)])
    return feeds


@pytest.mark.parametrize("middle", [None, "TANH", "LOGISTIC"])
@pytest.mark.parametrize("fc", [False, True], ids=["arith", "fc"])
def test_chain_matches_unfused_and_oracle(middle, fc):
    model = _chain_model(middle, fc)
    feeds = _feeds(np.random.default_rng(len(middle or "") + fc), special_x=not fc)
    it, ours = _run(model, feeds)
    _, plain = _run(model, feeds, experimental_preserve_all_tensors=True)
    chains = [op for _, op in it._subgraphs[0].steps_nodes if isinstance(op, BoundChain)]
    if middle == "LOGISTIC":  # the arithmetic -> LOGISTIC step branches: the chain stops before it
        assert len(chains) == 2, chains
    else:
        assert len(chains) == 1 and len(it._subgraphs[0].steps) == 1
        assert chains[0]._bound[2] is not None  # run as one flat plan
    for values, mine, theirs in zip(feeds, ours, plain):
        for a, c in zip(mine, theirs):
            assert a.dtype == c.dtype and a.shape == c.shape and a.tobytes() == c.tobytes(), (a, c)
        ref = run_litert(model, values)
        if middle is None and not fc:
            assert_close(mine, ref, rtol=0, atol=0)
        else:
            assert_close(mine, ref, rtol_each=1e-5, atol=1e-6)


def test_chain_called_on_other_arrays():
    """A direct call with other lists (copies of the bound arrays after an invoke): each member on its part of them,
    the bound call's bytes; a new value in the copies is read."""
    model = _chain_model("TANH", True)
    it, _ = _run(model, _feeds(np.random.default_rng(2))[:1])
    ((op, ins, outs),) = it._subgraphs[0].steps
    other_ins = [None if a is None else a.copy() for a in ins]
    other_outs = [np.full_like(o, 5) for o in outs]
    op(ins, outs)  # the bound arrays: the reference bytes
    op(other_ins, other_outs)
    for a, c in zip(other_outs, outs):
        assert a.tobytes() == c.tobytes()
    other_ins[0][...] = 0  # the other arrays' own values are read
    op(other_ins, other_outs)
    assert not np.array_equal(other_outs[0], outs[0])  # the FC's output: its bias alone now


def test_profile_times_the_members_and_restores_the_chain():
    """Interpreter.profile: one row per node of the chain (as without it), the same outputs, the chain back after."""
    model = _chain_model("TANH", True)
    feeds = _feeds(np.random.default_rng(6), special_x=False)[:1]
    it, (before,) = _run(model, feeds)
    sub = it._subgraphs[0]
    steps = list(sub.steps)
    prof = it.profile(runs=2, warmup=0)
    assert [r.op for r in prof.nodes] == [n.name for n in sub.nodes if n.index in {r.node for r in prof.nodes}]
    assert len(prof.nodes) == len(steps[0][0].ops) == 8  # FC, ADD, MUL, SUB, DIV (its TANH fused), RESHAPE, MUL, ADD
    assert all(r.calls == 1 for r in prof.nodes)  # each member timed once per run (calls are per run)
    assert [s[0] for s in sub.steps] == [s[0] for s in steps] and isinstance(sub.steps[0][0], BoundChain)
    for a, c in zip([it.get_tensor(d["index"]) for d in it.get_output_details()], before):
        assert a.tobytes() == c.tobytes()


def test_a_shared_reshape_splits_the_chain():
    """The RESHAPE's output an intermediate: the arena shares its input's bytes (no copy), so it is no chain member;
    the two chains around it give the unfused graph's bytes."""
    b = ModelBuilder()
    x, h = b.input("x", (1, 8), F32), b.input("h", (1, 8), F32)
    s, p, r, o, q = (
        b.tensor(n, sh, F32) for n, sh in (("s", (1, 8)), ("p", (1, 8)), ("r", (8,)), ("o", (8,)), ("q", (8,)))
    )
    b.op("ADD", [x, h], [s])
    b.op("MUL", [s, h], [p])
    b.op("RESHAPE", [p, b.const("shape", np.array([8], I32))], [r])
    b.op("MUL", [r, b.const("two", np.full((), 2, F32))], [o])
    b.op("ADD", [o, b.const("three", np.full((), 3, F32))], [q])
    b.output(q)
    model = b.build()
    feeds = [[np.arange(8, dtype=F32).reshape(1, 8), np.full((1, 8), 0.5, F32)]]
    it, ours = _run(model, feeds)
    _, plain = _run(model, feeds, experimental_preserve_all_tensors=True)
    names = [type(op).__name__ for op, _, _ in it._subgraphs[0].steps]
    assert names == ["BoundChain", "SharedInput", "BoundChain"]
    assert ours[0][0].tobytes() == plain[0][0].tobytes()
