"""The integer (8x8_16) LSTM's fast step with layer norm (ops/recurrent/lstm_integer_ln.py inside
lstm_integer_plain's step) against the oracle (ai-edge-litert BUILTIN_REF), exactly: with and without peepholes,
CIFG, projection, cell clips, both sequence layouts, batches and invokes with the state carried (fast path asserted
taken); the variance guard (constant gate rows); extreme gate rows (saturated, alternating, variances
1-9: the inverse square root's special and left-shifted cases); the refusals; the inverse square root against
gemmlowp's and its proven range."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py.ops.recurrent import lstm_integer_ln as lnm
from litert_py.ops.recurrent.lstm_common import mbqm
from litert_py.quant.gemmlowp import get_inv_sqrt_quantized_multiplier_exp, sat_pot, srdhm, wrap32
from litert_py.schema.builder import ModelBuilder
from tests.ops.recurrent import _weights
from tests.ops.recurrent._weights import gate_inputs, integer_lstm_model
from tests.ops.recurrent.test_lstm_integer_peephole import fast_runs
from tests.ops.recurrent.test_lstm_integer_plain import _cell
from tests.oracle import quant

GATES = "ifco"


def ln_model(rng, tm, batch, time, n_in, n_cell, cs, cifg=False, peep=False, cclip=0.0, n_proj=0, flat=None, bias=None):
    """A sequence 8x8_16 LSTM with layer norm (``peep``: and peepholes; ``n_proj`` > 0: a projection to that many
    outputs). ``flat``: every input and recurrent weight 0 (the input weights' scale 1e-4: an input multiplier
    below 1) and each gate's bias ``flat(gate index)`` (an int32 (n_cell,) array): each gate row is
    sat16(MBQM(bias)), the same at every step and batch row. ``bias``: each gate's bias (the layer norm's)
    ``bias(gate index)``, the weights kept."""
    b = ModelBuilder()
    xshape = (time, batch, n_in) if tm else (batch, time, n_in)
    n_out = n_proj or n_cell
    ins = gate_inputs(b, rng, xshape, n_cell, n_out, cifg, peep, n_proj > 0, n_proj > 0)
    if flat is not None:
        for k in range(1, 9):
            if ins[k] != -1:
                q = quant(1e-4) if k < 5 else b._sg["tensors"][ins[k]].quantization
                shape = (n_cell, n_in if k < 5 else n_out)
                ins[k] = b.tensor(f"w_zero{k}", shape, np.int8, data=np.zeros(shape, np.int8), quantization=q)
        for j, k in enumerate(range(12, 16)):
            if ins[k] != -1:
                q = b._sg["tensors"][ins[k]].quantization
                data = flat(j).astype(np.int32)
                ins[k] = b.tensor(f"b_flat{k}", (n_cell,), np.int32, data=data, quantization=q)
    for j, k in enumerate(range(12, 16)):
        if bias is not None and ins[k] != -1:
            q = b._sg["tensors"][ins[k]].quantization
            ins[k] = b.tensor(f"b_new{k}", (n_cell,), np.int32, data=bias(j).astype(np.int32), quantization=q)
    zo = int(rng.integers(-10, 10))
    model = integer_lstm_model(
        b, rng, ins, "UNIDIRECTIONAL_SEQUENCE_LSTM", tm, xshape, n_cell, n_out, cs, 0, zo, cifg, True, cclip, 0.0
    )
    return model, xshape


@given(
    seed=st.integers(0, 2**32 - 1),
    tm=st.booleans(),
    cifg=st.booleans(),
    peep=st.booleans(),
    batch=st.integers(1, 3),
    time=st.integers(1, 5),
    n_in=st.integers(1, 10),
    n_cell=st.sampled_from([2, 3, 16, 20]),
    cs=st.integers(-14, -10),
    cclip=st.sampled_from([0.0, 0.3]),
    n_proj=st.sampled_from([0, 0, 2, 5]),
    invokes=st.integers(1, 3),
)
def test_layer_norm_step_matches_oracle_exactly(
    seed, tm, cifg, peep, batch, time, n_in, n_cell, cs, cclip, n_proj, invokes
):
    """The fast step with layer norm; with peepholes and a projection narrower than n_cell, time-major, batch
    > 1, it is the int64 step (LiteRT's misaligned flat peephole), checked as well."""
    rng = np.random.default_rng(seed)
    n_proj = min(n_proj, n_cell)
    model, xshape = ln_model(rng, tm, batch, time, n_in, n_cell, cs, cifg, peep, cclip, n_proj)
    p = _cell(model)._plain
    assert p is not None and p.ln is not None
    assert (p.ln[1] is not None) == peep  # o normalized after the cell update only with peepholes
    misaligned = peep and tm and n_proj not in (0, n_cell)
    assert p.peep_rows_only == misaligned
    assert fast_runs(model, xshape, rng, invokes) == (0 if misaligned and batch > 1 else invokes)


@pytest.mark.parametrize("cifg", [False, True])
@pytest.mark.parametrize("peep", [False, True])
def test_constant_gate_rows_take_the_variance_guard(peep, cifg):
    """All weights 0 (the 8x8_16 gates take their bias in the layer norm only): every gate row is constant, its
    variance below 1 and replaced by the guard."""
    rng = np.random.default_rng(int(peep) + 2 * int(cifg))
    model, xshape = ln_model(rng, False, 2, 3, 4, 8, -12, cifg=cifg, peep=peep, flat=lambda j: np.zeros(8))
    p = _cell(model)._plain
    assert p is not None and p.ln is not None
    assert fast_runs(model, xshape, rng, 2) == 2


_K = np.arange(16)
#: per case: the input weights' scale and the int16 rows (16 cells) of gates i, f, c, o before the layer norm
EXTREME_ROWS = {
    "saturated": (
        0.05,
        [np.full(16, 32767), np.full(16, -32768), np.where(_K % 2, 32767, -32768), np.r_[np.full(15, -32768), 32767]],
    ),
    # variances 1 (inv_sqrt's x <= 1), 2 and 9 (M shifted left by 2 and 1, e = 0), below 1 (the guard)
    "small variance": (1e-5, [_K % 2 * 2, _K % 2 * 3, np.where(_K % 2, 3, -3), np.r_[np.full(15, 7), 8]]),
    "mixed": (
        0.05,
        [np.r_[np.full(15, 32767), -32768], np.where(_K < 8, 32767, 0), np.zeros(16), np.where(_K % 4, 0, -32768)],
    ),
}


class _Const:
    """Stands for ``_stream_matches``'s generator: every input it draws is ``value``."""

    def __init__(self, value: int):
        self.value = value

    def integers(self, lo, hi, shape):
        return np.full(shape, self.value)


def rows_model(scale: float, w: list, peep: bool):
    """A batch-major 8x8_16 LSTM with layer norm (batch 2, 3 steps, one input, 16 cells), zero recurrent weights and
    gate g's input weights ``w[g]`` (16 int8 values) of ``scale``: with the input at its zero point + 100, gate g's
    row before the layer norm is sat16(MBQM(100 w[g])) at every step and batch row (the 8x8_16 gates take no bias
    before it). Returns the model, the input shape and the constant input."""
    rng = np.random.default_rng(9)
    b = ModelBuilder()
    xshape = (2, 3, 1)
    ins = gate_inputs(b, rng, xshape, 16, 16, False, peep, False, False)
    for k in range(1, 9):
        data = np.asarray(w[k - 1], np.int8).reshape(16, 1) if k < 5 else np.zeros((16, 16), np.int8)
        q = quant(scale) if k < 5 else b._sg["tensors"][ins[k]].quantization
        ins[k] = b.tensor(f"w_new{k}", data.shape, np.int8, data=data, quantization=q)
    x = int(b._sg["tensors"][ins[0]].quantization.zero_point[0]) + 100
    model = integer_lstm_model(
        b, rng, ins, "UNIDIRECTIONAL_SEQUENCE_LSTM", False, xshape, 16, 16, -12, 0, 3, False, True, 0.0, 0.0
    )
    return model, xshape, x


def _weights_for(rows: np.ndarray, m: int, e: int) -> np.ndarray:
    """The least int8 weights w with sat16(MBQM(100 w, m, e)) >= rows (bisection)."""
    lo = np.full(rows.shape, -127, np.int64)
    hi = np.full(rows.shape, 127, np.int64)
    while (lo < hi).any():
        mid = (lo + hi) >> 1
        ok = np.clip(mbqm(100 * mid, m, e), -32768, 32767) >= rows
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid + 1)
    return lo


