"""LSTM's integer 8x8_8 kernel (int8 input / weights / output_state, int16 cell state at 2^-15, 12 intermediates)
against the oracle (ai-edge-litert BUILTIN_REF), exactly, over multi-invoke streams (the states are variable
tensors kept across invokes), then reset_all_variables and the first invoke again. One table (VARIANTS) drives
the differential test; the models LiteRT crashes on (established in a subprocess) and the ones it rejects are
refused at prepare."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.ops.recurrent._weights import gate_inputs, layer_norm_inputs
from tests.ops.recurrent.test_rnn import run_stream
from tests.oracle import oracle, quant

#: variant id -> model options (see lstm8_model). LiteRT's 8x8_8 kernel always runs as CIFG: the input gate's
#: weights (and every peephole weight) are checked but never read, so the non-CIFG variants check we ignore them.
VARIANTS = {
    "cifg": {},
    "cifg-peephole-clips": {"peep": True, "cclip": 0.05, "pclip": 0.1},
    "input-gate": {"cifg": False},
    "input-gate-peephole-clips": {"cifg": False, "peep": True, "cclip": 0.5, "pclip": 0.3},
    "cell-clip-ignored": {"cclip": 2.0},  # LiteRT only uses a cell clip in (0, 1)
    "cell-scale-2^-12-clips-off": {"cell_scale": 2.0**-12, "cclip": 0.01, "pclip": 0.05},
    "output-state-zero-point": {"zos": 9},
}


def lstm8_model(
    rng,
    op="LSTM",
    batch=2,
    n_in=5,
    n_cell=4,
    n_out=3,
    cifg=True,
    peep=False,
    ln=True,
    proj=True,
    proj_bias=True,
    cclip=0.0,
    pclip=0.0,
    cell_scale=2.0**-15,
    zos=0,
    n_inter=12,
    quantized_inter=12,
    time=2,
    drop=(),
    inter_gain=1.0,
):
    """An 8x8_8 integer LSTM: intermediates 3k (the gate sum Wx + Wh) int16, 3k+1 / 3k+2 (Wx, Wh) int8 with a
    zero point (scale times ``inter_gain``: small gains saturate the int8 products); the first ``quantized_inter``
    of them carry quantization parameters."""
    b = ModelBuilder()
    xshape = (batch, n_in) if op == "LSTM" else (time, batch, n_in)
    ins = gate_inputs(b, rng, xshape, n_cell, n_out, cifg, peep, proj, proj_bias)
    s_out = float(rng.uniform(0.004, 0.012))
    ins += [
        b.tensor("h", (batch, n_out), np.int8, is_variable=True, quantization=quant(s_out, zos)),
        b.tensor("c", (batch, n_cell), np.int16, is_variable=True, quantization=quant(cell_scale)),
    ]
    ins += layer_norm_inputs(b, rng, n_cell, cifg, ln)
    ins = [-1 if k in drop else t for k, t in enumerate(ins)]
    inter = []
    for k in range(n_inter):
        if k % 3 == 0:
            q = quant(float(rng.uniform(2e-4, 1e-3)))
            dtype = np.int16
        else:
            q = quant(float(rng.uniform(0.01, 0.08)) * inter_gain, int(rng.integers(-10, 10)))
            dtype = np.int8
        inter.append(b.tensor(f"inter{k}", (), dtype, quantization=q if k < quantized_inter else None))
    out = b.tensor("out", xshape[:-1] + (n_out,), np.int8, quantization=quant(s_out, int(rng.integers(-10, 10))))
    opts = {"fused_activation_function": 4, "cell_clip": cclip, "proj_clip": pclip}
    if op != "LSTM":
        opts["time_major"] = True
    b.op(op, ins, [out], opts, intermediates=inter)
    b.output(out)
    return b.build(), xshape


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 3),
    n_in=st.integers(1, 20),
    n_cell=st.integers(1, 20),
    n_out=st.integers(1, 20),
    invokes=st.integers(1, 3),
    inter_gain=st.sampled_from([0.1, 1.0, 8.0]),
)
def test_lstm_8x8_8_matches_oracle_exactly(variant, seed, batch, n_in, n_cell, n_out, invokes, inter_gain):
    rng = np.random.default_rng(seed)
    model, xshape = lstm8_model(
        rng, batch=batch, n_in=n_in, n_cell=n_cell, n_out=n_out, inter_gain=inter_gain, **VARIANTS[variant]
    )
    feeds = [[rng.integers(-128, 128, xshape).astype(np.int8)] for _ in range(invokes)]
    ours, theirs = run_stream(model, feeds)
    for a, b in zip(ours, theirs):
        assert_close(a, b)


def test_lstm_8x8_8_saturated_inputs():
    """Extreme inputs and a long stream: saturated int8 products, a cell state driven to its int16 limits."""
    rng = np.random.default_rng(3)
    model, xshape = lstm8_model(rng, batch=3, n_in=16, n_cell=8, n_out=6, cifg=False, peep=True)
    feeds = [[np.full(xshape, v, np.int8)] for v in (127, -128, 127, 127, 0, -128)]
    ours, theirs = run_stream(model, feeds, reset_steps=2)
    for a, b in zip(ours, theirs):
        assert_close(a, b)


def test_lstm_8x8_8_negative_float_variance():
    """Equal output-gate values whose float32 variance rounds to -4: sqrt gives NaN, which LiteRT's layer norm
    turns into 0 (a 64-bit lround truncated to int32), not INT32_MIN."""
    rng = np.random.default_rng(2914)
    model, xshape = lstm8_model(rng, batch=1, n_in=18, n_cell=3, n_out=18)
    feeds = [[rng.integers(-128, 128, xshape).astype(np.int8)]]
    ours, theirs = run_stream(model, feeds)
    for a, b in zip(ours, theirs):
        assert_close(a, b)


#: model options LiteRT's 8x8_8 kernel dereferences a null pointer on (segmentation fault)
CRASHES = {
    "no-layer-norm": {"ln": False},
    "no-projection": {"proj": False, "proj_bias": False},
    "no-projection-bias": {"proj_bias": False},
    "unquantized-intermediate": {"quantized_inter": 11},
}

_CRASH_SCRIPT = """
import sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
it = Interpreter(model_content=open(sys.argv[1], "rb").read(), num_threads=1,
                 experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
it.allocate_tensors()
d = it.get_input_details()[0]
it.set_tensor(d["index"], np.ones(d["shape"], np.int8))
it.invoke()
"""


@pytest.mark.parametrize("case", sorted(CRASHES))
def test_lstm_8x8_8_refuses_what_litert_crashes_on(case, tmp_path):
    oracle()
    model, _ = lstm8_model(np.random.default_rng(1), **CRASHES[case])
    with pytest.raises(PrepareError, match="crashes on it"):
        Interpreter(model_content=model).allocate_tensors()
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    r = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, str(path)], capture_output=True, timeout=120)
    assert r.returncode < 0, f"LiteRT no longer crashes ({r.returncode}): {r.stderr.decode()[-500:]}"


#: rejected by both runtimes at prepare: (model options, what litert_py's message says)
REJECTED = {
    "seq-lstm-12-intermediates": ({"op": "UNIDIRECTIONAL_SEQUENCE_LSTM"}, "num_intermediate_tensors == 5"),
    "lstm-7-intermediates": ({"n_inter": 7}, "num_intermediate_tensors"),
    # cell_to_input weights dropped, cell_to_forget / cell_to_output kept
    "peephole-not-all-or-none": ({"peep": True, "cifg": False, "drop": (9,)}, "peephole_weights_all_or_none"),
    "cifg-inconsistent": ({"cifg": False, "drop": (5,)}, "cifg_weights_all_or_none"),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_lstm_8x8_8_rejections_match_litert(case):
    opts, message = REJECTED[case]
    model, _ = lstm8_model(np.random.default_rng(2), **opts)
    LiteRT, R = oracle()
    with pytest.raises(RuntimeError):
        LiteRT(model_content=model, experimental_op_resolver_type=R.BUILTIN_REF).allocate_tensors()
    with pytest.raises(PrepareError, match=message):
        Interpreter(model_content=model).allocate_tensors()
