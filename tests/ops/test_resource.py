"""Resource variables and CALL_ONCE: state carried across invokes, compared with the oracle step by step."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import oracle

RESOURCE = dtypes.TensorType.RESOURCE


def _delay_line_model(shape=(2, 3), init=None) -> bytes:
    """y = var; var = x. Subgraph 1 (run once by CALL_ONCE) assigns the initial value to var."""
    b = ModelBuilder()
    x = b.input("x", shape, np.float32)
    h = b.tensor("handle", (), None, tensor_type=RESOURCE)
    y = b.tensor("y", shape, np.float32)
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": "state"})
    b.op("READ_VARIABLE", [h], [y])
    b.op("ASSIGN_VARIABLE", [h, x], [])
    b.output(y)
    b.subgraph("init")
    h1 = b.tensor("handle", (), None, tensor_type=RESOURCE)
    c = b.const("init", np.full(shape, 7.0, np.float32) if init is None else init)
    b.op("VAR_HANDLE", [], [h1], {"container": "", "shared_name": "state"})
    b.op("ASSIGN_VARIABLE", [h1, c], [])
    b.signature("serving_default", {"x": x}, {"y": y})
    return b.build()


def _stream(I, model, xs, reset_at=None):
    it = I(model_content=model)
    it.allocate_tensors()
    outs = []
    for k, x in enumerate(xs):
        if k == reset_at:
            it.reset_all_variables()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
    return outs


@pytest.mark.parametrize("reset_at", [None, 2], ids=["stream", "reset-midway"])
def test_variable_state_across_invokes_matches_oracle(reset_at):
    LiteRT, _ = oracle()
    model = _delay_line_model()
    xs = [np.full((2, 3), k, np.float32) for k in range(1, 5)]
    theirs = _stream(LiteRT, model, xs, reset_at)
    ours = _stream(litert_py.Interpreter, model, xs, reset_at)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_array_equal(a, b, err_msg=f"invoke {k}")
    assert np.all(ours[0] == 7.0) and np.all(ours[1] == 1.0)  # the init value, then the previous input


def test_call_once_survives_reallocation():
    it = litert_py.Interpreter(model_content=_delay_line_model())
    it.allocate_tensors()
    it.set_tensor(0, np.ones((2, 3), np.float32))
    it.invoke()
    it.allocate_tensors()
    it.set_tensor(0, np.zeros((2, 3), np.float32))
    it.invoke()
    assert np.all(it.get_tensor(it.get_output_details()[0]["index"]) == 1.0)


def test_signature_runner_on_stateful_model():
    LiteRT, _ = oracle()
    model = _delay_line_model()
    xs = [np.full((2, 3), k, np.float32) for k in range(3)]
    runs = []
    for I in (LiteRT, litert_py.Interpreter):
        runner = I(model_content=model).get_signature_runner()
        runs.append([runner(x=x)["y"] for x in xs])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def _assign_read_model(x_dtype, read_dtype, shape=(2, 3), signature=None) -> bytes:
    """var = x; y = READ_VARIABLE(var) (declared ``read_dtype``); z = y + y."""
    b = ModelBuilder()
    x = b.input("x", shape, x_dtype, shape_signature=signature)
    h = b.tensor("handle", (), None, tensor_type=RESOURCE)
    b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": "v"})
    b.op("ASSIGN_VARIABLE", [h, x], [])
    y = b.tensor("y", shape, read_dtype, shape_signature=signature)
    z = b.tensor("z", shape, read_dtype, shape_signature=signature)
    b.op("READ_VARIABLE", [h], [y])
    b.op("ADD", [y, y], [z])
    b.output(y, z)
    return b.build()


def _resized_runs(I, model, shapes, x_of, **kw):
    it = I(model_content=model, **kw)
    it.allocate_tensors()
    outs = []
    for shape in shapes:
        it.resize_tensor_input(0, list(shape))
        it.allocate_tensors()
        it.set_tensor(0, x_of(shape))
        it.invoke()
        outs.append([it.get_tensor(d["index"]) for d in it.get_output_details()])
    return outs


def _compare_runs(ours, theirs):
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, err_msg=f"invoke {k}")


def test_variable_shape_changes_on_assignment():
    """A variable assigned values of changing shapes (the input has a -1 in its signature and is resized
    between invokes) is read back with its current shape, as LiteRT's READ_VARIABLE resizes its output.
    Checked against the inputs themselves: ai-edge-litert corrupts its heap on this model (its READ_VARIABLE
    writes the resized value into the planned buffer and aborts the process), so it cannot be the oracle."""
    model = _assign_read_model(np.float32, np.float32, signature=(-1, 3))
    shapes = [(2, 3), (4, 3), (1, 3), (2, 3)]
    xs = [(np.arange(int(np.prod(s))) + 10 * s[0]).astype(np.float32).reshape(s) for s in shapes]
    ours = _resized_runs(litert_py.Interpreter, model, shapes, lambda shape: xs[shapes.index(shape)])
    _compare_runs(ours, [[x, x + x] for x in xs])


@pytest.mark.parametrize(
    "x_dtype,read_dtype",
    [(np.int32, np.int32), (np.int32, np.float32), (np.float32, np.int32)],
    ids=["int32", "int32-read-as-float32", "float32-read-as-int32"],
)
def test_variable_read_as_its_dtype_only(x_dtype, read_dtype):
    """A variable holds the dtype of its last assignment; reading it as another dtype fails the invoke in
    LiteRT's reference kernels (variable_tensor->type != output->type) and in litert_py."""
    LiteRT, OpResolverType = oracle()
    model = _assign_read_model(x_dtype, read_dtype)

    def x_of(shape):
        return np.arange(6).reshape(shape).astype(x_dtype)

    if x_dtype != read_dtype:
        for I, kw in (
            (LiteRT, {"experimental_op_resolver_type": OpResolverType.BUILTIN_REF}),
            (litert_py.Interpreter, {}),
        ):
            with pytest.raises(RuntimeError, match="variable_tensor->type != output->type"):
                _resized_runs(I, model, [(2, 3)], x_of, **kw)
        return
    theirs = _resized_runs(LiteRT, model, [(2, 3)] * 2, x_of, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    ours = _resized_runs(litert_py.Interpreter, model, [(2, 3)] * 2, x_of)
    _compare_runs(ours, theirs)


def test_variable_of_undeclared_shape_fails_invoke():
    """The model declares READ_VARIABLE's shape fully; a variable of another shape is refused at invoke (LiteRT's
    reference kernels copy a partial or overlong buffer there)."""
    it = litert_py.Interpreter(model_content=_assign_read_model(np.float32, np.float32))
    it.resize_tensor_input(0, [4])
    it.allocate_tensors()
    it.set_tensor(0, np.zeros(4, np.float32))
    with pytest.raises(RuntimeError, match="holds shape"):
        it.invoke()


def test_var_handle_is_folded_at_prepare():
    """VAR_HANDLE's output never changes: a constant after prepare (no step), in both subgraphs; the delay line
    still matches the oracle."""
    model = _delay_line_model()
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    assert [node.name for node, _ in it._subgraphs[0].steps_nodes] == ["CALL_ONCE", "READ_VARIABLE", "ASSIGN_VARIABLE"]
    LiteRT, _ = oracle()
    xs = [np.full((2, 3), k, np.float32) for k in range(1, 4)]
    for a, b in zip(_stream(litert_py.Interpreter, model, xs), _stream(LiteRT, model, xs)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int8])
def test_var_handle_of_another_type_is_refused(dtype):
    """A VAR_HANDLE whose output is not a RESOURCE tensor (no converter writes one; LiteRT stores its int32
    resource id in the output's bytes): a PrepareError naming the type, not a TypeError from folding the handle
    (found by tools/fuzz_graphs.py); the interpreter stays usable for other models."""
    b = ModelBuilder()
    x = b.input("x", (2,), np.float32)
    h, y = b.tensor("h", (), dtype), b.tensor("y", (2,), np.float32)
    b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": "v"})
    b.op("RELU", [x], [y])
    b.output(y)
    it = litert_py.Interpreter(model_content=b.build())
    with pytest.raises(litert_py.PrepareError, match="VAR_HANDLE's output must be a RESOURCE tensor, got "):
        it.allocate_tensors()
