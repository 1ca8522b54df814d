"""Interpreter.cancel(), invoke(timeout=...) and one-interpreter-one-thread: a WHILE loop that never ends is
stoppable from any thread, the interpreter stays usable, concurrent use of one interpreter is refused and
several interpreters in several threads give the single-threaded results.

Thread joins have generous limits only so that a regression fails instead of hanging; nothing here asserts a
duration.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pytest

import litert_py
from litert_py.errors import CancelledError, ConcurrentUseError, DeadlineExceededError, InvokeError
from litert_py.schema.builder import ModelBuilder

JOIN_LIMIT = 30.0  # seconds: only a hang guard


def _endless_while(with_nodes: bool = True) -> bytes:
    """WHILE i >= 0: i = max(i, 1) -- never ends for i >= 0; for i < 0 the body never runs. Without nodes the
    cond returns its bool input and the body passes it through (a loop no node-level check can see)."""
    b = ModelBuilder()
    dtype = np.int32 if with_nodes else np.bool_
    i = b.input("i", (), dtype)
    o = b.tensor("o", (), dtype)
    b.op("WHILE", [i], [o], dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(o)
    b.subgraph("cond")
    ci = b.input("i", (), dtype)
    if with_nodes:
        c = b.tensor("c", (), np.bool_)
        b.op("GREATER_EQUAL", [ci, b.const("zero", np.int32(0))], [c])
        b.output(c)
    else:
        b.output(ci)
    b.subgraph("body")
    bi = b.input("i", (), dtype)
    if with_nodes:
        i2 = b.tensor("i2", (), np.int32)
        b.op("MAXIMUM", [bi, b.const("one", np.int32(1))], [i2])
        b.output(i2)
    else:
        b.output(bi)
    return b.build()


def _start(it) -> tuple[threading.Thread, dict]:
    result: dict = {}

    def run():
        try:
            it.invoke()
            result["ok"] = True
        except Exception as e:  # noqa: BLE001 (the test inspects it)
            result["error"] = e

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th, result


def _wait_until_running(it, th: threading.Thread) -> None:
    """Until the invoke in the other thread holds the interpreter (no sleeps of fixed length)."""
    while it._guard._invoke == 0 and th.is_alive():
        threading.Event().wait(0.001)
    assert th.is_alive(), "the invoke ended before it could be cancelled"


@pytest.mark.parametrize("with_nodes", [True, False], ids=["loop-with-nodes", "loop-without-nodes"])
def test_timeout_stops_an_endless_while_and_interpreter_stays_usable(with_nodes):
    it = litert_py.Interpreter(model_content=_endless_while(with_nodes))
    it.allocate_tensors()
    start, stop = (np.int32(0), np.int32(-3)) if with_nodes else (np.bool_(True), np.bool_(False))
    it.set_tensor(0, start)
    with pytest.raises(DeadlineExceededError, match="deadline") as e:
        it.invoke(timeout=0.05)
    assert isinstance(e.value, CancelledError) and isinstance(e.value, InvokeError)
    assert isinstance(e.value, TimeoutError) and isinstance(e.value, RuntimeError)
    it.set_tensor(0, stop)
    it.invoke()  # no cancellation left behind
    assert it.get_tensor(it.get_output_details()[0]["index"]) == stop
    it.invoke(timeout=10.0)  # a deadline that is not reached changes nothing
    assert it.get_tensor(it.get_output_details()[0]["index"]) == stop


@pytest.mark.parametrize("with_nodes", [True, False], ids=["loop-with-nodes", "loop-without-nodes"])
def test_cancel_from_another_thread(with_nodes):
    it = litert_py.Interpreter(model_content=_endless_while(with_nodes))
    it.allocate_tensors()
    it.set_tensor(0, np.int32(7) if with_nodes else np.bool_(True))
    th, result = _start(it)
    _wait_until_running(it, th)
    assert it.cancel() is True
    th.join(JOIN_LIMIT)
    assert not th.is_alive(), "cancel() did not stop the invoke"
    assert type(result.get("error")) is CancelledError, result
    assert "cancelled" in str(result["error"])
    assert it.cancel() is False  # nothing running: a no-op that does not affect the next invoke
    it.set_tensor(0, np.int32(-1) if with_nodes else np.bool_(False))
    it.invoke()
    assert it.get_tensor(it.get_output_details()[0]["index"]) == (-1 if with_nodes else False)


def test_cancel_stops_a_straight_line_graph_at_the_next_node():
    """A custom op cancels the invoke it runs in: the following node must not run."""
    calls: list[str] = []

    @dataclass(frozen=True)
    class Record:
        name: str
        interpreter: object
        cancel: bool

        def __call__(self, inputs, outputs):
            calls.append(self.name)
            outputs[0][...] = inputs[0]
            if self.cancel:
                assert self.interpreter.cancel() is True

    def prepare(ctx, cancel):
        ctx.set_output_shape(0, ctx.input(0).shape)
        return Record(ctx.op_name + str(ctx.node_index), ctx.runtime, cancel)

    litert_py.register_custom_op("LitertPyTestRecord", lambda ctx: prepare(ctx, False))
    litert_py.register_custom_op("LitertPyTestCancel", lambda ctx: prepare(ctx, True))
    b = ModelBuilder()
    x = b.input("x", [2], np.float32)
    t1, t2, t3 = (b.tensor(n, [2], np.float32) for n in ("t1", "t2", "t3"))
    b.op("CUSTOM", [x], [t1], custom_code="LitertPyTestRecord")
    b.op("CUSTOM", [t1], [t2], custom_code="LitertPyTestCancel")
    b.op("CUSTOM", [t2], [t3], custom_code="LitertPyTestRecord")
    b.output(t3)
    it = litert_py.Interpreter(model_content=b.build())
    it.allocate_tensors()
    it.set_tensor(0, np.ones(2, np.float32))
    with pytest.raises(CancelledError, match="Node number 2"):
        it.invoke()
    assert len(calls) == 2
    calls.clear()
    litert_py.register_custom_op("LitertPyTestCancel", lambda ctx: prepare(ctx, False))
    it2 = litert_py.Interpreter(model_content=b.build())
    it2.allocate_tensors()
    it2.set_tensor(0, np.ones(2, np.float32))
    it2.invoke()
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(CancelledError):  # the first interpreter's steps were restored: its op cancels again
        it.invoke()
    assert calls == ["LitertPyTestRecord0", "LitertPyTestCancel1"]


def test_concurrent_use_of_one_interpreter_is_refused():
    it = litert_py.Interpreter(model_content=_endless_while())
    it.allocate_tensors()
    it.set_tensor(0, np.int32(0))
    th, result = _start(it)
    _wait_until_running(it, th)
    try:
        for call in (
            lambda: it.set_tensor(0, np.int32(1)),
            lambda: it.invoke(),
            lambda: it.get_tensor(0),
            lambda: it.allocate_tensors(),
            lambda: it.resize_tensor_input(0, []),
        ):
            with pytest.raises(ConcurrentUseError, match="another thread is inside this Interpreter"):
                call()
    finally:
        it.cancel()
        th.join(JOIN_LIMIT)
    assert not th.is_alive()
    it.set_tensor(0, np.int32(-2))  # usable again from this thread
    it.invoke()
    assert it.get_tensor(1) == -2


def _cnn_model() -> bytes:
    from importlib import resources

    return (resources.files("litert_py") / "models" / "tiny_cnn.tflite").read_bytes()


def test_interpreters_in_threads_give_single_thread_results():
    model = _cnn_model()
    probe = litert_py.Interpreter(model_content=model)
    detail = probe.get_input_details()[0]
    rng = np.random.default_rng(15)
    if np.issubdtype(detail["dtype"], np.integer):
        info = np.iinfo(detail["dtype"])
        inputs = [
            rng.integers(info.min, info.max, detail["shape"], endpoint=True).astype(detail["dtype"]) for _ in range(12)
        ]
    else:
        inputs = [rng.standard_normal(detail["shape"]).astype(detail["dtype"]) for _ in range(12)]

    def run_all() -> list[np.ndarray]:
        it = litert_py.Interpreter(model_content=model)
        it.allocate_tensors()
        out = []
        for x in inputs:
            it.set_tensor(detail["index"], x)
            it.invoke()
            out.append(it.get_tensor(it.get_output_details()[0]["index"]))
        return out

    expected = run_all()
    results: list = [None] * 4

    def worker(k):
        results[k] = run_all()

    threads_ = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(4)]
    for th in threads_:
        th.start()
    for th in threads_:
        th.join(JOIN_LIMIT * 4)
    for got in results:
        assert got is not None
        for a, e in zip(got, expected):
            np.testing.assert_array_equal(a, e)
