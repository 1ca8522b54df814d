"""tools/op_coverage.py (and its tools/opcov/ package): cell classification on a few (op, path) pairs, crash
isolation, the table format.

The full dashboard run is not part of the tests (``python tools/op_coverage.py --check`` does that).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from litert_py.ops import registry
from litert_py.schema.model import BuiltinOperator
from tests.coverage_tool import coverage_tool
from tests.oracle import oracle

ROOT = Path(__file__).resolve().parents[2]


oc = coverage_tool()


@pytest.fixture(scope="module")
def worker():
    oracle()  # fail (not skip) when ai-edge-litert is missing
    w = oc.LiteRTWorker()
    yield w
    w.close()


def _has_kernel(op: str) -> bool:
    return registry.lookup(int(BuiltinOperator[op]), None) is not None


@pytest.mark.parametrize("op", ["FULLY_CONNECTED", "ADD", "RESHAPE"])
def test_float32_of_an_implemented_op_is_yes(worker, op):
    cell = oc.evaluate_path(op, "float32", worker)
    expected = "yes" if _has_kernel(op) else "missing"  # ADD may still be landing
    assert cell.status == expected, cell.notes


def test_op_without_kernel_is_missing(worker, monkeypatch):
    monkeypatch.delitem(registry._BUILTIN, int(BuiltinOperator.FULLY_CONNECTED))
    cell = oc.evaluate_path("FULLY_CONNECTED", "float32", worker)
    assert cell.status == "missing"
    assert cell.text == "missing"
    assert all(reason.startswith("UnsupportedOpError") for reason, _ in cell.notes)


@dataclass(frozen=True)
class _OffByOne:
    inner: object

    def __call__(self, inputs, outputs):
        self.inner(inputs, outputs)
        outputs[0] += 1


def test_wrong_numbers_are_missing_differs(worker, monkeypatch):
    code = int(BuiltinOperator.FULLY_CONNECTED)
    real = registry._BUILTIN[code]
    monkeypatch.setitem(registry._BUILTIN, code, registry.KernelEntry(lambda ctx: _OffByOne(real.prepare(ctx))))
    cell = oc.evaluate_path("FULLY_CONNECTED", "float32", worker)
    assert cell.status == "differs"
    assert cell.text == "missing (differs)"
    assert any("max |diff|" in reason for reason, _ in cell.notes)


def test_path_litert_rejects_is_na(worker):
    cell = oc.evaluate_path("FULLY_CONNECTED", "bool", worker)
    assert cell.status == "n/a"
    assert any("LiteRT" in reason for reason, _ in cell.notes)


def test_hybrid_of_an_op_without_weights_is_na_without_running(worker):
    assert oc.evaluate_path("ADD", "hybrid", worker).status == "n/a"


@dataclass(frozen=True)
class _Copy:
    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0].reshape(outputs[0].shape)


def _prepare_copy(ctx):
    ctx.set_output_shape(0, ctx.outputs[0].shape)
    return _Copy()


def test_op_litert_cannot_run_but_we_do_is_beyond(worker, monkeypatch):
    code = int(BuiltinOperator.STABLEHLO_RESHAPE)  # not registered in ai-edge-litert 2.3.0
    monkeypatch.setitem(registry._BUILTIN, code, registry.KernelEntry(_prepare_copy))
    assert oc.evaluate_path("STABLEHLO_RESHAPE", "float32", worker).status == "beyond"


def test_litert_crash_costs_one_case(worker):
    # LiteRT 2.3.0 segfaults on MATRIX_DIAG with a string input; the run must go on.
    before = len(worker.crashes)
    cell = oc.evaluate_path("MATRIX_DIAG", "string", worker)
    assert cell.status in ("n/a", "beyond")
    assert len(worker.crashes) == before + 1 and "LiteRT crashed" in worker.crashes[-1]
    assert oc.evaluate_path("RESHAPE", "float32", worker).status == "yes"


def test_crash_in_a_batch_is_charged_to_its_model(worker):
    good = oc.build_cases("RESHAPE", "float32")[0]
    bad = oc.build_cases("MATRIX_DIAG", "string")[0]
    jobs = [(c.model, c.feeds(0), (oc.REF, oc.OPT)) for c in (good, bad, good)]
    kinds = [r[0] for r in worker.run_batch(jobs, ["good", "bad", "good"])]
    assert kinds == ["ok", "crashed", "ok"]
    assert worker.crashes[-1].startswith("bad: LiteRT crashed")


def test_worker_that_dies_is_restarted(worker):
    case = oc.build_cases("RESHAPE", "float32")[0]
    worker.run(case.model, case.feeds(0))  # make sure the worker process exists
    worker.proc.kill()
    worker.proc.wait()
    assert worker.run(case.model, case.feeds(0), "RESHAPE float32")[0] == "crashed"
    assert worker.run(case.model, case.feeds(0))[0] == "ok"


def test_int32_int64_column_takes_the_better_width(worker):
    row = oc.evaluate_op("ZEROS_LIKE", worker)
    assert set(row) == set(oc.COLUMNS)
    assert row["int32/int64"].status in ("yes", "missing", "differs")  # LiteRT runs both widths


def test_every_recipe_builds_its_models():
    for op, r in oc.RECIPES.items():
        for path in r.paths:
            cases = oc.build_cases(op, path)
            if (op, path) in oc.UNSAFE_IN_LITERT:
                assert cases.status == "n/a", (op, path)
                continue
            assert isinstance(cases, list) and cases, (op, path)
            for c in cases:
                assert c.model[4:8] == b"TFL3", (op, path, c.label)
                feeds = c.feeds(0, 1)
                assert len(feeds[0]) == len(c.inputs)


def test_recipes_cover_the_ops_being_implemented():
    priority = """CONV_2D DEPTHWISE_CONV_2D FULLY_CONNECTED ADD SUB MUL DIV RESHAPE SQUEEZE EXPAND_DIMS SOFTMAX
        LOGISTIC TANH RELU RELU6 RELU_N1_TO_1 PRELU LEAKY_RELU HARD_SWISH MAXIMUM MINIMUM AVERAGE_POOL_2D MAX_POOL_2D
        CONCATENATION MEAN PAD PADV2 TRANSPOSE STRIDED_SLICE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR DEQUANTIZE
        QUANTIZE SUM BATCH_MATMUL GATHER SPLIT SPLIT_V LOG SQRT RSQRT EXP ABS NEG""".split()
    assert [op for op in priority if op not in oc.RECIPES] == []
    assert set(oc.RECIPES) <= set(oc.all_ops())


def test_rendered_table_parses_back(worker):
    rows = {op: oc.evaluate_op(op, worker) for op in ("RESHAPE", "ADD")}
    text = oc.render(rows, ["X int8: LiteRT crashed (SIGSEGV)"])
    parsed = oc.parse_table(text)
    assert list(parsed) == ["RESHAPE", "ADD"]
    for op, cells in parsed.items():
        assert list(cells) == list(oc.COLUMNS)
        assert [cells[c] for c in oc.COLUMNS] == [rows[op][c].text for c in oc.COLUMNS]


def test_dashboard_rows_and_cells_are_well_formed():
    path = ROOT / "docs" / "op-coverage.md"
    text = path.read_text()
    parsed = oc.parse_table(text)
    assert list(parsed) == oc.all_ops()
    counts = dict.fromkeys(("yes", "missing", "n/a", "untested", "beyond"), 0)
    for op, cells in parsed.items():
        assert list(cells) == list(oc.COLUMNS), op
        for col, cell in cells.items():
            assert cell in oc.CELL_VALUES, (op, col, cell)
            counts["missing" if cell.startswith("missing") else cell] += 1
    summary = f"| {counts['yes']} | {counts['missing']} | {counts['n/a']} | {counts['untested']} | {counts['beyond']} |"
    assert summary in text


def test_module_column_names_the_registering_module():
    modules = oc.parse_modules((ROOT / "docs" / "op-coverage.md").read_text())
    assert modules["CONV_2D"] == "ops/conv/conv2d.py"
    assert modules["FULLY_CONNECTED"] == "ops/fully_connected.py"
    assert modules["TFLite_Detection_PostProcess"] == "ops/custom/detection.py"
    for op, module in modules.items():
        assert module == oc.kernel_module(op), op
        assert module == "-" or (ROOT / "litert_py" / module).is_file(), (op, module)


def test_cli_writes_and_checks(tmp_path):
    out = tmp_path / "cov.md"
    assert oc.main(["--ops", "RESHAPE,SQUEEZE", "--out", str(out)]) == 0
    assert list(oc.parse_table(out.read_text())) == ["RESHAPE", "SQUEEZE"]
    assert oc.main(["--ops", "RESHAPE,SQUEEZE", "--out", str(out), "--check"]) == 0
    out.write_text(out.read_text().replace("| yes |", "| missing |", 1))
    assert oc.main(["--ops", "RESHAPE,SQUEEZE", "--out", str(out), "--check"]) == 1


def test_compare_rules():
    f = np.array([1.0, 2.0], np.float32)
    assert oc.compare([f], [f + 1e-7], 1e-5, 1e-6) is None
    assert "max |diff|" in oc.compare([f], [f + 1e-3], 1e-5, 1e-6)
    i = np.array([1, 2], np.int8)
    assert "1/2 elements differ" in oc.compare([i], [np.array([1, 3], np.int8)], 1e-5, 1e-6)
    assert "dtype" in oc.compare([i], [i.astype(np.int16)], 1e-5, 1e-6)
    assert "shape" in oc.compare([i], [i[:1]], 1e-5, 1e-6)
    s = np.array([b"a", b"b"], dtype=object)
    assert oc.compare([s], [s.copy()], 0, 0) is None
    nan = np.array([np.nan, 1.0], np.float32)
    assert oc.compare([nan], [nan.copy()], 1e-5, 1e-6) is None


def test_worker_imports_nothing_of_litert_py(tmp_path):
    """``op_coverage.py --worker`` (LiteRT's side, forked per case) must not import litert_py."""
    import subprocess

    seen = tmp_path / "modules.txt"
    code = (
        "import runpy, sys\n"
        "sys.argv = ['op_coverage.py', '--worker']\n"
        "try:\n"
        "    runpy.run_path('op_coverage.py', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "mods = sorted(m for m in sys.modules if m.startswith(('litert_py', 'opcov')))\n"
        f"open({str(seen)!r}, 'w').write(' '.join(mods))\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT / "tools",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=300,
        check=True,
    )
    assert seen.read_text().split() == ["opcov", "opcov.litert_side"]


def test_committed_dashboard_is_current():
    """docs/op-coverage.md is what the tool writes today: a kernel change must regenerate it."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    p = subprocess.run(
        [sys.executable, str(root / "tools" / "op_coverage.py"), "--check"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, (p.stdout + p.stderr)[-2000:]
