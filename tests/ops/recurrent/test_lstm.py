"""LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM against the oracle (ai-edge-litert BUILTIN_REF) over multi-invoke
streams (output_state and cell_state are variable tensors kept across invokes), then reset_all_variables and
the first invoke again. Float and hybrid outputs within TOLERANCE relative to the largest magnitude, scaled
by the number of recurrent steps so far. One table (VARIANTS x PATHS) drives the differential test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.ops.recurrent._weights import gate_inputs, integer_lstm_model, weights
from tests.ops.recurrent.test_rnn import run_stream
from tests.oracle import oracle

#: Per accumulated term (n_input + n_output + n_cell) and recurrent step, relative to the largest output
#: magnitude. Layer norm divides by the spread of n_cell gate values (n_cell may be 2): ill-conditioned, looser.
TOLERANCE = {"float32": 1e-6, "hybrid": 1e-6, "layer-norm": 1e-5}

#: variant id -> (cifg, peephole, projection, projection bias, layer norm, cell_clip, proj_clip, diagonal recurrent)
VARIANTS = {
    "plain": (False, False, False, False, False, 0.0, 0.0, False),
    "peephole": (False, True, False, False, False, 0.0, 0.0, False),
    "cifg-peephole-clip": (True, True, False, False, False, 0.8, 0.0, False),
    "projection-clips": (False, False, True, True, False, 1.0, 0.3, False),
    "projection-no-bias": (False, True, True, False, False, 0.0, 0.0, False),
    "layer-norm": (False, False, False, False, True, 0.0, 0.0, False),
    "cifg-layer-norm-projection": (True, True, True, True, True, 0.0, 0.0, False),
    "diagonal-recurrent": (False, True, False, False, False, 0.5, 0.0, True),  # 1-D recurrent weights (float)
}
#: path id -> (op, hybrid, asymmetric, time_major)
PATHS = {
    "lstm-float32": ("LSTM", False, False, None),
    "lstm-hybrid-symmetric": ("LSTM", True, False, None),
    "seq-lstm-float32-batch-major": ("UNIDIRECTIONAL_SEQUENCE_LSTM", False, False, False),
    "seq-lstm-float32-time-major": ("UNIDIRECTIONAL_SEQUENCE_LSTM", False, False, True),
    "seq-lstm-hybrid-symmetric-time-major": ("UNIDIRECTIONAL_SEQUENCE_LSTM", True, False, True),
    "seq-lstm-hybrid-asymmetric-batch-major": ("UNIDIRECTIONAL_SEQUENCE_LSTM", True, True, False),
}
HYBRID_VARIANTS = ("plain", "peephole", "projection-clips", "cifg-layer-norm-projection")
CASES = [
    (p, v)
    for p in PATHS
    for v in VARIANTS
    if (not PATHS[p][1] or v in HYBRID_VARIANTS)
    and (not VARIANTS[v][7] or (PATHS[p][0] == "UNIDIRECTIONAL_SEQUENCE_LSTM" and not PATHS[p][1]))
]


def float_lstm_model(op, rng, variant, hybrid, asym, tm, batch, time, n_in, n_cell, n_out, drop=(), n_inputs=24, act=4):
    cifg, peep, proj, proj_bias, ln, cclip, pclip, diag = VARIANTS[variant]
    # LiteRT sizes the float kernels' projection scratch by n_cell: n_output > n_cell overruns it (aborts).
    n_out = min(n_out, n_cell) if proj else n_cell
    b = ModelBuilder()
    if op == "LSTM":
        xshape = (batch, n_in)
    else:
        xshape = (time, batch, n_in) if tm else (batch, time, n_in)
    x = b.input("x", xshape, np.float32)
    ins = [x]
    ins += [-1 if (g == "i" and cifg) else weights(b, rng, f"w_{g}", (n_cell, n_in), hybrid) for g in "ifco"]
    rshape = (n_cell,) if diag else (n_cell, n_out)
    ins += [-1 if (g == "i" and cifg) else weights(b, rng, f"r_{g}", rshape, hybrid) for g in "ifco"]
    ins += [weights(b, rng, f"p_{g}", (n_cell,), hybrid) if peep and not (g == "i" and cifg) else -1 for g in "ifo"]
    ins += [
        -1 if (g == "i" and cifg) else b.const(f"b_{g}", rng.standard_normal(n_cell).astype(np.float32)) for g in "ifco"
    ]
    ins += [weights(b, rng, "proj", (n_out, n_cell), hybrid) if proj else -1]
    ins += [b.const("proj_b", rng.standard_normal(n_out).astype(np.float32)) if proj_bias else -1]
    ins += [
        b.tensor("h", (batch, n_out), np.float32, is_variable=True),
        b.tensor("c", (batch, n_cell), np.float32, is_variable=True),
    ]
    ins += [
        b.const(f"ln_{g}", rng.uniform(0.5, 1.5, n_cell).astype(np.float32)) if ln and not (g == "i" and cifg) else -1
        for g in "ifco"
    ]
    ins = [-1 if k in drop else t for k, t in enumerate(ins)][:n_inputs]
    out = b.tensor("out", xshape[:-1] + (n_out,), np.float32)
    opts = {
        "fused_activation_function": act,
        "cell_clip": cclip,
        "proj_clip": pclip,
        "asymmetric_quantize_inputs": asym,
    }
    if op != "LSTM":
        opts["time_major"] = tm
        opts["diagonal_recurrent_tensors"] = diag
    b.op(op, ins, [out], opts)
    b.output(out)
    return b.build(), xshape


@pytest.mark.parametrize("path,variant", CASES, ids=[f"{p}-{v}" for p, v in CASES])
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 3),
    time=st.integers(1, 4),
    n_in=st.integers(1, 40),
    n_cell=st.sampled_from([1, 2, 4, 5, 8, 20]),
    n_out=st.integers(1, 20),
    invokes=st.integers(1, 3),
)
def test_lstm_matches_oracle(path, variant, seed, batch, time, n_in, n_cell, n_out, invokes):
    op, hybrid, asym, tm = PATHS[path]
    rng = np.random.default_rng(seed)
    if hybrid:
        time = 1  # one step per invoke, states synced from LiteRT before each (see test_rnn.run_stream)
    model, xshape = float_lstm_model(op, rng, variant, hybrid, asym, tm, batch, time, n_in, n_cell, n_out)
    feeds = [[rng.standard_normal(xshape).astype(np.float32)] for _ in range(invokes)]
    if invokes > 1:
        feeds[1][0][...] = 0  # an all-zero input (IsZeroVector)
    ours, theirs = run_stream(model, feeds, sync_states=hybrid)
    steps = 1 if op == "LSTM" else time
    rtol = (
        TOLERANCE["layer-norm" if VARIANTS[variant][4] else "hybrid" if hybrid else "float32"]
        * steps
        * (n_in + n_out + n_cell)
    )
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, rtol=rtol * (k + 1), atol=1e-6)


@pytest.mark.parametrize("op", ["LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM"])
def test_lstm_20_inputs(op):
    """The deprecated 20-input form (no layer-norm coefficients)."""
    rng = np.random.default_rng(7)
    model, xshape = float_lstm_model(op, rng, "projection-clips", False, False, True, 2, 3, 6, 4, 3, n_inputs=20)
    feeds = [[rng.standard_normal(xshape).astype(np.float32)] for _ in range(2)]
    ours, theirs = run_stream(model, feeds)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, rtol=TOLERANCE["float32"] * 3 * 13 * (k + 1), atol=1e-6)


def test_lstm_rejects_inconsistent_cifg():
    # no input_to_input weights, recurrent_to_input kept
    model, _ = float_lstm_model("LSTM", np.random.default_rng(0), "plain", False, False, None, 1, 1, 3, 2, 2, drop=(1,))
    with pytest.raises(PrepareError, match="cifg_weights_all_or_none"):
        Interpreter(model_content=model).allocate_tensors()


def test_lstm_input_count():
    b = ModelBuilder()
    x = b.input("x", (1, 3), np.float32)
    out = b.tensor("out", (1, 2), np.float32)
    b.op("UNIDIRECTIONAL_SEQUENCE_LSTM", [x] * 5, [out])
    b.output(out)
    with pytest.raises(PrepareError, match="expects 20 or 24 inputs"):
        Interpreter(model_content=b.build()).allocate_tensors()


# -------------------------------------------------------------------------------------------------------------
# Integer 8x8_16 (int8 input/weights/output_state, int16 cell state, 5 intermediates): exact
# -------------------------------------------------------------------------------------------------------------

#: path id -> (op, time_major)
INT_PATHS = {
    "lstm-int8": ("LSTM", None),
    "seq-lstm-int8-batch-major": ("UNIDIRECTIONAL_SEQUENCE_LSTM", False),
    "seq-lstm-int8-time-major": ("UNIDIRECTIONAL_SEQUENCE_LSTM", True),
}
INT_CASES = [(p, v) for p in INT_PATHS for v in VARIANTS if not VARIANTS[v][7]]


def int_lstm_model(op, rng, variant, tm, batch, time, n_in, n_cell, n_out, cs, zos=0):
    cifg, peep, proj, proj_bias, ln, cclip, pclip, _ = VARIANTS[variant]
    if not proj:
        n_out = n_cell
    if peep:  # LiteRT's integer peephole reads n_output weights (v_size quirk): n_output > n_cell overruns them
        n_out = min(n_out, n_cell)
    b = ModelBuilder()
    xshape = (batch, n_in) if op == "LSTM" else ((time, batch, n_in) if tm else (batch, time, n_in))
    ins = gate_inputs(b, rng, xshape, n_cell, n_out, cifg, peep, proj, proj_bias)
    zo = int(rng.integers(-10, 10))
    model = integer_lstm_model(b, rng, ins, op, tm, xshape, n_cell, n_out, cs, zos, zo, cifg, ln, cclip, pclip)
    return model, xshape


@pytest.mark.parametrize("path,variant", INT_CASES, ids=[f"{p}-{v}" for p, v in INT_CASES])
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 3),
    time=st.integers(1, 4),
    n_in=st.integers(1, 20),
    n_cell=st.sampled_from([1, 3, 4, 8, 16, 20]),
    n_out=st.integers(1, 20),
    invokes=st.integers(1, 3),
    cs=st.sampled_from([-11, -12, -10]),
)
def test_integer_lstm_matches_oracle_exactly(path, variant, seed, batch, time, n_in, n_cell, n_out, invokes, cs):
    op, tm = INT_PATHS[path]
    rng = np.random.default_rng(seed)
    model, xshape = int_lstm_model(op, rng, variant, tm, batch, time, n_in, n_cell, n_out, cs)
    feeds = [[rng.integers(-128, 128, xshape).astype(np.int8)] for _ in range(invokes)]
    ours, theirs = run_stream(model, feeds)
    for a, b in zip(ours, theirs):
        assert_close(a, b)


@pytest.mark.parametrize("variant", ["plain", "projection-clips", "cifg-layer-norm-projection"])
@given(seed=st.integers(0, 2**32 - 1), zos=st.integers(-20, 20), tm=st.booleans())
def test_integer_lstm_output_state_zero_point(variant, seed, zos, tm):
    """A nonzero output_state zero point (the -zos * rowsum(W_rec) effective bias). The state is set explicitly
    in both runtimes: LiteRT initializes an INT8 variable tensor to its zero point (ResetVariableTensor), which
    litert_py's runtime does not do yet (see the module report)."""
    rng = np.random.default_rng(seed)
    batch, time, n_in, n_cell, n_out = 2, 3, 5, 4, 3
    model, xshape = int_lstm_model(
        "UNIDIRECTIONAL_SEQUENCE_LSTM", rng, variant, tm, batch, time, n_in, n_cell, n_out, -11, zos=zos
    )
    x = rng.integers(-128, 128, xshape).astype(np.int8)
    LiteRT, R = oracle()
    res = []
    for it in (
        Interpreter(model_content=model),
        LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=R.BUILTIN_REF),
    ):
        it.allocate_tensors()
        h = next(d for d in it.get_tensor_details() if d["name"] == "h")
        it.set_tensor(h["index"], np.full(h["shape"], zos, np.int8))
        out = []
        for _ in range(2):
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            out.append(it.get_tensor(it.get_output_details()[0]["index"]).copy())
        res.append(out)
    for a, b in zip(*res):
        assert_close([a], [b])


