"""The integer (8x8_16) LSTM's fast step with peepholes (ops/recurrent/lstm_integer_plain.py, the peephole terms
of (7) in its docstring) against the oracle (ai-edge-litert BUILTIN_REF), exactly: the fast path itself
(asserted taken) over CIFG, projection, cell clips, both sequence layouts, batches and invokes with the state
carried; the peephole terms' reach just inside and just outside the table's segments (the cell state set to
its extremes, where the terms are largest); the cases that keep the int64 step (a left shift, LiteRT's
misaligned flat peephole) against the oracle too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py.ops.recurrent import lstm_integer
from litert_py.ops.recurrent import lstm_integer_plain as plain
from litert_py.schema.builder import ModelBuilder
from tests.ops.recurrent._weights import gate_inputs, integer_lstm_model
from tests.ops.recurrent.test_lstm_integer_plain import _cell, _stream_matches

PEEP = (9, 10, 11)  # the cell-to-gate weights of i, f, o


def peep_model(rng, tm, batch, time, n_in, n_cell, cs, cifg=False, cclip=0.0, n_proj=0, pclip=0.0, peep=None):
    """A sequence 8x8_16 LSTM with peepholes (``n_proj`` > 0: a projection to that many outputs); ``peep``: a
    function (gate index 0-2, quantization) -> int16 (n_cell,) values replacing the drawn peephole weights
    (same scales, so a seed keeps naming the same multipliers)."""
    b = ModelBuilder()
    xshape = (time, batch, n_in) if tm else (batch, time, n_in)
    n_out = n_proj or n_cell
    ins = gate_inputs(b, rng, xshape, n_cell, n_out, cifg, True, n_proj > 0, n_proj > 0)
    for j, k in enumerate(PEEP):
        if peep is not None and ins[k] != -1:
            q = b._sg["tensors"][ins[k]].quantization
            ins[k] = b.tensor(f"p_new{k}", (n_cell,), np.int16, data=peep(j).astype(np.int16), quantization=q)
    zo = int(rng.integers(-10, 10))
    model = integer_lstm_model(
        b, rng, ins, "UNIDIRECTIONAL_SEQUENCE_LSTM", tm, xshape, n_cell, n_out, cs, 0, zo, cifg, False, cclip, pclip
    )
    return model, xshape


def fast_runs(model, xshape, rng, invokes, c0=None) -> int:
    """``_stream_matches`` (the oracle comparison), returning how many invokes stepped with ``run_plain``."""
    calls = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lstm_integer, "run_plain", lambda *a: calls.append(1) or plain.run_plain(*a))
        _stream_matches(model, xshape, rng, invokes, c0=c0)
    return len(calls)


def _c_extremes(shape, rng, c_lo=-32768, c_hi=32767):
    """A cell state at its bounds (and a few random values): the largest peephole terms."""
    c = np.where(rng.random(shape) < 0.5, c_lo, c_hi)
    c[..., ::5] = rng.integers(c_lo, c_hi + 1, c[..., ::5].shape)
    return c.astype(np.int16)


@given(
    seed=st.integers(0, 2**32 - 1),
    tm=st.booleans(),
    cifg=st.booleans(),
    batch=st.integers(1, 3),
    time=st.integers(1, 6),
    n_in=st.integers(1, 10),
    n_cell=st.sampled_from([1, 3, 16, 20]),
    cs=st.integers(-14, -10),
    cclip=st.sampled_from([0.0, 0.3, 4.0]),
    proj=st.sampled_from([None, (5, 0.0), (2, 0.05)]),
    small=st.booleans(),
    extremes=st.booleans(),
    invokes=st.integers(1, 3),
)
def test_peephole_step_matches_oracle_exactly(
    seed, tm, cifg, batch, time, n_in, n_cell, cs, cclip, proj, small, extremes, invokes
):
    """``small``: peephole weights in +-30 (terms inside the table's segments: no second clip), else +-3000;
    ``extremes``: the cell state set to its bounds first. A projection narrower than n_cell keeps the fast step
    batch-major (LiteRT steps row by row there) and time-major at batch 1; time-major with batch > 1 it is the
    int64 step (checked too)."""
    rng = np.random.default_rng(seed)
    n_proj, pclip = proj or (0, 0.0)
    n_proj = min(n_proj, n_cell)
    lim = 30 if small else 3000
    model, xshape = peep_model(
        rng, tm, batch, time, n_in, n_cell, cs, cifg, cclip, n_proj, pclip, lambda j: rng.integers(-lim, lim, n_cell)
    )
    cell = _cell(model)
    p = cell._plain
    assert p is not None and p.peep is not None
    misaligned = tm and n_proj not in (0, n_cell)
    assert p.peep_rows_only == misaligned  # batch > 1 there: the int64 step
    c0 = _c_extremes((batch, n_cell), rng) if extremes else None
    if c0 is not None and cclip:  # a state past the clip takes the int64 step (lstm_integer_plain tests it)
        c0 = np.clip(c0, -cell.cell_clip, cell.cell_clip).astype(np.int16)
    assert fast_runs(model, xshape, rng, invokes, c0=c0) == (0 if misaligned and batch > 1 else invokes)


def _largest_inside(cell) -> int:
    """The largest |peephole weight| whose term's reach stays inside the segments (``_MAX_REACH``) for all gates."""
    best = 32767
    for g in ("i", "f", "o"):
        if g not in cell.gates:
            continue
        m, e = cell.gates[g].m_p
        r = -e
        lo, hi = 0, 32767  # the largest P with ((P 2^15 m) >> (31 + r)) + 2 <= _MAX_REACH
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if ((mid * 32768 * m) >> (31 + r)) + 2 <= plain._MAX_REACH:
                lo = mid
            else:
                hi = mid - 1
        best = min(best, lo)
    return best


@pytest.mark.parametrize("cifg", [False, True])
@pytest.mark.parametrize("outside", [False, True])
def test_peephole_reach_just_inside_and_outside_the_segments(cifg, outside):
    """Peephole weights +-P with P the largest whose terms fit the table's widened segments (no second clip),
    and P + 1 (the terms clipped again): both with the cell state at its extremes, against the oracle."""
    seed, n_cell, cs = 7, 16, -12

    def build(peep):
        return peep_model(np.random.default_rng(seed), False, 2, 4, 5, n_cell, cs, cifg, peep=peep)

    model, xshape = build(None)
    big = _largest_inside(_cell(model)) + int(outside)
    sign = np.where(np.arange(n_cell) % 2, -1, 1)
    model, xshape = build(lambda j: sign * big)
    p = _cell(model)._plain
    assert p is not None and p.peep is not None and p.peep_clip == outside
    rng = np.random.default_rng(1)
    _stream_matches(model, xshape, rng, 2, c0=_c_extremes((2, n_cell), rng))


def test_peephole_left_shift_is_refused():
    """A peephole multiplier above 1 (its left shift) is outside the fast step's terms: ``_peephole_constants``
    refuses it (the int64 step then runs, as for every cell before this fast step)."""
    rng = np.random.default_rng(3)
    model, _ = peep_model(rng, True, 2, 3, 4, 8, -12)
    cell = _cell(model)
    assert all(cell.gates[g].m_p[1] <= 0 for g in "ifo")
    assert plain._peephole_constants(cell, ["o", "i", "f", "c"]) is not None
    o = cell.gates["o"]
    object.__setattr__(o, "m_p", (o.m_p[0], 1))  # this throwaway cell's o term made a left shift
    assert plain._peephole_constants(cell, ["o", "i", "f", "c"]) is None


@pytest.mark.parametrize("batch", [1, 2])
def test_misaligned_flat_peephole(batch):
    """Time-major, n_output < n_cell: LiteRT's peephole strides the flat cell state by n_output (the v_size
    quirk). At batch 1 that is the row-aligned product (the fast step); at batch 2 the int64 step runs. Both
    against the oracle, the cell state at its extremes."""
    rng = np.random.default_rng(4)
    model, xshape = peep_model(rng, True, batch, 3, 4, 8, -12, n_proj=5)
    p = _cell(model)._plain
    assert p is not None and p.peep_rows_only
    assert fast_runs(model, xshape, rng, 2, c0=_c_extremes((batch, 8), rng)) == (2 if batch == 1 else 0)


def _negative_ties(m: int, e: int, peep: int) -> np.ndarray:
    """The cell states c < 0 where MBQM(peep c, m, e)'s final rounding is a tie below zero (the NEON 4-row
    form rounds it up, the scalar one away from zero)."""
    r = -e
    c = np.arange(-32768, 0, dtype=np.int64)
    y = (peep * c * m + (1 << 30)) >> 31
    return c[(y < 0) & ((y & ((1 << r) - 1)) == (1 << (r - 1)))]


@pytest.mark.parametrize("n_cell", [16, 20])
def test_peephole_rounding_ties_match_oracle(n_cell):
    """The first n_output & ~15 columns of a peephole term round ties up (MultiplyByQuantizedMultiplier4Rows),
    the rest away from zero: a cell state chosen so that i's (even columns) and f's (odd columns) first terms
    are ties below zero. 16 cells: all NEON columns; 20: 16 and 4 scalar ones."""
    rng = np.random.default_rng(12)
    peep = 1001

    def build():
        return peep_model(np.random.default_rng(12), False, 2, 1, 3, n_cell, -12, peep=lambda j: np.full(n_cell, peep))

    model, xshape = build()
    cell = _cell(model)
    assert cell._plain is not None and cell._plain.peep is not None
    ties = [_negative_ties(*cell.gates[g].m_p, peep) for g in ("i", "f")]
    assert all(t.size for t in ties)
    c0 = np.array([[ties[j % 2][(j + b) % ties[j % 2].size] for j in range(n_cell)] for b in range(2)], np.int16)
    _stream_matches(model, xshape, rng, 1, c0=c0)
