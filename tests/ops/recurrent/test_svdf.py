"""SVDF against the oracle (ai-edge-litert BUILTIN_REF): float32, hybrid and integer paths over multi-step
streams (the state is a variable tensor kept across invokes), then reset_all_variables and the first step
again. Integer outputs are compared exactly; float within TOLERANCE (relative to the largest magnitude,
scaled by the number of steps)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import oracle, quant

#: Float: per accumulated term (input_size + rank * memory_size), relative to the largest output magnitude
#: (the output can be a small difference of large terms).
TOLERANCE = {"float32": 1e-6, "hybrid": 1e-6, "integer": 0.0}
ACTS = {"NONE": 0, "RELU": 1, "RELU6": 3, "TANH": 4}
PATHS = ["svdf-float32", "svdf-hybrid-symmetric", "svdf-hybrid-asymmetric", "svdf-integer"]


def _model(path, rng, batch, n_in, units, rank, memory, act, has_bias, int_act=1):
    b = ModelBuilder()
    nf = units * rank
    opts = {
        "rank": rank,
        "fused_activation_function": act,
        "asymmetric_quantize_inputs": path == "svdf-hybrid-asymmetric",
    }
    if path == "svdf-float32":
        x = b.input("x", (batch, n_in), np.float32)
        wf = b.const("wf", rng.standard_normal((nf, n_in)).astype(np.float32))
        wt = b.const("wt", rng.standard_normal((nf, memory)).astype(np.float32))
        bias = b.const("b", rng.standard_normal(units).astype(np.float32)) if has_bias else -1
        st_ = b.tensor("state", (batch, memory * nf), np.float32, is_variable=True)
        out = b.tensor("out", (batch, units), np.float32)
    elif path.startswith("svdf-hybrid"):
        x = b.input("x", (batch, n_in), np.float32)
        wf = b.const("wf", rng.integers(-128, 128, (nf, n_in)).astype(np.int8), quantization=quant(0.02))
        wt = b.const("wt", rng.integers(-128, 128, (nf, memory)).astype(np.int8), quantization=quant(0.01))
        bias = b.const("b", rng.standard_normal(units).astype(np.float32)) if has_bias else -1
        st_ = b.tensor("state", (batch, memory * nf), np.float32, is_variable=True)
        out = b.tensor("out", (batch, units), np.float32)
    else:
        opts["fused_activation_function"] = int_act
        x = b.input("x", (batch, n_in), np.int8, quantization=quant(0.05, int(rng.integers(-20, 20))))
        wf = b.const("wf", rng.integers(-128, 128, (nf, n_in)).astype(np.int8), quantization=quant(0.03))
        wt = b.const("wt", rng.integers(-2000, 2000, (nf, memory)).astype(np.int16), quantization=quant(3e-5))
        bias = (
            b.tensor(
                "b",
                (units,),
                np.int32,
                data=rng.integers(-5000, 5000, units).astype(np.int32),
                quantization=quant(1e-6),
            )
            if has_bias
            else -1
        )
        st_ = b.tensor("state", (batch, memory * nf), np.int16, is_variable=True, quantization=quant(0.004))
        out = b.tensor("out", (batch, units), np.int8, quantization=quant(0.3, int(rng.integers(-20, 20))))
    b.op("SVDF", [x, wf, wt, bias, st_], [out], opts)
    b.output(out)
    return b.build()


def _inputs(path, rng, steps, batch, n_in):
    if path == "svdf-integer":
        return [rng.integers(-128, 128, (batch, n_in)).astype(np.int8) for _ in range(steps)]
    xs = [rng.standard_normal((batch, n_in)).astype(np.float32) for _ in range(steps)]
    xs[min(1, steps - 1)][...] = 0  # an all-zero step (hybrid: the IsZeroVector shortcut)
    return xs


def run_stream(model: bytes, xs, reset_steps: int = 2):
    """Outputs of both runtimes for each step, then reset_all_variables and the first steps again."""
    LiteRT, R = oracle()
    outs = []
    for it in (
        Interpreter(model_content=model),
        LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=R.BUILTIN_REF),
    ):
        it.allocate_tensors()
        i_in, i_out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
        res = []
        for x in list(xs) + ["reset"] + list(xs[:reset_steps]):
            if isinstance(x, str):
                it.reset_all_variables()
                continue
            it.set_tensor(i_in, x)
            it.invoke()
            res.append(it.get_tensor(i_out).copy())
        outs.append(res)
    return outs


@pytest.mark.parametrize("path", PATHS)
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 3),
    n_in=st.integers(1, 40),
    units=st.integers(1, 5),
    rank=st.integers(1, 3),
    memory=st.integers(1, 6),
    act=st.sampled_from(sorted(ACTS)),
    has_bias=st.booleans(),
    steps=st.integers(1, 5),
)
def test_svdf_matches_oracle(path, seed, batch, n_in, units, rank, memory, act, has_bias, steps):
    rng = np.random.default_rng(seed)
    model = _model(path, rng, batch, n_in, units, rank, memory, ACTS[act], has_bias)
    xs = _inputs(path, rng, steps, batch, n_in)
    ours, theirs = run_stream(model, xs)
    kind = path.split("-")[1]
    for k, (a, b) in enumerate(zip(ours, theirs)):
        rtol = TOLERANCE[kind] * (n_in + rank * memory) * (k + 1)
        assert_close([a], [b], rtol=rtol, atol=1e-6 if kind != "integer" else 0)


def test_svdf_integer_requires_relu():
    model = _model("svdf-integer", np.random.default_rng(0), 1, 4, 2, 1, 3, 1, True, int_act=0)
    with pytest.raises(PrepareError, match="kTfLiteActRelu"):
        Interpreter(model_content=model).allocate_tensors()


def test_svdf_rank_must_divide_filters():
    b = ModelBuilder()
    x = b.input("x", (1, 3), np.float32)
    wf = b.const("wf", np.ones((4, 3), np.float32))
    wt = b.const("wt", np.ones((4, 2), np.float32))
    s = b.tensor("state", (1, 8), np.float32, is_variable=True)
    out = b.tensor("out", (1, 1), np.float32)
    b.op("SVDF", [x, wf, wt, -1, s], [out], {"rank": 3})
    b.output(out)
    with pytest.raises(PrepareError, match="num_filters % rank"):
        Interpreter(model_content=b.build()).allocate_tensors()
