"""RESHAPE / SQUEEZE / EXPAND_DIMS outputs sharing their input's bytes (runtime/subgraph._unmodified_aliases): the
step copies nothing (the node stays for profiles), the two tensors are planned as one whose lifetime spans both,
and the values stay LiteRT's (BUILTIN_REF), also where the arena would otherwise reuse the input's bytes before the
reshape's output is read, across invokes, in a WHILE body whose outputs are reshapes of its inputs, and not with
preserve_all_tensors."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder
from tests.oracle import run_litert, run_ours

F32 = np.float32


def _late_reader_model() -> bytes:
    """t = x + 1 reshaped to r early; then u = x * 2, v = u + 3, w = v * 5 (each the size of t: the arena would
    put them at t's offset once t's last direct reader ran) and out = w + r: r is read last."""
    b = ModelBuilder()
    x = b.input("x", (2, 6), F32)
    t, r = b.tensor("t", (2, 6), F32), b.tensor("r", (3, 4), F32)
    b.op("ADD", [x, b.const("one", np.ones((2, 6), F32))], [t])
    b.op("RESHAPE", [t, b.const("shape", np.array([3, 4], np.int32))], [r], dict(new_shape=[3, 4]))
    u, v, w = (b.tensor(n, (3, 4), F32) for n in ("u", "v", "w"))
    x34 = b.tensor("x34", (3, 4), F32)
    b.op("RESHAPE", [x, b.const("shape2", np.array([3, 4], np.int32))], [x34], dict(new_shape=[3, 4]))
    b.op("MUL", [x34, b.const("two", np.full((3, 4), 2, F32))], [u])
    b.op("ADD", [u, b.const("three", np.full((3, 4), 3, F32))], [v])
    b.op("MUL", [v, b.const("five", np.full((3, 4), 5, F32))], [w])
    out = b.tensor("out", (3, 4), F32)
    b.op("ADD", [w, r], [out])
    b.output(out)
    return b.build()


def test_shared_bytes_keep_the_values_while_read():
    model = _late_reader_model()
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    report = it.arena_report()
    assert report["shared_tensors"] == 1  # r shares t's bytes; x34 (the graph input's reshape) stays a copy
    sub = it._subgraphs[0]
    names = [type(op).__name__ for op, _, _ in sub.steps]
    assert names.count("SharedInput") == 1  # the node stays (profiles); x34's copy runs (in a chain or alone)
    sub.plan.check()
    rng = np.random.default_rng(0)
    for _ in range(3):  # several invokes: the shared bytes are rewritten by their producer each time
        x = rng.standard_normal((2, 6)).astype(F32)
        ours, theirs = run_ours(model, [x]), run_litert(model, [x])
        np.testing.assert_array_equal(ours[0], theirs[0])
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), theirs[0])


def test_preserve_all_tensors_keeps_every_tensor_apart():
    it = Interpreter(model_content=_late_reader_model(), experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    assert it.arena_report()["shared_tensors"] == 0
    x = np.arange(12, dtype=F32).reshape(2, 6)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    names = {d["name"]: d["index"] for d in it.get_tensor_details()}
    np.testing.assert_array_equal(it.get_tensor(names["r"]), (x + 1).reshape(3, 4))


def test_graph_input_reshaped_to_a_graph_output_is_not_shared():
    """Neither a subgraph input's nor a subgraph output's bytes are shared (LiteRT's InputTensorCanBeShared)."""
    b = ModelBuilder()
    x = b.input("x", (2, 3), F32)
    y = b.tensor("y", (3, 2), F32)
    b.op("RESHAPE", [x, b.const("shape", np.array([3, 2], np.int32))], [y], dict(new_shape=[3, 2]))
    b.output(y)
    it = Interpreter(model_content=b.build())
    it.allocate_tensors()
    assert it.arena_report()["shared_tensors"] == 0
    x = np.arange(6, dtype=F32).reshape(2, 3)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), x.reshape(3, 2))


