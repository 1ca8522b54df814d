"""The ONNX Runtime delegate: real float models and generated single-op models run with the delegate match
litert_py without it within 1e-4 of the output's largest magnitude, and every op under test is really claimed
(a DELEGATE node replaces it)."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from litert_py import Interpreter, load_delegate
from tests.compare import assert_close
from tests.oracle import T, require, single_op_model
from tests.values import ints, uniform

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "corpus"
FLOAT_MODELS = [
    "mediapipe__face_detection_short_range",
    "efficientword_net__logmelcalc",
    "silabs_mltk__image_example1.float32",
    "tflite_micro__sine_float",
]


@pytest.fixture(scope="module", autouse=True)
def _ort():
    """ONNX Runtime is a test dependency (extra [test]): missing it fails under CI, skips elsewhere."""
    require("onnx", "onnxruntime")


def _inputs(it, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    out = []
    for d in it.get_input_details():
        if np.dtype(d["dtype"]).kind == "f":
            x = uniform(rng, d["shape"], d["dtype"], -2, 2)
            out.append(np.abs(x) + 0.1 if positive else x)
        else:
            out.append(ints(rng, d["shape"], d["dtype"], 0, 3))
    return out


def _run(it, xs):
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def _delegated(it) -> list[dict]:
    return [o for o in it._get_ops_details() if o["op_name"] == "DELEGATE"]


@pytest.mark.parametrize("name", FLOAT_MODELS)
def test_corpus_float_models_match_without_the_delegate(name):
    path = str(CORPUS / f"{name}.tflite")
    ref = Interpreter(model_path=path)
    xs = _inputs(ref)
    want = _run(ref, xs)
    it = Interpreter(model_path=path, experimental_delegates=[load_delegate("onnxruntime")])
    got = _run(it, xs)
    assert_close(got, want, rtol=1e-4, atol=1e-6)
    assert len(_delegated(it)) == 1  # every one of these is claimed in one partition
    left = {n.name for n in it._subgraph(0).nodes if not hasattr(n, "members")}
    assert left <= {"DEQUANTIZE"}  # only the folded float16 weight DEQUANTIZEs stay outside


def _model(op, ins, options=None, version=1, dtype=np.float32, shape=None):
    """A single-op model whose declared output shapes are the ones litert_py's prepare computes (or ``shape``)."""
    n_out = (options or {}).get("num_splits", 1)
    if shape is None:
        probe = single_op_model(op, ins, [T((1,), dtype) for _ in range(n_out)], options, version=version)
        it = Interpreter(model_content=probe)
        it.allocate_tensors()
        shapes = [tuple(d["shape"]) for d in it.get_output_details()]
    else:
        shapes = [shape]
    return single_op_model(op, ins, [T(s, dtype) for s in shapes], options, version=version)


rng = np.random.default_rng(1)


def _w(*shape):
    return T.const(rng.standard_normal(shape).astype(np.float32))