@pytest.mark.parametrize("peep", [False, True])
@pytest.mark.parametrize("case", sorted(EXTREME_ROWS))
def test_extreme_gate_rows_match_oracle(case, peep):
    """Each gate's row before the layer norm (and the peephole term) one of EXTREME_ROWS[case] (asserted from the
    cell's weights): the fast step's layer norm on them against the oracle, the fast path asserted."""
    scale, rows = EXTREME_ROWS[case]
    rows = [np.asarray(r, np.int64) for r in rows]
    cell = _cell(rows_model(scale, [np.ones(16)] * 4, peep)[0])
    ws = [_weights_for(r, *cell.gates[g].m_x) for r, g in zip(rows, GATES)]
    model, xshape, x = rows_model(scale, ws, peep)
    cell = _cell(model)
    for r, g in zip(rows, GATES):
        gate = cell.gates[g]
        np.testing.assert_array_equal(np.clip(mbqm(x * gate.w_x[0] + gate.eff_x, *gate.m_x), -32768, 32767), r)
    assert fast_runs(model, xshape, _Const(x), 2) == 2


def test_ln_plan_refuses_a_final_multiplier_outside_the_int64_form():
    rng = np.random.default_rng(1)
    model, _ = ln_model(rng, False, 1, 1, 2, 4, -12)
    cell = _cell(model)
    gates = [cell.gates[g] for g in "ifco"]
    assert lnm.ln_plan(gates) is not None
    g = gates[0]
    object.__setattr__(g, "m_ln", (g.m_ln[0], 20))  # this throwaway cell's shift: 32 left
    assert lnm.ln_plan(gates) is None


