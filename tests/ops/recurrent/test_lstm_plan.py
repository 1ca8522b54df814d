"""A plain LSTM sequence three ways, bit for bit: through its bound plan (lstm_plan.run_planned, float32), through
lstm_cell._plain_run (run_planned off; hybrid cells always) and through the general per-step loop
(LstmCell._advance with its own sigmoid / tanh calls: ``LstmCell.plain`` off), which shares neither the plan nor
lstm_plan.step_activation's joint gate listing and merged cell update. Batch 1 and 3, both layouts, float32 and
hybrid, with and without a cell clip, gate inputs of every magnitude (NaN, +-inf, -0.0, denormals, values at
Eigen's clamps), states carried over invokes, the backward cell of an unpaired BIDIRECTIONAL_SEQUENCE_LSTM (a
reversed plan), and the longest planned sequence and one step more (which keeps the loop). The outputs against
LiteRT are test_lstm.py's."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops.recurrent import lstm_cell, lstm_plan
from litert_py.schema.builder import ModelBuilder
from tests.ops.recurrent._weights import weights
from tests.ops.recurrent.test_lstm import _bidi_cell
from tests.ops.recurrent.test_lstm_pair import _run

F32 = np.float32
#: gate inputs where Eigen's tanh / logistic emulations change branch or round specially
SPECIAL = np.array(
    [
        np.nan,
        np.inf,
        -np.inf,
        -0.0,
        0.0,
        1e-45,
        -1e-40,
        1.1754942e-38,
        7.9073896,
        -7.9073896,
        np.nextafter(F32(7.9073896), F32(0)),
        16.6355324,
        np.nextafter(F32(16.6355324), F32(np.inf)),
        -104.0,
        np.nextafter(F32(-104.0), F32(-np.inf)),
        -87.5,
        0.34657359,
        -0.34657359,
        3.4e38,
        -3.4e38,
    ],
    F32,
)


def _model(rng, tm: bool, batch: int, time: int, clip: float, n_in: int, n: int, scale: float, hybrid=False, inf=False):
    """UNIDIRECTIONAL_SEQUENCE_LSTM, plain (no peephole, projection, CIFG or layer norm); ``scale`` the input
    weights' sigma (large: gate inputs of every magnitude); ``hybrid``: int8 weights; ``inf``: an infinite input
    weight (float), whose product with an all-zero step that LiteRT skips would be NaN."""
    b = ModelBuilder()
    xshape = (time, batch, n_in) if tm else (batch, time, n_in)
    ins = [b.input("x", xshape, F32)]
    if hybrid:
        ins += [weights(b, rng, f"w_{g}", (n, n_in), True, 0.01 * scale) for g in "ifco"]
        ins += [weights(b, rng, f"r_{g}", (n, n), True) for g in "ifco"]
    else:
        w = [(rng.standard_normal((n, n_in)) * scale).astype(F32) for g in "ifco"]
        w[1][0, 0] = np.inf if inf else w[1][0, 0]
        ins += [b.const(f"w_{g}", w[k]) for k, g in enumerate("ifco")]
        ins += [b.const(f"r_{g}", (rng.standard_normal((n, n)) * 0.4).astype(F32)) for g in "ifco"]
    ins += [-1] * 3
    ins += [b.const(f"b_{g}", rng.standard_normal(n).astype(F32)) for g in "ifco"]
    ins += [-1, -1]
    ins += [b.tensor("h", (batch, n), F32, is_variable=True), b.tensor("c", (batch, n), F32, is_variable=True)]
    out = b.tensor("out", xshape[:-1] + (n,), F32)
    opts = {"fused_activation_function": 4, "cell_clip": clip, "proj_clip": 0.0, "time_major": tm}
    b.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [out], opts)
    b.output(out)
    return b.build(), xshape


def _planned_and_stepped(monkeypatch, model, feeds) -> tuple[list, list, list]:
    """The outputs with the plan, and the general loop's (``_advance``); whether the plan ran, per call; and the
    outputs of lstm_plan._plain_run (run_planned off) checked equal to the general loop's on the way."""
    real, taken = lstm_plan.run_planned, []
    with monkeypatch.context() as m:
        m.setattr(lstm_cell, "run_planned", lambda *a: taken.append(real(*a)) or taken[-1])
        planned = _run(model, feeds)
        m.setattr(lstm_cell, "run_planned", lambda *a: False)
        plain_run = _run(model, feeds)
        m.setattr(lstm_cell.LstmCell, "plain", property(lambda self: False))
        stepped = _run(model, feeds)
    _assert_same_bytes(plain_run, stepped)
    return planned, stepped, taken


