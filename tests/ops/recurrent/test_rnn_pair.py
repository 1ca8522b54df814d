"""BIDIRECTIONAL_SEQUENCE_RNN's paired stepping (rnn.run_pair: one tanh over both cells' stacked sums) against the
two passes run one after the other (run_pair's fallback), bit for bit: float32 and hybrid, both layouts, batch 1
and 3, merged or not, states carried over two invokes."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops.recurrent import rnn
from litert_py.schema.builder import ModelBuilder
from tests.ops.recurrent._weights import weights
from tests.ops.recurrent.test_lstm_pair import _run

CASES = [(h, tm, b, m) for h in (False, True) for tm in (True, False) for b in (1, 3) for m in (False, True)]


def _model(rng, hybrid: bool, tm: bool, batch: int, merge: bool, time=6, n_in=5, u=8):
    b = ModelBuilder()
    lead = (time, batch) if tm else (batch, time)
    x = b.input("x", lead + (n_in,), np.float32)
    cells = []
    for name in ("fw", "bw"):  # input and recurrent weights, bias, hidden state
        cells += [
            weights(b, rng, f"{name}_{w}", shape, hybrid, max_scale=0.05)
            for w, shape in (("w", (u, n_in)), ("r", (u, u)))
        ]
        cells.append(b.const(f"{name}_b", rng.standard_normal(u).astype(np.float32)))
        cells.append(b.tensor(f"{name}_h", (batch, u), np.float32, is_variable=True))
    outs = (
        [b.tensor("out", lead + (2 * u,), np.float32)]
        if merge
        else [b.tensor("fw_out", lead + (u,), np.float32), b.tensor("bw_out", lead + (u,), np.float32)]
    )
    opts = {"time_major": tm, "merge_outputs": merge, "fused_activation_function": 4}
    b.op("BIDIRECTIONAL_SEQUENCE_RNN", [x] + cells + [-1, -1, -1], outs, opts)
    b.output(*outs)
    return b.build(), lead + (n_in,)


@pytest.mark.parametrize("hybrid,tm,batch,merge", CASES, ids=[f"h{h:d}-tm{t:d}-b{b}-m{m:d}" for h, t, b, m in CASES])
def test_paired_steps_equal_sequential_passes(monkeypatch, hybrid, tm, batch, merge):
    rng = np.random.default_rng(batch * 10 + 4 * tm + 2 * merge + hybrid)
    model, xshape = _model(rng, hybrid, tm, batch, merge)
    feeds = [(rng.standard_normal(xshape) * 2).astype(np.float32) for _ in range(2)]
    paired = _run(model, feeds)
    monkeypatch.setattr(rnn, "tanh_inplace", None)  # run_pair's TANH check fails: the two sequential passes
    sequential = _run(model, feeds)
    for a, s in zip(paired, sequential):
        assert a.dtype == s.dtype == np.float32 and a.shape == s.shape
        assert np.array_equal(a.view(np.int32), s.view(np.int32)), np.abs(a - s).max()
