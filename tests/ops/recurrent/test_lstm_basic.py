"""LSTM with kernel_type BASIC (5 inputs, 4 outputs) against the oracle (ai-edge-litert BUILTIN_REF): float32
within TOLERANCE, uint8 (int16 state, int32 bias) bit-exact, over 1-3 invokes where only the first sets the
state inputs (LiteRT copies the new state back over them, so later invokes continue the sequence; the state
inputs are compared too). One table (PATHS) drives the differential test; ERRORS the refused models."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.oracle import T, oracle, quant, single_op_model

#: float32: relative to the largest output magnitude, per accumulated term (I + N) and per invoke.
TOLERANCE = {"float32": 1e-6}

#: path id -> (dtype, constant weights and bias)
PATHS = {
    "float32": (np.float32, True),
    "float32-dynamic-weights": (np.float32, False),
    "uint8": (np.uint8, True),
    "uint8-dynamic-weights": (np.uint8, False),
}
S_IN = 1 / 128  # the uint8 kernel reads its activations as Q0.7 (zero point 128)
S_STATE = 2.0**-11  # StateIntegerBits 4


def basic_lstm_model(
    dtype,
    const,
    batch,
    n_in,
    n_out,
    weights,
    bias,
    s_w=0.01,
    zw=128,
    s_state=S_STATE,
    types=None,
    shapes=None,
    const_state=None,
):
    """A one-node BASIC LSTM. ``types`` / ``shapes``: override the 5 input then 4 output dtypes / shapes."""
    if dtype == np.float32:
        tt = [np.float32] * 9
        qs = [None] * 9
    else:
        tt = [np.uint8, np.uint8, np.uint8, np.int32, np.int16, np.uint8, np.int16, np.uint8, np.int16]
        qa, qst = quant(S_IN, 128), quant(s_state, 0)
        qs = [qa, qa, quant(s_w, zw), quant(S_IN * s_w, 0), qst, qa, qst, qa, quant(2.0**-12, 0)]
    tt = types or tt
    ss = shapes or [
        (batch, n_in),
        (batch, n_out),
        (4 * n_out, n_in + n_out),
        (4 * n_out,),
        (batch, n_out),
        (batch, n_out),
        (batch, n_out),
        (batch, n_in + n_out),
        (batch, 4 * n_out),
    ]
    ins = []
    for k in range(5):
        data = {2: weights, 3: bias, 4: const_state}.get(k) if (const or k == 4) else None
        ins.append(T.const(np.asarray(data, tt[k]), q=qs[k]) if data is not None else T(ss[k], tt[k], q=qs[k]))
    outs = [T(ss[5 + k], tt[5 + k], q=qs[5 + k]) for k in range(4)]
    return single_op_model("LSTM", ins, outs, options={"kernel_type": 1})


def run_invokes(model: bytes, feeds: list, later_inputs: list, invokes: int):
    """Both runtimes: set every input, invoke; then ``invokes - 1`` more invokes setting only the inputs
    listed in ``later_inputs``. Per invoke: the 4 outputs and the 2 state inputs."""
    LiteRT, R = oracle()
    res = []
    for it in (
        Interpreter(model_content=model),
        LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=R.BUILTIN_REF),
    ):
        it.allocate_tensors()
        ins, outs = it.get_input_details(), it.get_output_details()
        got = []
        for step in range(invokes):
            for k, (d, x) in enumerate(zip(ins, feeds[step])):
                if step == 0 or k in later_inputs:
                    it.set_tensor(d["index"], x)
            it.invoke()
            got.append(
                [it.get_tensor(d["index"]) for d in outs] + [it.get_tensor(ins[k]["index"]) for k in (1, len(ins) - 1)]
            )
        res.append(got)
    return res


@pytest.mark.parametrize("path", PATHS)
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 4),
    n_in=st.integers(1, 24),
    n_out=st.integers(1, 12),
    invokes=st.integers(1, 3),
    s_w=st.sampled_from([0.002, 0.01, 0.03, 0.2]),
    zw=st.integers(0, 255),
)
def test_basic_lstm_matches_oracle(path, seed, batch, n_in, n_out, invokes, s_w, zw):
    dtype, const = PATHS[path]
    rng = np.random.default_rng(seed)
    k = n_in + n_out
    if dtype == np.float32:
        w = (rng.standard_normal((4 * n_out, k)) / np.sqrt(k)).astype(np.float32)
        b = rng.standard_normal(4 * n_out).astype(np.float32)

        def feed():
            return [
                rng.standard_normal((batch, n_in)).astype(np.float32),
                rng.uniform(-1, 1, (batch, n_out)).astype(np.float32),
                rng.standard_normal((batch, n_out)).astype(np.float32),
            ]
    else:
        w = rng.integers(0, 256, (4 * n_out, k)).astype(np.uint8)
        b = rng.integers(-(2**14), 2**14, 4 * n_out).astype(np.int32)

        def feed():
            return [
                rng.integers(0, 256, (batch, n_in)).astype(np.uint8),
                rng.integers(0, 256, (batch, n_out)).astype(np.uint8),
                rng.integers(-32768, 32768, (batch, n_out)).astype(np.int16),
            ]

    model = basic_lstm_model(dtype, const, batch, n_in, n_out, w, b, s_w=s_w, zw=zw)
    feeds = []
    for _ in range(invokes):
        f = feed()
        feeds.append(f if const else [f[0], f[1], w, b, f[2]])
    ours, theirs = run_invokes(model, feeds, later_inputs=[0], invokes=invokes)
    for step, (a, t) in enumerate(zip(ours, theirs)):
        assert_close(a, t, rtol=TOLERANCE["float32"] * k * (step + 1), atol=1e-6)


def test_basic_lstm_uint8_negative_ties():
    """Accumulators -8, -24, ... with an effective multiplier of exactly 1/16: the ruy GEMM of the kernel
    LiteRT runs rounds these ties up (-0.5 -> 0), the reference MultiplyByQuantizedMultiplier away from zero."""
    n_out, n_in = 4, 1
    w = np.full((4 * n_out, n_in + n_out), 128, np.uint8)  # w - zw = 0: acc = bias
    b = np.array([-8, -24, -40, 8, 24, -7, -9, -56, -72, -88, 40, -104, -120, -136, -152, -168], np.int32)
    model = basic_lstm_model(np.uint8, True, 1, n_in, n_out, w, b, s_w=2.0**-9, zw=128)
    feeds = [[np.full((1, n_in), 128, np.uint8), np.full((1, n_out), 128, np.uint8), np.zeros((1, n_out), np.int16)]]
    (ours,), (theirs,) = run_invokes(model, feeds, later_inputs=[], invokes=1)
    assert_close(ours, theirs)
    np.testing.assert_array_equal(theirs[3][0, :6], [0, -1, -2, 1, 2, 0])  # ruy: ties up (ref would give -1, -2)


def _f32(batch=2, n_in=3, n_out=2):
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal((4 * n_out, n_in + n_out)).astype(np.float32),
        rng.standard_normal(4 * n_out).astype(np.float32),
    )


def _u8(n_in=3, n_out=2):
    return np.full((4 * n_out, n_in + n_out), 100, np.uint8), np.arange(4 * n_out, dtype=np.int32)


F32_SHAPES = [(2, 3), (2, 2), (8, 5), (8,), (2, 2), (2, 2), (2, 2), (2, 5), (2, 8)]
U8_TYPES = [np.uint8, np.uint8, np.uint8, np.int32, np.int16, np.uint8, np.int16, np.uint8, np.int16]


def _shapes(k, shape):
    s = list(F32_SHAPES)
    s[k] = shape
    return s


def _types(*changes):
    s = list(U8_TYPES)
    for k, t in changes:
        s[k] = t
    return s


#: id -> model builder; LiteRT rejects each (at allocate_tensors or at invoke), litert_py at prepare.
ERRORS = {
    "input-3d": lambda: basic_lstm_model(np.float32, True, 2, 3, 2, *_f32(), shapes=_shapes(0, (2, 1, 3))),
    "prev-activ-batch": lambda: basic_lstm_model(np.float32, True, 2, 3, 2, *_f32(), shapes=_shapes(1, (3, 2))),
    "weights-rows": lambda: basic_lstm_model(np.float32, False, 2, 3, 2, *_f32(), shapes=_shapes(2, (6, 5))),
    "weights-cols": lambda: basic_lstm_model(np.float32, False, 2, 3, 2, *_f32(), shapes=_shapes(2, (8, 4))),
    "bias-length": lambda: basic_lstm_model(np.float32, False, 2, 3, 2, *_f32(), shapes=_shapes(3, (7,))),
    "prev-state-depth": lambda: basic_lstm_model(np.float32, True, 2, 3, 2, *_f32(), shapes=_shapes(4, (2, 3))),
    "constant-state": lambda: basic_lstm_model(
        np.float32, True, 2, 3, 2, *_f32(), const_state=np.zeros((2, 2), np.float32)
    ),
    "int8-input": lambda: basic_lstm_model(np.uint8, True, 2, 3, 2, *_u8(), types=_types((0, np.int8))),
    "int8-weights": lambda: basic_lstm_model(np.uint8, False, 2, 3, 2, *_u8(), types=_types((2, np.int8))),
    "uint8-float-bias": lambda: basic_lstm_model(np.uint8, False, 2, 3, 2, *_u8(), types=_types((3, np.float32))),
    "uint8-int32-state": lambda: basic_lstm_model(
        np.uint8, True, 2, 3, 2, *_u8(), types=_types((4, np.int32), (6, np.int32))
    ),
    "int8-activ-temp": lambda: basic_lstm_model(np.uint8, True, 2, 3, 2, *_u8(), types=_types((8, np.int8))),
    "float-input-uint8-rest": lambda: basic_lstm_model(np.uint8, True, 2, 3, 2, *_u8(), types=_types((0, np.float32))),
    "state-scale-not-pot": lambda: basic_lstm_model(np.uint8, True, 2, 3, 2, *_u8(), s_state=0.0003),
    "state-integer-bits-3": lambda: basic_lstm_model(np.uint8, True, 2, 3, 2, *_u8(), s_state=2.0**-12),
    "state-integer-bits-5": lambda: basic_lstm_model(np.uint8, True, 2, 3, 2, *_u8(), s_state=2.0**-10),
}


@pytest.mark.parametrize("case", ERRORS)
def test_basic_lstm_rejects(case):
    model = ERRORS[case]()
    LiteRT, R = oracle()
    it = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=R.BUILTIN_REF)
    with pytest.raises((RuntimeError, ValueError)):  # LiteRT checks types and the state scale only at Eval
        it.allocate_tensors()
        it.invoke()
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
