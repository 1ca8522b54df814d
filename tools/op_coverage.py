"""Op coverage dashboard: which (builtin op, dtype path) pairs litert_py runs with LiteRT's numbers.

For every builtin op (and the custom ops LiteRT registers by default) a *recipe* builds one or more small
single-op models per dtype path. The oracle, ai-edge-litert, runs each model with its reference kernels
(``BUILTIN_REF``), or with its default kernels without delegates (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) when
the reference resolver does not register the op or its reference kernel is broken there (``REF_BROKEN``).
LiteRT runs in a worker process that forks a child per (op, path): a C++ CHECK abort, a segfault or heap
corruption inside LiteRT costs only the model that caused it. The same model runs in litert_py in this
process, on the same few seeded random inputs, and the outputs are compared: integers (and bools, strings)
exactly, floats within a tolerance relative to the largest reference magnitude. Where LiteRT's reference and
optimized kernels disagree with each other, the dashboard says so.

A cell of the table (docs/op-coverage.md) is

- ``yes``: LiteRT runs every model of the path and litert_py runs each one with equal outputs;
- ``missing``: LiteRT runs it, litert_py fails to load/prepare/run it; ``missing (differs)``: litert_py
  runs it but its outputs differ from LiteRT's (the reason is in the notes under the table);
- ``n/a``: LiteRT rejects every model of the path (or the path does not exist for the op: ``hybrid`` is
  only defined for ops with constant weights);
- ``beyond``: LiteRT rejects it but litert_py runs it (no oracle to compare with);
- ``untested``: no recipe yet.

A path counts as supported by LiteRT when it runs at least one of the path's models; the cell is ``yes``
when litert_py matches LiteRT on every model LiteRT runs. The ``int32/int64`` column is ``yes`` when either
integer width is.

The code lives in the ``opcov`` package beside this file: ``opcov/litert_side.py`` (the worker side; it
imports nothing of litert_py), ``opcov/cases.py`` (specs, models, ``P``, ``@recipe``, value drawing and the
helpers recipes share), the recipes by op family (``opcov/recipes_elementwise.py``, ``recipes_conv_pool.py``,
``recipes_movement.py``, ``recipes_misc.py``: complex/FFT/random, detection, legacy and MediaPipe ops,
``recipes_stateful.py``: control flow, resources, recurrent ops, ``recipes_stablehlo.py``), ``opcov/running.py``
(both runtimes, comparison, cells) and ``opcov/report.py`` (the table). This file is the command line.

Adding a recipe: a function ``fn(p: P) -> Case | list[Case]`` registered with ``@recipe("OP", ...)`` in the
op family's ``opcov/recipes_*.py``; ``p`` knows the path (``p.path``, ``p.dtype``, ``p.quantized``) and makes
inputs (``p.x``), outputs (``p.out``) and constants (``p.const``) with the path's dtype and quantization;
``case(op, inputs, outputs, options)`` builds a one-op model, ``Graph`` anything bigger (subgraphs, resources).
When LiteRT rejects a model, check with ``--ops OP --verbose`` whether the recipe or LiteRT is at fault before
accepting the ``n/a``.

Usage::

    python tools/op_coverage.py                     # run everything, write docs/op-coverage.md
    python tools/op_coverage.py --ops CONV_2D,ADD   # print those rows (add --out FILE to write them)
    python tools/op_coverage.py --check             # exit 1 if docs/op-coverage.md is not current
    python tools/op_coverage.py --ops ADD --verbose # also print LiteRT's rejection of each n/a case
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
for _dir in (ROOT, TOOLS):  # run as a script from anywhere in the tree; the opcov package lives beside this file
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:  # the LiteRT side: nothing of litert_py
    from opcov.litert_side import worker_main

    worker_main()
    sys.exit(0)

# Importing a recipe module registers its recipes (in RECIPES).
from opcov import (  # noqa: E402
    recipes_conv_pool,
    recipes_elementwise,
    recipes_misc,
    recipes_movement,
    recipes_stablehlo,
    recipes_stateful,
)
from opcov.cases import CELL_VALUES, COLUMNS, PATHS, RECIPES, all_ops, draw  # noqa: E402
from opcov.litert_side import OPT, REF, run_forked, worker_main  # noqa: E402
from opcov.report import evaluate, kernel_module, parse_modules, parse_table, render  # noqa: E402
from opcov.running import (  # noqa: E402
    REF_BROKEN,
    UNSAFE_IN_LITERT,
    Cell,
    LiteRTWorker,
    build_cases,
    compare,
    evaluate_op,
    evaluate_path,
    ours_run,
)

RECIPE_MODULES = (
    recipes_elementwise,
    recipes_conv_pool,
    recipes_movement,
    recipes_misc,
    recipes_stateful,
    recipes_stablehlo,
)
#: What tests use of the dashboard (tests/tools/test_op_coverage.py, tests/ops/test_degenerate_shapes.py)
__all__ = [
    "CELL_VALUES",
    "COLUMNS",
    "OPT",
    "PATHS",
    "RECIPES",
    "RECIPE_MODULES",
    "REF",
    "REF_BROKEN",
    "UNSAFE_IN_LITERT",
    "Cell",
    "LiteRTWorker",
    "all_ops",
    "build_cases",
    "compare",
    "draw",
    "evaluate",
    "evaluate_op",
    "evaluate_path",
    "kernel_module",
    "main",
    "ours_run",
    "parse_modules",
    "parse_table",
    "render",
    "run_forked",
]

DEFAULT_OUT = ROOT / "docs" / "op-coverage.md"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", help=f"file to write (default {DEFAULT_OUT.relative_to(ROOT)}; stdout with --ops)")
    ap.add_argument("--ops", help="comma-separated op names (default: every op)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the output file would change")
    ap.add_argument("--verbose", action="store_true", help="print every non-yes case's reason to stderr")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    ops = all_ops()
    if args.ops:
        wanted = [o.strip() for o in args.ops.split(",") if o.strip()]
        unknown = sorted(set(wanted) - set(ops))
        if unknown:
            ap.error(f"unknown op(s): {', '.join(unknown)}")
        ops = [o for o in ops if o in wanted]
    if args.check and args.ops and not args.out:
        ap.error("--check with --ops needs --out (the dashboard holds every op)")
    out = args.out or (None if args.ops else str(DEFAULT_OUT))
    t0 = time.monotonic()
    rows, crashes = evaluate(ops, args.verbose)
    text = render(rows, crashes)
    print(f"{len(ops)} ops in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    if args.check:
        path = Path(out or DEFAULT_OUT)
        current = path.read_text() if path.exists() else ""
        if current != text:
            print(f"{path} is not current: run python tools/op_coverage.py", file=sys.stderr)
            return 1
        return 0
    if out is None or out == "-":
        sys.stdout.write(text)
    else:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
