"""The delegate interface: partitioning, several delegates, custom ops supplied by a delegate, fallback,
dynamic shapes, details and the loader."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import litert_py
from litert_py import Delegate, Interpreter, InvokeError, UnsupportedOpError
from litert_py.delegates import ENTRY_POINT_GROUP
from litert_py.runtime.partition import partition_nodes
from litert_py.schema.builder import ModelBuilder


class AddDelegate(Delegate):
    """Claims float ADD (no fused activation) and runs each partition with its own numpy, counting calls."""

    name = "ToyAddDelegate"

    def __init__(self, ops=("ADD",), min_nodes=1, fail=False):
        super().__init__()
        self.ops, self.min_nodes, self.fail = set(ops), min_nodes, fail
        self.prepared: list[tuple] = []
        self.calls = 0

    def supports(self, node, ctx):
        return node.name in self.ops and all(t.dtype == np.float32 for t in ctx.inputs)

    def prepare(self, part):
        if self.fail:
            raise RuntimeError("no device")
        part.infer_shapes()
        self.prepared.append(tuple(part.tensors[i].shape for i in part.inputs))
        nodes = [(n.name, list(n.operator.inputs), list(n.operator.outputs)) for n in part.nodes]
        fns = {"ADD": np.add, "MUL": np.multiply, "SUB": np.subtract}
        inputs, outputs, delegate = list(part.inputs), list(part.outputs), self

        def run(ins, outs):
            delegate.calls += 1
            env = dict(zip(inputs, ins))
            for name, i, o in nodes:
                env[o[0]] = fns[name](env[i[0]], env[i[1]])
            for k, t in enumerate(outputs):
                outs[k][...] = env[t]

        return run


def _chain(ops, shape=(2, 3)):
    """x -> op0(x, x) -> op1(y0, x) -> ...; returns model bytes."""
    b = ModelBuilder()
    x = b.input("x", shape, np.float32)
    prev = x
    for k, op in enumerate(ops):
        y = b.tensor(f"y{k}", shape, np.float32)
        b.op(op, [prev, x], [y])
        prev = y
    b.output(prev)
    return b.build()


def _run(model, x, **kw):
    it = Interpreter(model_content=model, **kw)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it, it.get_tensor(it.get_output_details()[0]["index"])


def test_toy_add_delegate_runs_its_kernel_and_matches():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = _chain(["ADD", "ADD", "MUL", "ADD"])
    _, want = _run(model, x)
    d = AddDelegate()
    it, got = _run(model, x, experimental_delegates=[d])
    np.testing.assert_array_equal(got, want)
    assert d.calls == 2  # two partitions: [ADD, ADD] and [ADD]
    ops = it._get_ops_details()
    assert [o["op_name"] for o in ops] == ["ADD", "ADD", "MUL", "ADD", "DELEGATE", "DELEGATE"]
    assert [o["index"] for o in ops[4:]] == [4, 5]
    assert list(ops[4]["inputs"]) == [0] and list(ops[4]["outputs"]) == [2]
    assert it._get_op_details(5)["op_name"] == "DELEGATE"
    with pytest.raises(ValueError, match="Invalid node index"):
        it._get_op_details(6)


def test_min_nodes_leaves_small_partitions_to_builtin_kernels():
    x = np.ones((2, 3), np.float32)
    d = AddDelegate(min_nodes=2)
    it, _ = _run(_chain(["ADD", "ADD", "MUL", "ADD"]), x, experimental_delegates=[d])
    assert d.calls == 1 and [o["op_name"] for o in it._get_ops_details()].count("DELEGATE") == 1


def test_partition_avoids_cycles():
    # a(x) -> b(a) [unsupported] -> c(a, b): naive grouping {a, c} would need b both before and after it.
    ins = [[0], [1], [1, 2]]
    outs = [[1], [2], [3]]
    subsets = partition_nodes(ins, outs, [True, False, True])
    assert [(s.supported, s.nodes) for s in subsets] == [(True, [0]), (False, [1]), (True, [2])]
    # independent supported branches join one partition; order is an execution order
    ins = [[0], [0], [1, 2], [3]]
    outs = [[1], [2], [3], [4]]
    subsets = partition_nodes(ins, outs, [True, False, True, True])
    assert [(s.supported, s.nodes) for s in subsets] == [(True, [0]), (False, [1]), (True, [2, 3])]


def test_cycle_case_end_to_end():
    b = ModelBuilder()
    x = b.input("x", (4,), np.float32)
    a = b.tensor("a", (4,), np.float32)
    m = b.tensor("m", (4,), np.float32)
    c = b.tensor("c", (4,), np.float32)
    b.op("ADD", [x, x], [a])
    b.op("MUL", [a, x], [m])  # not claimed
    b.op("ADD", [a, m], [c])
    b.output(c)
    model = b.build()
    xv = np.array([1, 2, 3, 4], np.float32)
    _, want = _run(model, xv)
    d = AddDelegate()
    it, got = _run(model, xv, experimental_delegates=[d])
    np.testing.assert_array_equal(got, want)
    assert [o["op_name"] for o in it._get_ops_details()].count("DELEGATE") == 2


def test_several_delegates_apply_in_order():
    x = np.full((2, 3), 2, np.float32)
    model = _chain(["ADD", "MUL", "SUB"])
    _, want = _run(model, x)
    first, second = AddDelegate(ops=("ADD",)), AddDelegate(ops=("ADD", "MUL", "SUB"))
    it, got = _run(model, x, experimental_delegates=[first, second])
    np.testing.assert_array_equal(got, want)
    assert first.calls == 1 and second.calls == 1  # the second sees only MUL, SUB
    assert [o["op_name"] for o in it._get_ops_details()][3:] == ["DELEGATE", "DELEGATE"]


class CustomDelegate(Delegate):
    """Supplies the custom op 'MyTwice' (no litert_py kernel): y = 2 x."""

    def supports(self, node, ctx):
        return node.name == "MyTwice"

    def prepare(self, part):
        (o,) = part.outputs
        part.tensors[o].shape = part.tensors[part.inputs[0]].shape

        def run(ins, outs):
            np.multiply(ins[0], 2, out=outs[0])

        return run


def _custom_model():
    b = ModelBuilder()
    x = b.input("x", (3,), np.float32)
    y = b.tensor("y", (3,), np.float32)
    z = b.tensor("z", (3,), np.float32)
    b.op("CUSTOM", [x], [y], custom_code="MyTwice")
    b.op("ADD", [y, x], [z])
    b.output(z)
    return b.build()


def test_delegate_supplies_a_custom_op():
    model = _custom_model()
    with pytest.raises(UnsupportedOpError, match="MyTwice"):
        Interpreter(model_content=model)
    with pytest.raises(UnsupportedOpError, match="MyTwice"):
        Interpreter(model_content=model, experimental_delegates=[AddDelegate()])
    _, got = _run(model, np.array([1, 2, 3], np.float32), experimental_delegates=[CustomDelegate()])
    np.testing.assert_array_equal(got, [3, 6, 9])


def test_failed_prepare_falls_back_with_a_warning():
    x = np.ones((2, 3), np.float32)
    model = _chain(["ADD", "ADD"])
    _, want = _run(model, x)
    with pytest.warns(RuntimeWarning, match="failed to prepare"):
        it, got = _run(model, x, experimental_delegates=[AddDelegate(fail=True)])
    np.testing.assert_array_equal(got, want)
    assert "DELEGATE" not in [o["op_name"] for o in it._get_ops_details()]


class PowDelegate(Delegate):
    """Claims int32 POW; its kernel raises negative exponents to 0 (no value check), counting calls."""

    name = "ToyPow"

    def __init__(self, fail=False):
        super().__init__()
        self.fail, self.calls = fail, 0

    def supports(self, node, ctx):
        return node.name == "POW"

    def prepare(self, part):
        if self.fail:
            raise RuntimeError("no device")
        part.infer_shapes()
        delegate = self

        def run(ins, outs):
            delegate.calls += 1
            outs[0][...] = np.power(ins[0], np.maximum(ins[1], 0))

        return run


def _pow_of_constants():
    """POW(const [2, 3], const [-1, 1]) -> ADD(., x): a node of constants that fails POW's check at eval, so the
    runtime does not fold it and a delegate is asked about it."""
    b = ModelBuilder()
    x = b.input("x", (2,), np.int32)
    p = b.tensor("p", (2,), np.int32)
    b.op("POW", [b.const("a", np.array([2, 3], np.int32)), b.const("e", np.array([-1, 1], np.int32))], [p])
    o = b.tensor("o", (2,), np.int32)
    b.op("ADD", [p, x], [o])
    b.output(o)
    return b.build()


def test_a_claimed_node_of_constants_runs_at_invoke():
    """A delegate's node is not folded at allocate_tensors, even when its inputs are all constant: the delegate's
    op runs at each invoke (TFLite runs a delegate kernel at invoke). Fallen back, the POW node fails at invoke as
    it does without a delegate."""
    model, x = _pow_of_constants(), np.array([10, 20], np.int32)
    d = PowDelegate()
    it = Interpreter(model_content=model, experimental_delegates=[d])
    it.allocate_tensors()
    assert d.calls == 0
    for calls in (1, 2):
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), [11, 23])
        assert d.calls == calls
    with pytest.warns(RuntimeWarning, match="failed to prepare"):
        it = Interpreter(model_content=model, experimental_delegates=[PowDelegate(fail=True)])
        it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    with pytest.raises(InvokeError, match=r"POW does not support negative value for int32"):
        it.invoke()


def test_dynamic_shapes_reprepare_the_partition():
    model = _chain(["ADD", "ADD"], shape=(1, 3))
    d = AddDelegate()
    it = Interpreter(model_content=model, experimental_delegates=[d])
    it.allocate_tensors()
    idx = it.get_input_details()[0]["index"]
    for shape in [(1, 3), (4, 5)]:
        it.resize_tensor_input(idx, list(shape))
        it.allocate_tensors()
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        it.set_tensor(idx, x)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), 3 * x)
    assert d.prepared[-1] == ((4, 5),)


def test_preserve_all_tensors_sees_partition_inputs_and_outputs():
    x = np.ones((2, 3), np.float32)
    it, _ = _run(
        _chain(["ADD", "MUL", "ADD"]), x, experimental_delegates=[AddDelegate()], experimental_preserve_all_tensors=True
    )
    np.testing.assert_array_equal(it.get_tensor(1), 2 * x)  # y0: output of the first partition
    np.testing.assert_array_equal(it.get_tensor(2), 2 * x)  # y1: MUL's output, input of the second


def test_load_delegate_by_path_and_entry_point(monkeypatch):
    import sys
    import types
    from importlib import metadata

    mod = types.ModuleType("my_toy_delegate")
    mod.create_delegate = lambda options: AddDelegate(**options)
    monkeypatch.setitem(sys.modules, "my_toy_delegate", mod)
    d = litert_py.load_delegate("my_toy_delegate", {"min_nodes": 3})
    assert isinstance(d, AddDelegate) and d.min_nodes == 3
    ep = metadata.EntryPoint(name="toy", value="my_toy_delegate:create_delegate", group=ENTRY_POINT_GROUP)
    monkeypatch.setattr(metadata, "entry_points", lambda **kw: [ep] if kw.get("group") == ENTRY_POINT_GROUP else [])
    assert isinstance(litert_py.load_delegate("toy"), AddDelegate)
    with pytest.raises(ValueError, match="Failed to load delegate from nope_no_module"):
        litert_py.load_delegate("nope_no_module")


def test_legacy_apply_delegate_still_called():
    seen = []

    class Legacy:
        def apply(self, interpreter):
            seen.append(interpreter)

    class LegacySubclass(Delegate):  # the earlier base class: only apply() overridden
        def apply(self, interpreter):
            seen.append(interpreter)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        it = Interpreter(model_content=_chain(["ADD"]), experimental_delegates=[Legacy(), LegacySubclass()])
    assert seen == [it, it]


def test_partition_after_a_value_dependent_shape_is_prepared_at_invoke():
    b = ModelBuilder()
    x = b.input("x", (6,), np.float32)
    s = b.input("s", (2,), np.int32)
    y = b.tensor("y", (2, 3), np.float32)
    z = b.tensor("z", (2, 3), np.float32)
    w = b.tensor("w", (2, 3), np.float32)
    b.op("RESHAPE", [x, s], [y])  # the output shape is the value of s: known at invoke only
    b.op("ADD", [y, y], [z])
    b.op("ADD", [z, y], [w])
    b.output(w)
    d = AddDelegate()
    it = Interpreter(model_content=b.build(), experimental_delegates=[d])
    it.allocate_tensors()
    xv = np.arange(6, dtype=np.float32)
    for shape in ([2, 3], [3, 2], [3, 2]):
        it.set_tensor(0, xv)
        it.set_tensor(1, np.array(shape, np.int32))
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), 3 * xv.reshape(shape))
    assert d.prepared == [((2, 3),), ((3, 2),)]  # prepared again only when the shape changed


def test_partition_prepared_at_invoke_falls_back_too():
    b = ModelBuilder()
    x = b.input("x", (6,), np.float32)
    s = b.input("s", (2,), np.int32)
    y, z, w = (b.tensor(n, (2, 3), np.float32) for n in "yzw")
    b.op("RESHAPE", [x, s], [y])
    b.op("ADD", [y, y], [z])
    b.op("ADD", [z, y], [w])
    b.output(w)
    it = Interpreter(model_content=b.build(), experimental_delegates=[AddDelegate(fail=True)])
    it.allocate_tensors()
    xv = np.arange(6, dtype=np.float32)
    it.set_tensor(0, xv)
    it.set_tensor(1, np.array([3, 2], np.int32))
    with pytest.warns(RuntimeWarning, match="failed to prepare"):
        it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), 3 * xv.reshape(3, 2))
    (chain,) = [c[1] for c in it._subgraphs[0]._deferred_cache.values() if type(c[1]).__name__ == "BuiltinChain"]
    kept = dict(chain.kept)
    assert kept  # the chain's own tensors, made at its first call
    it.set_tensor(0, xv[::-1].copy())
    it.invoke()  # the same shapes: the same chain, on the same arrays (its ops keep their bound plans)
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), 3 * xv[::-1].reshape(3, 2))
    assert all(chain.kept[o] is a for o, a in kept.items())