def _while_swap_reshapes_model(direct: bool = False) -> bytes:
    """(i, a, b) -> WHILE i < 3: i += 1, (a, b) = (reshape(b + 1), reshape(a * 2)): each body output is a reshape
    of an intermediate computed from the OTHER input, so an output sharing bytes with an input would be clobbered
    by the in-order copies of the next iteration. ``direct``: (a, b) = (reshape(b), reshape(a)), the reshapes of
    the inputs themselves (the outputs may not share the inputs' bytes: they are kept copies)."""
    mb = ModelBuilder()
    i, a, bb = mb.input("i", (), np.int32), mb.input("a", (2, 3), F32), mb.input("b", (3, 2), F32)
    outs = [mb.tensor("i_out", (), np.int32), mb.tensor("a_out", (2, 3), F32), mb.tensor("b_out", (3, 2), F32)]
    mb.op("WHILE", [i, a, bb], outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    mb.output(*outs)
    mb.subgraph("cond")
    ci = mb.input("i", (), np.int32)
    mb.input("a", (2, 3), F32)
    mb.input("b", (3, 2), F32)
    c = mb.tensor("c", (), np.bool_)
    mb.op("LESS", [ci, mb.const("three", np.int32(3))], [c])
    mb.output(c)
    mb.subgraph("body")
    bi, ba, bbb = mb.input("i", (), np.int32), mb.input("a", (2, 3), F32), mb.input("b", (3, 2), F32)
    i2 = mb.tensor("i2", (), np.int32)
    mb.op("ADD", [bi, mb.const("one", np.int32(1))], [i2])
    b1, a1 = bbb, ba
    if not direct:
        b1, a1 = mb.tensor("b1", (3, 2), F32), mb.tensor("a1", (2, 3), F32)
        mb.op("ADD", [bbb, mb.const("onef", np.ones((3, 2), F32))], [b1])
        mb.op("MUL", [ba, mb.const("two", np.full((2, 3), 2, F32))], [a1])
    a2, b2 = mb.tensor("a2", (2, 3), F32), mb.tensor("b2", (3, 2), F32)
    mb.op("RESHAPE", [b1, mb.const("s23", np.array([2, 3], np.int32))], [a2], dict(new_shape=[2, 3]))
    mb.op("RESHAPE", [a1, mb.const("s32", np.array([3, 2], np.int32))], [b2], dict(new_shape=[3, 2]))
    mb.output(i2, a2, b2)
    return mb.build()


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("start", [0, 1, 3])
def test_while_body_outputs_reshaped_from_other_inputs(start, direct):
    model = _while_swap_reshapes_model(direct)
    rng = np.random.default_rng(start)
    inputs = [np.int32(start), rng.standard_normal((2, 3)).astype(F32), rng.standard_normal((3, 2)).astype(F32)]
    ours, theirs = run_ours(model, inputs), run_litert(model, inputs)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o, t)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    it.invoke()  # prepares the body
    # the body's outputs are subgraph outputs and its inputs subgraph inputs: every reshape stays a copy
    assert not it._subgraphs[2].aliases


def _chain_model() -> bytes:
    """t = x + 1; r1 = reshape(t) read by a MUL and by r2 = reshape(r1); three same-sized products of x in between;
    out = m + r2 (r2 read last)."""
    b = ModelBuilder()
    x = b.input("x", (2, 6), F32)
    t = b.tensor("t", (2, 6), F32)
    b.op("ADD", [x, b.const("one", np.ones((2, 6), F32))], [t])
    r1, r2 = b.tensor("r1", (12,), F32), b.tensor("r2", (3, 4), F32)
    b.op("RESHAPE", [t, b.const("s12", np.array([12], np.int32))], [r1], dict(new_shape=[12]))
    m = b.tensor("m", (12,), F32)
    b.op("MUL", [r1, b.const("two", np.full((12,), 2, F32))], [m])
    b.op("RESHAPE", [r1, b.const("s34", np.array([3, 4], np.int32))], [r2], dict(new_shape=[3, 4]))
    prev = x
    for k in range(3):
        u = b.tensor(f"u{k}", (2, 6), F32)
        b.op("MUL", [prev, b.const(f"c{k}", np.full((2, 6), k + 3, F32))], [u])
        prev = u
    m34, last = b.tensor("m34", (3, 4), F32), b.tensor("last", (3, 4), F32)
    b.op("RESHAPE", [m, b.const("sm", np.array([3, 4], np.int32))], [m34], dict(new_shape=[3, 4]))
    u34 = b.tensor("u34", (3, 4), F32)
    b.op("RESHAPE", [prev, b.const("su", np.array([3, 4], np.int32))], [u34], dict(new_shape=[3, 4]))
    s1 = b.tensor("s1", (3, 4), F32)
    b.op("ADD", [m34, u34], [s1])
    b.op("ADD", [s1, r2], [last])
    b.output(last)
    return b.build()


