"""tflite-run's command line: the options of ``tflite-run`` (in argument groups) and of ``tflite-run graph``."""

from __future__ import annotations

import argparse
import os
import sys

PROG = "tflite-run"


class OneLineParser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2) instead of the usage block; shared by the console tools."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def quiet_broken_pipe() -> int:
    """The exit status after stdout's reader went away (``tool ... | head``): stop quietly, as other command-line
    tools do, with stdout pointed at /dev/null so that Python's flush at exit does not complain either."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 1


def int_at_least(minimum: int):
    """An argparse ``type`` for integers >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {n}")
        return n

    return parse


_positive_int, _count = int_at_least(1), int_at_least(0)


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r}") from None
    if not s > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return s


def _model_args(g) -> None:
    g.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="take input NAME (its name, signature name or 0-based position) from FILE (.npy, or .npz "
        "holding NAME or a single array; FILE.npz:KEY takes any key); a bare FILE.npz sets every "
        "input it names (keys: input names, or in_K / arr_K for position K); a bare FILE.npy is "
        "allowed for one-input models. Repeatable; inputs not given are random",
    )
    g.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the random inputs (default 0): floats uniform in [-1, 1), integer types over their full range",
    )
    g.add_argument("--signature", metavar="KEY", help="run through the SignatureDef KEY (its input/output names)")
    g.add_argument(
        "--custom-ops",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE (a module name or a .py file) first; it registers custom ops with "
        "litert_py.register_custom_op. Repeatable",
    )
    g.add_argument(
        "--num-threads", type=_positive_int, default=None, metavar="N", help="Interpreter(num_threads=N): BLAS threads"
    )
    g.add_argument(
        "--preserve-all-tensors",
        action="store_true",
        help="Interpreter(experimental_preserve_all_tensors=True): no arena reuse",
    )
    g.add_argument(
        "--delegate",
        action="append",
        default=[],
        metavar="NAME",
        help="Interpreter(experimental_delegates=[load_delegate(NAME)]), e.g. onnxruntime (repeatable)",
    )


def build_parser() -> argparse.ArgumentParser:
    from litert_py import __version__

    p = OneLineParser(
        prog=PROG,
        description="Summarize a .tflite model and run it with litert_py (pure-Python TFLite interpreter); "
        "benchmark it, profile it per node, list its nodes. `tflite-run graph MODEL -o FILE.html` "
        "draws the model as a self-contained HTML page (see tflite-run graph --help).",
        epilog="Without MODEL, runs the small image classifier bundled with litert_py. Exit status: 0 ok, 1 the "
        "model failed to load/prepare/run, 2 bad arguments.",
    )
    p.add_argument("model", nargs="?", metavar="MODEL", help="path of a .tflite model (default: the bundled tiny CNN)")
    p.add_argument("--version", action="version", version=f"{PROG} (litert_py {__version__})")
    g = p.add_argument_group("model and inputs")
    _model_args(g)
    g = p.add_argument_group("stateful models")
    g.add_argument(
        "--sequence",
        action="append",
        default=[],
        metavar="FILE.npz",
        help="run one invoke per step of FILE: each key an input with a leading step axis, or (one-input "
        "models) each key one step; prints (or saves with -o) every step's outputs. Repeatable",
    )
    g.add_argument(
        "--reset",
        action="store_true",
        help="reset the model's variables (reset_all_variables) before each --sequence file",
    )
    g = p.add_argument_group("running and benchmarking")
    g.add_argument(
        "-n",
        "--runs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="invoke N times and report the median time (default 1; 50 with --benchmark, 10 with --profile)",
    )
    g.add_argument(
        "--benchmark",
        action="store_true",
        help="time --warmup untimed and --runs timed invokes: count, first, min, max, mean, std, p50, "
        "p90, p99; load and allocate time, peak RSS and arena bytes",
    )
    g.add_argument(
        "--warmup",
        type=_count,
        default=None,
        metavar="N",
        help="untimed invokes before the timed ones (default 1 with --benchmark or --profile, else 0)",
    )
    g.add_argument(
        "--max-secs",
        type=_seconds,
        default=None,
        metavar="S",
        help="stop the timed runs after S seconds (at least one run)",
    )
    g = p.add_argument_group("per-op profile")
    g.add_argument(
        "--profile",
        action="store_true",
        help="time every node (like benchmark_model --enable_op_profiling): per node in run order, the "
        "slowest nodes, and a summary by op type",
    )
    g.add_argument("--top", type=_count, default=10, metavar="N", help="show the N slowest nodes (default 10; 0: none)")
    g.add_argument(
        "--profile-csv", metavar="FILE", help="write the per-node profile to FILE as CSV (implies --profile)"
    )
    g = p.add_argument_group("model view")
    g.add_argument(
        "--summary-only",
        action="store_true",
        help="print the summary and do not run (works when ops are missing: lists them)",
    )
    g.add_argument(
        "--nodes",
        action="store_true",
        help="list every node: op name, inputs and outputs (shape, dtype, quantization), options",
    )
    g = p.add_argument_group("outputs")
    g.add_argument(
        "-o",
        "--output-dir",
        metavar="DIR",
        help="save each output (raw, quantized ones as stored) as DIR/<name>.npy (name made file-safe) "
        "instead of printing it",
    )
    g.add_argument(
        "--compare",
        choices=["litert"],
        default=None,
        help="also run ai-edge-litert (reference and default kernels) on the same inputs: per-output "
        "agreement (exact, max abs, max rel) and the time ratio",
    )
    g.add_argument("-q", "--quiet", action="store_true", help="print only the timing line (no progress bar)")
    g.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (summary, outputs, timings, benchmark, profile, nodes, comparison)",
    )
    return p


def build_graph_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=f"{PROG} graph",
        description="Draw every subgraph of MODEL into one self-contained HTML page (no network): nodes "
        "with op names, edges with tensor shapes and dtypes, a side panel with a node's options "
        "and a tensor's quantization; with --profile, each node's time.",
    )
    p.add_argument("model", nargs="?", metavar="MODEL", help="path of a .tflite model (default: the bundled tiny CNN)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.html", help="the HTML file to write")
    g = p.add_argument_group("profile times (optional)")
    g.add_argument("--profile", action="store_true", help="run the model and show each node's mean time")
    g.add_argument("-n", "--runs", type=_positive_int, default=10, metavar="N", help="profiled invokes (default 10)")
    g.add_argument("--warmup", type=_count, default=1, metavar="N", help="untimed invokes first (default 1)")
    _model_args(g)
    return p
