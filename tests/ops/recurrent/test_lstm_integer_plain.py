"""The integer (8x8_16) LSTM's fast step for a cell without peephole or layer norm (with or without projection)
(ops/recurrent/lstm_integer_plain.py) against the oracle (ai-edge-litert BUILTIN_REF), exactly: the fast path
itself (asserted taken), its int16-clip variant, CIFG, cell clips, both sequence layouts and LSTM's single step;
then the bounds checked at prepare, each just inside and just outside, and a model past the gate bound (the
int64 per-step path) against the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter
from litert_py.ops.recurrent import lstm_integer_plain as plain
from litert_py.ops.recurrent.lstm_common import mbqm, signed_index_table
from litert_py.quant.gemmlowp import tanh16_table
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.ops.recurrent._weights import gate_inputs, integer_lstm_model
from tests.oracle import oracle

#: path id -> (op, time_major)
PATHS = {
    "lstm": ("LSTM", None),
    "seq-batch-major": ("UNIDIRECTIONAL_SEQUENCE_LSTM", False),
    "seq-time-major": ("UNIDIRECTIONAL_SEQUENCE_LSTM", True),
}


def plain_model(
    rng,
    op,
    tm,
    batch,
    time,
    n_in,
    n_cell,
    cs,
    cifg=False,
    cclip=0.0,
    zos=0,
    saturate=False,
    saturate_input=False,
    n_proj=0,
    proj_bias=True,
    pclip=0.0,
):
    """An 8x8_16 integer LSTM without peephole and layer norm; ``n_proj`` > 0: a projection to that many
    outputs (else n_output = n_cell); ``saturate``: every recurrent weight +-127 (the largest recurrent
    products), ``saturate_input``: every input weight."""
    b = ModelBuilder()
    xshape = (batch, n_in) if op == "LSTM" else ((time, batch, n_in) if tm else (batch, time, n_in))
    n_out = n_proj or n_cell
    ins = gate_inputs(b, rng, xshape, n_cell, n_out, cifg, False, n_proj > 0, n_proj > 0 and proj_bias)
    for k in [k for k in range(1, 5) if saturate_input] + [k for k in range(5, 9) if saturate]:
        if ins[k] != -1:  # the weights replaced by +-127, same quantization
            shape = (n_cell, n_in if k < 5 else n_out)
            w = np.where(rng.random(shape) < 0.5, -127, 127).astype(np.int8)
            q = b._sg["tensors"][ins[k]].quantization
            ins[k] = b.tensor(f"w_sat{k}", shape, np.int8, data=w, quantization=q)
    zo = int(rng.integers(-10, 10))
    model = integer_lstm_model(b, rng, ins, op, tm, xshape, n_cell, n_out, cs, zos, zo, cifg, False, cclip, pclip)
    return model, xshape


def _cell(model):
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op,) = it._subgraphs[0].prepared_ops.values()
    return op.cell


def _stream_matches(model, xshape, rng, invokes, zos=0, c0=None):
    """Invokes with random inputs (the output_state set to its zero point first, as LiteRT initializes an INT8
    variable tensor; the cell state set to ``c0`` when given): after each, the output and both states (the int16
    cell state shows a one-unit difference the int8 output can round away) exactly equal to the oracle's."""
    LiteRT, R = oracle()
    xs = [rng.integers(-128, 128, xshape).astype(np.int8) for _ in range(invokes)]
    res = []
    for it in (
        Interpreter(model_content=model),
        LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=R.BUILTIN_REF),
    ):
        it.allocate_tensors()
        states = [next(d for d in it.get_tensor_details() if d["name"] == name) for name in ("h", "c")]
        it.set_tensor(states[0]["index"], np.full(states[0]["shape"], zos, np.int8))
        if c0 is not None:
            it.set_tensor(states[1]["index"], c0)
        out = []
        for x in xs:
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            out.append([it.get_tensor(it.get_output_details()[0]["index"]).copy()])
            out[-1] += [it.get_tensor(d["index"]).copy() for d in states]
        res.append(out)
    for a, b in zip(*res):
        assert_close(a, b)