def test_a_chain_of_reshapes_shares_the_first_tensor_bytes():
    model = _chain_model()
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    names = {d["name"]: d["index"] for d in it.get_tensor_details()}
    sub = it._subgraphs[0]
    assert sub.aliases[names["r1"]] == names["t"] and sub.aliases[names["r2"]] == names["t"]  # the root, twice
    sub.plan.check()
    rng = np.random.default_rng(1)
    for _ in range(2):
        x = rng.standard_normal((2, 6)).astype(F32)
        np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert(model, [x])[0])


def test_set_tensor_on_a_shared_intermediate_leaves_the_input():
    """set_tensor on a reshape of a graph input (never shared) leaves the input, and a reshape whose output is a
    graph output keeps its own bytes, as in LiteRT."""
    b = ModelBuilder()
    x = b.input("x", (2, 6), F32)
    y, t, o = b.tensor("y", (3, 4), F32), b.tensor("t", (3, 4), F32), b.tensor("o", (12,), F32)
    b.op("RESHAPE", [x, b.const("s", np.array([3, 4], np.int32))], [y], dict(new_shape=[3, 4]))
    b.op("ADD", [y, b.const("one", np.ones((3, 4), F32))], [t])
    b.op("RESHAPE", [t, b.const("s12", np.array([12], np.int32))], [o], dict(new_shape=[12]))
    b.output(o)
    it = Interpreter(model_content=b.build())
    it.allocate_tensors()
    assert it.arena_report()["shared_tensors"] == 0
    names = {d["name"]: d["index"] for d in it.get_tensor_details()}
    x = np.arange(12, dtype=F32).reshape(2, 6)
    it.set_tensor(names["x"], x)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(names["o"]), x.reshape(12) + 1)
    it.set_tensor(names["y"], np.full((3, 4), 100, F32))
    np.testing.assert_array_equal(it.get_tensor(names["x"]), x)
    assert not np.shares_memory(it.tensor(names["t"])(), it.tensor(names["o"])())


def test_a_tensor_written_twice_reads_as_litert():
    """A malformed model whose RESHAPE input is written by two nodes, the second after the RESHAPE: shared, the
    reshape's output reads the later write, as LiteRT's shared buffer does."""
    b = ModelBuilder()
    x = b.input("x", (2, 6), F32)
    t, y = b.tensor("t", (2, 6), F32), b.tensor("y", (3, 4), F32)
    b.op("ADD", [x, b.const("one", np.ones((2, 6), F32))], [t])
    b.op("RESHAPE", [t, b.const("s", np.array([3, 4], np.int32))], [y], dict(new_shape=[3, 4]))
    b.op("MUL", [x, b.const("three", np.full((2, 6), 3, F32))], [t])
    o = b.tensor("o", (3, 4), F32)
    b.op("ADD", [y, b.const("two", np.full((3, 4), 2, F32))], [o])
    b.output(o)
    model = b.build()
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    assert it.arena_report()["shared_tensors"] == 1
    x = np.arange(12, dtype=F32).reshape(2, 6)
    np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert(model, [x])[0])


