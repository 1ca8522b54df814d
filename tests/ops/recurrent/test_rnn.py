"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN against the oracle (ai-edge-litert
BUILTIN_REF) over multi-invoke streams (the hidden state is a variable tensor kept across invokes), then
reset_all_variables and the first invokes again. Float within TOLERANCE relative to the largest magnitude,
scaled by the number of recurrent steps so far."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.schema import read_model
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.ops.recurrent._weights import weights
from tests.oracle import oracle, quant

#: Per accumulated term (input_size + num_units) and recurrent step, relative to the largest output magnitude.
TOLERANCE = {"float32": 1e-6, "hybrid": 1e-6}
ACTS = {"NONE": 0, "RELU": 1, "RELU6": 3, "TANH": 4}
PATHS = {  # id -> (op, hybrid, asymmetric, time_major)
    "rnn-float32": ("RNN", False, False, None),
    "rnn-hybrid-symmetric": ("RNN", True, False, None),
    "rnn-hybrid-asymmetric": ("RNN", True, True, None),
    "seq-rnn-float32-batch-major": ("UNIDIRECTIONAL_SEQUENCE_RNN", False, False, False),
    "seq-rnn-float32-time-major": ("UNIDIRECTIONAL_SEQUENCE_RNN", False, False, True),
    "seq-rnn-hybrid-symmetric-batch-major": ("UNIDIRECTIONAL_SEQUENCE_RNN", True, False, False),
    "seq-rnn-hybrid-asymmetric-time-major": ("UNIDIRECTIONAL_SEQUENCE_RNN", True, True, True),
}


def run_stream(model: bytes, feeds, reset_steps: int = 1, sync_states: bool = False):
    """Per invoke, every output of both runtimes; then reset_all_variables and the first invokes again.
    ``feeds``: a list of input lists. ``sync_states``: before each invoke, copy LiteRT's variable tensors into
    litert_py's, so that every invoke starts from the same state (hybrid kernels re-quantize the state each
    step: an ulp of difference from a transcendental activation can flip a quantized value and a whole
    recurrent product, so chained hybrid steps are compared one invoke at a time)."""
    LiteRT, R = oracle()
    variables = [i for i, t in enumerate(read_model(model).subgraphs[0].tensors) if t.is_variable]
    ours = Interpreter(model_content=model)
    theirs = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=R.BUILTIN_REF)
    outs = [[], []]
    for it in (ours, theirs):
        it.allocate_tensors()
    for feed in list(feeds) + [None] + list(feeds[:reset_steps]):
        if feed is None:
            ours.reset_all_variables()
            theirs.reset_all_variables()
            continue
        if sync_states:
            for i in variables:
                ours.set_tensor(i, theirs.get_tensor(i))
        for k, it in enumerate((ours, theirs)):
            for d, x in zip(it.get_input_details(), feed):
                it.set_tensor(d["index"], x)
            it.invoke()
            outs[k].append([it.get_tensor(d["index"]).copy() for d in it.get_output_details()])
    return outs


def rnn_shapes(op: str, tm, batch: int, time: int, n_in: int, units: int):
    """(input shape, output shape, options with time_major) of an RNN / UNIDIRECTIONAL_SEQUENCE_RNN."""
    if op == "RNN":
        return (batch, n_in), (batch, units), {}
    lead = (time, batch) if tm else (batch, time)
    return lead + (n_in,), lead + (units,), {"time_major": tm}


def _compare(ours, theirs, rtol):
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, rtol=rtol * (k + 1), atol=1e-6)


@pytest.mark.parametrize("path", sorted(PATHS))
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 3),
    n_in=st.integers(1, 24),
    units=st.integers(1, 8),
    time=st.integers(1, 4),
    act=st.sampled_from(sorted(ACTS)),
    invokes=st.integers(1, 3),
)
def test_rnn_matches_oracle(path, seed, batch, n_in, units, time, act, invokes):
    op, hybrid, asym, tm = PATHS[path]
    rng = np.random.default_rng(seed)
    if hybrid and act == "TANH":
        time = 1  # see run_stream(sync_states=True): chained hybrid steps amplify tanh's ulps
    b = ModelBuilder()
    xshape, oshape, opts = rnn_shapes(op, tm, batch, time, n_in, units)
    opts.update(fused_activation_function=ACTS[act], asymmetric_quantize_inputs=asym)
    x = b.input("x", xshape, np.float32)
    w = weights(b, rng, "w", (units, n_in), hybrid, max_scale=0.02)
    r = weights(b, rng, "r", (units, units), hybrid, max_scale=0.02)
    bias = b.const("bias", rng.standard_normal(units).astype(np.float32))
    h = b.tensor("h", (batch, units), np.float32, is_variable=True)
    out = b.tensor("out", oshape, np.float32)
    b.op(op, [x, w, r, bias, h], [out], opts)
    b.output(out)
    feeds = [[rng.standard_normal(xshape).astype(np.float32)] for _ in range(invokes)]
    if invokes > 1:
        feeds[1][0][...] = 0  # an all-zero input (hybrid: IsZeroVector)
    ours, theirs = run_stream(b.build(), feeds, sync_states=hybrid)
    steps = 1 if op == "RNN" else time
    _compare(ours, theirs, TOLERANCE["hybrid" if hybrid else "float32"] * steps * (n_in + units))


