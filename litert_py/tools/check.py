"""``python -m litert_py.tools.check``: run real models and compare with LiteRT's stored reference outputs.

    python -m litert_py.tools.check                          # every model of tests/corpus with refs/MODEL.npz
    python -m litert_py.tools.check DIR [--filter REGEX]     # another corpus folder (DIR/*.tflite, DIR/refs/)
    python -m litert_py.tools.check MODEL.tflite --refs REFS.npz
    python -m litert_py.tools.check --intermediates --strict --isolate --bench
    python -m litert_py.tools.check --delegate onnxruntime   # litert_py with load_delegate("onnxruntime")

A reference file ``REFS.npz`` holds:

- ``in_i`` / ``out_i``: inputs and outputs of the first invoke, in ``get_input_details()`` /
  ``get_output_details()`` order; ``out_i`` comes from LiteRT's reference kernels (``BUILTIN_REF``).
- ``opt_out_i``: LiteRT's optimized kernels (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) on the same inputs.
- ``s<k>_in_i`` / ``s<k>_out_i`` / ``s<k>_opt_out_i``: invoke k+1 on the same interpreter (stateful models).
- ``meta``: JSON; ``input_shape_overrides`` ({input position: shape}) is applied with ``resize_tensor_input``
  before ``allocate_tensors``, as is any input whose stored array has another shape than the model's.

``MODEL.intermediates.npz`` beside it (used with ``--intermediates``) holds every non-constant tensor of
subgraph 0 after each invoke (``t<index>``, ``s<k>_t<index>``) from the reference kernels run with
``experimental_preserve_all_tensors=True``; the first differing one is named.

Verdicts. Integer, bool and string outputs must equal the reference exactly. A float output must agree with the
reference to ``rtol`` of the reference's largest finite magnitude (``1e-4``; ``1e-3`` for models with float16
weights, whose reference kernels accumulate in another order), or else to as far as LiteRT's optimized kernels
are from its reference kernels on that output, whichever is larger; NaN matches NaN. A model is ``match`` when
every output equals the reference kernels' output within those rules, ``match-opt`` when some output only
equals the optimized kernels' output, else ``mismatch`` (``error`` / ``crash`` / ``timeout`` when it does not
run). ``--strict`` accepts only the reference kernels' output, at ``rtol``.

The last line is the summary ``corpus: N/M models match (K equal to LiteRT's reference kernels)``; the exit
status is 0 when every model matches, 1 otherwise, 2 for bad arguments. Intermediates are compared with
``rtol`` and never against the optimized kernels. ``--bench`` also times litert_py and ai-edge-litert (if
importable; one thread, process CPU time, median of at least 5 invokes) on the same inputs in the same run.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DEFAULT_CORPUS = Path("tests") / "corpus"
RTOL = 1e-4
RTOL_FLOAT16 = 1e-3


@dataclass(frozen=True)
class Step:
    """One invoke: inputs by position; per output position the acceptable outputs, reference kernels' first."""

    inputs: dict[int, np.ndarray]
    outputs: dict[int, list[np.ndarray]]


@dataclass
class Result:
    status: str
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("match", "match-opt")

    @property
    def detail(self) -> str:
        return "; ".join(self.notes[:4])

    def as_dict(self) -> dict:
        return {"status": self.status, "detail": self.detail, **self.timings}


def read_steps(ref) -> list[Step]:
    """The invokes stored in a reference file (``in_i``/``out_i``, then ``s1_`` .. ``sN_``), in order."""
    files = set(ref.files)
    stateful = {int(m.group(1)) for k in files if (m := re.fullmatch(r"s(\d+)_in_\d+", k))}
    steps = []
    for prefix in [""] + [f"s{k}_" for k in sorted(stateful)]:
        ins = {int(k[len(prefix) + 3 :]): ref[k] for k in files if re.fullmatch(re.escape(prefix) + r"in_\d+", k)}
        outs = {}
        for k in files:
            if re.fullmatch(re.escape(prefix) + r"out_\d+", k):
                pos = int(k[len(prefix) + 4 :])
                opt = f"{prefix}opt_out_{pos}"
                outs[pos] = [ref[k]] + ([ref[opt]] if opt in files else [])
        if ins or outs:
            steps.append(Step(ins, outs))
    return steps


