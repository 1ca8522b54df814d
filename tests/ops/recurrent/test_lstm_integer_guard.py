"""The 8x8_16 LSTM layer norm's variance guard, ``std::max(1, static_cast<int32_t>(10000 * scale))``
(lstm_integer_build.variance_guard), against the oracle (ai-edge-litert BUILTIN_REF), exactly: near-constant gate
rows (variance below 1, so the guard replaces it, and ``1024 v - mean`` not 0, so its value matters) under
layer-norm scales whose guard is 1, 5000, 10^9 (in int32) and past int32 or infinite (x86's conversion: INT32_MIN,
so 1)."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
import litert_py.errors
from litert_py.ops.recurrent.lstm_integer_build import variance_guard
from tests.ops.recurrent import _weights
from tests.ops.recurrent.test_lstm_integer_ln import GATES, _Const, _weights_for, rows_model
from tests.ops.recurrent.test_lstm_integer_peephole import _stream_matches
from tests.ops.recurrent.test_lstm_integer_plain import _cell
from tests.oracle import quant

#: int16 rows (16 cells) of gates i, f, c, o before the layer norm: one value apart from the others
NEAR_CONSTANT = [np.r_[np.zeros(15), 1], np.r_[np.zeros(15), 2], np.r_[np.full(15, 7), 8], np.r_[np.zeros(15), 1]]


def _ln_inputs(scale: float, weight: int):
    """``_weights.layer_norm_inputs`` with every layer-norm weight ``weight`` of ``scale``."""

    def inputs(b, rng, n_cell, cifg, ln):
        return [
            -1
            if not ln or (cifg and g == "i")
            else b.tensor(
                f"ln_{g}", (n_cell,), np.int16, data=np.full(n_cell, weight, np.int16), quantization=quant(scale)
            )
            for g in GATES
        ]

    return inputs


@pytest.mark.parametrize("ln_scale", [3e-5, 0.5, 1e5, 2.2e5, 3e5])
def test_variance_guard_matches_oracle(ln_scale, monkeypatch):
    monkeypatch.setattr(_weights, "layer_norm_inputs", _ln_inputs(ln_scale, 20001))
    rows = [np.asarray(r, np.int64) for r in NEAR_CONSTANT]
    cell = _cell(rows_model(1e-5, [np.ones(16)] * 4, False)[0])
    ws = [_weights_for(r, *cell.gates[g].m_x) for r, g in zip(rows, GATES)]
    model, xshape, x = rows_model(1e-5, ws, False)
    assert [_cell(model).gates[g].guard for g in GATES] == [variance_guard(ln_scale)] * 4
    _stream_matches(model, xshape, _Const(x), 2)


def test_variance_guard_values():
    assert variance_guard(3e-5) == 1 and variance_guard(0.5) == 5000 and variance_guard(1e5) == 10**9
    assert variance_guard(2.2e5) == variance_guard(1e35) == variance_guard(np.inf) == variance_guard(np.nan) == 1


@pytest.mark.parametrize("ln_scale", [1e16, 1e35])
def test_a_layer_norm_shift_past_31_is_refused(ln_scale, monkeypatch):
    """A layer-norm scale whose requantization shift (+12) passes 31 (undefined behaviour in LiteRT's
    MultiplyByQuantizedMultiplier): refused at allocate_tensors with a clear message, as other such multipliers
    (docs/litert-differences.md)."""
    monkeypatch.setattr(_weights, "layer_norm_inputs", _ln_inputs(ln_scale, 20001))
    model = rows_model(1e-5, [np.ones(16)] * 4, False)[0]
    it = litert_py.Interpreter(model_content=model)
    with pytest.raises(litert_py.errors.PrepareError, match="layer-norm multiplier .* too large"):
        it.allocate_tensors()