BIDI = {  # id -> (time_major, merge_outputs, aux mode: None / "cross" / "bw-input", hybrid, asymmetric)
    "bidi-rnn-batch-major": (False, False, None, False, False),
    "bidi-rnn-time-major-merged": (True, True, None, False, False),
    "bidi-rnn-batch-major-merged-aux-cross": (False, True, "cross", False, False),
    "bidi-rnn-time-major-aux-cross": (True, False, "cross", False, False),
    "bidi-rnn-time-major-aux-bw-input": (True, False, "bw-input", False, False),
    "bidi-rnn-batch-major-aux-bw-input": (False, True, "bw-input", False, False),
    "bidi-rnn-hybrid-symmetric-time-major-aux-cross": (True, False, "cross", True, False),
    "bidi-rnn-hybrid-asymmetric-batch-major-merged": (False, True, None, True, True),
    "bidi-rnn-hybrid-asymmetric-time-major-aux-bw-input": (True, True, "bw-input", True, True),
}


@pytest.mark.parametrize("path", sorted(BIDI))
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 3),
    n_in=st.integers(1, 12),
    uf=st.integers(1, 6),
    ub=st.integers(1, 6),
    time=st.integers(1, 4),
    act=st.sampled_from(sorted(ACTS)),
    invokes=st.integers(1, 2),
)
def test_bidirectional_rnn_matches_oracle(path, seed, batch, n_in, uf, ub, time, act, invokes):
    tm, merge, aux_mode, hybrid, asym = BIDI[path]
    rng = np.random.default_rng(seed)
    if hybrid and act == "TANH":
        time = 1
    b = ModelBuilder()
    lead = (time, batch) if tm else (batch, time)
    x = b.input("x", lead + (n_in,), np.float32)
    aux = b.input("aux", lead + (n_in,), np.float32) if aux_mode else -1
    cells = []
    for name, u in (("fw", uf), ("bw", ub)):
        cells += [
            weights(b, rng, f"{name}_w", (u, n_in), hybrid, max_scale=0.02),
            weights(b, rng, f"{name}_r", (u, u), hybrid, max_scale=0.02),
            b.const(f"{name}_b", rng.standard_normal(u).astype(np.float32)),
            b.tensor(f"{name}_h", (batch, u), np.float32, is_variable=True),
        ]
    aux_w = [-1, -1]
    if aux_mode == "cross":
        aux_w = [
            weights(b, rng, "fw_aux_w", (uf, n_in), hybrid, max_scale=0.02),
            weights(b, rng, "bw_aux_w", (ub, n_in), hybrid, max_scale=0.02),
        ]
    outs = (
        [b.tensor("out", lead + (uf + ub,), np.float32)]
        if merge
        else [b.tensor("fw_out", lead + (uf,), np.float32), b.tensor("bw_out", lead + (ub,), np.float32)]
    )
    b.op(
        "BIDIRECTIONAL_SEQUENCE_RNN",
        [x] + cells + [aux] + aux_w,
        outs,
        {
            "time_major": tm,
            "merge_outputs": merge,
            "fused_activation_function": ACTS[act],
            "asymmetric_quantize_inputs": asym,
        },
    )
    b.output(*outs)
    n_feeds = 2 if aux_mode else 1
    feeds = [[rng.standard_normal(lead + (n_in,)).astype(np.float32) for _ in range(n_feeds)] for _ in range(invokes)]
    ours, theirs = run_stream(b.build(), feeds, sync_states=hybrid)
    _compare(ours, theirs, TOLERANCE["hybrid" if hybrid else "float32"] * time * (2 * n_in + max(uf, ub)))


def test_rnn_rejects_mismatched_weight_types():
    b = ModelBuilder()
    x = b.input("x", (1, 3), np.float32)
    w = b.const("w", np.ones((2, 3), np.float32))
    r = b.tensor("r", (2, 2), np.int8, data=np.ones((2, 2), np.int8), quantization=quant(0.1))
    bias = b.const("bias", np.zeros(2, np.float32))
    h = b.tensor("h", (1, 2), np.float32, is_variable=True)
    out = b.tensor("out", (1, 2), np.float32)
    b.op("RNN", [x, w, r, bias, h], [out])
    b.output(out)
    with pytest.raises(PrepareError, match="recurrent weights type"):
        Interpreter(model_content=b.build()).allocate_tensors()


