"""The integer (8x8_16) LSTM's fast step with layer norm (ops/recurrent/lstm_integer_ln.py inside
lstm_integer_plain's step) against the oracle (ai-edge-litert BUILTIN_REF), exactly: with and without peepholes,
CIFG, projection, cell clips, both sequence layouts, batches and invokes with the state carried (fast path asserted
taken); the variance guard (constant gate rows); ``layer_norm`` against
lstm_integer.py's per-gate integer layer norm on extreme rows, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py.ops.recurrent import lstm_integer_ln as lnm
from litert_py.quant.gemmlowp import get_inv_sqrt_quantized_multiplier_exp
from litert_py.schema.builder import ModelBuilder
from tests.ops.recurrent._weights import gate_inputs, integer_lstm_model
from tests.ops.recurrent.test_lstm_integer_plain import _cell, _stream_matches

GATES = "ifco"


def ln_model(rng, tm, batch, time, n_in, n_cell, cs, cifg=False, peep=False, cclip=0.0, n_proj=0, flat=None):
    """A sequence 8x8_16 LSTM with layer norm (``peep``: and peepholes; ``n_proj`` > 0: a projection to that many
    outputs). ``flat``: every input and recurrent weight 0 and each gate's bias ``flat(gate index)`` (an int32
    (n_cell,) array): constant gate rows (the variance guard)."""
    b = ModelBuilder()
    xshape = (time, batch, n_in) if tm else (batch, time, n_in)
    n_out = n_proj or n_cell
    ins = gate_inputs(b, rng, xshape, n_cell, n_out, cifg, peep, n_proj > 0, n_proj > 0)
    if flat is not None:
        for k in range(1, 9):
            if ins[k] != -1:
                q = b._sg["tensors"][ins[k]].quantization
                shape = (n_cell, n_in if k < 5 else n_out)
                ins[k] = b.tensor(f"w_zero{k}", shape, np.int8, data=np.zeros(shape, np.int8), quantization=q)
        for j, k in enumerate(range(12, 16)):
            if ins[k] != -1:
                q = b._sg["tensors"][ins[k]].quantization
                data = flat(j).astype(np.int32)
                ins[k] = b.tensor(f"b_flat{k}", (n_cell,), np.int32, data=data, quantization=q)
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
    _stream_matches(model, xshape, rng, invokes)


@pytest.mark.parametrize("cifg", [False, True])
@pytest.mark.parametrize("peep", [False, True])
def test_constant_gate_rows_take_the_variance_guard(peep, cifg):
    """All weights 0 (the 8x8_16 gates take their bias in the layer norm only): every gate row is constant, its
    variance below 1 and replaced by the guard."""
    rng = np.random.default_rng(int(peep) + 2 * int(cifg))
    model, xshape = ln_model(rng, False, 2, 3, 4, 8, -12, cifg=cifg, peep=peep, flat=lambda j: np.zeros(8))
    p = _cell(model)._plain
    assert p is not None and p.ln is not None
    _stream_matches(model, xshape, rng, 2)


def test_layer_norm_matches_the_int64_layer_norm_on_extreme_rows():
    """``layer_norm`` of (G, n, B) blocks against lstm_integer.py's ``_layer_norm`` (per gate, rows = batch;
    oracle-tested in test_lstm.py) on int16 extremes, constant rows (the guard), near-constant rows (variances
    2, 3: e = 0, no rounding shift) and random rows; and ``_rows`` (its generic fallback) the same."""
    rng = np.random.default_rng(0)
    model, _ = ln_model(rng, False, 2, 2, 3, 16, -12, peep=True)
    cell = _cell(model)
    names = ["o", "i", "f", "c"]
    gates = [cell.gates[g] for g in names]
    plan = lnm.ln_plan(gates)
    rows = [
        np.full(16, 32767),
        np.full(16, -32768),
        np.where(np.arange(16) % 2, 32767, -32768),
        np.full(16, 5),
        np.r_[np.full(15, 7), 8],
        np.r_[np.full(15, -32768), 32767],
        *rng.integers(-32768, 32768, (20, 16)),
        *rng.integers(-3, 3, (6, 16)),
    ]
    v_rows = np.array(rows, np.int64)  # (B, n)
    v = np.repeat(v_rows.T[None], 4, axis=0).copy()  # (4, n, B)
    out = np.empty_like(v)
    lnm.layer_norm(plan, v, out, lnm.LayerNormBuffers(v.shape))
    for j, g in enumerate(names):
        want = cell._layer_norm_rows(cell.gates[g], v_rows)
        np.testing.assert_array_equal(out[j].T, want)
    n_b = v.shape[2]
    sums = v.sum(axis=1).tolist()
    sq = (v * v).sum(axis=1).tolist()
    params = []
    for j in range(4):
        for s, q in zip(sums[j], sq[j]):
            a = s * 1024
            mean = int(np.int32(a // 16 if a >= 0 else -(-a // 16)))
            var = q * (2**20 // 16) - mean * mean
            var2 = var >> 20 if var >= 0 else -(-var >> 20)
            params.append((mean, *lnm.inv_sqrt(var2 if var2 >= 1 else plan.guard[j])))
    assert lnm._row_params(plan, v) == params
    out2 = np.empty_like(v)
    lnm._rows(plan, v, out2, params)
    np.testing.assert_array_equal(out2, out)
    assert len(params) == 4 * n_b


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
    small values, powers of two and their neighbours (the normalization's edges), random int32 values."""
    rng = np.random.default_rng(0)
    xs = list(range(-3, 3000)) + [(1 << k) + d for k in range(2, 31) for d in (-1, 0, 1)] + [(1 << 31) - 1]
    xs += [int(x) for x in rng.integers(0, 1 << 31, 5000)]
    got = [lnm.inv_sqrt.__wrapped__(x) for x in xs]
    want = [get_inv_sqrt_quantized_multiplier_exp(x, -1) for x in xs]
    assert got == want