# -------------------------------------------------------------------------------------------------------------
# BIDIRECTIONAL_SEQUENCE_LSTM (float32, hybrid)
# -------------------------------------------------------------------------------------------------------------

#: id -> (time_major, merge_outputs, aux mode: None / "cross" / "bw-input", hybrid, asymmetric, variant)
BIDI = {
    "bidi-lstm-float32-time-major": (True, False, None, False, False, "plain"),
    "bidi-lstm-float32-batch-major-merged-peephole": (False, True, None, False, False, "peephole"),
    "bidi-lstm-float32-time-major-aux-cross-projection": (True, False, "cross", False, False, "projection-clips"),
    "bidi-lstm-float32-batch-major-aux-bw-input-cifg": (False, False, "bw-input", False, False, "cifg-peephole-clip"),
    "bidi-lstm-float32-time-major-merged-aux-bw-input": (True, True, "bw-input", False, False, "projection-no-bias"),
    "bidi-lstm-hybrid-symmetric-time-major-aux-cross": (True, False, "cross", True, False, "peephole"),
    "bidi-lstm-hybrid-asymmetric-batch-major-merged": (False, True, None, True, True, "projection-clips"),
}


def _bidi_cell(b, rng, prefix, variant, hybrid, n_in, n_cell, n_out, batch):
    cifg, peep, proj, proj_bias, _, _, _, _ = VARIANTS[variant]
    skip = {"i"} if cifg else set()
    ins = [-1 if g in skip else weights(b, rng, f"{prefix}w_{g}", (n_cell, n_in), hybrid) for g in "ifco"]
    ins += [-1 if g in skip else weights(b, rng, f"{prefix}r_{g}", (n_cell, n_out), hybrid) for g in "ifco"]
    ins += [weights(b, rng, f"{prefix}p_{g}", (n_cell,), hybrid) if peep and g not in skip else -1 for g in "ifo"]
    ins += [
        -1 if g in skip else b.const(f"{prefix}b_{g}", rng.standard_normal(n_cell).astype(np.float32)) for g in "ifco"
    ]
    ins += [weights(b, rng, f"{prefix}proj", (n_out, n_cell), hybrid) if proj else -1]
    ins += [b.const(f"{prefix}proj_b", rng.standard_normal(n_out).astype(np.float32)) if proj_bias else -1]
    states = [
        b.tensor(f"{prefix}h", (batch, n_out), np.float32, is_variable=True),
        b.tensor(f"{prefix}c", (batch, n_cell), np.float32, is_variable=True),
    ]
    return ins, states


