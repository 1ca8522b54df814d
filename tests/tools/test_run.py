"""tflite-run (litert_py.tools.run): summary, inputs, outputs, timings; the bundled model; the console script.
The error paths are in test_run_errors.py; the models and helpers here serve both."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import litert_py
from litert_py import Interpreter
from litert_py.ops.registry import lookup
from litert_py.schema.builder import ModelBuilder
from litert_py.schema.reader import read_model
from litert_py.tools import run as tool
from litert_py.tools.run import main, random_array, safe_filename
from tests.compare import assert_close
from tests.oracle import oracle

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "litert_py" / "models" / "tiny_cnn.tflite"
#: the bundled model's operators, in execution order
BUNDLED_OPS = [
    "CONV_2D",
    "MAX_POOL_2D",
    "DEPTHWISE_CONV_2D",
    "RELU",
    "CONV_2D",
    "AVERAGE_POOL_2D",
    "RESHAPE",
    "FULLY_CONNECTED",
    "SOFTMAX",
]

W = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 7
BIAS = np.array([0.1, -0.2, 0.3], np.float32)


# -- models -------------------------------------------------------------------------------------------
def fc_model(out_name: str = "out/y:0", shape_signature=None) -> bytes:
    """x [2, 4] -> FULLY_CONNECTED -> 'out/y:0' [2, 3], with a signature (inp -> result)."""
    b = ModelBuilder()
    x = b.input("x", [2, 4], np.float32, shape_signature=shape_signature)
    w = b.const("w", W)
    bias = b.const("b", BIAS)
    y = b.tensor(
        out_name, [2, 3], np.float32, shape_signature=None if shape_signature is None else [shape_signature[0], 3]
    )
    b.op("FULLY_CONNECTED", [x, w, bias], [y])
    b.output(y)
    b.signature("serving_default", {"inp": x}, {"result": y})
    return b.build()


def two_input_model() -> bytes:
    """a [1, 4] and b [3, 4], each through its own FULLY_CONNECTED; outputs 'y:0' and 'y/0' (same safe name)."""
    b = ModelBuilder()
    a = b.input("a", [1, 4], np.float32)
    c = b.input("b", [3, 4], np.float32)
    w = b.const("w", W)
    ya = b.tensor("y:0", [1, 3], np.float32)
    yc = b.tensor("y/0", [3, 3], np.float32)
    b.op("FULLY_CONNECTED", [a, w, -1], [ya], {"fused_activation_function": 1})
    b.op("FULLY_CONNECTED", [c, w, -1], [yc])
    b.output(ya, yc)
    return b.build()


def identity_model() -> bytes:
    """No operators: integer / bool inputs are the outputs (shows the random inputs)."""
    b = ModelBuilder()
    xs = [b.input(f"x_{np.dtype(d).name}", [256], d) for d in (np.int8, np.uint8, np.int16, np.int32, np.bool_)]
    b.output(*xs)
    return b.build()


def custom_op_model(name: str) -> bytes:
    b = ModelBuilder()
    x = b.input("x", [4], np.float32)
    y = b.tensor("y", [4], np.float32)
    b.op("CUSTOM", [x], [y], custom_code=name)
    b.output(y)
    return b.build()


def bad_prepare_model() -> bytes:
    """FULLY_CONNECTED with an input of 5 elements and weights of depth 4: fails to prepare."""
    b = ModelBuilder()
    x = b.input("x", [1, 5], np.float32)
    w = b.const("w", W)
    y = b.tensor("y", [1, 3], np.float32)
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    return b.build()


def _boom_prepare(ctx):
    ctx.set_output_shape(0, ctx.input(0).shape)

    def boom(inputs, outputs):
        raise IndexError("index 7 is out of bounds for the test")

    return boom


litert_py.register_custom_op("TfliteRunTestBoom", _boom_prepare)


def run_main(capsys, *argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def reference(model_path: str, feeds: dict[int, np.ndarray]) -> list[np.ndarray]:
    it = Interpreter(model_path=model_path)
    it.allocate_tensors()
    for k, d in enumerate(it.get_input_details()):
        it.set_tensor(d["index"], feeds[k])
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def missing_kernels(path) -> list[str]:
    model = read_model(str(path))
    return sorted({c.name for c in model.operator_codes if lookup(c.builtin_code, c.custom_code) is None})


def assert_one_line_error(err: str, *needles: str) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tflite-run: error: "), err
    for n in needles:
        assert n in lines[0], (n, err)


# -- runs ---------------------------------------------------------------------------------------------
def test_model_path_summary_and_outputs(capsys, fc):
    rc, out, err = run_main(capsys, fc)
    assert rc == 0, err
    assert err == ""
    for text in (
        "Model: ",
        "fc.tflite",
        "Subgraphs: 1; tensors: 4; operators: 1",
        "Signatures: serving_default (inp -> result)",
        "[0] x: FLOAT32 2x4, not quantized  <- random",
        "[3] out/y:0: FLOAT32 2x3, not quantized",
        "1 x FULLY_CONNECTED v1 (FLOAT32, FLOAT32, FLOAT32 -> FLOAT32)",
        "Arena: ",
        "lower bound",
        "Results (after 1 run):",
        "out/y:0: FLOAT32 [2, 3]",
        "Timing: load ",
        "allocate ",
        "invoke ",
    ):
        assert text in out, text
    # the printed values are those of the seeded random input (seed 0)
    x = random_array((2, 4), np.float32, np.random.default_rng(0))
    (y,) = reference(fc, {0: x})
    assert np.array2string(y, precision=6, prefix="    ") in out


def test_seed_changes_random_inputs(capsys, fc, tmp_path):
    outs = {}
    for seed in (0, 0, 5):
        d = tmp_path / f"out{seed}_{len(outs)}"
        rc, _, err = run_main(capsys, fc, "--seed", seed, "-o", d, "-q")
        assert rc == 0, err
        outs.setdefault(seed, []).append(np.load(d / "out_y_0.npy"))
    np.testing.assert_array_equal(outs[0][0], outs[0][1])
    assert not np.array_equal(outs[0][0], outs[5][0])
    x5 = random_array((2, 4), np.float32, np.random.default_rng(5))
    np.testing.assert_array_equal(outs[5][0], reference(fc, {0: x5})[0])


def test_random_inputs_cover_integer_ranges(capsys, write, tmp_path):
    path = write("ident.tflite", identity_model())
    rc, out, err = run_main(capsys, path, "-o", tmp_path / "o")
    assert rc == 0, err
    assert "Ops: none" in out
    for dt in (np.int8, np.uint8, np.int16, np.int32):
        arr = np.load(tmp_path / "o" / f"x_{np.dtype(dt).name}.npy")
        assert arr.dtype == dt
        info = np.iinfo(dt)
        assert int(arr.max()) - int(arr.min()) > 0.9 * (int(info.max) - int(info.min))  # the full range
    b = np.load(tmp_path / "o" / "x_bool.npy")
    assert b.dtype == np.bool_ and b.any() and not b.all()


def test_random_array_kinds():
    rng = np.random.default_rng(0)
    f = random_array((1000,), np.float32, rng)
    assert f.dtype == np.float32 and f.min() >= -1 and f.max() < 1 and f.min() < -0.9 and f.max() > 0.9
    i64 = random_array((1000,), np.int64, rng)
    assert i64.dtype == np.int64 and i64.min() < -(2**62) and i64.max() > 2**62
    u8 = random_array((5000,), np.uint8, rng)
    assert u8.min() == 0 and u8.max() == 255
    s = random_array((2, 3), np.bytes_, rng)
    assert s.shape == (2, 3) and all(isinstance(v, bytes) and v for v in s.ravel())


def test_input_npy_by_name_and_position_and_bare(capsys, fc, write, tmp_path):
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    xf = write("x.npy", x)
    (want,) = reference(fc, {0: x})
    for spec in (f"x={xf}", f"0={xf}", f"inp={xf}", xf):  # tensor name, position, signature name, bare file
        d = tmp_path / f"o{abs(hash(spec))}"
        rc, out, err = run_main(capsys, fc, "--input", spec, "--output-dir", d)
        assert rc == 0, (spec, err)
        assert f"<- {xf}" in out
        np.testing.assert_array_equal(np.load(d / "out_y_0.npy"), want)


def test_input_npz_several_inputs(capsys, write, tmp_path):
    path = write("two.tflite", two_input_model())
    a = np.arange(4, dtype=np.float32).reshape(1, 4) - 1.5
    b = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    want = reference(path, {0: a, 1: b})
    # one .npz naming both inputs
    npz = write("both.npz", {"a": a, "b": b})
    rc, out, err = run_main(capsys, path, "--input", npz, "-o", tmp_path / "o1")
    assert rc == 0, err
    assert f"<- {npz}[a]" in out and f"<- {npz}[b]" in out
    got = [np.load(tmp_path / "o1" / "y_0.npy"), np.load(tmp_path / "o1" / "y_0_1.npy")]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # positional keys (np.savez(a, b) -> arr_0, arr_1)
    pos = tmp_path / "pos.npz"
    np.savez(pos, a, b)
    rc, _, err = run_main(capsys, path, "--input", pos, "-o", tmp_path / "o2", "-q")
    assert rc == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "o2" / "y_0_1.npy"), want[1])
    # NAME=FILE.npz picks NAME out of the archive; the other input is random
    rc, out, err = run_main(capsys, path, "--input", f"b={npz}", "-o", tmp_path / "o3")
    assert rc == 0, err
    assert "[0] a: FLOAT32 1x4, not quantized  <- random" in out
    np.testing.assert_array_equal(np.load(tmp_path / "o3" / "y_0_1.npy"), want[1])


def test_output_dir_matches_interpreter(capsys, write, tmp_path):
    path = write("two.tflite", two_input_model())
    a = np.full((1, 4), 0.5, np.float32)
    rc, out, err = run_main(capsys, path, "--input", f"a={write('a.npy', a)}", "--output-dir", tmp_path / "new" / "dir")
    assert rc == 0, err
    files = sorted(os.listdir(tmp_path / "new" / "dir"))
    assert files == ["y_0.npy", "y_0_1.npy"]
    assert f"-> {tmp_path / 'new' / 'dir' / 'y_0.npy'}" in out
    rng = np.random.default_rng(0)
    random_array((1, 4), np.float32, rng)  # drawn for input 'a' too, then replaced by the file
    b = random_array((3, 4), np.float32, rng)
    want = reference(path, {0: a, 1: b})
    for f, w in zip(files, want):
        got = np.load(tmp_path / "new" / "dir" / f)
        assert got.dtype == w.dtype and got.shape == w.shape
        np.testing.assert_array_equal(got, w)


def test_safe_filename():
    taken: set[str] = set()
    assert safe_filename("StatefulPartitionedCall:0", taken, "o") == "StatefulPartitionedCall_0"
    assert safe_filename("../../etc/passwd", taken, "o") == "etc_passwd"
    assert safe_filename("StatefulPartitionedCall;0", taken, "o") == "StatefulPartitionedCall_0_1"
    assert safe_filename("...", taken, "output_3") == "output_3"
    assert safe_filename(".hidden", taken, "o") == "hidden"


def test_resize_dynamic_input(capsys, write, tmp_path):
    path = write("dyn.tflite", fc_model(shape_signature=[-1, 4]))
    x = np.ones((5, 4), np.float32)
    rc, out, err = run_main(capsys, path, "--input", f"x={write('x5.npy', x)}", "-o", tmp_path / "o")
    assert rc == 0, err
    assert "[0] x: FLOAT32 5x4 (shape_signature -1x4)" in out
    got = np.load(tmp_path / "o" / "out_y_0.npy")
    np.testing.assert_allclose(got, np.broadcast_to(W.sum(1) + BIAS, (5, 3)), rtol=1e-6)


def test_signature(capsys, fc, write, tmp_path):
    x = np.full((2, 4), -0.25, np.float32)
    rc, out, err = run_main(
        capsys, fc, "--signature", "serving_default", "--input", f"inp={write('x.npy', x)}", "-o", tmp_path / "o"
    )
    assert rc == 0, err
    assert "Running signature 'serving_default' (subgraph 0)" in out
    assert "inp (tensor 'x')" in out and "result (tensor 'out/y:0')" in out
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "result.npy"), reference(fc, {0: x})[0])


def test_signature_of_another_subgraph_with_resize(capsys, write, tmp_path):
    b = ModelBuilder()
    x = b.input("x", [1, 4], np.float32)
    y = b.tensor("y", [1, 3], np.float32)
    b.op("FULLY_CONNECTED", [x, b.const("w", W), -1], [y])
    b.output(y)
    b.signature("first", {"x": x}, {"y": y})
    b.subgraph("second")
    x2 = b.input("x2", [2, 4], np.float32, shape_signature=[-1, 4])
    y2 = b.tensor("y2", [2, 3], np.float32, shape_signature=[-1, 3])
    b.op("FULLY_CONNECTED", [x2, b.const("w2", W), b.const("b2", BIAS)], [y2])
    b.output(y2)
    b.signature("second", {"in": x2}, {"out": y2}, subgraph=1)
    path = write("multi.tflite", b.build())
    x = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    rc, out, err = run_main(
        capsys, path, "--signature", "second", "--input", f"in={write('x.npy', x)}", "-o", tmp_path / "o"
    )
    assert rc == 0, err
    assert "Subgraphs: 2 (#0: 3 tensors, 1 ops | #1 'second': 4 tensors, 1 ops); tensors: 7; operators: 2" in out
    assert "Running signature 'second' (subgraph 1)" in out
    assert "[0] in (tensor 'x2'): FLOAT32 3x4 (shape_signature -1x4)" in out
    assert "allocate n/a" not in out
    LiteRT, _ = oracle()
    want = LiteRT(model_path=path).get_signature_runner("second")(**{"in": x})["out"]
    assert_close([np.load(tmp_path / "o" / "out.npy")], [want], rtol=1e-5, atol=1e-6)


def test_json(capsys, fc):
    rc, out, err = run_main(capsys, fc, "--json", "--runs", "3", "--seed", "1")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["tool"] == "tflite-run" and doc["litert_py_version"] == litert_py.__version__ and doc["seed"] == 1
    assert doc["model"]["path"] == fc and doc["model"]["bundled"] is False
    assert doc["inputs"] == [
        {
            "name": "x",
            "tensor": "x",
            "index": 0,
            "shape": [2, 4],
            "shape_signature": [2, 4],
            "dtype": "FLOAT32",
            "quantization": None,
            "source": "random",
        }
    ]
    assert doc["outputs"][0]["name"] == "out/y:0" and doc["outputs"][0]["shape"] == [2, 3]
    assert doc["ops"] == [
        {"op": "FULLY_CONNECTED", "version": 1, "input_types": ["FLOAT32"] * 3, "output_types": ["FLOAT32"], "count": 1}
    ]
    assert doc["num_tensors"] == 4 and doc["num_operators"] == 1
    assert doc["subgraphs"] == [{"index": 0, "name": "", "tensors": 4, "operators": 1}]
    assert doc["signatures"] == {"serving_default": {"inputs": ["inp"], "outputs": ["result"]}}
    assert doc["arena"]["arena_bytes"] >= doc["arena"]["lower_bound"] > 0
    t = doc["timing_ms"]
    assert t["runs"] == 3 and len(t["invoke_all"]) == 3 and t["invoke_min"] <= t["invoke_median"] <= t["invoke_max"]
    assert t["load"] > 0 and t["allocate"] > 0
    x = random_array((2, 4), np.float32, np.random.default_rng(1))
    y = reference(fc, {0: x})[0]
    assert doc["results"][0]["stats"]["max"] == pytest.approx(float(y.max()))
    assert doc["results"][0]["file"] is None


def test_quantization_in_summary(capsys, write):
    b = ModelBuilder()
    from litert_py.schema.builder import quant

    x = b.input("q", [4], np.int8, quantization=quant(0.5, -3))
    b.output(x)
    rc, out, err = run_main(capsys, write("q.tflite", b.build()), "--json")
    assert rc == 0, err
    assert json.loads(out)["inputs"][0]["quantization"] == {
        "scales": [0.5],
        "zero_points": [-3],
        "quantized_dimension": 0,
    }
    rc, out, err = run_main(capsys, write("q.tflite", b.build()))
    assert "[0] q: INT8 4, scale 0.5, zero_point -3" in out


def test_quiet_threads_preserve(capsys, fc):
    rc, out, err = run_main(capsys, fc, "--quiet", "--num-threads", "2", "--runs", "4", "--preserve-all-tensors")
    assert rc == 0, err
    assert out.strip().splitlines() == [out.strip()] and out.startswith("Timing: load ")
    assert "median of 4 runs" in out
    rc, out, _ = run_main(capsys, fc, "--preserve-all-tensors", "--json")
    arena = json.loads(out)["arena"]
    assert arena["arena_bytes"] == 128 and arena["planned_tensors"] == 2  # no reuse: x and y side by side


def test_version_and_help(capsys):
    rc, out, _ = run_main(capsys, "--version")
    assert rc == 0 and out.strip() == f"tflite-run (litert_py {litert_py.__version__})"
    rc, out, _ = run_main(capsys, "--help")
    assert rc == 0 and "--input NAME=FILE" in out and "--output-dir DIR" in out


# -- the bundled model --------------------------------------------------------------------------------
def test_bundled_model_is_packaged():
    assert pathlib.Path(tool.bundled_model_path()).resolve() == BUNDLED.resolve()
    assert 1000 < BUNDLED.stat().st_size < 32 * 1024


def test_bundled_model_is_what_the_script_makes():
    spec = importlib.util.spec_from_file_location("make_bundled_model", ROOT / "tools" / "make_bundled_model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert read_model(mod.build()) == read_model(str(BUNDLED))


def test_bundled_model_runs_in_oracle_and_matches():
    LiteRT, _ = oracle()
    it = LiteRT(model_path=str(BUNDLED), num_threads=1)
    assert it.get_signature_list() == {"serving_default": {"inputs": ["image"], "outputs": ["probabilities"]}}
    names = [d["op_name"] for d in it._get_ops_details()]
    assert names[:9] == BUNDLED_OPS
    rng = np.random.default_rng(3)
    images = [rng.uniform(-1, 1, (1, 16, 16, 3)).astype(np.float32) for _ in range(3)]
    theirs = [it.get_signature_runner("serving_default")(image=im)["probabilities"] for im in images]
    for p in theirs:
        assert p.shape == (1, 10) and abs(float(p.sum()) - 1) < 1e-5 and p.max() < 0.99
    assert not missing_kernels(BUNDLED)
    ours = Interpreter(model_path=str(BUNDLED)).get_signature_runner("serving_default")
    for im, p in zip(images, theirs):
        assert_close([ours(image=im)["probabilities"]], [p], rtol=1e-5, atol=1e-6)


def test_no_argument_runs_bundled_model(capsys, tmp_path):
    assert not missing_kernels(BUNDLED)
    rc, out, err = run_main(capsys, "-o", tmp_path / "o")
    assert rc == 0, err
    assert "tiny_cnn.tflite (bundled)" in out and "Signatures: serving_default (image -> probabilities)" in out
    for op in set(BUNDLED_OPS):
        assert f"x {op} v1" in out
    x = random_array((1, 16, 16, 3), np.float32, np.random.default_rng(0))
    got = np.load(tmp_path / "o" / "probabilities.npy")
    np.testing.assert_array_equal(got, reference(str(BUNDLED), {0: x})[0])
    LiteRT, _ = oracle()
    it = LiteRT(model_path=str(BUNDLED), num_threads=1)
    assert_close([got], [it.get_signature_runner()(image=x)["probabilities"]], rtol=1e-5, atol=1e-6)


# -- the installed console script ---------------------------------------------------------------------
def _command() -> list[str]:
    exe = shutil.which("tflite-run")
    return [exe] if exe else [sys.executable, "-m", "litert_py.tools.run"]


def test_console_script(write, tmp_path):
    path = write("fc.tflite", fc_model())
    x = write("x.npy", np.full((2, 4), 0.75, np.float32))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [*_command(), path, "--input", f"x={x}", "--json", "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["results"][0]["file"] == str(tmp_path / "o" / "out_y_0.npy")
    np.testing.assert_array_equal(
        np.load(tmp_path / "o" / "out_y_0.npy"), reference(path, {0: np.full((2, 4), 0.75, np.float32)})[0]
    )
    p = subprocess.run(
        [*_command(), write("junk.tflite", b"garbage")], capture_output=True, text=True, env=env, timeout=120
    )
    assert p.returncode == 1 and p.stdout == ""
    assert_one_line_error(p.stderr, "not a valid Flatbuffer")
    p = subprocess.run([*_command(), path, "--nope"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2
    assert_one_line_error(p.stderr, "--nope")