@pytest.mark.parametrize("path", sorted(PATHS))
@given(
    seed=st.integers(0, 2**32 - 1),
    cifg=st.booleans(),
    batch=st.integers(1, 3),
    time=st.integers(1, 7),
    n_in=st.integers(1, 12),
    n_cell=st.sampled_from([1, 3, 8, 17]),
    cs=st.integers(-15, -9),
    cclip=st.sampled_from([0.0, 0.002, 0.3, 4.0]),
    zos=st.sampled_from([0, 0, -7, 13]),
    invokes=st.integers(1, 3),
    proj=st.sampled_from([None, (5, True, 0.0), (1, False, 0.3), (20, True, 0.05)]),
)
def test_plain_step_matches_oracle_exactly(path, seed, cifg, batch, time, n_in, n_cell, cs, cclip, zos, invokes, proj):
    """``proj``: (n_output, projection bias, projection clip) or None (no projection)."""
    op, tm = PATHS[path]
    rng = np.random.default_rng(seed)
    n_proj, proj_bias, pclip = proj or (0, False, 0.0)
    model, xshape = plain_model(
        rng, op, tm, batch, time, n_in, n_cell, cs, cifg, cclip, zos, n_proj=n_proj, proj_bias=proj_bias, pclip=pclip
    )
    p = _cell(model)._plain
    # the fast step (these random scales mostly give gate terms too wide to skip the clip)
    assert p is not None and (p.proj is not None) == (proj is not None)
    _stream_matches(model, xshape, rng, invokes, zos)


@pytest.mark.parametrize("clip", [True, False])
@given(seed=st.integers(0, 2**32 - 1), cifg=st.booleans(), tm=st.booleans())
def test_plain_step_with_and_without_the_int16_clip(clip, seed, cifg, tm):
    """Both forms of the gate index: clipped to int16 (gate terms too wide for the table's segments, forced
    here) and unclipped (segments wide enough for every index, forced for these test scales)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plain, "_MAX_REACH", 0 if clip else 1 << 19)
        rng = np.random.default_rng(seed)
        model, xshape = plain_model(rng, "UNIDIRECTIONAL_SEQUENCE_LSTM", tm, 2, 6, 7, 8, -12, cifg, 0.5)
        p = _cell(model)._plain
    assert p is not None and (p.lo is not None) == clip
    _stream_matches(model, xshape, rng, 2)


@pytest.mark.parametrize("n_cell,fast", [(64, True), (200, False)])
def test_saturated_recurrent_weights_match_oracle(n_cell, fast):
    """All recurrent weights +-127: 64 cells stay inside the float64 gate bound, 200 pass it (the int64 step)."""
    rng = np.random.default_rng(n_cell)
    model, xshape = plain_model(rng, "UNIDIRECTIONAL_SEQUENCE_LSTM", False, 2, 5, 6, n_cell, -12, saturate=True)
    assert (_cell(model)._plain is not None) == fast
    _stream_matches(model, xshape, rng, 2)


@pytest.mark.parametrize("n_in,fast", [(8, True), (300, False)])
def test_saturated_input_weights_match_oracle(n_in, fast):
    """All input weights +-127: 8 inputs keep the input terms in the float64 form, 300 pass its bound (the
    int64 input terms, then the fast step)."""
    rng = np.random.default_rng(n_in)
    model, xshape = plain_model(rng, "UNIDIRECTIONAL_SEQUENCE_LSTM", True, 2, 5, n_in, 8, -12, saturate_input=True)
    p = _cell(model)._plain
    assert p is not None and (p.wx is not None) == fast
    _stream_matches(model, xshape, rng, 2)


@pytest.mark.parametrize("seed", [11, 29])
def test_input_terms_without_saturation_match_oracle(seed):
    """One input: these seeds' input terms stay inside int16, and ``input_terms`` skips their clip."""
    rng = np.random.default_rng(seed)
    model, xshape = plain_model(rng, "UNIDIRECTIONAL_SEQUENCE_LSTM", False, 2, 6, 1, 8, -12)
    p = _cell(model)._plain
    assert p is not None and p.wx is not None and p.x_consts[2] is None
    _stream_matches(model, xshape, rng, 3)


# -------------------------------------------------------------------------------------------------------------
# The bounds, just inside and just outside
# -------------------------------------------------------------------------------------------------------------


def _gate_floor(w, eff, h, m, e):
    """The plan's gate arithmetic for the int8 rows ``h``: [h + 128, 1] @ W', floor, - [Y < thr], >> rs, - P."""
    q = plain._gate_constants(m, e, w, eff)
    rows, p, thr, rs, _ = q
    a = np.hstack([h + 128.0, np.ones((h.shape[0], 1))]) @ rows
    y = a.astype(np.int64)
    return ((y - (y < thr)) >> rs) - p


def test_gate_bound_refuses_tiny_scales():
    """rs > 21: the constant row's 2^(30+rs) alone nears 2^53."""
    w, eff = np.ones((1, 1), np.int64), np.zeros(1, np.int64)
    assert plain._gate_constants(1 << 30, -21, w, eff) is not None
    assert plain._gate_constants(1 << 30, -22, w, eff) is None