def bidi_model(path, rng, batch, time, n_in, n_cell, n_out) -> tuple[bytes, tuple]:
    """The BIDIRECTIONAL_SEQUENCE_LSTM model of a BIDI path, and the leading (time, batch) dims of its inputs."""
    tm, merge, aux_mode, hybrid, asym, variant = BIDI[path]
    cifg, _, _, _, _, cclip, pclip, _ = VARIANTS[variant]
    b = ModelBuilder()
    lead = (time, batch) if tm else (batch, time)
    x = b.input("x", lead + (n_in,), np.float32)
    aux = b.input("aux", lead + (n_in,), np.float32) if aux_mode else -1
    fw, fw_states = _bidi_cell(b, rng, "fw_", variant, hybrid, n_in, n_cell, n_out, batch)
    bw, bw_states = _bidi_cell(b, rng, "bw_", variant, hybrid, n_in, n_cell, n_out, batch)
    aux_w = [-1] * 8
    if aux_mode == "cross":
        aux_w = [
            -1 if (cifg and g == "i") else weights(b, rng, f"{d}aux_{g}", (n_cell, n_in), hybrid)
            for d in ("fw_", "bw_")
            for g in "ifco"
        ]
    outs = (
        [b.tensor("out", lead + (2 * n_out,), np.float32)]
        if merge
        else [b.tensor("fw_out", lead + (n_out,), np.float32), b.tensor("bw_out", lead + (n_out,), np.float32)]
    )
    b.op(
        "BIDIRECTIONAL_SEQUENCE_LSTM",
        [x] + fw + bw + fw_states + bw_states + [aux] + aux_w,
        outs,
        {
            "time_major": tm,
            "merge_outputs": merge,
            "fused_activation_function": 4,
            "cell_clip": cclip,
            "proj_clip": pclip,
            "asymmetric_quantize_inputs": asym,
        },
    )
    b.output(*outs)
    return b.build(), lead


