#!/usr/bin/env python3
"""Check and time a folder of TF-converted models (tools/make_zoo.py's zoo) against ai-edge-litert, in one run.

    python tools/bench_zoo.py /tmp/litert-py-zoo [--repeat 3] [--only NAME ...]

For each ``DIR/*.tflite`` (single input): the reference kernels (BUILTIN_REF) run it on three random inputs
(bench_families.inputs_for: int8 over its range, float32 ~ N(0, 2)) and their outputs are written to
``DIR/refs/NAME.npz``; litert_py is judged against them by litert_py.tools.check (``--strict``: integer outputs
exactly, float outputs to 1e-4 of the largest reference magnitude, over the three invokes in one interpreter).
(In a child process: a model that makes LiteRT end the process is listed as such.)
A model that differs is checked again with every intermediate tensor of the reference kernels
(``NAME.intermediates.npz``) and the first differing tensor and the op writing it are named; a model litert_py
refuses is listed with the exception. Neither is timed. The others are timed by bench_families.bench (litert_py,
LiteRT's default kernels AUTO and BUILTIN_REF, one thread, median process CPU time per invoke; each time the
median over ``--repeat`` rounds) and printed as a table with the geomeans of the ratios over all models, the
int8 ones, the float ones and the dynamic-range ones (kind from the file name's ``_int8`` / ``_float`` /
``_dynamic`` suffix, else from the input's dtype).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import pathlib
import statistics
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from bench_families import bench, inputs_for  # noqa: E402

from litert_py.schema.reader import read_model  # noqa: E402
from litert_py.tools import check  # noqa: E402

INVOKES = 3  # checked invokes per model (one interpreter: state carries over)
KINDS = ("int8", "float", "dynamic")


def _reference(path: pathlib.Path, preserve: bool = False):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    it = LiteRT(
        model_path=str(path),
        num_threads=1,
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=preserve,
    )
    it.allocate_tensors()
    return it


def write_refs(path: pathlib.Path, refs: pathlib.Path, intermediates: bool = False) -> None:
    """BUILTIN_REF's outputs (and with ``intermediates`` every readable tensor of subgraph 0) on INVOKES random
    inputs, in litert_py.tools.check's reference format."""
    it = _reference(path, preserve=intermediates)
    ins, outs = it.get_input_details(), it.get_output_details()
    if len(ins) != 1:
        raise ValueError(f"{path.name}: {len(ins)} inputs (the zoo's models have one)")
    arrays, inter, names = {}, {}, {}
    for k, x in enumerate(inputs_for(it, 0, INVOKES)):
        prefix = "" if k == 0 else f"s{k}_"
        it.set_tensor(ins[0]["index"], x)
        it.invoke()
        arrays[f"{prefix}in_0"] = x
        for pos, d in enumerate(outs):
            arrays[f"{prefix}out_{pos}"] = it.get_tensor(d["index"]).copy()
        if intermediates:
            for d in it.get_tensor_details():
                try:
                    inter[f"{prefix}t{d['index']}"] = it.get_tensor(d["index"]).copy()
                except ValueError:  # a tensor without data (freed, resource, unallocated)
                    continue
                names[str(d["index"])] = d["name"]
    refs.parent.mkdir(parents=True, exist_ok=True)
    if intermediates:
        np.savez(refs.with_name(refs.stem + ".intermediates.npz"), tensor_names=json.dumps(names), **inter)
    else:
        np.savez(refs, meta=json.dumps({"made_by": "tools/bench_zoo.py"}), **arrays)


def writer_of(model: bytes, tensor: int) -> str:
    """The op type and position of the subgraph-0 operator writing ``tensor`` (or 'an input / a constant')."""
    m = read_model(model)
    sg = m.subgraphs[0]
    for k, op in enumerate(sg.operators):
        if tensor in list(op.outputs):
            return f"op {k} {m.operator_codes[op.opcode_index].name}"
    return "an input / a constant"


