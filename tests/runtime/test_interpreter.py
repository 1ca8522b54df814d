"""The tf.lite Interpreter surface: misuse raises what ai-edge-litert raises, and the detail dicts match it.

Each misuse case runs against both interpreters; ours must raise an instance of the oracle's exception type
(ours may be a subclass) and both messages must contain the phrase a tf.lite user knows.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import litert_py
from tests.oracle import T, oracle, single_op_model

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "corpus"
SINE = CORPUS / "tflite_micro__sine_float.tflite"


def _fc_model() -> bytes:
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    return single_op_model("FULLY_CONNECTED", [T((1, 4), name="x"), T.const(w), None], [T((1, 3), name="y")])


def _allocated(I, **kw):
    it = I(model_content=_fc_model(), **kw)
    it.allocate_tensors()
    return it


MISUSE = {
    "no-model": (lambda I: I(), "must be specified"),
    "both-models": (lambda I: I(model_path=str(SINE), model_content=b"x"), "Can't both provide"),
    "empty-content": (lambda I: I(model_content=b""), "must be specified"),
    "missing-file": (lambda I: I(model_path="/nonexistent/x.tflite"), "Could not open"),
    "not-flatbuffer": (lambda I: I(model_content=b"garbage bytes, not a model"), "not a valid Flatbuffer"),
    "path-not-str": (lambda I: I(model_path=12), ""),
    "num-threads-zero": (lambda I: I(model_content=_fc_model(), num_threads=0), "num_threads should >= 1"),
    "num-threads-str": (lambda I: I(model_content=_fc_model(), num_threads="2"), "type of num_threads"),
    "bad-resolver": (lambda I: I(model_content=_fc_model(), experimental_op_resolver_type="x"), "Unrecognized"),
    "invoke-before-allocate": (lambda I: I(model_content=_fc_model()).invoke(), "not ready"),
    "get-before-allocate": (lambda I: I(model_content=_fc_model()).get_tensor(0), "Tensor data is null"),
    "set-before-allocate": (
        lambda I: I(model_content=_fc_model()).set_tensor(0, np.zeros((1, 4), np.float32)),
        "Tensor is unallocated",
    ),
    "set-wrong-dtype": (
        lambda I: _allocated(I).set_tensor(0, np.zeros((1, 4))),
        "Got value of type FLOAT64 but expected type FLOAT32 for input 0",
    ),
    "set-wrong-rank": (
        lambda I: _allocated(I).set_tensor(0, np.zeros((1, 4, 1), np.float32)),
        "Dimension mismatch. Got 3 but expected 2 for input 0.",
    ),
    "set-wrong-dim": (
        lambda I: _allocated(I).set_tensor(0, np.zeros((1, 5), np.float32)),
        "Dimension mismatch. Got 5 but expected 4 for dimension 1 of input 0.",
    ),
    "set-list-float64": (lambda I: _allocated(I).set_tensor(0, [[1.0, 2.0, 3.0, 4.0]]), "FLOAT64"),
    "get-bad-index": (lambda I: _allocated(I).get_tensor(99), "Invalid tensor index 99"),
    "get-negative-index": (lambda I: _allocated(I).get_tensor(-1), "Invalid tensor index -1"),
    "get-bad-subgraph": (lambda I: _allocated(I).get_tensor(0, 5), "Invalid subgraph index 5"),
    "details-bad-subgraph": (lambda I: _allocated(I).get_tensor_details(5), "subgraph_index is out of range: 5"),
    "bad-node": (lambda I: _allocated(I)._get_op_details(7), "Invalid node index"),
    "resize-2d": (lambda I: _allocated(I).resize_tensor_input(0, [[1, 4]]), "Shape should be 1D instead of 2."),
    "resize-strict-fixed-dim": (
        lambda I: _allocated(I).resize_tensor_input(0, [2, 4], strict=True),
        "only allows mutating unknown dimensions",
    ),
    "invoke-after-resize": (
        lambda I: (lambda it: (it.resize_tensor_input(0, [2, 4]), it.invoke()))(_allocated(I)),
        "not ready",
    ),
    "signature-none-without-signatures": (lambda I: _allocated(I).get_signature_runner(), "None is only allowed"),
    "signature-bad-key": (lambda I: I(model_path=str(SINE)).get_signature_runner("nope"), "Invalid signature_key"),
    "signature-bad-input-name": (
        lambda I: I(model_path=str(SINE)).get_signature_runner()(x=np.zeros((1, 1), np.float32)),
        "Invalid Input name (x) for SignatureDef",
    ),
    "signature-wrong-count": (lambda I: I(model_path=str(SINE)).get_signature_runner()(), "expected 1 vs provided 0"),
    "signature-wrong-dtype": (
        lambda I: I(model_path=str(SINE)).get_signature_runner()(dense_input=np.zeros((1, 1))),
        "Got value of type FLOAT64 but expected type FLOAT32 for input 0",
    ),
    "live-view-blocks-allocate": (
        lambda I: (lambda it, v: it.allocate_tensors())(it := _allocated(I), it.tensor(0)()),
        "reference to internal data",
    ),
    "live-view-blocks-invoke": (
        lambda I: (lambda it, v: it.invoke())(it := _allocated(I), it.tensor(0)()),
        "reference to internal data",
    ),
}


def _outcome(fn, I):
    try:
        fn(I)
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
        return e
    return None


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_misuse_raises_like_tflite(case):
    LiteRT, _ = oracle()
    fn, phrase = MISUSE[case]
    theirs, ours = _outcome(fn, LiteRT), _outcome(fn, litert_py.Interpreter)
    assert theirs is not None, f"the oracle accepted {case}: the case table is wrong"
    assert ours is not None, f"litert_py accepted {case}; LiteRT raised {type(theirs).__name__}: {theirs}"
    assert isinstance(ours, type(theirs)), f"{type(ours).__mro__} is not a {type(theirs).__name__}"
    assert phrase in str(theirs), f"oracle message changed: {theirs}"
    assert phrase in str(ours), f"our message {str(ours)!r} lacks {phrase!r}"


def test_interpreter_stays_usable_after_errors():
    it = _allocated(litert_py.Interpreter)
    for bad in (np.zeros((1, 4)), np.zeros((2, 4), np.float32), np.zeros((1,), np.float32)):
        with pytest.raises(ValueError):
            it.set_tensor(0, bad)
    x = np.array([[1, 2, 3, 4]], np.float32)
    it.set_tensor(0, x)
    it.invoke()
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), x @ w.T, rtol=1e-6)


def test_resize_then_allocate_runs_new_shape():
    it = _allocated(litert_py.Interpreter)
    it.resize_tensor_input(0, [3, 4])
    it.allocate_tensors()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    it.set_tensor(0, x)
    it.invoke()
    assert it.get_output_details()[0]["shape"].tolist() == [3, 3]
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), x @ w.T, rtol=1e-6)


def test_tensor_returns_live_view_and_get_tensor_a_copy():
    it = _allocated(litert_py.Interpreter)
    view = it.tensor(0)
    view()[...] = 2.0
    assert np.all(it.get_tensor(0) == 2.0)
    copy = it.get_tensor(0)
    copy[...] = 5.0
    assert np.all(it.get_tensor(0) == 2.0)


def test_pathlike_model_path():
    it = litert_py.Interpreter(model_path=SINE)
    assert it.get_input_details()[0]["name"] == "serving_default_dense_input:0"


def test_unsupported_ops_reported_together():
    from litert_py.schema.builder import ModelBuilder

    b = ModelBuilder()
    x = b.input("x", [2], np.float32)
    y = b.tensor("y", [2], np.float32)
    z = b.tensor("z", [2], np.float32)
    w = b.tensor("w", [2], np.float32)
    b.op(250, [x], [y])  # a builtin code no schema defines yet
    b.op("SomeCustomOp", [y], [z], custom_code="SomeCustomOp")
    b.op("OtherCustomOp", [z], [w], custom_code="OtherCustomOp")
    b.output(w)
    with pytest.raises(litert_py.UnsupportedOpError) as err:
        litert_py.Interpreter(model_content=b.build())
    assert len(err.value.ops) == 3
    assert all(name in str(err.value) for name in ("BUILTIN_250", "SomeCustomOp", "OtherCustomOp"))
    assert isinstance(err.value, ValueError)


def test_custom_op_registered_in_python():
    from dataclasses import dataclass

    from litert_py.schema.builder import ModelBuilder

    @dataclass(frozen=True)
    class TimesTwo:
        def __call__(self, inputs, outputs):
            np.multiply(inputs[0], 2, out=outputs[0])

    def prepare(ctx):
        ctx.set_output_shape(0, ctx.input(0).shape)
        return TimesTwo()

    litert_py.register_custom_op("LitertPyTestTimesTwo", prepare)
    b = ModelBuilder()
    x = b.input("x", [3], np.float32)
    y = b.tensor("y", [3], np.float32)
    b.op("CUSTOM", [x], [y], custom_code="LitertPyTestTimesTwo")
    b.output(y)
    it = litert_py.Interpreter(model_content=b.build())
    it.allocate_tensors()
    it.set_tensor(x, np.array([1, 2, 3], np.float32))
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(y), [2, 4, 6])


# -- detail dicts, key by key, against the oracle ----------------------------------------------------


def _assert_same_details(ours: dict, theirs: dict, where: str) -> None:
    assert set(ours) == set(theirs), f"{where}: keys {sorted(ours)} != {sorted(theirs)}"
    for key, want in theirs.items():
        got = ours[key]
        if isinstance(want, dict):
            _assert_same_details(got, want, f"{where}.{key}")
        elif isinstance(want, np.ndarray):
            assert isinstance(got, np.ndarray) and got.dtype == want.dtype, f"{where}.{key}: {got!r} vs {want!r}"
            np.testing.assert_array_equal(got, want, err_msg=f"{where}.{key}")
        elif isinstance(want, list):
            assert len(got) == len(want), f"{where}.{key}: {got!r} vs {want!r}"
            for k, (g, w) in enumerate(zip(got, want)):
                if isinstance(w, dict):
                    _assert_same_details(g, w, f"{where}.{key}[{k}]")
                else:
                    assert g == w, f"{where}.{key}[{k}]: {g!r} vs {w!r}"
        else:
            assert type(got) is type(want) and got == want, f"{where}.{key}: {got!r} vs {want!r}"


# Models that litert_py cannot construct yet, each with the issue that brings it.
NOT_YET: dict[str, str] = {}


def _detail_models():
    bundled = pathlib.Path(litert_py.__file__).parent / "models"
    # the models LiteRT's reference resolver runs (those with refs; not the MediaPipe custom-op models)
    models = sorted(m for m in CORPUS.glob("*.tflite") if (CORPUS / "refs" / f"{m.stem}.npz").exists())
    models += sorted(bundled.glob("*.tflite"))
    params = []
    for m in models:
        marks = [pytest.mark.xfail(reason=NOT_YET[m.name], strict=True)] if m.name in NOT_YET else []
        params.append(pytest.param(m, id=m.stem, marks=marks))
    return params


@pytest.mark.parametrize("model", _detail_models())
def test_detail_dicts_match_oracle(model):
    LiteRT, _ = oracle()
    theirs = LiteRT(
        model_path=str(model), num_threads=1, experimental_op_resolver_type=oracle()[1].BUILTIN_REF
    )  # no delegate nodes
    ours = litert_py.Interpreter(model_path=str(model))
    for stage in ("constructed", "allocated"):
        for name in ("get_input_details", "get_output_details"):
            got, want = getattr(ours, name)(), getattr(theirs, name)()
            assert len(got) == len(want)
            for k, (g, w) in enumerate(zip(got, want)):
                _assert_same_details(g, w, f"{stage} {name}[{k}]")
        got_all = {d["index"]: d for d in ours.get_tensor_details()}
        n_model = len(ours.model.subgraphs[0].tensors)
        assert sorted(got_all) == list(range(n_model))
        for w in theirs.get_tensor_details():
            if w["index"] >= n_model:  # LiteRT appends its kernels' scratch tensors (e.g. MEAN's) after allocation
                continue
            _assert_same_details(got_all[w["index"]], w, f"{stage} tensor {w['index']}")
        for k, (g, w) in enumerate(zip(ours._get_ops_details(), theirs._get_ops_details(), strict=True)):
            _assert_same_details(g, w, f"{stage} op {k}")
        assert ours.get_signature_list() == theirs.get_signature_list()
        assert ours._get_full_signature_list() == theirs._get_full_signature_list()
        assert ours.num_subgraphs() == theirs.num_subgraphs()
        ours.allocate_tensors()
        theirs.allocate_tensors()
