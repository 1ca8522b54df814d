"""Hybrid FULLY_CONNECTED edge inputs against BUILTIN_REF, bit for bit: EvalHybrid's IsZeroVector shortcut over
the whole input (a -0.0 bias element comes back as -0.0), and the float -> int32 conversion of
NeonSymmetricQuantizeFloats / NeonAsymmetricQuantizeFloats for non-finite ``x * inv`` (a row whose float32
scale is a nonzero denormal, so ``inv`` overflows to inf; rows holding +-inf)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ops.test_fully_connected import fc_model
from tests.oracle import quant, run_litert, run_ours

F32, I8 = np.float32, np.int8


def check(x: np.ndarray, asym: bool, w: np.ndarray, bias=None, per_channel=False) -> None:
    n, units = x.shape[0], w.shape[0]
    scale = np.linspace(0.05, 0.2, units).astype(F32) if per_channel else np.array([0.1], F32)
    opts = {"fused_activation_function": 0, "keep_num_dims": False, "asymmetric_quantize_inputs": asym}
    wq = quant(scale, np.zeros(scale.size, int))
    model = fc_model(x.shape, F32, None, w, I8, wq, bias, None, (n, units), F32, None, opts)
    ours, ref = run_ours(model, [x])[0], run_litert(model, [x])[0]
    assert ours.tobytes() == ref.tobytes(), (ours, ref)


def mixed_weights(units: int, depth: int) -> np.ndarray:
    return ((np.arange(units * depth) % 7) - 3).astype(I8).reshape(units, depth)


@pytest.mark.parametrize("asym", [False, True], ids=["sym", "asym"])
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_all_zero_input_returns_the_bias(asym, rows, per_channel):
    """IsZeroVector: output = bias exactly, -0.0 included (0 * scale + -0.0 would be +0.0); -0.0 inputs count as 0."""
    x = np.zeros((rows, 16), F32)
    x[0, 3] = -0.0
    bias = np.array([-0.0, 1.0, -0.0], F32)
    check(x, asym, mixed_weights(3, 16), bias, per_channel)


@pytest.mark.parametrize("asym", [False, True], ids=["sym", "asym"])
def test_zero_row_among_nonzero_rows_is_not_skipped(asym):
    """The shortcut is over the whole input: an all-zero row next to a nonzero one gets 0 * scale + bias (+0.0)."""
    x = np.zeros((2, 16), F32)
    x[1, 3] = 1.0
    check(x, asym, mixed_weights(3, 16), np.array([-0.0, 1.0, -0.0], F32))
