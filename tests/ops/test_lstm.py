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
from litert_py.schema.writer import ModelBuilder
from tests.ops.test_rnn import run_stream
from tests.oracle import assert_close, quant

#: Layer norm divides by the spread of n_cell gate values (n_cell may be 2 here): ill-conditioned, looser.
TOLERANCE = {"float32": 3e-6, "hybrid": 3e-6, "layer-norm": 3e-5}

#: variant id -> (cifg, peephole, projection, projection bias, layer norm, cell_clip, proj_clip, diagonal recurrent)
VARIANTS = {
    "plain": (False, False, False, False, False, 0.0, 0.0, False),
    "peephole": (False, True, False, False, False, 0.0, 0.0, False),
    "cifg-peephole-clip": (True, True, False, False, False, 0.8, 0.0, False),
    "projection-clips": (False, False, True, True, False, 1.0, 0.3, False),
    "projection-no-bias": (False, True, True, False, False, 0.0, 0.0, False),
    "layer-norm": (False, False, False, False, True, 0.0, 0.0, False),
    "cifg-layer-norm-projection": (True, True, True, True, True, 0.0, 0.0, False),
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
CASES = [(p, v) for p in PATHS for v in VARIANTS]


def _w(b, rng, name, shape, hybrid):
    if hybrid:
        return b.tensor(name, shape, np.int8, data=rng.integers(-128, 128, shape).astype(np.int8),
                        quantization=quant(float(rng.uniform(0.002, 0.01))))
    return b.const(name, (rng.standard_normal(shape) * 0.4).astype(np.float32))


def float_lstm_model(op, rng, variant, hybrid, asym, tm, batch, time, n_in, n_cell, n_out, drop=()):
    cifg, peep, proj, proj_bias, ln, cclip, pclip, _ = VARIANTS[variant]
    if not proj:
        n_out = n_cell
    b = ModelBuilder()
    if op == "LSTM":
        xshape = (batch, n_in)
    else:
        xshape = (time, batch, n_in) if tm else (batch, time, n_in)
    x = b.input("x", xshape, np.float32)
    ins = [x]
    ins += [-1 if (g == "i" and cifg) else _w(b, rng, f"w_{g}", (n_cell, n_in), hybrid) for g in "ifco"]
    ins += [-1 if (g == "i" and cifg) else _w(b, rng, f"r_{g}", (n_cell, n_out), hybrid) for g in "ifco"]
    ins += [_w(b, rng, f"p_{g}", (n_cell,), hybrid) if peep and not (g == "i" and cifg) else -1 for g in "ifo"]
    ins += [-1 if (g == "i" and cifg) else b.const(f"b_{g}", rng.standard_normal(n_cell).astype(np.float32))
            for g in "ifco"]
    ins += [_w(b, rng, "proj", (n_out, n_cell), hybrid) if proj else -1]
    ins += [b.const("proj_b", rng.standard_normal(n_out).astype(np.float32)) if proj_bias else -1]
    ins += [b.tensor("h", (batch, n_out), np.float32, is_variable=True),
            b.tensor("c", (batch, n_cell), np.float32, is_variable=True)]
    ins += [b.const(f"ln_{g}", rng.uniform(0.5, 1.5, n_cell).astype(np.float32))
            if ln and not (g == "i" and cifg) else -1 for g in "ifco"]
    ins = [-1 if k in drop else t for k, t in enumerate(ins)]
    out = b.tensor("out", xshape[:-1] + (n_out,), np.float32)
    opts = {"fused_activation_function": 4, "cell_clip": cclip, "proj_clip": pclip,
            "asymmetric_quantize_inputs": asym}
    if op != "LSTM":
        opts["time_major"] = tm
    b.op(op, ins, [out], opts)
    b.output(out)
    return b.build(), xshape


@pytest.mark.parametrize("path,variant", CASES, ids=[f"{p}-{v}" for p, v in CASES])
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 3), time=st.integers(1, 4), n_in=st.integers(1, 12),
       n_cell=st.sampled_from([1, 2, 4, 5, 8]), n_out=st.integers(1, 6), invokes=st.integers(1, 3))
def test_lstm_matches_oracle(path, variant, seed, batch, time, n_in, n_cell, n_out, invokes):
    op, hybrid, asym, tm = PATHS[path]
    rng = np.random.default_rng(seed)
    model, xshape = float_lstm_model(op, rng, variant, hybrid, asym, tm, batch, time, n_in, n_cell, n_out)
    feeds = [[rng.standard_normal(xshape).astype(np.float32)] for _ in range(invokes)]
    if invokes > 1:
        feeds[1][0][...] = 0  # an all-zero input (IsZeroVector)
    ours, theirs = run_stream(model, feeds)
    steps = 1 if op == "LSTM" else time
    rtol = TOLERANCE["layer-norm" if VARIANTS[variant][4] else "hybrid" if hybrid else "float32"] * steps
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, rtol=rtol * (k + 1), atol=1e-6)


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