def test_profile_of_a_body_prepared_while_profiling_times_the_shared_nodes():
    """A WHILE body that grows (re-prepared at every iteration while profiling) with an EXPAND_DIMS -> SQUEEZE pair
    of an intermediate: the two nodes are shared and still timed."""
    mb = ModelBuilder()
    i, a = mb.input("i", (), np.int32), mb.input("a", (1, 2), F32)
    outs = [mb.tensor("io", (), np.int32), mb.tensor("ao", (1, 2), F32)]
    mb.op("WHILE", [i, a], outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    mb.output(*outs)
    mb.subgraph("cond")
    ci = mb.input("i", (), np.int32)
    mb.input("a", (1, 2), F32)
    c = mb.tensor("c", (), np.bool_)
    mb.op("LESS", [ci, mb.const("n", np.int32(4))], [c])
    mb.output(c)
    mb.subgraph("body")
    bi, ba = mb.input("i", (), np.int32), mb.input("a", (1, 2), F32)
    i2, t = mb.tensor("i2", (), np.int32), mb.tensor("t", (1, 2), F32)
    mb.op("ADD", [bi, mb.const("one", np.int32(1))], [i2])
    mb.op("MUL", [ba, mb.const("two", np.full((1,), 2, F32))], [t])
    e, q, g = mb.tensor("e", (1, 1, 2), F32), mb.tensor("q", (1, 2), F32), mb.tensor("g", (1, 4), F32)
    mb.op("EXPAND_DIMS", [t, mb.const("ax", np.array([1], np.int32))], [e])
    mb.op("SQUEEZE", [e], [q], dict(squeeze_dims=[1]))
    mb.op("CONCATENATION", [ba, q], [g], dict(axis=1))
    mb.output(i2, g)
    it = Interpreter(model_content=mb.build())
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[1]["index"], np.ones((1, 2), F32))
    prof = it.profile(runs=2)
    calls = {n.op: n.calls for n in prof.nodes if n.subgraph == 2}
    assert calls["EXPAND_DIMS"] > 0 and calls["SQUEEZE"] > 0
    assert all(n.calls > 0 for n in prof.nodes)  # every node timed (none chained inside the profiler's timers)
    assert it._subgraphs[2].aliases  # the pair was shared in the body's last preparation


def test_shared_step_called_on_other_arrays_copies():
    from litert_py.runtime.subgraph import SharedInput

    src = np.arange(6, dtype=F32)
    step = SharedInput(src, src.reshape(2, 3))
    x, y = np.arange(6, dtype=F32) + 1, np.zeros((2, 3), F32)
    step([x], [y])
    np.testing.assert_array_equal(y, x.reshape(2, 3))


def _reshape_chain_model(from_graph_input: bool) -> bytes:
    """a = x + 1 (or x itself), reshaped (2, 6) -> (3, 4) -> (12,), then + 2: two RESHAPEs in a row."""
    b = ModelBuilder()
    x = b.input("x", (2, 6), F32)
    a = x
    if not from_graph_input:
        a = b.tensor("a", (2, 6), F32)
        b.op("ADD", [x, b.const("one", np.ones((2, 6), F32))], [a])
    r1, r2 = b.tensor("r1", (3, 4), F32), b.tensor("r2", (12,), F32)
    b.op("RESHAPE", [a, b.const("s1", np.array([3, 4], np.int32))], [r1], dict(new_shape=[3, 4]))
    b.op("RESHAPE", [r1, b.const("s2", np.array([12], np.int32))], [r2], dict(new_shape=[12]))
    y = b.tensor("y", (12,), F32)
    b.op("ADD", [r2, b.const("two", np.full(12, 2, F32))], [y])
    b.output(y)
    return b.build()


@pytest.mark.parametrize("from_graph_input", [False, True])
def test_a_chain_of_two_reshapes_copies_nothing_where_the_input_may_be_shared(from_graph_input):
    """The two reshapes are one step (the first stores into the second's output); that step shares its input's bytes
    (no copy) unless the input is the graph's input, where it stays one copy. Values: BUILTIN_REF's."""
    model = _reshape_chain_model(from_graph_input)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    names = [type(op).__name__ for op, _, _ in it._subgraphs[0].steps]
    assert it.arena_report()["shared_tensors"] == (0 if from_graph_input else 1)
    assert names.count("SharedInput") == (0 if from_graph_input else 1)
    assert len(names) == (2 if from_graph_input else 3)  # the second reshape's step is gone either way
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = rng.standard_normal((2, 6)).astype(F32)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), run_litert(model, [x])[0])
