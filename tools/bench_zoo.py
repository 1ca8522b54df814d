#!/usr/bin/env python3
"""Check and time a folder of TF-converted models (tools/make_zoo.py's zoo) against ai-edge-litert, in one run.

    python tools/bench_zoo.py /tmp/litert-py-zoo [--repeat 3] [--only NAME ...]

For each ``DIR/*.tflite`` (single input): the reference kernels (BUILTIN_REF) run it on three random inputs
(bench_families.inputs_for: int8 over its range, float32 ~ N(0, 2)), in a child process (a model that makes LiteRT end
the process is listed as such), and their outputs are written to ``DIR/refs/NAME.npz``; litert_py is judged against them
by litert_py.tools.check (``--strict``: integer outputs exactly, float outputs to 1e-4 of the largest reference
magnitude, over the three invokes in one interpreter). A model with float outputs that differs more is accepted
(``match-opt``, timed) when its outputs are no further from BUILTIN_REF's than LiteRT's optimized kernels'
(BUILTIN_WITHOUT_DEFAULT_DELEGATES) are, check's default rule for real models: a dynamic-range model quantizes each
float activation per invoke, and last-bit float differences upstream move a value across a rounding boundary there. A
model that still differs is run again by the reference kernels keeping every tensor (``NAME.intermediates.npz``, in a
child process), and every operator of subgraph 0 is run alone by litert_py on the reference kernels' stored inputs of
each checked invoke: when each gives their stored outputs (floats to 1e-4, integers exactly), the difference is last-bit
float rounding amplified across invokes and layers (``match-amplified``, timed); else the first operator that differs
alone is named and the model is not timed. A model litert_py refuses is listed with the exception; neither it nor one
that differs is timed. The others are timed by bench_families.bench (litert_py, LiteRT's default kernels AUTO and
BUILTIN_REF, one thread, median process CPU time per invoke; each time the median over ``--repeat`` rounds) and printed
as a table with the geomeans of the ratios over all models, the int8 ones, the float ones and the dynamic-range ones
(kind from the file name's ``_int8`` / ``_float`` / ``_dynamic`` suffix, else from the input's dtype).
"""

from __future__ import annotations

import argparse
import dataclasses
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
from litert_py.schema.writer import write_model  # noqa: E402
from litert_py.tools import check  # noqa: E402

INVOKES = 3  # checked invokes per model (one interpreter: state carries over)
KINDS = ("int8", "float", "dynamic")


def _reference(path: pathlib.Path, preserve: bool = False, resolver: str = "BUILTIN_REF"):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    it = LiteRT(
        model_path=str(path),
        num_threads=1,
        experimental_op_resolver_type=getattr(OpResolverType, resolver),
        experimental_preserve_all_tensors=preserve,
    )
    it.allocate_tensors()
    return it


def write_refs(path: pathlib.Path, refs: pathlib.Path, intermediates: bool = False) -> None:
    """BUILTIN_REF's outputs (and with ``intermediates`` every readable tensor of subgraph 0, else also LiteRT's
    optimized kernels' outputs) on INVOKES random inputs, in litert_py.tools.check's reference format."""
    it = _reference(path, preserve=intermediates)
    opt = None if intermediates else _reference(path, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
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
        if opt is not None:
            opt.set_tensor(opt.get_input_details()[0]["index"], x)
            opt.invoke()
            for pos, d in enumerate(opt.get_output_details()):
                arrays[f"{prefix}opt_out_{pos}"] = opt.get_tensor(d["index"]).copy()
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


def exact_alone(model, k: int, inter, prefix: str) -> bool:
    """Whether litert_py's operator ``k`` of subgraph 0, run alone on the reference kernels' stored input tensors,
    gives their stored output tensors (check.compare at check.RTOL: integers exactly); False when it cannot be run
    alone on them (a tensor the reference kept no value of, a resource, a subgraph call that fails alone)."""
    from litert_py import Interpreter

    sg = model.subgraphs[0]
    op = sg.operators[k]
    feeds = [t for t in op.inputs if t >= 0 and not model.buffers[sg.tensors[t].buffer].data.size]
    one = dataclasses.replace(sg, operators=(op,), inputs=tuple(feeds), outputs=tuple(op.outputs))
    try:
        it = Interpreter(model_content=write_model(dataclasses.replace(model, subgraphs=(one, *model.subgraphs[1:]))))
        it.allocate_tensors()
        for d, t in zip(it.get_input_details(), feeds):
            it.set_tensor(d["index"], inter[f"{prefix}t{t}"])
        it.invoke()
        return all(
            check.compare(it.get_tensor(d["index"]), inter[f"{prefix}t{t}"], check.RTOL)[0]
            for d, t in zip(it.get_output_details(), op.outputs)
        )
    except Exception:  # noqa: BLE001 - an operator that cannot be checked alone is not shown exact
        return False


def first_differing_alone(model, inter) -> str:
    """The first (invoke, operator) of subgraph 0 that, alone on BUILTIN_REF's stored inputs of that invoke, does
    not give BUILTIN_REF's stored outputs ('' when every operator of every checked invoke does)."""
    for step in range(INVOKES):
        prefix = "" if step == 0 else f"s{step}_"
        for k, op in enumerate(model.subgraphs[0].operators):
            if not exact_alone(model, k, inter, prefix):
                return f"step{step}: op {k} {model.operator_codes[op.opcode_index].name} alone differs"
    return ""


def verdict(path: pathlib.Path, refs: pathlib.Path) -> str:
    """'match', 'match-opt (...)', 'match-amplified (...)', or why not: litert_py's exception, or the differing
    outputs and the first operator that differs from BUILTIN_REF when run alone on its stored inputs."""
    try:
        result = check.check_model(path, refs, strict=True)
    except Exception as e:  # noqa: BLE001 - a refusal is a verdict
        return f"refused: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    if result.status == "match":
        return "match"
    why = "; ".join(result.notes)
    ref = np.load(refs)
    if all(ref[k].dtype.kind == "f" for k in ref.files if k.startswith("out_")):
        loose = check.check_model(path, refs)  # float outputs: as far from REF as LiteRT's optimized kernels are
        if loose.status in ("match", "match-opt"):
            return f"match-opt ({why}; within LiteRT's optimized kernels' distance)"
    child = multiprocessing.get_context("fork").Process(target=write_refs, args=(path, refs, True))
    child.start()
    child.join()
    if child.exitcode != 0:
        return f"{result.status}: {why}; BUILTIN_REF keeping every tensor fails (exit code {child.exitcode})"
    inter = np.load(refs.with_name(refs.stem + ".intermediates.npz"))
    first = first_differing_alone(read_model(path.read_bytes()), inter)
    if result.status == "mismatch" and not first:
        return (
            f"match-amplified ({why}; every operator, alone on BUILTIN_REF's inputs of each invoke, gives its outputs)"
        )
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
        (good if v.startswith("match") else bad).append((path, v))
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
    loose = [f"{path.stem}: {v}" for path, v in good if v != "match"]
    print(f"{len(good)}/{len(paths)} models match BUILTIN_REF ({INVOKES} invokes each; {len(loose)} of them loosely)")
    for line in loose:
        print(f"  {line}")
    for path, v in bad:
        print(f"NOT TIMED {path.stem}: {v}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
