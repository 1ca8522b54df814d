"""RingBufferChecks (litert_py.ops.ring_buffer): the in-place rings' checks as one step, against the oracle
(ai-edge-litert BUILTIN_REF) when the variables change outside the steady state: the first invoke (the init
subgraph's ASSIGN_VARIABLE), a new prepare in the middle of the stream, reset_all_variables, another signature
assigning a ring's variable between invokes (in place, or with another shape: the next invoke fails)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import litert_py
from litert_py.ops.ring_buffer import RingBufferChecks, in_place_rings
from litert_py.schema.reader import decode_model
from litert_py.schema.writer import write_model
from tests.ops.test_mixconv_merge import _assert_same_outputs, _names, _outputs_over, _stacked_blocks
from tests.oracle import oracle


def _feeds(n: int) -> list:
    rng = np.random.default_rng(8)
    return [[rng.integers(-128, 128, (1, 8)).astype(np.int8)] for _ in range(n)]


def _grouped(it) -> RingBufferChecks:
    steps = it._subgraphs[0].steps_nodes
    (group,) = [op for _, op in steps if type(op) is RingBufferChecks]
    assert len(in_place_rings(steps)) == 2 and "RingBufferInPlace" not in _names(it)
    return group


@pytest.mark.parametrize("event", ["prepare", "reset", "poke"])
def test_ring_checks_see_the_variables_change(event):
    """Rings r0 and r1 in place, checked by one step; at invoke 6 the subgraph is prepared anew (new ring arrays,
    the state carried by the variables), the variables are reset (resource variables survive it, as in LiteRT), or
    signature "poke" assigns ring r1 a new state in place: every output equals BUILTIN_REF's, and after the stream
    each ring's variable is its ring's head."""
    model = _stacked_blocks(reshape_in=True, poke_rows=6)
    feeds = _feeds(12)
    poke = np.random.default_rng(9).integers(-128, 128, (1, 6, 1, 8)).astype(np.int8)
    LiteRT, resolver = oracle()

    def before(it, k):
        if k != 6:
            return
        if event == "prepare":
            if isinstance(it, litert_py.Interpreter):
                old = _grouped(it)
                it._subgraphs[0].prepare()  # allocate_tensors alone would not: nothing changed
                assert _grouped(it) is not old
        elif event == "reset":
            it.reset_all_variables()
        else:
            np.testing.assert_array_equal(it.get_signature_runner("poke")(v=poke)["r"], poke)

    ours = litert_py.Interpreter(model_content=model)
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    _assert_same_outputs(_outputs_over(ours, feeds, before), _outputs_over(theirs, feeds, before))
    group = _grouped(ours)
    for _, ring in group.members:
        assert ring.read.resources[ring.key].value is ring._ring_head


def test_ring_checks_refuse_a_variable_assigned_another_shape():
    """After some invokes signature "poke" assigns ring r1 five rows where the model reads six: the next invoke
    fails with READ_VARIABLE's error (the variable's value is no longer its ring's head), and so does the one after
    (the failed check changed nothing)."""
    model = _stacked_blocks(reshape_in=True, poke_rows=5)
    feeds = _feeds(3)
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    _grouped(it)
    x = it.get_input_details()[0]["index"]
    for (f,) in feeds:
        it.set_tensor(x, f)
        it.invoke()
    it.get_signature_runner("poke")(v=np.zeros((1, 5, 1, 8), np.int8))
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"holds shape \[1, 5, 1, 8\], the model reads \[1, 6, 1, 8\]") as e:
            it.invoke()
        assert f"Node number {_ring_node(it, 1)} (CONCATENATION)" in str(e.value)  # ring r1's node, not r0's


def _ring_node(it, k: int) -> int:
    """The node index of the k-th in-place ring (its CONCATENATION)."""
    return in_place_rings(it._subgraphs[0].steps_nodes)[k][0].index


def _two_pokes() -> bytes:
    """_stacked_blocks with two signatures assigning ring r1's variable: "poke" five rows (another shape: a new
    array), "poke6" six rows (the model's shape: into that new array, not the ring's head)."""
    a = decode_model(_stacked_blocks(reshape_in=True, poke_rows=5))
    b = decode_model(_stacked_blocks(reshape_in=True, poke_rows=6))
    sg = b.subgraphs[2]
    remap = {k: a.operator_codes.index(c) for k, c in enumerate(b.operator_codes) if c in a.operator_codes}
    ops = tuple(dataclasses.replace(o, opcode_index=remap[o.opcode_index]) for o in sg.operators)
    poke = next(s for s in b.signature_defs if s.signature_key == "poke")
    sig = dataclasses.replace(poke, signature_key="poke6", subgraph_index=len(a.subgraphs))
    subgraphs = (*a.subgraphs, dataclasses.replace(sg, operators=ops))
    return write_model(dataclasses.replace(a, subgraphs=subgraphs, signature_defs=(*a.signature_defs, sig)))


def test_ring_checks_see_a_variable_replaced_by_another_array():
    """Between invokes ring r1's variable gets a new array of the model's shape (five rows, then six: the value is
    no longer the ring's head): the next invokes continue from the assigned state, as BUILTIN_REF's do (the steady
    state's identity test fails and the full check copies the value into the ring)."""
    model = _two_pokes()
    feeds = _feeds(8)
    state = np.random.default_rng(1).integers(-128, 128, (1, 6, 1, 8)).astype(np.int8)

    def before(it, k):
        if k == 3:
            it.get_signature_runner("poke")(v=np.zeros((1, 5, 1, 8), np.int8))
            it.get_signature_runner("poke6")(v=state)

    LiteRT, resolver = oracle()
    ours = litert_py.Interpreter(model_content=model)
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    _assert_same_outputs(_outputs_over(ours, feeds, before), _outputs_over(theirs, feeds, before))
    _grouped(ours)
