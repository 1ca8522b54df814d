"""Float32 and hybrid LSTM cells with fused activations other than TANH, against BUILTIN_REF (LiteRT's two
resolvers run the same lstm_eval.cc here).

NONE: ``CalculateLstmOutputFloat`` / ``CalculateLstmOutputHybrid`` call ``ApplyActivationToVector(cell_state,
..., NONE, scratch)``, which returns without writing ``scratch``, the cell gate's buffer: LiteRT's output is
``o * g`` (the cell gate, unactivated), not ``o * c``. litert_py reproduces it (ops/recurrent/lstm_cell.py).
RELU / RELU6: ``std::max(0.0f, ...)`` turns a NaN cell state (an inf input: inf - inf in a gate) into 0."""

from __future__ import annotations

import numpy as np
import pytest

from tests.compare import assert_close
from tests.ops.recurrent.test_lstm import PATHS, TOLERANCE, VARIANTS, float_lstm_model
from tests.ops.recurrent.test_rnn import run_stream

ACTS = {"none": 0, "relu": 1, "relu6": 3}
CASES = [
    (p, v, a)
    for p in PATHS
    for v in ("plain", "cifg-peephole-clip", "projection-clips", "cifg-layer-norm-projection")
    for a in ACTS
]


@pytest.mark.parametrize("path,variant,act", CASES, ids=[f"{p}-{v}-{a}" for p, v, a in CASES])
def test_lstm_activation_matches_oracle(path, variant, act):
    op, hybrid, asym, tm = PATHS[path]
    rng = np.random.default_rng(len(path) * 7 + len(variant) + ACTS[act])
    batch, time, n_in, n_cell, n_out = 2, 1 if hybrid else 3, 5, 4, 3
    model, xshape = float_lstm_model(
        op, rng, variant, hybrid, asym, tm, batch, time, n_in, n_cell, n_out, act=ACTS[act]
    )
    feeds = [[(2 * rng.standard_normal(xshape)).astype(np.float32)] for _ in range(3)]
    ours, theirs = run_stream(model, feeds, sync_states=hybrid)
    steps = 1 if op == "LSTM" else time
    tol = TOLERANCE["layer-norm" if VARIANTS[variant][4] else "hybrid" if hybrid else "float32"]
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, rtol=tol * steps * (n_in + n_out + n_cell) * (k + 1), atol=1e-6)


@pytest.mark.parametrize("act", ["relu", "relu6"])
@pytest.mark.parametrize("path", ["lstm-float32", "seq-lstm-float32-batch-major"])
def test_lstm_relu_of_a_nan_cell_state_is_zero(path, act):
    """An inf input makes the gates inf - inf = NaN: the cell state is NaN, its RELU 0 in both runtimes."""
    op, hybrid, asym, tm = PATHS[path]
    rng = np.random.default_rng(3)
    model, xshape = float_lstm_model(op, rng, "plain", hybrid, asym, tm, 1, 2, 3, 2, 2, act=ACTS[act])
    x = rng.standard_normal(xshape).astype(np.float32)
    x.reshape(-1)[0] = np.inf
    ours, theirs = run_stream(model, [[x]])
    assert not np.isnan(theirs[0]).any() and not np.isnan(ours[0]).any()
    assert_close(ours[0], theirs[0], rtol=TOLERANCE["float32"] * 2 * 7, atol=1e-6)