@pytest.mark.parametrize("path", sorted(BIDI))
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 3),
    time=st.integers(1, 4),
    n_in=st.integers(1, 10),
    n_cell=st.sampled_from([1, 2, 4, 5]),
    n_out=st.integers(1, 5),
    invokes=st.integers(1, 2),
)
def test_bidirectional_lstm_matches_oracle(path, seed, batch, time, n_in, n_cell, n_out, invokes):
    tm, merge, aux_mode, hybrid, _, variant = BIDI[path]
    proj = VARIANTS[variant][2]
    rng = np.random.default_rng(seed)
    if hybrid:
        time = 1  # see test_rnn.run_stream(sync_states=True)
    n_out = min(n_out, n_cell) if proj else n_cell  # see float_lstm_model
    if merge and not tm:
        # LiteRT's batch-major EvalFloat/EvalHybrid address the state of row b at b * output_batch_leading_dim,
        # which with merged outputs runs past the state buffer for b >= 1 (undefined behaviour): one row only.
        batch = 1
    model, lead = bidi_model(path, rng, batch, time, n_in, n_cell, n_out)
    n_feeds = 2 if aux_mode else 1
    feeds = [[rng.standard_normal(lead + (n_in,)).astype(np.float32) for _ in range(n_feeds)] for _ in range(invokes)]
    ours, theirs = run_stream(model, feeds, sync_states=hybrid)
    rtol = TOLERANCE["hybrid" if hybrid else "float32"] * time * (2 * n_in + n_out + n_cell)
    for k, (a, bb) in enumerate(zip(ours, theirs)):
        assert_close(a, bb, rtol=rtol * (k + 1), atol=1e-6)