@pytest.mark.parametrize("m,e", [(1 << 30, -3), ((1 << 31) - 1, -7), (1518500250, 0), (1518500250, 2), (1 << 30, -21)])
def test_gate_bound_is_tight_and_exact(m, e):
    """``_gate_constants`` accepts the largest column that keeps every partial sum below 2^53 (or |acc| 2^ls below
    2^31) and refuses one more row of +-127; inside, the float64 form equals the integer MBQM at the extremes."""
    rng = np.random.default_rng(abs(e))

    def column(rows):
        w = np.full((rows, 1), 127, np.int64)
        w[1::2] = -127
        return w

    eff = np.array([int(rng.integers(-5000, 5000))])
    lo, hi = 1, 1 << 20
    while lo < hi:  # the largest accepted row count
        mid = (lo + hi + 1) >> 1
        if plain._gate_constants(m, e, column(mid), eff) is None:
            hi = mid - 1
        else:
            lo = mid
    rows = lo
    assert plain._gate_constants(m, e, column(rows + 1), eff) is None
    w = column(rows)
    h = np.vstack(
        [
            np.where(w[:, 0] > 0, 127, -128),
            np.where(w[:, 0] > 0, -128, 127),
            rng.integers(-128, 128, (30, rows)),
        ]
    ).astype(np.int64)
    want = mbqm(h @ w + eff, m, e)
    if not (np.abs(h @ w + eff) < 2**31).all():  # only accepted while no accumulator wraps
        pytest.fail("a bound admitted an accumulator outside int32")
    np.testing.assert_array_equal(_gate_floor(w, eff, h, m, e), want)


def _hidden_float(table, x, m, e, k_sign):
    """``floor(clip(o T + K, 0, 255)) - 128`` for products x = o tanh(c): ``o T`` rounds as ``x M 2^(e-31)`` does
    (the same exact value); K of a nonnegative (``k_sign`` 0) or negative (1) tanh(c)."""
    t = tanh_c()
    k = np.where(k_sign, table[t < 0, 1][0], table[t >= 0, 1][0])
    v = x.astype(np.float64) * (m * 2.0 ** (e - 31)) + k
    return np.floor(np.clip(v, 0, 255)).astype(np.int64) - 128


def tanh_c(cs=-15):
    return signed_index_table(tanh16_table(15 + cs))


def _hidden_check(m, e, z):
    """Returns the table (or None) and, when there is one, checks it against the integer MBQM around every
    threshold of the clipped requantization and on random products."""
    table = plain._hidden_table(m, e, z, tanh_c())
    if table is None:
        return None
    thr = plain._hidden_thresholds(m, e, z)
    rng = np.random.default_rng(m)
    x = np.concatenate(
        [(thr[:, None] + np.arange(-3, 3)).reshape(-1), rng.integers(plain._X_LO, plain._X_HI, 5000), [-1, 0, 1]]
    )
    x = x[(x >= plain._X_LO) & (x <= plain._X_HI)]
    want = np.clip(mbqm(x, m, e) + z, -128, 127)
    np.testing.assert_array_equal(_hidden_float(table, x, m, e, x < 0), want)
    zero = np.zeros(1, np.int64)  # o = 0 times a negative tanh(c): the other K
    np.testing.assert_array_equal(_hidden_float(table, zero, m, e, 1), np.clip(z, -128, 127))
    return table


def test_hidden_bound_is_tight():
    """M = 2^30 + s, e = -1: the product x = 1 is a threshold whose numerator is s above a multiple of 2^32 (and
    x = -1 one s below). The largest |o T + K| is just below 2^28: two roundings err by at most its spacing
    2^-25, the allowed slack is twice that, 2^-24 = 256 units of 2^-32: s = 256 is refused, 257 proven."""
    assert _hidden_check((1 << 30) + 5, -1, 0) is None
    assert _hidden_check((1 << 30) + 256, -1, 0) is None
    assert _hidden_check((1 << 30) + 257, -1, 0) is not None


@pytest.mark.parametrize("m,e,z", [(1282038272, -21, 3), (1 << 30 | 1, -20, -10), ((1 << 31) - 1, -22, 0)])
def test_hidden_table_matches_mbqm(m, e, z):
    assert _hidden_check(m, e, z) is not None


@pytest.mark.parametrize("cifg", [False, True])
@pytest.mark.parametrize("c0", [20000, -32768, 100])
def test_cell_state_set_past_the_cell_clip(cifg, c0):
    """A cell state set (set_tensor on the variable) beyond the cell clip: LiteRT's first step multiplies it
    unclipped (f * c), so that invoke takes the int64 step; a state within the clip (100) keeps the plain
    step. Both states and the output equal the oracle's after each invoke."""
    rng = np.random.default_rng(5)
    model, xshape = plain_model(rng, "UNIDIRECTIONAL_SEQUENCE_LSTM", True, 2, 3, 6, 8, -12, cifg=cifg, cclip=0.05)
    assert _cell(model)._plain is not None and _cell(model)._plain.clips_state  # clip 0.05 / 2^-12: 204
    c = np.where(np.arange(16).reshape(2, 8) % 2, c0, max(-c0, -32768)).astype(np.int16)
    _stream_matches(model, xshape, rng, 2, c0=c)