def compare(got, want: np.ndarray, rtol: float) -> tuple[bool, str]:
    """Whether ``got`` matches ``want`` under the verdict rules, and a short description of the difference."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return False, f"shape {list(got.shape)} != {list(want.shape)}"
    if want.dtype.kind in "iub":
        if got.dtype != want.dtype:
            return False, f"dtype {got.dtype} != {want.dtype}"
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        n = int(np.count_nonzero(diff))
        return n == 0, "exact" if n == 0 else f"{n}/{diff.size} differ, max {int(diff.max())}"
    if want.dtype.kind in "fc":
        finite = want[np.isfinite(want)]
        scale = max(float(np.max(np.abs(finite))) if finite.size else 0.0, 1e-30)
        both_nan = np.isnan(got) & np.isnan(want)
        same_inf = np.isinf(want) & (got == want)
        diff = np.where(both_nan | same_inf, 0, np.abs(got.astype(want.dtype) - want))
        worst = float(np.max(diff)) / scale if diff.size else 0.0
        ok = bool(np.all(np.isfinite(diff))) and worst <= rtol
        return ok, f"rel {worst:.2e}"
    ok = np.array_equal(got, want)
    return ok, "equal" if ok else "differs"


def spread(candidates: list[np.ndarray]) -> float:
    """How far LiteRT's optimized kernels' float output is from its reference kernels' (relative; 0 if none)."""
    ref = candidates[0]
    if ref.dtype.kind != "f" or not ref.size:
        return 0.0
    scale = max(float(np.max(np.abs(np.where(np.isfinite(ref), ref, 0)))), 1e-30)
    worst = 0.0
    for other in candidates[1:]:
        if other.shape == ref.shape:
            d = np.abs(other.astype(np.float64) - ref)
            d = d[np.isfinite(d)]
            worst = max(worst, float(d.max()) / scale if d.size else 0.0)
    return worst


def model_rtol(model: Path, meta: dict) -> float:
    text = (model.name + json.dumps(meta)).lower()
    return RTOL_FLOAT16 if "fp16" in text or "float16" in text else RTOL


def _interpreter(model: Path, steps: list[Step], meta: dict, preserve: bool, delegates: tuple[str, ...] = ()):
    from litert_py import Interpreter, load_delegate

    it = Interpreter(
        model_path=str(model),
        experimental_preserve_all_tensors=preserve,
        experimental_delegates=[load_delegate(name) for name in delegates] or None,
    )
    details = it.get_input_details()
    shapes = {int(pos): list(shape) for pos, shape in (meta.get("input_shape_overrides") or {}).items()}
    for pos, arr in steps[0].inputs.items() if steps else ():
        if list(arr.shape) != list(details[pos]["shape"]):
            shapes[pos] = list(arr.shape)
    for pos, shape in shapes.items():
        it.resize_tensor_input(details[pos]["index"], shape)
    it.allocate_tensors()
    return it


def check_model(
    model: Path, refs: Path, intermediates: bool = False, strict: bool = False, delegates: tuple[str, ...] = ()
) -> Result:
    """Run ``model`` on the inputs of ``refs`` and judge its outputs (see the module docstring); ``delegates`` are
    names for ``load_delegate`` (the partitions they claim run there, the rest in litert_py's kernels)."""
    ref = np.load(refs, allow_pickle=False)
    meta = json.loads(str(ref["meta"])) if "meta" in ref.files else {}
    inter_path = refs.with_name(refs.stem + ".intermediates.npz")
    inter = np.load(inter_path, allow_pickle=False) if intermediates and inter_path.exists() else None
    rtol = model_rtol(model, meta)
    steps = read_steps(ref)
    it = _interpreter(model, steps, meta, preserve=inter is not None, delegates=delegates)
    ins, outs = it.get_input_details(), it.get_output_details()
    result, compared, alternative = Result("match"), 0, False
    for k, step in enumerate(steps):
        for pos, arr in step.inputs.items():
            it.set_tensor(ins[pos]["index"], arr)
        it.invoke()
        for pos, candidates in sorted(step.outputs.items()):
            got = it.get_tensor(outs[pos]["index"])
            compared += 1
            wanted = candidates[:1] if strict else candidates
            tol = rtol if strict else max(rtol, spread(candidates))
            verdicts = [compare(got, want, tol) for want in wanted]
            good = next((i for i, (ok, _) in enumerate(verdicts) if ok), None)
            if good is None:
                result.status = "mismatch"
            alternative |= bool(good)
            if good is None or k == 0:
                note = f"step{k}/out{pos}: {verdicts[0][1]}"
                result.notes.append(note + (" (equals LiteRT's optimized kernels)" if good else ""))
        if inter is not None:
            bad = first_bad_intermediate(it, inter, "" if k == 0 else f"s{k}_", rtol)
            if bad:
                result.status = "mismatch"
                result.notes.insert(0, f"step{k}: first differing tensor {bad}")
    if not compared:
        result.status = "no-ref"
    elif result.status == "match" and alternative:
        result.status = "match-opt"
    return result


