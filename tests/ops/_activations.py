"""Shared by the activation tests (test_activations, test_activations_quantized, test_log_softmax_elu_gelu)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import PrepareError
from tests.oracle import run_ours

I8, U8, I16 = np.int8, np.uint8, np.int16


def _f32(v: float) -> float:
    return float(np.float32(v))


def _empty_rows(shape) -> bool:
    """Rows of no element: shape (..., 0) with at least one row."""
    return shape[-1] == 0 and 0 not in shape[:-1]


def _assert_refused_empty_rows(model: bytes, x: np.ndarray) -> None:
    """float32 SOFTMAX / LOG_SOFTMAX over empty rows: LiteRT reads outside the input (in a fresh process it
    segfaults: tests/ops/test_degenerate_shapes.py runs it in a fork); litert_py refuses the model."""
    with pytest.raises(PrepareError, match="empty last dimension"):
        run_ours(model, [x])
