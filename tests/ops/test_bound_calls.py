"""ops/bound_plan.BoundCalls's default ``general``: an op called with arrays other than the ones it was bound to
binds to them and runs their plan (one path, no hand copy of the calls); new objects over the same memory keep
the plan; a deferred subgraph's ops keep theirs across invokes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.bound_plan import BoundCalls, BoundCalls2, BoundCalls3
from litert_py.schema.builder import ModelBuilder
from tests.oracle import run_ours


@dataclass(frozen=True, eq=False)
class AddThenScale(BoundCalls):
    """(x + offset) * scale into out, as two numpy calls."""

    offset: np.ndarray
    scale: float

    def bound_calls(self, x, out):
        return ((np.add, (x, self.offset), {"out": out}), (np.multiply, (out, self.scale), {"out": out}))


def test_general_binds_to_new_arrays_and_runs_their_plan():
    op = AddThenScale(np.arange(4.0), 2.0)
    x, out = np.ones(4), np.empty(4)
    op.bind([x], [out])
    op([x], [out])
    assert np.array_equal(out, [2.0, 4.0, 6.0, 8.0])
    y, other = np.full(4, 3.0), np.empty(4)
    op([y], [other])  # other arrays: bound to them, their plan
    assert np.array_equal(other, [6.0, 8.0, 10.0, 12.0])
    assert op._bound[0] is y and op._bound[1] is other
    x[...] = 0.0
    op([x], [out])  # the first arrays again: rebound, their current values
    assert np.array_equal(out, [0.0, 2.0, 4.0, 6.0])


def test_general_without_arrays_raises():
    op = AddThenScale(np.arange(4.0), 2.0)
    with pytest.raises(ValueError, match="AddThenScale needs its input and output arrays"):
        op([None], [np.empty(4)])


def test_a_new_view_of_the_bound_memory_keeps_the_plan():
    """Arrays that are new objects over the bound arrays' very memory (same dtype, shape, strides) keep the plan;
    a view at another offset is bound anew."""
    op = AddThenScale(np.arange(4.0), 2.0)
    x, out = np.ones(8), np.empty(4)
    op.bind([x[:4]], [out])
    plan = op._bound[-1]
    op([x[:4]], [out[...]])  # new objects, the same bytes
    assert op._bound[-1] is plan and np.array_equal(out, [2.0, 4.0, 6.0, 8.0])
    x[4:] = 3.0
    op([x[4:]], [out])  # another offset: its own plan
    assert op._bound[-1] is not plan and np.array_equal(out, [6.0, 8.0, 10.0, 12.0])
    plan = op._bound[-1]
    x[::2] = 5.0
    op([x[::2]], [out])  # the same start, other strides: its own plan
    assert op._bound[-1] is not plan and np.array_equal(out, [10.0, 12.0, 14.0, 16.0])


@dataclass(frozen=True, eq=False)
class Sum2(BoundCalls2):
    """a + b into out."""

    def bound_calls(self, a, b, out):
        return ((np.add, (a, b), {"out": out}),)


@dataclass(frozen=True, eq=False)
class Sum3(BoundCalls3):
    """a + b + c into out."""

    def bound_calls(self, a, b, c, out):
        return ((np.add, (a, b), {"out": out}), (np.add, (out, c), {"out": out}))


@pytest.mark.parametrize("kind", [Sum2, Sum3])
def test_every_bound_input_is_identity_tested(kind):
    """A new array in any one of the inputs the plan reads (not only the first) is bound anew: its values count."""
    n = kind.bound_inputs
    arrays = [np.full(3, 10.0**k) for k in range(n)]
    out = np.empty(3)
    op = kind()
    op.bind(arrays, [out])
    op(arrays, [out])
    assert np.array_equal(out, np.full(3, sum(10.0**k for k in range(n))))
    for k in range(n):
        given = list(arrays)
        given[k] = np.full(3, 1000.0)  # a new object at another address
        op(given, [out])
        assert np.array_equal(out, np.full(3, sum(given[j][0] for j in range(n)))), f"input {k}"


def _dynamic_then_conv(op: str) -> bytes:
    """``op`` (RESHAPE by a shape input, TILE by a multiples input, or PAD by a paddings input: an output shape
    known only at eval, a new array from the op at each invoke), then a float CONV_2D reading it."""
    b = ModelBuilder()
    x = b.input("x", (1, 6, 6, 3) if op == "RESHAPE" else (1, 3, 6, 3), np.float32)
    p = b.input("p", (4, 2) if op == "PAD" else (4,), np.int32)
    y = b.tensor("y", (1, 6, 6, 3), np.float32)
    b.op(op, [x, p], [y])
    w = b.tensor("w", (4, 3, 3, 3), np.float32, data=np.arange(108, dtype=np.float32).reshape(4, 3, 3, 3) / 100)
    bias = b.tensor("b", (4,), np.float32, data=np.ones(4, np.float32))
    c = b.tensor("c", (1, 6, 6, 4), np.float32)
    options = {"padding": 0, "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1}
    b.op("CONV_2D", [y, w, bias], [c], options)
    b.output(c)
    return b.build()


def test_deferred_subgraph_keeps_the_plans():
    """In a deferred subgraph the conv reading a dynamic RESHAPE's output is bound once: the RESHAPE keeps its
    output array while the shape stays (ops/shape.ReshapeDynamic), so the conv's identity test hits at every
    later invoke (no new plan per invoke); the values follow each new input (against the static model)."""
    model = _dynamic_then_conv("RESHAPE")
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    sub = it._subgraphs[0]
    assert sub.deferred
    x_index, s_index = (d["index"] for d in it.get_input_details())
    it.set_tensor(s_index, np.array([1, 6, 6, 3], np.int32))
    rng = np.random.default_rng(0)
    plans = []
    for k in range(3):
        x = rng.standard_normal((1, 6, 6, 3)).astype(np.float32)
        it.set_tensor(x_index, x)
        it.invoke()
        (conv,) = [cached[1] for cached in sub._deferred_cache.values() if type(cached[1]).__name__ != "ReshapeDynamic"]
        plans.append(conv._bound[-1])
        expected = run_ours(model, [x, np.array([1, 6, 6, 3], np.int32)])[0]
        assert np.array_equal(it.get_tensor(it.get_output_details()[0]["index"]), expected), f"invoke {k}"
    assert plans[1] is plans[0] and plans[2] is plans[0]


@pytest.mark.parametrize("op", ["TILE", "PAD"])
def test_dynamic_outputs_keep_their_arrays(op):
    """A deferred node's new output array of the tensor's shape and type is copied into the tensor's array
    (runtime/subgraph._keeps_array; PAD also keeps its op for the same paddings): the conv reading it keeps its
    plan over the invokes, and the values follow each new input, also after a change of shape and back."""
    model = _dynamic_then_conv(op)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    sub = it._subgraphs[0]
    assert sub.deferred
    x_index, p_index = (d["index"] for d in it.get_input_details())
    same = np.array([1, 2, 1, 1] if op == "TILE" else [[0, 0], [1, 2], [0, 0], [0, 0]], np.int32)
    other = np.array([1, 3, 1, 1] if op == "TILE" else [[0, 0], [3, 3], [0, 0], [0, 0]], np.int32)
    rng = np.random.default_rng(0)
    plans = []
    for k, p in enumerate([same, same, same, other, same, same]):
        x = rng.standard_normal((1, 3, 6, 3)).astype(np.float32)
        it.set_tensor(x_index, x)
        it.set_tensor(p_index, p)
        it.invoke()
        (conv,) = [c[1] for c in sub._deferred_cache.values() if type(c[1]).__name__.startswith("Conv")]
        plans.append(conv._bound[-1])
        if op == "PAD":  # the Pad made for these paddings, kept with its plan
            (pad,) = [step for _, step in sub.steps_nodes if type(step).__name__ == "PadDynamic"]
            plans[-1] = (plans[-1], pad._last[2]._bound[-1])
        fresh = run_ours(model, [x, p])[0]  # a new interpreter's first invoke: plans made for its arrays
        assert np.array_equal(it.get_tensor(it.get_output_details()[0]["index"]), fresh), f"invoke {k}"
    same_object = (lambda a, b: a is b) if op == "TILE" else (lambda a, b: a[0] is b[0] and a[1] is b[1])
    assert same_object(plans[1], plans[0]) and same_object(plans[2], plans[0])  # kept while the shape stays
    assert same_object(plans[5], plans[4])


def test_dynamic_pad_other_paddings_same_shape():
    """Other paddings giving the same output shape: PadDynamic makes a Pad for them, still into the tensor's array
    (common.reusable), so the conv after it keeps its plan, and the Pad made for them keeps its own at the next
    invoke; the values follow the paddings."""
    model = _dynamic_then_conv("PAD")
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    sub = it._subgraphs[0]
    x_index, p_index = (d["index"] for d in it.get_input_details())
    (pad,) = [step for _, step in sub.steps_nodes if type(step).__name__ == "PadDynamic"]
    a = np.array([[0, 0], [1, 2], [0, 0], [0, 0]], np.int32)
    b = np.array([[0, 0], [2, 1], [0, 0], [0, 0]], np.int32)
    x = np.random.default_rng(1).standard_normal((1, 3, 6, 3)).astype(np.float32)
    seen = []
    for k, p in enumerate([a, a, b, b, a]):
        it.set_tensor(x_index, x)
        it.set_tensor(p_index, p)
        it.invoke()
        (conv,) = [c[1] for c in sub._deferred_cache.values() if type(c[1]).__name__.startswith("Conv")]
        seen.append((conv._bound[-1], pad._last[2], pad._last[2]._bound[-1]))
        assert np.array_equal(it.get_tensor(it.get_output_details()[0]["index"]), run_ours(model, [x, p])[0]), k
    assert all(s[0] is seen[0][0] for s in seen)  # the conv's plan: one for all five invokes
    assert seen[1][1] is seen[0][1] and seen[2][1] is not seen[1][1] and seen[3][1:] == seen[2][1:]


@dataclass(frozen=True, eq=False)
class ReshapedStore(BoundCalls):
    """x + 1 into out seen as a flat row (``out.reshape(-1)``: a copy when out is strided), as epilogues store."""

    def bound_calls(self, x, out):
        return ((np.add, (x.reshape(-1), 1.0), {"out": out.reshape(-1)}),)


@pytest.mark.parametrize("conv", [False, True])
def test_strided_output_is_written_through_a_buffer(conv):
    """A direct call on a strided output view: plans that reshape their output would write into a copy (the int8
    convs' epilogues did: the output kept its old bytes); ``general`` writes through a contiguous buffer."""
    rng = np.random.default_rng(3)
    if not conv:
        x = rng.standard_normal((3, 4))
        buf = np.zeros((3, 8))
        ReshapedStore()([x], [buf[:, ::2]])
        np.testing.assert_array_equal(buf[:, ::2], x + 1)
        assert not buf[:, 1::2].any()
        return
    from litert_py.schema.builder import quant
    from tests.ops.conv._quantized import conv_model
    from tests.oracle import run_litert

    for width, kw, out_c in [(49, 3, 16), (2100, 9, 32)]:  # FoldedEpilogue; TruncEpilogue over a 2-d layout
        s_w = rng.uniform(0.005, 0.02, out_c)
        x = rng.integers(-128, 128, (1, 1, width, 10)).astype(np.int8)
        f = rng.integers(-127, 128, (out_c, 1, kw, 10)).astype(np.int8)
        bias = rng.integers(-20000, 20000, out_c).astype(np.int32)
        bq = quant(np.float32(0.05) * np.float32(s_w).astype(np.float64))
        oq = quant(0.05 * 0.012 * 73 * np.sqrt(kw * 10), -6)
        opts = {"padding": 0, "stride_h": 1, "stride_w": 1, "fused_activation_function": 0}
        model = conv_model("CONV_2D", x, quant(0.05, 3), f, np.int8, quant(s_w), bias, bq, np.int8, oq, opts)
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (op,) = it._subgraphs[0].prepared_ops.values()
        want = run_litert(model, [x])[0]
        buf = np.zeros((1, 1, 2 * want.shape[2], out_c), np.int8)
        op([x, None, None], [buf[:, :, ::2, :]])
        np.testing.assert_array_equal(buf[:, :, ::2, :], want)
        assert not buf[:, :, 1::2, :].any()