def verdict(path: pathlib.Path, refs: pathlib.Path) -> str:
    """'match', or why not: litert_py's exception, or the differing outputs and the first differing tensor."""
    try:
        result = check.check_model(path, refs, strict=True)
    except Exception as e:  # noqa: BLE001 - a refusal is a verdict
        return f"refused: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    if result.status == "match":
        return "match"
    why = "; ".join(result.notes)
    write_refs(path, refs, intermediates=True)
    try:
        deep = check.check_model(path, refs, intermediates=True, strict=True)
        first = next((n for n in deep.notes if "first differing tensor" in n), "")
    except Exception as e:  # noqa: BLE001
        first = f"with intermediates: {type(e).__name__}: {e}"
    if first:
        idx = first.split("tensor ", 1)[1].split()[0].rstrip(":")
        if idx.isdigit():
            first += f" (written by {writer_of(path.read_bytes(), int(idx))})"
    return f"{result.status}: {why}" + (f"; {first}" if first else "")


def kind_of(path: pathlib.Path) -> str:
    for kind in KINDS:
        if path.stem.endswith(f"_{kind}"):
            return kind
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    dtype = LiteRT(model_path=str(path)).get_input_details()[0]["dtype"]
    return "int8" if np.dtype(dtype).kind in "iu" else "float"


def geomean(xs: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=pathlib.Path, help="folder of .tflite models (tools/make_zoo.py --out)")
    ap.add_argument("--repeat", type=int, default=1, help="benchmark rounds; each time is the median over them")
    ap.add_argument("--only", nargs="*", help="model file stems (or their prefixes) to run (default: all)")
    a = ap.parse_args()
    paths = sorted(a.dir.glob("*.tflite"))
    if a.only:
        paths = [p for p in paths if any(p.stem.startswith(o) for o in a.only)]
    if not paths:
        ap.error(f"no .tflite models in {a.dir}" + (" matching --only" if a.only else ""))
    good, bad = [], []
    for path in paths:
        refs = a.dir / "refs" / f"{path.stem}.npz"
        child = multiprocessing.get_context("fork").Process(target=write_refs, args=(path, refs))
        child.start()
        child.join()
        v = verdict(path, refs) if child.exitcode == 0 else f"BUILTIN_REF fails on it (exit code {child.exitcode})"
        print(f"{path.stem}: {v}", flush=True)
        (good if v == "match" else bad).append((path, v))
    rounds = {path: [] for path, _ in good}
    for _ in range(a.repeat):
        for path in rounds:
            rounds[path].append(bench(path.read_bytes()))
    print()
    print(f"{'model':28} {'ops':>4} {'ours ms':>9} {'AUTO ms':>9} {'REF ms':>9} {'ours/AUTO':>10} {'ours/REF':>9}")
    ratios = {kind: ([], []) for kind in ("all",) + KINDS}
    for path, times in rounds.items():
        ours, auto, ref = (statistics.median(r[k] for r in times) for k in range(3))
        for kind in ("all", kind_of(path)):
            ratios[kind][0].append(ours / auto)
            ratios[kind][1].append(ours / ref)
        ops = len(read_model(path.read_bytes()).subgraphs[0].operators)
        print(f"{path.stem:28} {ops:4d} {ours:9.3f} {auto:9.3f} {ref:9.3f} {ours / auto:10.2f} {ours / ref:9.3f}")
    for kind, (to_auto, to_ref) in ratios.items():
        if to_auto:
            label = f"geomean {kind} ({len(to_auto)})"
            print(f"{label:28} {'':4} {'':9} {'':9} {'':9} {geomean(to_auto):10.2f} {geomean(to_ref):9.3f}")
    print(f"{len(good)}/{len(paths)} models match BUILTIN_REF ({INVOKES} invokes each)")
    for path, v in bad:
        print(f"NOT TIMED {path.stem}: {v}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
