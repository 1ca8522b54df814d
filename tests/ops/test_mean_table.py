"""8-bit MEAN through MeanQuantizedTable (litert_py/ops/reduce.py): the sums accumulate in int16 / uint16 up to the
count where the extreme sums still fit (256 int8 values, 257 uint8 values) and in int32 beyond, asserted by the
prepared op's ``sum_dtype``, against the oracle (ai-edge-litert BUILTIN_REF) exactly, the all-minimum and
all-maximum inputs (the extreme sums, where a narrow accumulator would overflow) included."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from tests.compare import assert_close
from tests.oracle import T, quant, run_both, single_op_model


@pytest.mark.parametrize(
    "dtype, n, sum_dtype",
    [
        (np.int8, 64, np.int16),
        (np.int8, 256, np.int16),
        (np.int8, 257, np.int32),
        (np.int8, 1024, np.int32),  # MEAN_TABLE_MAX_COUNT
        (np.uint8, 257, np.uint16),
        (np.uint8, 258, np.int32),
        (np.uint8, 1024, np.int32),
    ],
)
def test_mean_table_sum_dtype(dtype, n, sum_dtype):
    info = np.iinfo(dtype)
    shape, m = (1, n, 1, 12), 12
    mid = (int(info.min) + int(info.max) + 1) // 2
    model = single_op_model(
        "MEAN",
        [T(shape, dtype, q=quant(0.0473, mid - 3)), T.const(np.array([1, 2], np.int32))],
        [T((1, m), dtype, q=quant(0.0111, mid + 5))],
        {"keep_dims": False},
    )
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op,) = [op for _, op in it._subgraphs[0].steps_nodes]
    assert type(op).__name__ == "MeanQuantizedTable"
    assert op.sum_dtype == np.dtype(sum_dtype)
    rng = np.random.default_rng(11)
    x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    x[..., 0] = info.min  # the extreme sums
    x[..., 1] = info.max
    x[..., 2] = np.where(np.arange(n) % 2, info.min, info.max)[:, None]
    x[..., 3] = mid + np.arange(n)[:, None] % 5 - 2
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs)
    assert len(np.unique(ours[0])) > 4