def first_bad_intermediate(it, inter, prefix: str, rtol: float) -> str:
    """The lowest-index stored tensor of subgraph 0 that differs from the reference kernels' (or '')."""
    names = json.loads(str(inter["tensor_names"])) if "tensor_names" in inter.files else {}
    keys = sorted((int(k[len(prefix) + 1 :]), k) for k in inter.files if re.fullmatch(re.escape(prefix) + r"t\d+", k))
    for idx, key in keys:
        try:
            got = it.get_tensor(idx)
        except Exception as e:  # noqa: BLE001 - reported as the verdict
            return f"{idx}: get_tensor failed: {type(e).__name__}: {str(e)[:80]}"
        ok, msg = compare(got, inter[key], rtol)
        if not ok:
            return f"{idx} {names.get(str(idx), '')!r}: {msg}"
    return ""


def _median_cpu_ms(interp, inputs: dict[int, np.ndarray]) -> float:
    """Process CPU time per invoke (BLAS threads included), median of >= 5 invokes and ~0.3 s, after a warm-up."""
    details = interp.get_input_details()
    for pos, arr in inputs.items():
        interp.set_tensor(details[pos]["index"], arr)
    interp.invoke()
    ts: list[float] = []
    while len(ts) < 5 or (sum(ts) < 0.3 and len(ts) < 500):
        t = time.process_time()
        interp.invoke()
        ts.append(time.process_time() - t)
    return 1e3 * statistics.median(ts)


def bench_model(model: Path, refs: Path, delegates: tuple[str, ...] = ()) -> dict[str, float]:
    """Median invoke times of litert_py and of ai-edge-litert (AUTO, BUILTIN_REF; one thread) on the refs' inputs."""
    ref = np.load(refs, allow_pickle=False)
    meta = json.loads(str(ref["meta"])) if "meta" in ref.files else {}
    steps = read_steps(ref)
    inputs = steps[0].inputs if steps else {}
    out = {"ours_ms": _median_cpu_ms(_interpreter(model, steps, meta, False, delegates), inputs)}
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRT
        from ai_edge_litert.interpreter import OpResolverType
    except ImportError:
        return out
    for key, resolver in (("litert_ms", OpResolverType.AUTO), ("litert_ref_ms", OpResolverType.BUILTIN_REF)):
        o = LiteRT(model_path=str(model), num_threads=1, experimental_op_resolver_type=resolver)
        details = o.get_input_details()
        for pos, arr in inputs.items():
            if list(arr.shape) != list(details[pos]["shape"]):
                o.resize_tensor_input(details[pos]["index"], list(arr.shape))
        o.allocate_tensors()
        out[key] = _median_cpu_ms(o, inputs)
    return out


