"""Models made by TensorFlow's own converter (tools/make_tf_fixtures.py, committed in tests/fixtures/), run
invoke after invoke in litert_py and in ai-edge-litert: resource variables behind signatures and CALL_ONCE,
hashtables, WHILE/IF with shapes that grow, and Keras sequence layers (the fused LSTM ops in float, hybrid and
full-integer form with the converter's own intermediates, and Keras 3's op-by-op loops).

Integer models are compared exactly with LiteRT's reference kernels; float ones within FLOAT_TOLERANCE
(relative to the largest reference magnitude; the sequence models chain transcendentals over 5 steps).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import litert_py
from tests.compare import assert_close
from tests.oracle import oracle

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
FLOAT_TOLERANCE = 1e-5


def _pair(name: str, resolver: str = "BUILTIN_REF"):
    LiteRT, R = oracle()
    model = (FIXTURES / name).read_bytes()
    ours = litert_py.Interpreter(model_content=model)
    theirs = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=getattr(R, resolver))
    return ours, theirs


def _invoke(it, inputs) -> list[np.ndarray]:
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        if tuple(d["shape"]) != np.shape(x):
            it.resize_tensor_input(d["index"], np.shape(x))
            it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def test_resource_variables_behind_two_signatures():
    """accumulate() adds 2x to a variable and counts calls; read() sees the same variables; reset_all_variables
    does what LiteRT's does to them (the initial values come back through CALL_ONCE)."""
    ours, theirs = _pair("tf_variables.tflite")
    assert ours.get_signature_list() == theirs.get_signature_list()
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-2, 2, 3).astype(np.float32) for _ in range(4)]
    for step in range(9):
        outs = []
        for it in (ours, theirs):
            if step == 5:
                it.reset_all_variables()
            if step % 3 == 2:
                outs.append(it.get_signature_runner("read")())
            else:
                outs.append(it.get_signature_runner("accumulate")(x=xs[step % 4]))
        assert outs[0].keys() == outs[1].keys()
        for k in outs[1]:
            np.testing.assert_array_equal(outs[0][k], outs[1][k], err_msg=f"step {step} output {k}")


def test_int8_variables_with_a_rank0_quantize():
    """Full-integer int8 with a rank-0 float input (QUANTIZE of a scalar; issue 11), a resource variable set up by
    CALL_ONCE: state across invokes, equal to LiteRT's reference kernels."""
    ours, theirs = _pair("tf_variables_int8.tflite")
    runners = [it.get_signature_runner("step") for it in (ours, theirs)]
    for x in (1.5, -0.7, 0.0, 2.2, -2.0):
        a, b = (r(x=np.float32(x)) for r in runners)
        np.testing.assert_array_equal(a["y"], b["y"], err_msg=f"x={x}")


