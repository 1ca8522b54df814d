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


def check(x: np.ndarray, asym: bool, w: np.ndarray, bias=None, per_channel=False, act=0) -> None:
    n, units = x.shape[0], w.shape[0]
    scale = np.linspace(0.05, 0.2, units).astype(F32) if per_channel else np.array([0.1], F32)
    opts = {"fused_activation_function": act, "keep_num_dims": False, "asymmetric_quantize_inputs": asym}
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


def special_input(kind: str, rows: int, depth: int) -> np.ndarray:
    """Rows with values at positions in the 8-wide part and in the tail (depth % 8 != 0)."""
    x = np.zeros((rows, depth), F32)
    x[:, 0::5] = 0.75
    x[:, 3::7] = -1.5
    ends = [1, depth - 1, depth - 2]  # 8-wide part, tail
    if kind == "denormal-scale":  # range ~1e-40: sf = f32(R / 127) a nonzero denormal, inv = f32(127 / R) = inf
        x[:] = 0
        x[:, ends] = [F32(1e-40), F32(-3e-41), F32(2e-41)]
    elif kind == "denormal-scale-negative":  # zero point from the other bound
        x[:] = 0
        x[:, ends] = [F32(-1e-40), F32(3e-41), F32(-2e-41)]
    elif kind == "+inf-8-wide":
        x[:, 1] = np.inf
    elif kind == "-inf-tail":
        x[:, depth - 1] = -np.inf
    elif kind == "inf-both":
        x[:, ends] = [np.inf, -np.inf, np.inf]
    elif kind == "range-overflow":  # rmax - rmin past FLT_MAX
        x[:, ends[:2]] = [F32(3e38), F32(-3e38)]
    x[-1] = np.linspace(-2, 3, depth, dtype=F32)  # an ordinary row next to the special ones
    return x


@pytest.mark.parametrize("act", [1, 2, 3], ids=["relu", "relu-n1-to-1", "relu6"])
def test_activation_of_negative_zero_and_nan(act):
    """ApplyActivationToVector's std::max(lo, std::min(v, hi)): a -0.0 bias through the zero-input shortcut (RELU,
    RELU6: +0.0; RELU_N1_TO_1: -0.0) and the NaN outputs of a range past FLT_MAX (NaN -> lo)."""
    w, bias = mixed_weights(3, 16), np.array([-0.0, 0.5, -0.0], F32)
    check(np.zeros((2, 16), F32), True, w, bias, act=act)
    x = np.zeros((2, 16), F32)
    x[:, 1:3] = [F32(3.4e38), F32(-3.4e38)]
    x[1] = np.linspace(-1, 1, 16)
    check(x, True, w, bias, act=act)


SPECIAL = ["denormal-scale", "denormal-scale-negative", "+inf-8-wide", "-inf-tail", "inf-both", "range-overflow"]


@pytest.mark.parametrize("asym", [False, True], ids=["sym", "asym"])
@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("rows,depth", [(1, 19), (3, 21), (2, 16)])
def test_non_finite_quantization(kind, rows, depth, asym):
    """NaN / +-inf ``x * inv`` through the int32 conversion (vector part saturating, tail INT_MIN) and the wrapping
    ``+ zp``, as BUILTIN_REF; identity-like weights expose each q, mixed weights their sums."""
    x = special_input(kind, rows, depth)
    w = np.zeros((depth, depth), I8)
    np.fill_diagonal(w, 1)
    check(x, asym, w)
    check(x, asym, mixed_weights(5, depth), np.linspace(-1, 1, 5).astype(F32), per_channel=True)
