"""tflite-run as benchmark, profiler and model viewer: --benchmark, --profile, --nodes, --summary-only, inputs
from .npz keys, dequantized outputs, --sequence, --custom-ops, --compare litert, --help groups. Outputs are
parsed (JSON, CSV, text lines), never just the exit status."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import re

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.runtime.profiler import _Timer
from litert_py.schema.builder import ModelBuilder, quant
from litert_py.tools.benchmark import Progress, benchmark, stats_ms
from tests.oracle import oracle
from tests.tools.test_run import BUNDLED_OPS, custom_op_model, reference, run_main, two_input_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLED = str(ROOT / "litert_py" / "models" / "tiny_cnn.tflite")
LSTM = str(ROOT / "tests" / "fixtures" / "tf_lstm_float.tflite")  # variable (state) tensors: a stateful model


def run_json(capsys, *argv) -> dict:
    rc, out, err = run_main(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


# -- --benchmark ----------------------------------------------------------------------------------------
def test_benchmark_json(capsys):
    doc = run_json(capsys, BUNDLED, "--benchmark", "--warmup", "2", "--runs", "7")
    b = doc["benchmark"]
    for key in (
        "count",
        "first_ms",
        "min_ms",
        "max_ms",
        "mean_ms",
        "std_ms",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "load_ms",
        "allocate_ms",
        "peak_rss_bytes",
        "arena_bytes",
    ):
        assert key in b, key
    assert b["count"] == 7 and b["warmup"]["count"] == 2 and not b["stopped_by_max_secs"]
    assert 0 < b["min_ms"] <= b["p50_ms"] <= b["p90_ms"] <= b["p99_ms"] <= b["max_ms"]
    assert b["min_ms"] <= b["mean_ms"] <= b["max_ms"] and b["std_ms"] >= 0
    assert b["min_ms"] <= b["first_ms"] <= b["max_ms"]
    assert b["load_ms"] > 0 and b["allocate_ms"] > 0
    assert b["peak_rss_bytes"] > 10 * 2**20  # at least the Python process with numpy
    assert b["arena_bytes"] == doc["arena"]["arena_bytes"] > 0
    assert doc["timing_ms"]["runs"] == 7 and len(doc["timing_ms"]["invoke_all"]) == 7
    assert b["mean_ms"] == pytest.approx(np.mean(doc["timing_ms"]["invoke_all"]), rel=1e-3, abs=1e-3)


def test_benchmark_max_secs_and_text(capsys, fc):
    doc = run_json(capsys, fc, "--benchmark", "--runs", "1000", "--max-secs", "1e-9")
    assert doc["benchmark"]["count"] == 1 and doc["benchmark"]["stopped_by_max_secs"]
    rc, out, err = run_main(capsys, fc, "--benchmark", "--runs", "5", "--warmup", "0")
    assert rc == 0 and err == ""  # stderr is not a terminal here: no progress bar
    line = next(ln for ln in out.splitlines() if ln.startswith("Benchmark: "))
    figures = dict(re.findall(r"(\w+)=([\d.]+)", line))
    assert figures["count"] == "5" and set(figures) >= {"first", "min", "max", "avg", "std", "p50", "p90", "p99"}
    assert float(figures["min"]) <= float(figures["p50"]) <= float(figures["max"])
    arena = doc["arena"]["arena_bytes"]
    assert re.search(rf"^Memory: peak RSS [\d.]+ MiB, arena {arena:,} bytes \(1 subgraph\)$", out, re.M)
    assert "Warm-up" not in out


def test_stats_ms_percentiles():
    s = stats_ms([k / 1000 for k in range(1, 101)])  # 1..100 ms
    assert s["count"] == 100 and s["first_ms"] == 1 and s["min_ms"] == 1 and s["max_ms"] == 100
    assert s["mean_ms"] == pytest.approx(50.5) and s["p50_ms"] == pytest.approx(50.5)
    assert s["p90_ms"] == pytest.approx(90.1) and s["p99_ms"] == pytest.approx(99.01)
    assert s["std_ms"] == pytest.approx(np.std(np.arange(1, 101)))


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal():
    tty, pipe = _Tty(), io.StringIO()
    assert Progress.wanted(tty, quiet=False) and not Progress.wanted(tty, quiet=True)
    assert not Progress.wanted(pipe, quiet=False)
    bar = Progress(tty, 10, None, enabled=True, after=0.0)
    bar.update(5)
    assert re.search(r"benchmark \[#{15}\.{15}\] 5/10 runs", tty.getvalue())
    bar.close()
    assert tty.getvalue().endswith("\r")
    tty = _Tty()
    calls = []
    doc = benchmark(lambda: calls.append(1), 2, 4, None, Progress(tty, 4, None, enabled=True, after=0.0))
    assert len(calls) == 6 and doc["count"] == 4 and doc["warmup"]["count"] == 2
    assert "warm-up [" in tty.getvalue() and "] 2/2 runs" in tty.getvalue() and "] 4/4 runs" in tty.getvalue()
    quiet = Progress(tty, 10, None, enabled=True, after=3600.0)  # a run shorter than `after` shows nothing
    before = tty.getvalue()
    quiet.update(10)
    assert tty.getvalue() == before


# -- --profile and Interpreter.profile -----------------------------------------------------------------
#: the profiled steps of the bundled model: node 3, its RELU, is fused into the DEPTHWISE_CONV_2D before it at
#: prepare (ops/activation_fusion.py) and has no row of its own
PROFILED = [(k, op) for k, op in enumerate(BUNDLED_OPS) if k != 3]
PROFILED_OPS = [op for _, op in PROFILED]


def test_profile_json_and_csv(capsys, tmp_path):
    path = tmp_path / "prof.csv"
    doc = run_json(capsys, BUNDLED, "--profile", "--runs", "3", "--profile-csv", path)
    p = doc["profile"]
    assert BUNDLED_OPS[3] == "RELU" and [n["op"] for n in p["nodes"]] == PROFILED_OPS
    assert [(n["subgraph"], n["node"]) for n in p["nodes"]] == [(0, k) for k, _ in PROFILED]
    for n in p["nodes"]:
        assert n["mean_ms"] > 0 and 0 < n["percent"] < 100 and n["version"] == 1 and n["calls"] == 1
    assert p["nodes"][0]["dtypes"] == "FLOAT32, FLOAT32, FLOAT32 -> FLOAT32"
    assert p["nodes"][0]["output_shape"] == [1, 16, 16, 8]
    by_op = {o["op"]: o for o in p["by_op"]}
    assert by_op["CONV_2D"]["count"] == 2 and sum(o["count"] for o in p["by_op"]) == 8
    conv_ms = sum(n["self_ms"] for n in p["nodes"] if n["op"] == "CONV_2D")
    assert by_op["CONV_2D"]["total_ms"] == pytest.approx(conv_ms)
    totals = [o["total_ms"] for o in p["by_op"]]
    assert totals == sorted(totals, reverse=True)
    assert p["by_op"][-1]["cumulative_percent"] == pytest.approx(sum(o["percent"] for o in p["by_op"]))
    assert sum(n["percent"] for n in p["nodes"]) <= 100.0001
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["op"] for r in rows] == PROFILED_OPS
    assert [float(r["mean_ms"]) for r in rows] == pytest.approx([n["mean_ms"] for n in p["nodes"]], abs=1e-6)
    assert rows[0]["output_shape"] == "1x16x16x8"


def test_profile_text_top(capsys):
    rc, out, err = run_main(capsys, BUNDLED, "--profile", "--runs", "2", "--top", "3")
    assert rc == 0, err
    lines = out.splitlines()
    k = lines.index("Top 3 nodes by self time:")
    top = [ln.split() for ln in lines[k + 2 : k + 5]]
    assert all(t[1] in BUNDLED_OPS for t in top)
    selfs = [float(t[4]) for t in top]
    assert selfs == sorted(selfs, reverse=True)
    run_order = lines.index("Run order (sg:node for nodes of other subgraphs):")
    assert [ln.split()[1] for ln in lines[run_order + 2 : run_order + 10]] == PROFILED_OPS
    assert "By op type (self times):" in lines


def test_interpreter_profile_api_restores_the_plain_loop():
    it = Interpreter(model_path=BUNDLED)
    with pytest.raises(RuntimeError, match="not ready"):
        it.profile()
    it.allocate_tensors()
    x = np.linspace(-1, 1, 16 * 16 * 3, dtype=np.float32).reshape(1, 16, 16, 3)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    before = it.get_tensor(it.get_output_details()[0]["index"])
    steps = list(it._subgraph(0).steps)
    prof = it.profile(runs=3, warmup=0)
    assert prof.runs == 3 and len(prof.nodes) == 8 and prof.invoke_ms > 0
    assert [r.op for r in prof.nodes] == PROFILED_OPS
    assert [r.op for r in prof.top(2)] == [r.op for r in sorted(prof.nodes, key=lambda r: -r.self_ms)[:2]]
    after_steps = it._subgraph(0).steps
    assert all(a[0] is b[0] for a, b in zip(steps, after_steps))  # the original prepared ops are back
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), before)
    with pytest.raises(ValueError, match="runs"):
        it.profile(runs=0)


def test_profile_attributes_control_flow_subgraphs():
    """A Keras LSTM as a WHILE loop: body nodes are profiled in their own subgraph, once per iteration."""
    it = Interpreter(model_path=str(ROOT / "tests" / "fixtures" / "tf_keras3_lstm_while.tflite"))
    it.allocate_tensors()
    prof = it.profile(runs=2, warmup=1)
    subs = {r.subgraph for r in prof.nodes}
    assert 0 in subs and len(subs) >= 2
    (loop,) = [r for r in prof.nodes if r.op == "WHILE"]
    inner = [r for r in prof.nodes if r.subgraph != 0]
    body = [r for r in inner if r.calls == 5]  # the input has 5 time steps
    assert body, [(r.subgraph, r.op, r.calls) for r in inner]
    assert loop.mean_ms >= sum(r.mean_ms for r in inner if r.subgraph in {b.subgraph for b in body}) * 0.99
    assert loop.self_ms < loop.mean_ms
    assert sum(o.total_ms for o in prof.by_op) <= prof.invoke_ms * 1.0001
    for sub in (s for s in it._subgraphs if s is not None):  # every timer removed, in every subgraph
        assert "_prepare_node" not in sub.__dict__
        assert not any(isinstance(op, _Timer) for op, _, _ in sub.steps)
        assert not any(isinstance(op, _Timer) for _, op in sub.steps_nodes)


# -- --nodes, --summary-only ----------------------------------------------------------------------------
def test_nodes_json_and_text(capsys):
    doc = run_json(capsys, BUNDLED, "--nodes")
    nodes = doc["nodes"]
    assert [n["op"] for n in nodes] == BUNDLED_OPS
    conv = nodes[0]
    assert conv["options_type"] == "Conv2DOptions"
    assert conv["options"]["padding"] == "SAME" and conv["options"]["fused_activation_function"] == "RELU"
    assert conv["inputs"][0] == {
        "index": 0,
        "name": "image",
        "shape": [1, 16, 16, 3],
        "dtype": "FLOAT32",
        "quantization": None,
        "constant": False,
        "variable": False,
    }
    assert conv["inputs"][1]["constant"] and conv["outputs"][0]["shape"] == [1, 16, 16, 8]
    rc, out, err = run_main(capsys, BUNDLED, "--nodes")
    assert rc == 0, err
    assert "  [0] CONV_2D v1" in out and "options padding=SAME" in out
    assert "input  #1 'conv1/weights' FLOAT32 8x3x3x3 const" in out


def test_nodes_show_quantization(capsys, write):
    b = ModelBuilder()
    x = b.input("x", [1, 4], np.int8, quantization=quant(0.5, -3))
    w = b.const("w", np.ones((2, 4), np.int8), quantization=quant([0.1, 0.2], [0, 0], 0))
    y = b.tensor("y", [1, 2], np.int8, quantization=quant(1.0, 1))
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    doc = run_json(capsys, write("q.tflite", b.build()), "--nodes", "--summary-only")
    (node,) = doc["nodes"]
    assert node["inputs"][1]["quantization"] == {
        "scales": [pytest.approx(0.1), pytest.approx(0.2)],
        "zero_points": [0, 0],
        "quantized_dimension": 0,
    }
    assert node["inputs"][0]["quantization"]["zero_points"] == [-3]


def test_summary_only_lists_missing_ops(capsys, write):
    path = write("custom.tflite", custom_op_model("NoSuchOpForTfliteRun"))
    rc, out, err = run_main(capsys, path, "--summary-only", "--nodes")
    assert rc == 0, err
    assert "Missing kernels (1; the model cannot run until they are registered):" in out
    assert "  NoSuchOpForTfliteRun v1 (FLOAT32) at node 0" in out
    assert "[0] x: FLOAT32 4, not quantized" in out and "  [0] NoSuchOpForTfliteRun v1" in out
    assert "Results" not in out and "Timing" not in out
    doc = run_json(capsys, path, "--summary-only")
    assert doc["missing_ops"] == [
        {"op": "NoSuchOpForTfliteRun", "version": 1, "input_types": ["FLOAT32"], "nodes": ["0"]}
    ]
    assert doc["inputs"][0]["shape"] == [4] and doc["arena"] is None


def test_summary_only_runs_nothing(capsys, write):
    path = write("boom.tflite", custom_op_model("TfliteRunTestBoom"))  # fails when invoked
    doc = run_json(capsys, path, "--summary-only")
    assert doc["missing_ops"] == [] and doc["arena"]["arena_bytes"] > 0 and "results" not in doc


# -- inputs and outputs ---------------------------------------------------------------------------------
def test_input_npz_key_and_positional_in_keys(capsys, write, tmp_path):
    path = write("two.tflite", two_input_model())
    a = np.arange(4, dtype=np.float32).reshape(1, 4) - 1.5
    b = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    want = reference(path, {0: a, 1: b})
    npz = write("data.npz", {"first_frame": a, "other": b})
    rc, out, err = run_main(capsys, path, "-i", f"a={npz}:first_frame", "-i", f"1={npz}:other", "-o", tmp_path / "o")
    assert rc == 0, err
    assert f"<- {npz}[first_frame]" in out and f"<- {npz}[other]" in out
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y_0.npy"), want[0])
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y_0_1.npy"), want[1])
    pos = write("pos.npz", {"in_0": a, "in_1": b})
    doc = run_json(capsys, path, "-i", pos)
    assert [p["source"] for p in doc["inputs"]] == [f"{pos}[in_0]", f"{pos}[in_1]"]
    assert doc["results"][1]["stats"]["max"] == pytest.approx(float(want[1].max()))
    rc, _, err = run_main(capsys, path, "-i", f"a={npz}:nope")
    assert rc == 2 and "has no key 'nope'" in err and "first_frame" in err


def quantized_identity() -> bytes:
    b = ModelBuilder()
    x = b.input("q", [6], np.int8, quantization=quant(0.25, 3))
    b.output(x)
    return b.build()


def test_quantized_outputs_printed_dequantized_and_saved_raw(capsys, write, tmp_path):
    path = write("qid.tflite", quantized_identity())
    q = np.array([-128, -1, 0, 3, 7, 127], np.int8)
    rc, out, err = run_main(capsys, path, "-i", f"q={write('q.npy', q)}")
    assert rc == 0, err
    printed = re.findall(r"(-?[\d.]+) \(q=(-?\d+)\)", out)
    assert [(float(v), int(r)) for v, r in printed] == [((int(v) - 3) * 0.25, int(v)) for v in q]
    rc, out, err = run_main(capsys, path, "-i", f"q={write('q.npy', q)}", "-o", tmp_path / "o")
    saved = np.load(tmp_path / "o" / "q.npy")
    assert saved.dtype == np.int8
    np.testing.assert_array_equal(saved, q)
    doc = run_json(capsys, path, "-i", f"q={write('q.npy', q)}")
    assert doc["results"][0]["dequantized_stats"] == {
        "min": -32.75,
        "max": 31.0,
        "mean": pytest.approx(float(np.mean((q.astype(float) - 3) * 0.25))),
    }


def _lstm_reference(frames: list[np.ndarray], reset_at: set[int] = frozenset()) -> list[np.ndarray]:
    it = Interpreter(model_path=LSTM)
    it.allocate_tensors()
    inp, outp = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    outs = []
    for t, x in enumerate(frames):
        if t in reset_at:
            it.reset_all_variables()
        it.set_tensor(inp, x)
        it.invoke()
        outs.append(it.get_tensor(outp))
    return outs


def test_sequence_stateful_model(capsys, write, tmp_path):
    rng = np.random.default_rng(4)
    frames = rng.uniform(-1, 1, (3, 1, 5, 8)).astype(np.float32)
    name = Interpreter(model_path=LSTM).get_input_details()[0]["name"]
    seq = write("seq.npz", {name: frames})  # a leading step axis
    want = _lstm_reference(list(frames))
    assert not np.allclose(want[0], _lstm_reference([frames[1]])[0])  # the state carries between steps
    doc = run_json(capsys, LSTM, "--sequence", seq, "-o", tmp_path / "o")
    (s,) = doc["sequences"]
    assert s["steps"] == 3 and s["results"][0]["shape"] == [3, *want[0].shape]
    got = np.load(s["results"][0]["file"])
    np.testing.assert_array_equal(got, np.stack(want))
    # keys per step, two files: without --reset the state carries on, with it each file starts afresh
    steps = write("steps.npz", {"t0": frames[0], "t1": frames[1]})
    for reset, resets in ((False, set()), (True, {3})):
        d = tmp_path / f"r{reset}"
        extra = ["--reset"] if reset else []
        doc = run_json(capsys, LSTM, "--sequence", seq, "--sequence", steps, *extra, "-o", d)
        assert [s["steps"] for s in doc["sequences"]] == [3, 2]
        want = _lstm_reference([*frames, frames[0], frames[1]], {0} | resets)
        np.testing.assert_array_equal(
            np.load(d / f"seq1_{pathlib.Path(s['results'][0]['file']).name}"), np.stack(want[3:])
        )
    rc, out, err = run_main(capsys, LSTM, "--sequence", steps)
    assert rc == 0, err
    assert out.count("  step 0 ") == 1 and out.count("  step 1 ") == 1 and "Sequence " in out


def test_custom_ops_module(capsys, write, tmp_path, monkeypatch):
    module = tmp_path / "my_tfrun_ops.py"
    module.write_text(
        "import litert_py\n"
        "def _prepare(ctx):\n"
        "    ctx.set_output_shape(0, ctx.input(0).shape)\n"
        "    def run(inputs, outputs):\n"
        "        outputs[0][...] = inputs[0] * 3\n"
        "    return run\n"
        "litert_py.register_custom_op('TfliteRunTestTriple', _prepare)\n"
    )
    path = write("triple.tflite", custom_op_model("TfliteRunTestTriple"))
    x = np.array([1, -2, 0.5, 4], np.float32)
    doc = run_json(capsys, path, "--custom-ops", module, "-i", f"x={write('x.npy', x)}")
    assert doc["results"][0]["stats"] == {"min": -6.0, "max": 12.0, "mean": pytest.approx(3 * x.mean())}
    monkeypatch.syspath_prepend(str(tmp_path))
    doc = run_json(capsys, path, "--custom-ops", "my_tfrun_ops", "--profile", "--runs", "2")
    assert doc["profile"]["nodes"][0]["op"] == "TfliteRunTestTriple"  # custom ops by their custom code
    rc, _, err = run_main(capsys, path, "--custom-ops", "no_such_module_for_tflite_run")
    assert rc == 2 and "cannot import" in err


def test_compare_litert(capsys, fc):
    oracle()  # ai-edge-litert is a test dependency: missing means failure
    doc = run_json(capsys, fc, "--compare", "litert", "--runs", "3")
    c = doc["compare"]
    assert [r["op_resolver_type"] for r in c["resolvers"]] == ["BUILTIN_REF", "AUTO"]
    for r in c["resolvers"]:
        (o,) = r["outputs"]
        assert o["name"] == "out/y:0" and o["shape_equal"] and o["dtype_equal"]
        assert o["max_abs"] < 1e-5 and o["max_rel"] < 1e-4
        assert r["litert_ms"] > 0 and r["time_ratio"] == pytest.approx(c["litert_py_ms"] / r["litert_ms"])
    rc, out, err = run_main(capsys, fc, "--compare", "litert")
    assert rc == 0, err
    assert re.search(r"^  reference \(BUILTIN_REF\): [\d.]+ ms, litert_py/LiteRT time ratio [\d.]+$", out, re.M)
    assert re.search(r"^    out/y:0: (exact|\d+ differ, max abs)", out, re.M)


def test_compare_litert_exact_on_quantized(capsys, write):
    oracle()
    path = write("qid.tflite", quantized_identity())
    doc = run_json(capsys, path, "--compare", "litert")
    assert all(r["outputs"][0]["exact"] and r["outputs"][0]["max_abs"] == 0 for r in doc["compare"]["resolvers"])


def test_help_groups_options(capsys):
    rc, out, _ = run_main(capsys, "--help")
    assert rc == 0
    groups = re.findall(r"^(\w[\w -]*):$", out, re.M)
    assert groups[-6:] == [
        "model and inputs",
        "stateful models",
        "running and benchmarking",
        "per-op profile",
        "model view",
        "outputs",
    ]
    section = out[out.index("per-op profile:") : out.index("model view:")]
    assert "--profile-csv FILE" in section and "--top N" in section and "--benchmark" not in section
    rc, out, _ = run_main(capsys, "graph", "--help")
    assert rc == 0 and "-o FILE.html, --output FILE.html" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--warmup", "-1"], "--warmup"),
        (["--max-secs", "0"], "--max-secs"),
        (["--compare", "tflite"], "--compare"),
        (["graph"], "-o/--output"),
    ],
)
def test_new_usage_errors(capsys, argv, needle):
    rc, out, err = run_main(capsys, *argv)
    assert rc == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1