def test_hashtables_string_and_int64_keys():
    ours, theirs = _pair("tf_hashtables.tflite", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")  # the ref resolver lacks them
    words = np.array([b"dog", b"fish", b"", b"cat", b"bird", b"cat"])
    numbers = np.array([42, 3, -1, 7, 7], np.int64)
    runners = [it.get_signature_runner("lookup") for it in (ours, theirs)]
    for w, n in [(words, numbers), (words[:1], numbers[:0]), (words[::-1], numbers[::-1])]:
        a, b = (r(words=w, numbers=n) for r in runners)
        assert a.keys() == b.keys()
        for k in b:
            assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
            assert a[k].tolist() == b[k].tolist(), k


@pytest.mark.parametrize("n", [0, 1, 2, 7, 30])
def test_while_with_an_if_in_its_body(n):
    ours, theirs = _pair("tf_while_if.tflite")
    rng = np.random.default_rng(n)
    runners = [it.get_signature_runner("run") for it in (ours, theirs)]
    for _ in range(2):
        x = rng.uniform(-3, 3, 4).astype(np.float32)
        a, b = (r(n=np.int32(n), x=x) for r in runners)
        assert a.keys() == b.keys()
        np.testing.assert_array_equal(a["y"], b["y"])  # each step is one exact-per-op float32 expression


@pytest.mark.parametrize("n", [0, 1, 5, 40])
def test_while_growing_a_tensor_runs_where_litert_fails(n):
    """The loop appends max(v) to a tensor every iteration. ai-edge-litert 2.3.0 fails to invoke this model
    (its WHILE cannot resize the converter's concatenation inside the body); litert_py runs it, checked
    against the loop written in numpy."""
    ours, theirs = _pair("tf_while_grow.tflite")
    x = np.random.default_rng(n).uniform(-3, 3, 4).astype(np.float32)
    with pytest.raises(RuntimeError, match="WHILE"):
        theirs.get_signature_runner("run")(n=np.int32(n), x=x)
    got = ours.get_signature_runner("run")(n=np.int32(n), x=x)
    v, trace = x.copy(), []
    for _ in range(n):
        v = v * np.float32(0.5) - np.float32(1.0)
        trace.append(v.max())
    np.testing.assert_array_equal(got["y"], v)
    np.testing.assert_array_equal(got["trace"], np.array(trace, np.float32).reshape(n))


def test_seeded_random_ops_continue_their_streams():
    """tf.random.normal / uniform / categorical with seeds: the same numbers, bit for bit, invoke after invoke
    (each invoke continues the generator's stream)."""
    ours, theirs = _pair("tf_random.tflite")
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.25, 0.15], [0.5, 0.0, 0.25, 0.25, 0.0]], np.float32))
    runners = [it.get_signature_runner("sample") for it in (ours, theirs)]
    for _ in range(3):
        a, b = (r(logits=logits) for r in runners)
        assert a.keys() == b.keys()
        for k in b:
            assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
            np.testing.assert_array_equal(a[k].view(np.uint8), b[k].view(np.uint8), err_msg=k)


SEQUENCE_MODELS = {
    # fixture: (resolver, exact) -- int8 models compare exactly with the reference kernels
    "tf_lstm_float.tflite": ("BUILTIN_REF", False),
    "tf_lstm_dynamic_range.tflite": ("BUILTIN_REF", False),
    "tf_lstm_int8.tflite": ("BUILTIN_REF", True),
    "tf_bidirectional_lstm_float.tflite": ("BUILTIN_REF", False),
    "tf_keras3_lstm_while.tflite": ("BUILTIN_REF", False),
    "tf_simple_rnn_float.tflite": ("BUILTIN_REF", False),
    "tf_gru_float.tflite": ("BUILTIN_REF", False),
}


@pytest.mark.parametrize("name", list(SEQUENCE_MODELS))
def test_sequence_models_stream(name):
    """Several invokes (the fused ops keep their state tensors between invokes), a reset, then again."""
    resolver, exact = SEQUENCE_MODELS[name]
    ours, theirs = _pair(name, resolver)
    rng = np.random.default_rng(1)
    d = theirs.get_input_details()[0]
    feeds = []
    for _ in range(3):
        if d["dtype"] == np.int8:
            feeds.append(rng.integers(-128, 128, d["shape"]).astype(np.int8))
        else:
            feeds.append(rng.uniform(-1, 1, d["shape"]).astype(np.float32))
    seen = [[], []]
    for k, it in enumerate((ours, theirs)):
        it.allocate_tensors()
        for x in feeds + [None] + feeds[:2]:
            if x is None:
                it.reset_all_variables()
                continue
            seen[k].append(_invoke(it, [x]))
    for step, (a, b) in enumerate(zip(*seen)):
        if exact:
            for u, v in zip(a, b):
                np.testing.assert_array_equal(u, v, err_msg=f"{name} invoke {step}")
        else:
            assert_close(a, b, rtol=FLOAT_TOLERANCE, atol=1e-6)


def test_every_fixture_is_exercised():
    names = {p.name for p in FIXTURES.glob("*.tflite")}
    tested = set(SEQUENCE_MODELS) | {
        "tf_variables.tflite",
        "tf_variables_int8.tflite",
        "tf_hashtables.tflite",
        "tf_while_if.tflite",
        "tf_while_grow.tflite",
        "tf_random.tflite",
    }
    tested |= {"tf_verify_float.tflite", "tf_verify_int8.tflite", "tf_verify_debug.tflite"}  # tests/verify
    assert names == tested
