"""BIDIRECTIONAL_SEQUENCE_LSTM's paired stepping (lstm_cell.run_pair: both plain cells stepped together over stacked
buffers) against the two passes run one after the other (run_pair's fallback), bit for bit: float32 and hybrid,
both layouts, batch 1 and 3, with and without a cell clip, states carried over two invokes."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.recurrent import lstm_cell
from litert_py.schema.builder import ModelBuilder
from tests.ops.recurrent.test_lstm import _bidi_cell

CASES = [(h, tm, b, clip) for h in (False, True) for tm in (True, False) for b in (1, 3) for clip in (0.0, 0.5)]


def _model(rng, hybrid: bool, tm: bool, batch: int, clip: float, time=6, n_in=5, n=8):
    b = ModelBuilder()
    lead = (time, batch) if tm else (batch, time)
    x = b.input("x", lead + (n_in,), np.float32)
    fw, fw_states = _bidi_cell(b, rng, "fw_", "plain", hybrid, n_in, n, n, batch)
    bw, bw_states = _bidi_cell(b, rng, "bw_", "plain", hybrid, n_in, n, n, batch)
    outs = [b.tensor("fw_out", lead + (n,), np.float32), b.tensor("bw_out", lead + (n,), np.float32)]
    opts = {"time_major": tm, "merge_outputs": False, "fused_activation_function": 4, "cell_clip": clip}
    b.op("BIDIRECTIONAL_SEQUENCE_LSTM", [x] + fw + bw + fw_states + bw_states + [-1] * 9, outs, opts)
    b.output(*outs)
    return b.build(), lead + (n_in,)


def _run(model, feeds) -> list:
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    res = []
    for x in feeds:  # the states carry over from one invoke to the next
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        res += [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]
    return res


@pytest.mark.parametrize(
    "hybrid,tm,batch,clip", CASES, ids=[f"h{int(h)}-tm{int(t)}-b{b}-clip{c}" for h, t, b, c in CASES]
)
def test_paired_steps_equal_sequential_passes(monkeypatch, hybrid, tm, batch, clip):
    rng = np.random.default_rng(batch * 10 + 2 * tm + hybrid)
    model, xshape = _model(rng, hybrid, tm, batch, clip)
    feeds = [(rng.standard_normal(xshape) * 2).astype(np.float32) for _ in range(2)]
    real, taken = lstm_cell._pairable, []
    monkeypatch.setattr(lstm_cell, "_pairable", lambda fw, bw: taken.append(real(fw, bw)) or taken[-1])
    paired = _run(model, feeds)
    assert taken and all(taken), "the paired path was not taken"
    monkeypatch.setattr(lstm_cell, "_pairable", lambda fw, bw: False)
    sequential = _run(model, feeds)
    for a, s in zip(paired, sequential):
        assert a.dtype == s.dtype == np.float32 and a.shape == s.shape
        assert np.array_equal(a.view(np.int32), s.view(np.int32)), np.abs(a - s).max()