#: numpy 1.x gives one path's NaN signs differently from run to run (before the plan too): NaN positions only there
NAN_BITS_STABLE = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _assert_same_bytes(a_list, b_list) -> None:
    for a, s in zip(a_list, b_list, strict=True):
        assert a.dtype == s.dtype == F32 and a.shape == s.shape
        nan = np.isnan(a)
        assert np.array_equal(nan, np.isnan(s))
        keep = slice(None) if NAN_BITS_STABLE else ~nan
        assert np.array_equal(a.view(np.int32)[keep], s.view(np.int32)[keep]), np.nanmax(np.abs(a - s))


def _feeds(rng, xshape, tm: bool, special: bool) -> list:
    feeds = [(rng.standard_normal(xshape) * 3).astype(F32) for _ in range(3)]
    feeds[1][...] = 0  # an all-zero input: its steps skip the product
    (feeds[0] if tm else feeds[0].swapaxes(0, 1))[2] = 0  # one all-zero step
    if special:  # special values in the last invoke, NaN only in its last step (NaN spreads through h)
        x = feeds[2]
        steps = x if tm else x.swapaxes(0, 1)
        body = steps[:-1].reshape(-1)
        body[: body.size : 3] = np.resize(SPECIAL[1:], body[: body.size : 3].size)
        steps[-1, 0, 0] = np.nan
    return feeds


CASES = [
    (h, tm, b, clip, sp)
    for h in (False, True)
    for tm in (True, False)
    for b in (1, 3)
    for clip in (0.0, 0.5)
    for sp in (False, True)
]


@pytest.mark.parametrize(
    "hybrid,tm,batch,clip,special",
    CASES,
    ids=[f"{'hybrid' if h else 'float'}-tm{int(t)}-b{b}-clip{c}-sp{int(s)}" for h, t, b, c, s in CASES],
)
def test_planned_sequence_equals_stepped(monkeypatch, hybrid, tm, batch, clip, special):
    rng = np.random.default_rng(100 * batch + 10 * tm + 2 * special + (clip > 0) + 1000 * hybrid)
    # 17 cells: NaN states in the SIMD loops' scalar tails (one product per gate pair keeps their NaN signs)
    for n_in, n, scale in (
        (5, 8, 0.4),
        (1, 1, 0.4),
        (8, 8, 1e3 if special else 30.0),
        (6, 17, 1e3 if special else 3.0),
    ):
        model, xshape = _model(rng, tm, batch, 7, clip, n_in, n, scale, hybrid, inf=special and n_in > 1)
        planned, stepped, taken = _planned_and_stepped(monkeypatch, model, _feeds(rng, xshape, tm, special))
        assert taken and all(taken) != hybrid, "the bound plan runs for float32 cells only"
        _assert_same_bytes(planned, stepped)


@pytest.mark.parametrize("time", [lstm_plan.MAX_PLAN_STEPS, lstm_plan.MAX_PLAN_STEPS + 1])
def test_longest_planned_sequence(monkeypatch, time):
    """At MAX_PLAN_STEPS the plan runs; one step more keeps the stepping loop (same bytes either way)."""
    rng = np.random.default_rng(time)
    model, xshape = _model(rng, False, 1, time, 0.0, 3, 4, 0.4)
    planned, stepped, taken = _planned_and_stepped(monkeypatch, model, _feeds(rng, xshape, False, False))
    assert taken and all(taken) == (time <= lstm_plan.MAX_PLAN_STEPS)
    _assert_same_bytes(planned, stepped)


@pytest.mark.parametrize("tm", [True, False])
def test_unpaired_bidirectional_runs_reversed_plan(monkeypatch, tm):
    """Unpaired (lstm_cell._pairable off), the backward cell runs its plan over the steps in reverse."""
    rng = np.random.default_rng(7 + tm)
    b, lead, n_in, n = ModelBuilder(), ((6, 2) if tm else (2, 6)), 4, 5
    x = b.input("x", lead + (n_in,), F32)
    fw, fw_states = _bidi_cell(b, rng, "fw_", "plain", False, n_in, n, n, 2)
    bw, bw_states = _bidi_cell(b, rng, "bw_", "plain", False, n_in, n, n, 2)
    outs = [b.tensor("fw_out", lead + (n,), F32), b.tensor("bw_out", lead + (n,), F32)]
    opts = {"time_major": tm, "merge_outputs": False, "fused_activation_function": 4, "cell_clip": 0.0}
    b.op("BIDIRECTIONAL_SEQUENCE_LSTM", [x] + fw + bw + fw_states + bw_states + [-1] * 9, outs, opts)
    b.output(*outs)
    monkeypatch.setattr(lstm_cell, "_pairable", lambda fw, bw: False)
    feeds = [(rng.standard_normal(lead + (n_in,)) * 2).astype(F32) for _ in range(2)]
    planned, stepped, taken = _planned_and_stepped(monkeypatch, b.build(), feeds)
    assert len(taken) == 4 and all(taken)
    _assert_same_bytes(planned, stepped)
