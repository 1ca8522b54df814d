"""``tflite-verify``: find, layer by layer, where a quantized model loses accuracy.

    tflite-verify FLOAT.tflite QUANT.tflite     # pair: both models on the same samples, tensors matched
    tflite-verify QUANT.tflite                  # single: each quantized op against its float version
    tflite-verify DEBUG.tflite                  # a debug model with NumericVerify ops (QuantizationDebugger)
    tflite-verify QUANT.tflite --data samples/ --csv layers.csv --json report.json --html report.html
    tflite-verify QUANT.tflite --suggest-float 3 --fail-above rmse/scale=0.5
    tflite-verify FLOAT.tflite QUANT.tflite --samples 1000 --workers 4     # or --ray auto (a Ray cluster)

Exit status: 0; 1 when ``--fail-above METRIC=VALUE`` finds a layer above VALUE; 2 for bad input (arguments,
models that do not pair, a float model given as the quantized one, --data that does not fit the model).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from ..tools.options import OneLineParser, int_at_least, quiet_broken_pipe
from .metrics import METRICS
from .run import VerifyError, verify

PROG = "tflite-verify"


def _threshold(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE, got {text!r}")
    if name not in METRICS and not name.startswith("accumulated_"):
        raise argparse.ArgumentTypeError(f"unknown metric {name!r}; one of {', '.join(METRICS)}")
    try:
        return name, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"VALUE must be a number, got {value!r}") from None


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description=__doc__.split("\n")[0].split(": ", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Samples: a .npz is one sample (keys: input names or positions 0, 1, ...); a .npy has a "
        "leading sample axis (single-input models); a folder holds such files. A sample of a "
        "stateful model may be a sequence: one more leading axis ([steps, *shape]); variables "
        "are reset before each sample.",
    )
    p.add_argument("models", nargs="+", metavar="MODEL", help="QUANT.tflite, or FLOAT.tflite QUANT.tflite")
    p.add_argument("--data", type=pathlib.Path, help=".npz, .npy or a folder of them")
    p.add_argument("--samples", type=int_at_least(1), default=10, help="random samples without --data (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random samples (default 0)")
    p.add_argument("--csv", type=pathlib.Path, help="one row per tensor")
    p.add_argument("--json", type=pathlib.Path, help="the whole report")
    p.add_argument("--html", type=pathlib.Path, help="a self-contained page with the table and plots")
    p.add_argument(
        "--suggest-float",
        type=int_at_least(1),
        metavar="K",
        help="print the K layers with the largest own error (to keep in float)",
    )
    p.add_argument(
        "--fail-above",
        type=_threshold,
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when a layer's METRIC is above VALUE (repeatable)",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="run the samples in N processes (with --ray: N Ray actors, default one per CPU); same report",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the samples on Ray (extra [ray]): 'local' starts a local Ray, else ray.init's address "
        "('auto', 'ray://head:10001')",
    )
    p.add_argument("--top", type=int, default=25, help="layers shown in the table (0: all; default 25)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no table")
    return p


def main(argv=None) -> int:
    """Entry point of the ``tflite-verify`` console script; returns the exit status."""
    try:
        return _main(build_parser().parse_args(argv))
    except BrokenPipeError:  # `tflite-verify ... | head`
        return quiet_broken_pipe()


def _main(a) -> int:
    if a.workers is not None and a.workers < 0:
        print(f"{PROG}: error: --workers must be >= 0, got {a.workers}", file=sys.stderr)
        return 2
    if len(a.models) > 2:
        print(
            f"{PROG}: error: give QUANT.tflite or FLOAT.tflite QUANT.tflite, got {len(a.models)} models",
            file=sys.stderr,
        )
        return 2
    flt, quant = (a.models[0], a.models[1]) if len(a.models) == 2 else (None, a.models[0])
    try:
        report = verify(
            quant,
            flt,
            data=a.data,
            samples=a.samples,
            seed=a.seed,
            progress=False if a.quiet else None,
            workers=a.workers,
            ray_address=a.ray,
        )
    except VerifyError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if not a.quiet:
        print(report.table(limit=a.top or None))
    try:
        if a.csv:
            a.csv.write_text(report.to_csv())
        if a.json:
            a.json.write_text(report.to_json())
        if a.html:
            from .html import to_html

            a.html.write_text(to_html(report))
    except OSError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if a.suggest_float:
        names = report.suggest_float(a.suggest_float)
        print(f"keep in float ({len(names)}): denylisted_nodes={names!r}")
    status = 0
    for metric, value in a.fail_above:
        bad = report.exceeds(metric, value)
        for r in bad:
            print(
                f"{PROG}: {r['tensor_name']} (node {r['node']} {r['op_name']}): {metric} {r[metric]:.4g} > {value:g}",
                file=sys.stderr,
            )
        status = status or (1 if bad else 0)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
