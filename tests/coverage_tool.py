"""The op dashboard's generator (tools/op_coverage.py), loaded once by path for the tests that use its case table."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def coverage_tool():
    """The module; loading it puts tools/ on sys.path and imports the tools/opcov package."""
    spec = importlib.util.spec_from_file_location("op_coverage", ROOT / "tools" / "op_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
