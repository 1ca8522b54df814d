"""``tflite-run``: summarize a .tflite model, run it once (or N times) with litert_py, show or save the outputs;
benchmark it, profile it per node, list its nodes, or draw it as one HTML page.

    tflite-run                                   # the tiny CNN bundled in litert_py/models/
    tflite-run model.tflite                      # random inputs (seed 0)
    tflite-run model.tflite --input x=x.npy --input batch.npz --output-dir out/ --runs 10
    tflite-run model.tflite --benchmark --warmup 5 --runs 100 --max-secs 20
    tflite-run model.tflite --profile --top 10 --profile-csv prof.csv
    tflite-run model.tflite --json               # machine-readable summary + timings
    tflite-run graph model.tflite -o model.html [--profile]

Exit status: 0 on success; 1 when the model fails to load, prepare or run (missing or invalid file,
unsupported ops, PrepareError, InvokeError); 2 for bad arguments (options, --input files, names, shapes or
dtypes, --signature keys). Every error is one line on stderr, never a traceback.

The work is split by topic: options.py (the command line), io.py (session, inputs, outputs), summary.py
(summary, --nodes), benchmark.py, litert_py/runtime/profiler.py (--profile), graph_html.py (graph), compare.py
(--compare litert).
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
import json
import os
import statistics
import sys
import time

import numpy as np

from .io import (
    ModelError,
    UsageError,
    _dtype_name,
    _one_line,
    array_text,
    bundled_model_path,
    collect_inputs,
    load_sequence,
    open_session,
    random_array,
    result_doc,
    safe_filename,
    save_outputs,
)
from .options import PROG, build_graph_parser, build_parser, quiet_broken_pipe

__all__ = ["main", "build_parser", "random_array", "safe_filename", "bundled_model_path"]

_TRACEBACK_ENV = "TFLITE_RUN_TRACEBACK"  # set to 1 to let unexpected exceptions show their traceback


# -- steps of a run -------------------------------------------------------------------------------------
def import_custom_ops(specs: list[str]) -> None:
    for spec in specs:
        try:
            if spec.endswith(".py") or os.sep in spec:
                if not os.path.isfile(spec):
                    raise UsageError(f"--custom-ops: no such file '{spec}'")
                name = "tflite_run_custom_ops_" + safe_filename(os.path.basename(spec)[:-3], set(), "m")
                loader = importlib.util.spec_from_file_location(name, spec)
                module = importlib.util.module_from_spec(loader)
                sys.modules[name] = module
                loader.loader.exec_module(module)
            else:
                importlib.import_module(spec)
        except UsageError:
            raise
        except ImportError as e:
            raise UsageError(f"--custom-ops {spec}: cannot import it: {_one_line(e)}") from None
        except Exception as e:
            raise ModelError(f"--custom-ops {spec}: importing it failed: {type(e).__name__}: {_one_line(e)}") from None


def prepare_session(args, model_path: str):
    """Load, read --input files, add random inputs, allocate: (session, load seconds, allocate seconds)."""
    from litert_py import LiteRTError

    t0 = time.perf_counter()
    session = open_session(model_path, args)
    t_load = time.perf_counter() - t0
    session.sources = collect_inputs(args.input, session)
    rng = np.random.default_rng(args.seed)
    # Random values are drawn for every input in order (so a given input's values do not depend on which
    # other inputs came from files), from the shapes the inputs will have once allocated.
    random_feeds = {}
    for p in session.inputs:
        value = random_array(p.details["shape"], p.details["dtype"], rng)
        if p.position not in session.feeds:
            random_feeds[p.position] = value
    session.feeds.update(random_feeds)
    t0 = time.perf_counter()
    try:
        timed = session.allocate()
    except (LiteRTError, RuntimeError, ValueError) as e:
        raise ModelError(f"cannot prepare model: {_one_line(e)}") from None
    t_alloc = time.perf_counter() - t0 if timed else None
    session.refresh_details()
    session.set_inputs()
    return session, t_load, t_alloc


def _invoke(session):
    from litert_py import LiteRTError

    try:
        return session.invoke()
    except (LiteRTError, RuntimeError, ValueError) as e:
        raise ModelError(f"model failed to run: {_one_line(e)}") from None


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 4)


def timing_text(t: dict) -> str:
    def f(v):
        return "n/a" if v is None else f"{v:.3f} ms"

    inv = f"invoke {f(t['invoke_median'])}"
    if t["runs"] > 1:
        inv += f" (median of {t['runs']} runs; min {f(t['invoke_min'])}, max {f(t['invoke_max'])})"
    return f"Timing: load {f(t['load'])}, allocate {f(t['allocate'])}, {inv}"


def memory_doc(session) -> dict:
    from .benchmark import peak_rss_bytes

    subs = [s for s in getattr(session.interpreter, "_subgraphs", []) if s is not None and s.plan is not None]
    return {
        "peak_rss_bytes": peak_rss_bytes(),
        "arena_bytes": sum(s.plan.arena_bytes for s in subs),
        "arena_subgraphs": len(subs),
    }


def write_profile_csv(path: str, prof) -> None:
    fields = ["subgraph", "node", "op", "version", "dtypes", "output_shape", "calls", "mean_ms", "self_ms", "percent"]
    try:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(fields)
            for r in prof.nodes:
                shape = "" if r.output_shape is None else "x".join(map(str, r.output_shape))
                w.writerow(
                    [
                        r.subgraph,
                        r.node,
                        r.op,
                        r.version,
                        r.dtypes,
                        shape,
                        f"{r.calls:g}",
                        f"{r.mean_ms:.6f}",
                        f"{r.self_ms:.6f}",
                        f"{r.percent:.4f}",
                    ]
                )
    except OSError as e:
        raise ModelError(f"cannot write --profile-csv '{path}': {_one_line(e)}") from None


def run_profile(session, runs: int, warmup: int, invoke=None):
    from litert_py import LiteRTError
    from litert_py.runtime.profiler import profile

    try:
        return profile(session.interpreter, runs=runs, warmup=warmup, invoke=invoke or session.invoke)
    except (LiteRTError, RuntimeError, ValueError) as e:
        raise ModelError(f"model failed to run: {_one_line(e)}") from None


def run_sequences(args, session, out) -> tuple[list[dict], list[float]]:
    """One invoke per step of every --sequence file; returns per-file docs and the invoke times."""
    docs, times = [], []
    base = dict(session.feeds)
    for k, path in enumerate(args.sequence):
        steps = load_sequence(path, session)
        if args.reset:
            session.interpreter.reset_all_variables()
        per_step = []
        for t, feeds in enumerate(steps):
            session.feeds = {**base, **feeds}
            try:
                session.set_inputs()
            except UsageError as e:
                raise UsageError(f"--sequence '{path}' step {t}: {e}") from None
            t0 = time.perf_counter()
            from_runner = _invoke(session)
            times.append(time.perf_counter() - t0)
            per_step.append([np.array(a, copy=True) for a in session.results(from_runner)])
        stacked = [
            np.stack([step[j] for step in per_step]) if per_step else np.zeros(0) for j in range(len(session.outputs))
        ]
        files = [None] * len(stacked)
        if args.output_dir is not None:
            prefix = "" if len(args.sequence) == 1 else f"seq{k}_"
            files = save_outputs(args.output_dir, session.outputs, stacked, prefix)
        docs.append(
            {
                "file": path,
                "steps": len(steps),
                "reset": bool(args.reset),
                "results": [
                    {
                        **result_doc(p, a[-1] if len(a) else a, f),
                        "shape": list(a.shape),
                        "steps": [result_doc(p, s[j], None)["stats"] for s in per_step],
                    }
                    for j, (p, a, f) in enumerate(zip(session.outputs, stacked, files))
                ],
            }
        )
        if not args.json and not args.quiet:
            print(f"Sequence {path}: {len(steps)} steps{' (variables reset first)' if args.reset else ''}", file=out)
            for t, step in enumerate(per_step):
                for j, (p, arr) in enumerate(zip(session.outputs, step)):
                    if files[j] is None:
                        body = array_text(arr, p.details).replace("\n", "\n    ")
                        print(f"  step {t} {p.name}: {_dtype_name(arr.dtype)} {list(arr.shape)}\n    {body}", file=out)
            for p, f in zip(session.outputs, files):
                if f is not None:
                    print(f"  {p.name}: all steps -> {f}", file=out)
    return docs, times


def _read_model(model_path: str):
    """The model file read (schema.reader), or a ModelError naming the file."""
    from litert_py.schema.reader import read_model

    if not os.path.exists(model_path):
        raise ModelError(f"cannot open model '{model_path}': no such file")
    try:
        return read_model(model_path)
    except Exception as e:
        raise ModelError(f"cannot load model '{model_path}': {_one_line(e)}") from None


def summary_only(args, model_path: str, bundled: bool, out) -> int:
    """--summary-only: the summary without running; from the model alone when kernels are missing."""

    from .summary import missing_ops, node_docs, nodes_text, static_session, summarize, summary_text

    model = _read_model(model_path)
    if missing_ops(model):
        session = static_session(model, args.signature)
    else:
        session, _, _ = prepare_session(args, model_path)
    summary = summarize(session, model, model_path, bundled)
    nodes = node_docs(model) if args.nodes else None
    if args.json:
        doc = {"tool": PROG, "seed": args.seed, **summary}
        if nodes is not None:
            doc["nodes"] = nodes
        print(json.dumps(doc, default=str), file=out)
        return 0
    print(summary_text(summary, args.seed), file=out)
    if nodes is not None:
        print(nodes_text(nodes), file=out)
    return 0


def run(args, out, err=None) -> int:
    from .summary import node_docs, nodes_text, summarize, summary_text

    err = sys.stderr if err is None else err
    import_custom_ops(args.custom_ops)
    bundled = args.model is None
    model_path = bundled_model_path() if bundled else args.model
    if args.output_dir is not None and os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
        raise UsageError(f"--output-dir '{args.output_dir}' exists and is not a directory")
    if args.summary_only:
        return summary_only(args, model_path, bundled, out)
    profiling = args.profile or args.profile_csv is not None
    if args.sequence and (args.benchmark or profiling):
        raise UsageError("--sequence runs each step once; it cannot be combined with --benchmark or --profile")
    runs = args.runs or (50 if args.benchmark else 10 if profiling else 1)
    warmup = args.warmup if args.warmup is not None else (1 if args.benchmark or profiling else 0)

    session, t_load, t_alloc = prepare_session(args, model_path)
    summary = summarize(session, session.interpreter.model, model_path, bundled)
    if not args.json and not args.quiet:
        print(summary_text(summary, args.seed), file=out, flush=True)
    nodes = node_docs(session.interpreter.model) if args.nodes else None
    if nodes is not None and not args.json and not args.quiet:
        print(nodes_text(nodes), file=out, flush=True)

    sequences, bench, prof = None, None, None
    if args.sequence:
        sequences, times = run_sequences(args, session, out)
        from_runner = None
    else:
        times, bench, prof, from_runner = _run_invocations(args, session, err, runs, warmup, profiling)
    outputs = session.results(from_runner) if not args.sequence else None
    session.refresh_details()
    memory = memory_doc(session)

    times_ms = [t * 1e3 for t in times]
    timing = {
        "load": _ms(t_load),
        "allocate": _ms(t_alloc),
        "invoke_median": round(statistics.median(times_ms), 4) if times_ms else None,
        "invoke_min": round(min(times_ms), 4) if times_ms else None,
        "invoke_max": round(max(times_ms), 4) if times_ms else None,
        "runs": len(times_ms),
        "invoke_all": [round(t, 4) for t in times_ms],
    }

    files: list[str | None] = [None] * (len(outputs) if outputs is not None else 0)
    if outputs is not None and args.output_dir is not None:
        files = save_outputs(args.output_dir, session.outputs, outputs)
    comparison = None
    if args.compare == "litert":
        from .compare import compare_litert

        comparison = compare_litert(model_path, session, outputs, times_ms, sequences is not None)

    if args.json:
        doc = _json_doc(
            args,
            summary,
            timing,
            memory,
            session,
            outputs,
            files,
            sequences,
            bench,
            t_load,
            t_alloc,
            prof,
            nodes,
            comparison,
        )
        print(json.dumps(doc, default=str), file=out)
        return 0
    _print_results(args, out, session, outputs, files, times_ms, bench, memory, prof, comparison)
    print(timing_text(timing), file=out)
    return 0


def _run_invocations(args, session, err, runs: int, warmup: int, profiling: bool):
    """The timed invocations of ``run`` (plain, --benchmark or --profile): (times, bench, prof, last result)."""
    from .benchmark import Progress, benchmark

    bench = prof = None
    last: list = [None]
    times: list = []

    def call():
        t0 = time.perf_counter()
        last[0] = _invoke(session)
        times.append(time.perf_counter() - t0)

    if args.benchmark:  # one clock: the benchmark's own timings are the runs' times
        progress = Progress(err, runs, args.max_secs, Progress.wanted(err, args.quiet))
        bench = benchmark(lambda: last.__setitem__(0, _invoke(session)), warmup, runs, args.max_secs, progress)
        times = bench.pop("times_s")
    elif profiling:  # the profiled runs are the runs (their times include the timers)
        prof = run_profile(session, runs, warmup, call)
        times = times[warmup:]
    else:
        for _ in range(warmup):
            _invoke(session)
        for _ in range(runs):
            call()
    if profiling and prof is None:  # after --benchmark: warm already
        prof = run_profile(session, runs, 0)
    if prof is not None and args.profile_csv is not None:
        write_profile_csv(args.profile_csv, prof)
    return times, bench, prof, last[0]


def _json_doc(
    args, summary, timing, memory, session, outputs, files, sequences, bench, t_load, t_alloc, prof, nodes, comparison
) -> dict:
    """``run``'s --json document."""
    import litert_py

    doc = {
        "tool": PROG,
        "litert_py_version": litert_py.__version__,
        "seed": args.seed,
        **summary,
        "timing_ms": timing,
        "memory": memory,
    }
    if outputs is not None:
        doc["results"] = [result_doc(p, a, f) for p, a, f in zip(session.outputs, outputs, files)]
    if sequences is not None:
        doc["sequences"] = sequences
    if bench is not None:
        doc["benchmark"] = {**bench, "load_ms": _ms(t_load), "allocate_ms": _ms(t_alloc), **memory}
    if prof is not None:
        doc["profile"] = prof.to_dict()
    if nodes is not None:
        doc["nodes"] = nodes
    if comparison is not None:
        doc["compare"] = comparison
    return doc