def test_sequence_rnn_needs_3d_input():
    b = ModelBuilder()
    x = b.input("x", (2, 3), np.float32)
    w = b.const("w", np.ones((2, 3), np.float32))
    r = b.const("r", np.ones((2, 2), np.float32))
    bias = b.const("bias", np.zeros(2, np.float32))
    h = b.tensor("h", (2, 2), np.float32, is_variable=True)
    out = b.tensor("out", (2, 2), np.float32)
    b.op("UNIDIRECTIONAL_SEQUENCE_RNN", [x, w, r, bias, h], [out])
    b.output(out)
    with pytest.raises(PrepareError, match="NumDimensions"):
        Interpreter(model_content=b.build()).allocate_tensors()


#: Long sequences (litert_py computes bias + W_in x of every step up front): id -> (op, hybrid, asymmetric,
#: time_major, aux mode for the bidirectional op). Hybrid streams use RELU (see test_rnn_matches_oracle).
LONG = {
    "long-seq-rnn-float32-time-major": ("UNIDIRECTIONAL_SEQUENCE_RNN", False, False, True, None),
    "long-seq-rnn-float32-batch-major": ("UNIDIRECTIONAL_SEQUENCE_RNN", False, False, False, None),
    "long-seq-rnn-hybrid-symmetric-time-major": ("UNIDIRECTIONAL_SEQUENCE_RNN", True, False, True, None),
    "long-seq-rnn-hybrid-asymmetric-batch-major": ("UNIDIRECTIONAL_SEQUENCE_RNN", True, True, False, None),
    "long-bidi-rnn-float32-batch-major-aux-cross": ("BIDIRECTIONAL_SEQUENCE_RNN", False, False, False, "cross"),
    "long-bidi-rnn-float32-time-major-aux-bw-input": ("BIDIRECTIONAL_SEQUENCE_RNN", False, False, True, "bw-input"),
    "long-bidi-rnn-hybrid-symmetric-batch-major": ("BIDIRECTIONAL_SEQUENCE_RNN", True, False, False, None),
}


@pytest.mark.parametrize("path", sorted(LONG))
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.sampled_from([1, 2, 5, 6]),
    n_in=st.integers(1, 16),
    units=st.integers(1, 12),
    time=st.integers(11, 16),
    act=st.sampled_from(["NONE", "RELU", "TANH"]),
)
def test_long_sequence_rnn_matches_oracle(path, seed, batch, n_in, units, time, act):
    """time > 10, an all-zero step in the middle and an all-zero row at another step, batch > 4."""
    op, hybrid, asym, tm, aux_mode = LONG[path]
    rng = np.random.default_rng(seed)
    if hybrid:
        act = "RELU"
    b = ModelBuilder()
    lead = (time, batch) if tm else (batch, time)
    x = b.input("x", lead + (n_in,), np.float32)
    opts = {"time_major": tm, "fused_activation_function": ACTS[act], "asymmetric_quantize_inputs": asym}
    if op == "UNIDIRECTIONAL_SEQUENCE_RNN":
        ins = [
            x,
            weights(b, rng, "w", (units, n_in), hybrid, max_scale=0.02),
            weights(b, rng, "r", (units, units), hybrid, max_scale=0.02),
            b.const("bias", rng.standard_normal(units).astype(np.float32)),
            b.tensor("h", (batch, units), np.float32, is_variable=True),
        ]
        outs = [b.tensor("out", lead + (units,), np.float32)]
    else:
        aux = b.input("aux", lead + (n_in,), np.float32) if aux_mode else -1
        cells = []
        for name in ("fw", "bw"):
            cells += [
                weights(b, rng, f"{name}_w", (units, n_in), hybrid, max_scale=0.02),
                weights(b, rng, f"{name}_r", (units, units), hybrid, max_scale=0.02),
                b.const(f"{name}_b", rng.standard_normal(units).astype(np.float32)),
                b.tensor(f"{name}_h", (batch, units), np.float32, is_variable=True),
            ]
        aux_w = [-1, -1]
        if aux_mode == "cross":
            aux_w = [weights(b, rng, f"{d}_aux_w", (units, n_in), hybrid, max_scale=0.02) for d in ("fw", "bw")]
        ins = [x] + cells + [aux] + aux_w
        outs = [b.tensor("fw_out", lead + (units,), np.float32), b.tensor("bw_out", lead + (units,), np.float32)]
        opts["merge_outputs"] = False
    b.op(op, ins, outs, opts)
    b.output(*outs)
    n_feeds = 2 if aux_mode else 1
    feeds = []
    for _ in range(2):
        feed = [rng.standard_normal(lead + (n_in,)).astype(np.float32) for _ in range(n_feeds)]
        for v in feed:
            t0, t1 = time // 2, int(rng.integers(0, time))
            r = int(rng.integers(0, batch))
            if tm:
                v[t0], v[t1, r] = 0, 0
            else:
                v[:, t0], v[r, t1] = 0, 0
        feeds.append(feed)
    ours, theirs = run_stream(b.build(), feeds)
    _compare(ours, theirs, TOLERANCE["hybrid" if hybrid else "float32"] * time * (2 * n_in + units))