def test_hybrid_diagonal_recurrent_is_refused():
    """LiteRT's hybrid kernel reads 1-D int8 recurrent weights as float (NaN outputs): litert_py refuses it."""
    model, _ = float_lstm_model(
        "UNIDIRECTIONAL_SEQUENCE_LSTM", np.random.default_rng(0), "diagonal-recurrent", True, False, True, 1, 2, 3, 4, 4
    )
    with pytest.raises(PrepareError, match="diagonal recurrent weights"):
        Interpreter(model_content=model).allocate_tensors()


# -------------------------------------------------------------------------------------------------------------
# Long sequences: litert_py computes the input products of every step up front and steps the recurrence with
# stacked gates; these streams check it over time > 10, all-zero steps and rows in the middle of a sequence
# (IsZeroVector), both layouts and batch > 4.
# -------------------------------------------------------------------------------------------------------------

#: id -> (kind: float32 / hybrid / hybrid-asymmetric / int8, variant, time_major)
LONG = {
    "long-float32-plain-time-major": ("float32", "plain", True),
    "long-float32-peephole-batch-major": ("float32", "peephole", False),
    "long-float32-cifg-peephole-clip-time-major": ("float32", "cifg-peephole-clip", True),
    "long-float32-projection-clips-batch-major": ("float32", "projection-clips", False),
    "long-float32-cifg-layer-norm-projection-batch-major": ("float32", "cifg-layer-norm-projection", False),
    "long-float32-diagonal-recurrent-time-major": ("float32", "diagonal-recurrent", True),
    "long-hybrid-plain-batch-major": ("hybrid", "plain", False),
    "long-hybrid-asymmetric-projection-clips-time-major": ("hybrid-asymmetric", "projection-clips", True),
    "long-int8-plain-batch-major": ("int8", "plain", False),
    "long-int8-peephole-time-major": ("int8", "peephole", True),
    "long-int8-cifg-layer-norm-projection-batch-major": ("int8", "cifg-layer-norm-projection", False),
    "long-int8-projection-clips-time-major": ("int8", "projection-clips", True),
}
#: hybrid streams re-quantize h every step, so one ulp of a transcendental function can flip a quantized value
#: (one step of 127) and the chain carries it on: relative to the largest output, per step (measured: < 1e-7)
LONG_HYBRID_TOLERANCE = 2e-4