def run_one(
    model: Path, refs: Path, intermediates: bool, strict: bool, bench: bool, delegates: tuple[str, ...] = ()
) -> Result:
    """check_model, with an exception turned into an ``error`` verdict and the timings added on a match."""
    try:
        result = check_model(model, refs, intermediates, strict, delegates)
    except Exception as e:  # noqa: BLE001 - a model that does not run is a verdict, not a crash of the tool
        return Result("error", [f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"])
    if bench and result.ok:
        result.timings = bench_model(model, refs, delegates)
    return result


def _isolated(model: Path, refs: Path, a) -> Result:
    cmd = [sys.executable, "-m", "litert_py.tools.check", str(model), "--refs", str(refs), "--_child"]
    cmd += [f for f, on in (("--intermediates", a.intermediates), ("--strict", a.strict), ("--bench", a.bench)) if on]
    cmd += [arg for name in a.delegate for arg in ("--delegate", name)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return Result("timeout", [f">{a.timeout:.0f}s"])
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        return Result("crash", [f"exit {p.returncode}: {(p.stderr or '').strip()[-200:]}"])
    d = json.loads(line[-1][7:])
    timings = {k: v for k, v in d.items() if k.endswith("_ms")}
    return Result(d["status"], [d["detail"]] if d["detail"] else [], timings)


def models_and_refs(target: Path, refs: Path | None, pattern: str) -> list[tuple[Path, Path]]:
    """(model, refs) pairs: one model, or every model of a corpus folder that has ``refs/MODEL.npz``."""
    if target.is_file():
        return [(target, refs or target.parent / "refs" / (target.stem + ".npz"))]
    folder = refs or target / "refs"
    pairs = [(m, folder / (m.stem + ".npz")) for m in sorted(target.glob("*.tflite")) if re.search(pattern, m.name)]
    return [(m, r) for m, r in pairs if r.exists()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m litert_py.tools.check",
        description="Run real models with litert_py and compare with LiteRT's stored reference outputs.",
    )
    ap.add_argument("target", nargs="?", type=Path, default=DEFAULT_CORPUS, help="a corpus folder or one .tflite")
    ap.add_argument("--refs", type=Path, help="REFS.npz for one model, or the folder of MODEL.npz")
    ap.add_argument("--filter", default="", help="only models whose file name matches this regex")
    ap.add_argument("--intermediates", action="store_true", help="also compare every stored intermediate tensor")
    ap.add_argument("--strict", action="store_true", help="only LiteRT's reference kernels' outputs count")
    ap.add_argument("--isolate", action="store_true", help="one process per model (survives crashes and hangs)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per model with --isolate")
    ap.add_argument("--bench", action="store_true", help="also time litert_py and ai-edge-litert")
    ap.add_argument("--json", type=Path, help="write the verdicts as JSON")
    ap.add_argument(
        "--delegate",
        action="append",
        default=[],
        metavar="NAME",
        help="run litert_py with load_delegate(NAME) (repeatable), e.g. onnxruntime",
    )
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if not a.target.exists():
        ap.error(f"no such file or folder: {a.target}")

    for name in a.delegate:  # a name that does not load is a bad argument, not a verdict on every model
        try:
            from litert_py import load_delegate

            load_delegate(name)
        except ValueError as e:
            ap.error(f"--delegate {name}: {e}")
    pairs = models_and_refs(a.target, a.refs, a.filter)
    if a._child:
        ((model, refs),) = pairs
        result = run_one(model, refs, a.intermediates, a.strict, a.bench, tuple(a.delegate))
        print("RESULT " + json.dumps(result.as_dict()))
        return 0
    results: dict[str, Result] = {}
    for model, refs in pairs:
        if a.isolate:
            r = _isolated(model, refs, a)
        else:
            r = run_one(model, refs, a.intermediates, a.strict, a.bench, tuple(a.delegate))
        if r.status == "no-ref":
            continue
        results[model.name] = r
        timing = ""
        if "ours_ms" in r.timings:
            timing = f"  ours {r.timings['ours_ms']:.2f} ms"
            for k in ("litert_ms", "litert_ref_ms"):
                if k in r.timings:
                    ratio = r.timings["ours_ms"] / max(r.timings[k], 1e-6)
                    timing += f" | {k[:-3]} {r.timings[k]:.2f} ms (x{ratio:.1f})"
        print(f"{r.status:9s} {model.name}: {r.detail}{timing}", flush=True)
    n_ok = sum(r.ok for r in results.values())
    n_ref = sum(r.status == "match" for r in results.values())
    if a.json:
        a.json.write_text(json.dumps({k: r.as_dict() for k, r in results.items()}, indent=1))
    print(f"corpus: {n_ok}/{len(results)} models match ({n_ref} equal to LiteRT's reference kernels)")
    return 0 if results and n_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
