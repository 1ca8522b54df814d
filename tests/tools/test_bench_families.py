"""tools/bench_families.py: every family model it benchmarks is a valid model whose int8 outputs litert_py computes
exactly as LiteRT's reference kernels do (BUILTIN_REF), over several invokes (the streaming model's ring-buffer
state included), and whose outputs are not constant (the calibrated quantization is not degenerate)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.oracle import oracle

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_families", ROOT / "tools" / "bench_families.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _bench()


@pytest.mark.parametrize("family", sorted(BENCH.FAMILIES))
def test_family_model_equals_builtin_ref(family):
    oracle()  # fails (never skips) without ai-edge-litert
    BENCH.check_exact(BENCH.FAMILIES[family]())
