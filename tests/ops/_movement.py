"""Shared by the data-movement tests (test_movement, test_slicing): shape and quantization draws, the wide dtype
table, the check that LiteRT and litert_py both reject a model at prepare."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st

from litert_py import PrepareError
from tests.ops._diff import ALL_DTYPES
from tests.oracle import T, quant, run_litert, run_ours, single_op_model

#: Also the dtypes some data-movement ops take by bit width alone (LiteRT accepts or rejects them per op).
WIDE_DTYPES = {**ALL_DTYPES, "uint16": np.uint16, "uint32": np.uint32, "float64": np.float64}
#: Models litert_py refuses at prepare where LiteRT reads outside its input.
OUT_OF_BOUNDS_REFUSED = ("LiteRT reads", "LiteRT would read", "seq_lengths[i] <= SizeOfDimension")

seeds = st.integers(0, 2**32 - 1)


def shapes(min_rank=1, max_rank=4, min_side=1, max_side=4):
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def _q(dtype_name, draw):
    """Quantization of a quantized integer tensor (None for other dtypes or when drawn unquantized)."""
    if dtype_name in ("int8", "uint8", "int16") and draw(st.booleans()):
        zp = 0 if dtype_name == "int16" else draw(st.integers(-20, 20)) + (128 if dtype_name == "uint8" else 0)
        return quant(draw(st.floats(0.01, 2.0)), zp)
    return None


def _i32(v) -> T:
    return T.const(np.array(v, np.int32))


def check_rejected(op, ins, outs, opts):
    """The body of test_movement_rejected_at_prepare: LiteRT raises, litert_py raises PrepareError."""
    model = single_op_model(op, ins, outs, opts)
    feeds = [
        np.zeros(t.shape, t.dtype) if t.dtype is not np.bytes_ else np.full(t.shape, b"", object)
        for t in ins
        if t is not None and t.data is None
    ]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)