X4 = T((1, 9, 11, 4))
CASES = {
    "conv-same-s2-relu6": (
        "CONV_2D",
        [X4, _w(6, 3, 3, 4), _w(6)],
        {"padding": 0, "stride_h": 2, "stride_w": 2, "fused_activation_function": 3},
    ),
    "conv-valid-dil2": (
        "CONV_2D",
        [X4, _w(5, 2, 3, 4), _w(5)],
        {"padding": 1, "stride_h": 1, "stride_w": 1, "dilation_h_factor": 2, "dilation_w_factor": 2},
    ),
    "conv-grouped": ("CONV_2D", [X4, _w(6, 3, 3, 2), _w(6)], {"padding": 0, "stride_h": 1, "stride_w": 1}),
    "depthwise-same-mult2-relu": (
        "DEPTHWISE_CONV_2D",
        [X4, _w(1, 3, 3, 8), _w(8)],
        {"padding": 0, "stride_h": 2, "stride_w": 1, "depth_multiplier": 2, "fused_activation_function": 1},
    ),
    "transpose-conv-same-s2": (
        "TRANSPOSE_CONV",
        [T.const(np.array([1, 18, 22, 3], np.int32)), _w(3, 3, 3, 4), X4, _w(3)],
        {"padding": 0, "stride_h": 2, "stride_w": 2},
    ),
    "transpose-conv-valid": (
        "TRANSPOSE_CONV",
        [T.const(np.array([1, 11, 14, 2], np.int32)), _w(2, 3, 4, 4), X4],
        {"padding": 1, "stride_h": 1, "stride_w": 1},
    ),
    "fully-connected-4d-relu": (
        "FULLY_CONNECTED",
        [T((2, 3, 4)), _w(5, 4), _w(5)],
        {"fused_activation_function": 1, "keep_num_dims": True},
    ),
    "fully-connected-flat": ("FULLY_CONNECTED", [X4, _w(7, 44)], {}),
    "batch-matmul-adj-y": ("BATCH_MATMUL", [T((2, 3, 4)), T((1, 5, 4))], {"adj_y": True}),
    "avg-pool-same": (
        "AVERAGE_POOL_2D",
        [X4],
        {"padding": 0, "stride_h": 2, "stride_w": 2, "filter_height": 3, "filter_width": 3},
    ),
    "max-pool-valid-relu": (
        "MAX_POOL_2D",
        [X4],
        {
            "padding": 1,
            "stride_h": 2,
            "stride_w": 3,
            "filter_height": 2,
            "filter_width": 3,
            "fused_activation_function": 1,
        },
    ),
    "add-broadcast-relu": ("ADD", [X4, T((1, 1, 11, 4))], {"fused_activation_function": 1}),
    "sub": ("SUB", [X4, _w(4)], {}),
    "mul-relu-n1": ("MUL", [X4, X4], {"fused_activation_function": 2}),
    "div": ("DIV", [X4, T.const(np.full((4,), 1.5, np.float32))], {}),
    "maximum": ("MAXIMUM", [X4, T((1, 9, 1, 4))], {}),
    "minimum": ("MINIMUM", [X4, _w(1)], {}),
    "squared-difference": ("SQUARED_DIFFERENCE", [X4, X4], {}),
    **{
        f"unary-{op.lower()}": (op, [X4], {})
        for op in [
            "RELU",
            "RELU6",
            "RELU_N1_TO_1",
            "LOGISTIC",
            "TANH",
            "HARD_SWISH",
            "EXP",
            "ABS",
            "NEG",
            "SQUARE",
            "FLOOR",
        ]
    },
    "leaky-relu": ("LEAKY_RELU", [X4], {"alpha": 0.2}),
    "prelu": ("PRELU", [X4, _w(1, 1, 4)], {}),
    "concatenation-last": ("CONCATENATION", [X4, T((1, 9, 11, 2))], {"axis": -1}),
    "concatenation-1": ("CONCATENATION", [X4, X4], {"axis": 1}),
    "reshape": ("RESHAPE", [X4, T.const(np.array([9, -1], np.int32))], {}),
    "pad": ("PAD", [X4, T.const(np.array([[0, 0], [1, 2], [0, 3], [0, 0]], np.int32))], {}),
    "padv2": (
        "PADV2",
        [X4, T.const(np.array([[0, 0], [1, 0], [2, 1], [0, 1]], np.int32)), T.const(np.array([0.5], np.float32))],
        {},
    ),
    "mirror-pad-reflect": (
        "MIRROR_PAD",
        [X4, T.const(np.array([[0, 0], [2, 1], [1, 2], [0, 0]], np.int32))],
        {"mode": 0},
    ),
    "softmax-beta": ("SOFTMAX", [T((3, 10))], {"beta": 0.5}),
    "mean-keep": ("MEAN", [X4, T.const(np.array([1, 2], np.int32))], {"keep_dims": True}),
    "sum": ("SUM", [X4, T.const(np.array([-1], np.int32))], {"keep_dims": False}),
    "reduce-max": ("REDUCE_MAX", [X4, T.const(np.array([1], np.int32))], {"keep_dims": False}),
    "transpose": ("TRANSPOSE", [X4, T.const(np.array([0, 3, 1, 2], np.int32))], {}),
    "slice": ("SLICE", [X4, T.const(np.array([0, 2, 1, 1], np.int32)), T.const(np.array([1, -1, 5, 2], np.int32))], {}),
    "strided-slice-masks": (
        "STRIDED_SLICE",
        [
            X4,
            T.const(np.array([0, 1, -2, 0], np.int32)),
            T.const(np.array([1, 8, 1, 3], np.int32)),
            T.const(np.array([1, 2, -3, 1], np.int32)),
        ],
        {"begin_mask": 1, "end_mask": 8, "shrink_axis_mask": 1},
    ),
    "split-v": (
        "SPLIT_V",
        [X4, T.const(np.array([2, -1, 3], np.int32)), T.const(np.array([2], np.int32))],
        {"num_splits": 3},
    ),
    "gather-axis1": ("GATHER", [X4, T.const(np.array([3, 0, 8], np.int32))], {"axis": 1}),
    **{
        f"resize-{kind}-{mode}": (
            kind.upper(),
            [X4, T.const(np.array([16, 7], np.int32))],
            {"align_corners": mode == "align", "half_pixel_centers": mode == "half"},
        )
        for kind in ("resize_bilinear", "resize_nearest_neighbor")
        for mode in ("default", "half", "align")
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_models_match_without_the_delegate(case):
    op, ins, opts = CASES[case]
    version = 3 if op == "TRANSPOSE_CONV" else 1
    model = _model(op, ins, opts, version=version, shape=(1, 7, 5, 2) if op == "SLICE" else None)
    ref = Interpreter(model_content=model)
    xs = _inputs(ref)
    want = _run(ref, xs)
    it = Interpreter(model_content=model, experimental_delegates=[load_delegate("onnxruntime")])
    got = _run(it, xs)
    assert len(_delegated(it)) == 1, f"{op} was not claimed"
    assert_close(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("op", ["SQRT", "RSQRT", "LOG"])
def test_unary_ops_on_positive_inputs(op):
    model = _model(op, [X4])
    ref = Interpreter(model_content=model)
    xs = _inputs(ref, positive=True)
    want = _run(ref, xs)
    it = Interpreter(model_content=model, experimental_delegates=[load_delegate("onnxruntime")])
    assert_close(_run(it, xs), want, rtol=1e-4, atol=1e-6)
    assert len(_delegated(it)) == 1


def test_quantized_and_int_nodes_stay_on_litert_py_kernels():
    model = _model("ADD", [T((2, 3), np.int32), T((2, 3), np.int32)], dtype=np.int32)
    it = Interpreter(model_content=model, experimental_delegates=[load_delegate("onnxruntime")])
    xs = _inputs(it)
    np.testing.assert_array_equal(_run(it, xs)[0], xs[0] + xs[1])
    assert _delegated(it) == []


def test_resize_input_reprepares_the_session():
    model = _model("CONV_2D", [X4, _w(6, 3, 3, 4), _w(6)], {"padding": 0, "stride_h": 2, "stride_w": 2})
    d = load_delegate("onnxruntime")
    it = Interpreter(model_content=model, experimental_delegates=[d])
    ref = Interpreter(model_content=model)
    for shape in [(1, 9, 11, 4), (2, 16, 5, 4)]:
        for i in (it, ref):
            i.resize_tensor_input(0, list(shape))
        xs = [np.random.default_rng(3).uniform(-1, 1, shape).astype(np.float32)]
        assert_close(_run(it, xs), _run(ref, xs), rtol=1e-4, atol=1e-6)
    assert d.sessions_built == 2


def test_num_threads_and_providers_reach_the_session():
    model = _model("RELU", [X4])
    d = load_delegate("onnxruntime", {"providers": ["CPUExecutionProvider"]})
    it = Interpreter(model_content=model, num_threads=2, experimental_delegates=[d])
    it.allocate_tensors()
    (op,) = [o for o in it._subgraph(0).prepared_ops.values()]
    assert op.session.get_providers() == ["CPUExecutionProvider"]
    assert op.session.get_session_options().intra_op_num_threads == 2
    with pytest.raises(ValueError, match="not available"):
        load_delegate("onnxruntime", {"providers": ["NoSuchExecutionProvider"]})
    with pytest.raises(ValueError, match="unknown onnxruntime delegate options"):
        load_delegate("onnxruntime", {"threads": 2})


def test_missing_onnxruntime_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match=r"litert-py\[onnxruntime\]"):
        load_delegate("onnxruntime")


def test_core_never_imports_onnxruntime():
    import subprocess

    code = "import sys, litert_py; litert_py.Interpreter; assert 'onnxruntime' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tflite_run_delegate_flag(capsys):
    from litert_py.tools.run import main

    model = str(CORPUS / "tflite_micro__sine_float.tflite")
    assert main([model, "--delegate", "onnxruntime", "--json"]) == 0
    assert main([model, "--delegate", "no_such_delegate_module"]) == 2
    assert "cannot load delegate 'no_such_delegate_module'" in capsys.readouterr().err


def _quantized_cases():
    from tests.oracle import quant

    r = np.random.default_rng(5)
    qx, qo = quant(0.05, 3), quant(0.1, -5)
    x4 = T((1, 8, 8, 8), np.int8, q=qx)
    w = T.const(r.integers(-127, 128, (16, 3, 3, 8)).astype(np.int8), q=quant(r.uniform(0.002, 0.01, 16), [0] * 16, 0))
    b = T.const(r.integers(-500, 500, 16).astype(np.int32), q=quant(np.full(16, 0.05 * 0.005), [0] * 16, 0))
    return {
        "conv-relu": (
            "CONV_2D",
            [x4, w, b],
            T((1, 8, 8, 16), np.int8, q=quant(0.2, -3)),
            {"padding": 0, "stride_h": 1, "stride_w": 1, "fused_activation_function": 1},
        ),
        "fully-connected": (
            "FULLY_CONNECTED",
            [T((4, 64), np.int8, q=qx), T.const(r.integers(-127, 128, (32, 64)).astype(np.int8), q=quant(0.01, 0))],
            T((4, 32), np.int8, q=quant(0.3, 2)),
            {},
        ),
        "add": ("ADD", [x4, T((1, 8, 8, 8), np.int8, q=quant(0.07, -10))], T((1, 8, 8, 8), np.int8, q=qo), {}),
        "avg-pool": (
            "AVERAGE_POOL_2D",
            [x4],
            T((1, 4, 4, 8), np.int8, q=qx),
            {"padding": 0, "stride_h": 2, "stride_w": 2, "filter_height": 3, "filter_width": 3},
        ),
        "softmax": ("SOFTMAX", [T((4, 16), np.int8, q=qx)], T((4, 16), np.int8, q=quant(1 / 256, -128)), {"beta": 1.0}),
    }


QUANTIZED = _quantized_cases()


@pytest.mark.parametrize("case", sorted(QUANTIZED))
def test_quantized_ops_only_with_allow_inexact_and_within_one_step(case):
    op, ins, out, opts = QUANTIZED[case]
    model = single_op_model(op, ins, [out], opts)
    ref = Interpreter(model_content=model)
    xs = [np.random.default_rng(7).integers(-128, 128, t.shape).astype(np.int8) for t in ins if t.data is None]
    want = _run(ref, xs)[0].astype(np.int32)
    strict = Interpreter(model_content=model, experimental_delegates=[load_delegate("onnxruntime")])
    np.testing.assert_array_equal(_run(strict, xs)[0], want)  # not claimed: litert_py's exact kernels
    assert _delegated(strict) == []
    it = Interpreter(
        model_content=model, experimental_delegates=[load_delegate("onnxruntime", {"allow_inexact_quantized": True})]
    )
    got = _run(it, xs)[0].astype(np.int32)
    assert len(_delegated(it)) == 1
    assert np.max(np.abs(got - want)) <= 1  # ONNX's QuantizeLinear rounds half to even, TFLite's kernels do not