def test_inv_sqrt_matches_gemmlowp():
    """The inlined inverse square root against litert_py.quant.gemmlowp's (both GetInvSqrtQuantizedMultiplierExp):
    small values, powers of two and their neighbours (the normalization's edges), random int32 values; and the
    range of (M, e) lstm_integer_ln.py proves (what lets ``layer_norm`` take one form for every row)."""
    rng = np.random.default_rng(0)
    xs = list(range(-3, 3000)) + [(1 << k) + d for k in range(2, 31) for d in (-1, 0, 1)] + [(1 << 31) - 1]
    xs += [int(x) for x in rng.integers(0, 1 << 31, 5000)]
    got = [lnm.inv_sqrt(x) for x in xs]
    want = [get_inv_sqrt_quantized_multiplier_exp(x, -1) for x in xs]
    assert got == want
    ms, es = zip(*got)
    assert 0 < min(ms) and max(ms) < 2**31 and -12 <= min(es) and max(es) <= 0  # the module docstring's range
    assert {e for x, e in zip(xs, es) if x >= 1 << 29} == {-12}


@pytest.mark.parametrize("end", ["low", "high"])
def test_inv_sqrt_iteration_never_saturates(end):
    """lstm_integer_ln's module docstring: over every ``half`` in [2^25, 2^27] gemmlowp's Newton iteration keeps y
    in [2^28, 2^29) and |t| < 2^26 (no saturation or wrap fires, which ``inv_sqrt`` leaves out); here the 2^18
    values at each end of the range (where y is largest: a = 1/4, and smallest), with gemmlowp's saturating
    arithmetic (litert_py.quant), and ``inv_sqrt`` against gemmlowp's on the inputs x = 4 half there."""
    lo, hi = (1 << 25, (1 << 25) + (1 << 18)) if end == "low" else ((1 << 27) + 1 - (1 << 18), (1 << 27) + 1)
    half = np.arange(lo, hi, dtype=np.int64)
    y = np.full(half.shape, 1 << 28, np.int64)
    for _ in range(5):
        a = srdhm(srdhm(y, y), y)
        assert np.abs(a).max() < 1 << 25  # y^3 times 2^6 unsaturated
        t = srdhm(np.int64(402653184), y) - srdhm(half, sat_pot(a, 6))
        assert np.abs(t).max() < 1 << 26  # times 2^3 unsaturated, no int32 wrap
        y = sat_pot(wrap32(t), 3)
        assert (1 << 28) <= y.min() and y.max() < 1 << 29
    xs = [4 * int(h) for h in half[::251].tolist() if 4 * h < 1 << 29]
    assert [lnm.inv_sqrt(x) for x in xs] == [get_inv_sqrt_quantized_multiplier_exp(x, -1) for x in xs]