def _print_results(args, out, session, outputs, files, times_ms, bench, memory, prof, comparison) -> None:
    """``run``'s text report before the timing line (nothing with --quiet)."""
    from .benchmark import benchmark_text

    if args.quiet:
        return
    if outputs is not None:
        print(f"Results (after {len(times_ms)} run{'s' if len(times_ms) > 1 else ''}):", file=out)
        for p, arr, f in zip(session.outputs, outputs, files):
            head = f"  {p.name}: {_dtype_name(arr.dtype)} {list(arr.shape)}"
            if f is not None:
                print(f"{head} -> {f}", file=out)
            else:
                print(f"{head}\n    {array_text(arr, p.details)}", file=out)
    if bench is not None:
        print(benchmark_text(bench, memory), file=out)
    if prof is not None:
        print(prof.table(args.top), file=out)
        if args.profile_csv is not None:
            print(f"Profile written to {args.profile_csv}", file=out)
    if comparison is not None:
        from .compare import compare_text

        print(compare_text(comparison), file=out)


def run_graph(args, out) -> int:

    from .graph_html import write_graph_html

    import_custom_ops(args.custom_ops)
    bundled = args.model is None
    model_path = bundled_model_path() if bundled else args.model
    model = _read_model(model_path)
    prof = None
    if args.profile:
        session, _, _ = prepare_session(args, model_path)
        prof = run_profile(session, args.runs, args.warmup)
    try:
        n = write_graph_html(args.output, model, os.path.basename(model_path), prof)
    except OSError as e:
        raise ModelError(f"cannot write '{args.output}': {_one_line(e)}") from None
    print(
        f"Wrote {args.output}: {n} nodes in {len(model.subgraphs)} subgraph"
        f"{'s' if len(model.subgraphs) != 1 else ''}{' with profile times' if prof else ''}",
        file=out,
    )
    return 0


# -- main -----------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tflite-run`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    graph = bool(argv) and argv[0] == "graph" and not os.path.exists("graph")  # `tflite-run graph MODEL -o F`
    parser = build_graph_parser() if graph else build_parser()
    try:
        args = parser.parse_args(argv[1:] if graph else argv)
    except SystemExit as e:  # --help, --version (0) and usage errors (2)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        return run_graph(args, sys.stdout) if graph else run(args, sys.stdout)
    except UsageError as e:
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except ModelError as e:
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `tflite-run ... | head`
        return quiet_broken_pipe()
    except Exception as e:  # a bug, in the tool or a kernel: still one line
        if os.environ.get(_TRACEBACK_ENV):
            raise
        print(
            f"{PROG}: internal error: {type(e).__name__}: {_one_line(e)} (set {_TRACEBACK_ENV}=1 to see the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
