"""Shared builders for the StableHLO tests (test_core, test_elementwise, test_structured): value and shape
draws, the oracle resolver table and the oracle check that the differential case tables run."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests.compare import assert_close
from tests.ops._values import regimes
from tests.oracle import run_both
from tests.values import values

# BUILTIN_REF lacks STABLEHLO_AND, STABLEHLO_SHIFT_LEFT, STABLEHLO_CASE and STABLEHLO_RNG_BIT_GENERATOR: their
# builtin kernels run without delegates.
RESOLVER = {
    "STABLEHLO_AND": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "STABLEHLO_SHIFT_LEFT": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "STABLEHLO_CASE": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "STABLEHLO_RNG_BIT_GENERATOR": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
}

#: float tolerance (rtol) per op: all exact (single IEEE operations, same accumulation order)
TOLERANCE: dict[str, float] = {}


def _values(data, shape, dtype):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1), label="seed"))
    return values(rng, shape, dtype, None if dtype is np.bool_ else data.draw(regimes(dtype), label="regime"))


def _shape(data, min_rank=0, max_rank=4, max_dim=4, min_dim=0):
    rank = data.draw(st.integers(min_rank, max_rank), label="rank")
    return tuple(data.draw(st.lists(st.integers(min_dim, max_dim), min_size=rank, max_size=rank), label="shape"))


def _name(dt) -> str:
    return np.dtype(dt).name


def check_oracle(case, data):
    """The differential test body: build the case's model and inputs, run both runtimes, compare."""
    name, op, build = case
    model, inputs = build(data)
    ours, theirs = run_both(model, inputs, resolver=RESOLVER.get(op, "BUILTIN_REF"))
    assert_close(ours, theirs, rtol_each=TOLERANCE.get(name, 0.0))


def _wrap(v: int, dtype) -> int:
    """Python int -> two's complement value of ``dtype``."""
    bits = np.iinfo(dtype).bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if np.iinfo(dtype).min < 0 and v >> (bits - 1) else v


def _beyond_values(data, shape, dtype, op=None):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1), label="seed"))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        if op == "STABLEHLO_POWER":
            return rng.integers(-3 if dt.kind == "i" else 0, 6, shape).astype(dt)
        info = np.iinfo(dt)
        pick = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
        small = rng.integers(max(info.min, -9), 10, shape).astype(dt)
        return np.where(rng.random(shape) < 0.5, pick, small)
    return (rng.standard_normal(shape) * 3).astype(dt)