def _wrap_free_bias(w_max: int) -> int:
    """The largest |bias + 512| with which lstm_integer_ln's u provably stays in int32 (its ``wrap`` bound:
    (2^26 - 1024) max|w| + max|bias + 512| < 2^41 - 1)."""
    return 2**41 - 2 - (2**26 - 1024) * w_max


def _ln_model_with(rng, peep: bool, scale: float | None = None, w0: int | None = None, bias=None):
    """``ln_model`` (batch-major, batch 2, 3 steps, 5 inputs, 16 cells) with every layer-norm weight's scale
    ``scale`` and first weight ``w0`` (each if given) and the gates' biases ``bias`` (as ``ln_model``'s)."""

    def layer_norm_inputs(b, rng, n_cell, cifg, ln):
        out = []
        for g in "ifco":
            if cifg and g == "i":
                out.append(-1)
                continue
            w = rng.integers(12000, 32767, n_cell).astype(np.int16)
            w[0] = w[0] if w0 is None else w0
            s = float(rng.uniform(2e-5, 4e-5)) if scale is None else scale
            out.append(b.tensor(f"ln_{g}", (n_cell,), np.int16, data=w, quantization=quant(s)))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_weights, "layer_norm_inputs", layer_norm_inputs)
        return ln_model(rng, False, 2, 3, 5, 16, -12, peep=peep, bias=bias)


@pytest.mark.parametrize("outside", [False, True])
def test_wrap_bound_just_inside_and_outside_matches_oracle(outside):
    """The layer norm's int32 wrap of u left out where its bound holds (a layer-norm weight 32767 and one gate's
    bias at the largest value the bound allows with it) and kept one past it; both against the oracle, the fast
    step asserted. The bound's edge is checked by the ``wrap`` flag: u itself stays far below 2^31 on these rows
    (the bound is a proof for every row, these rows do not reach it), so the values cannot tell the two paths
    apart."""
    big = _wrap_free_bias(32767) - 512 + int(outside)
    rng = np.random.default_rng(5)

    def bias(j):
        return np.r_[big if j == 2 else -5000, np.arange(15) * 1000 - 7000]

    model, xshape = _ln_model_with(rng, False, w0=32767, bias=bias)
    p = _cell(model)._plain
    assert p is not None and p.ln[0].wrap == outside
    assert fast_runs(model, xshape, rng, 2) == 2


@pytest.mark.parametrize("peep", [False, True])
@pytest.mark.parametrize("right", [12, 13, 14, 15])
def test_segment_fold_bound_just_inside_and_outside_matches_oracle(right, peep):
    """The segment centres folded into the final rounding's constant where (seg << right) + 2^(right - 1) < 2^31 - 1
    (g's centre 294912: right <= 12; the o block's alone with peepholes, 98304, up to 14), else added after the
    clip: the layer norm's final right shift around both edges, against the oracle, fast step asserted (folding the
    four-gate block regardless gives other values from 14 on)."""
    rng = np.random.default_rng(right + 2 * peep)
    model, xshape = _ln_model_with(rng, peep, scale=1.5 * 2.0 ** -(13 + right))
    p = _cell(model)._plain
    assert p is not None
    plans = [q for q in p.ln if q is not None]
    assert all(int(q.right.max()) == right for q in plans)
    folded = [q.seg_add is None for q in plans]
    assert folded == ([right <= 12] if not peep else [right <= 12, right <= 14])
    assert fast_runs(model, xshape, rng, 2) == 2