def _zero_steps(x, tm, rng):
    """An all-zero step in the middle of the sequence and an all-zero row at another step."""
    steps = x.shape[0] if tm else x.shape[1]
    t0, t1 = steps // 2, int(rng.integers(0, steps))
    if tm:
        x[t0] = 0
        x[t1, int(rng.integers(0, x.shape[1]))] = 0
    else:
        x[:, t0] = 0
        x[int(rng.integers(0, x.shape[0])), t1] = 0
    return x


@pytest.mark.parametrize("path", sorted(LONG))
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.sampled_from([1, 2, 5, 6]),
    time=st.integers(11, 16),
    n_in=st.integers(1, 12),
    n_cell=st.sampled_from([1, 4, 16, 20]),
    n_out=st.integers(1, 12),
)
def test_long_sequence_lstm_matches_oracle(path, seed, batch, time, n_in, n_cell, n_out):
    kind, variant, tm = LONG[path]
    rng = np.random.default_rng(seed)
    op = "UNIDIRECTIONAL_SEQUENCE_LSTM"
    if kind == "int8":
        model, xshape = int_lstm_model(op, rng, variant, tm, batch, time, n_in, n_cell, n_out, -11)
        feeds = [[_zero_steps(rng.integers(-128, 128, xshape).astype(np.int8), tm, rng)] for _ in range(2)]
        ours, theirs = run_stream(model, feeds)
        for a, b in zip(ours, theirs):
            assert_close(a, b)
        return
    hybrid = kind != "float32"
    model, xshape = float_lstm_model(
        op, rng, variant, hybrid, kind == "hybrid-asymmetric", tm, batch, time, n_in, n_cell, n_out
    )
    feeds = [[_zero_steps(rng.standard_normal(xshape).astype(np.float32), tm, rng)] for _ in range(2)]
    ours, theirs = run_stream(model, feeds)
    if hybrid:
        rtol = LONG_HYBRID_TOLERANCE * time
    else:
        rtol = TOLERANCE["layer-norm" if VARIANTS[variant][4] else "float32"] * time * (n_in + n_out + n_cell)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, rtol=rtol * (k + 1), atol=1e-6)


@pytest.mark.parametrize(
    "path", ["bidi-lstm-float32-batch-major-aux-bw-input-cifg", "bidi-lstm-float32-time-major-aux-cross-projection"]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.sampled_from([1, 5]),
    time=st.integers(11, 14),
    n_in=st.integers(1, 8),
    n_cell=st.sampled_from([1, 4, 5]),
    n_out=st.integers(1, 5),
)
def test_long_sequence_bidirectional_lstm_matches_oracle(path, seed, batch, time, n_in, n_cell, n_out):
    """BIDIRECTIONAL_SEQUENCE_LSTM over time > 10 with all-zero steps (the backward cell walks the precomputed
    input products in reverse)."""
    tm, *_, variant = BIDI[path]
    proj = VARIANTS[variant][2]
    rng = np.random.default_rng(seed)
    n_out = min(n_out, n_cell) if proj else n_cell
    model, lead = bidi_model(path, rng, batch, time, n_in, n_cell, n_out)
    feeds = [
        [_zero_steps(rng.standard_normal(lead + (n_in,)).astype(np.float32), tm, rng) for _ in range(2)]
        for _ in range(2)
    ]
    ours, theirs = run_stream(model, feeds)
    rtol = TOLERANCE["float32"] * time * (2 * n_in + n_out + n_cell)
    for k, (a, bb) in enumerate(zip(ours, theirs)):
        assert_close(a, bb, rtol=rtol * (k + 1), atol=1e-6)
