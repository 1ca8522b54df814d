"""Consecutive one-row hybrid FULLY_CONNECTED layers as one BoundChain (hybrid_fc.FullyConnectedHybridRow.chain_calls):
a layer reading a RELU / RELU6 layer's output runs its nonneg plan (the row's scalars as numpy calls, no Python),
checked after the chain (``chain_check``); a row the plan does not cover (zeros, tiny, inf) runs the op's own call.

Each case: three layers, the middle one's bias a hostile row and its weights zero, so the last layer's input is
``relu(hostile row)`` exactly (zeros, denormals, the edges of NONNEG_MAX_MIN and SYM_R_MIN, FLT_MAX, inf, ties).
Outputs against BUILTIN_REF bit for bit and against the unfused graph (experimental_preserve_all_tensors) byte for
byte, over several invokes of one interpreter (a fallback, then the plan again)."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.ops.bound_chain import BoundChain
from litert_py.quant.hybrid import FLT_MAX, NONNEG_MAX_MIN, SYM_R_MIN
from litert_py.schema.builder import ModelBuilder
from tests.oracle import quant, run_litert
from tests.quant.test_row_scalars import hostile_rows

F32, I8 = np.float32, np.int8
DEPTH, MID, UNITS = 19, 13, 6  # MID: the last layer's depth (a roundf tail: 13 % 8)


def _model(asym: bool, mid_bias: np.ndarray, last_weights: str, per_channel: bool, act: int) -> bytes:
    """x (1, DEPTH) -> FC RELU (DEPTH -> MID) -> FC ``act`` (MID -> MID, zero weights, bias ``mid_bias``) -> FC NONE
    (MID -> UNITS; ``last_weights`` "plain" or "m128": -128 weights, the SSE fix, not shifted)."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.input("x", (1, DEPTH), F32)
    opts = {"keep_num_dims": False, "asymmetric_quantize_inputs": asym}
    layers = [
        (rng.integers(-127, 128, (MID, DEPTH)).astype(I8), rng.standard_normal(MID).astype(F32), 1),
        (np.zeros((MID, MID), I8), mid_bias.astype(F32), act),
        (rng.integers(-128 if last_weights == "m128" else -127, 128, (UNITS, MID)).astype(I8), None, 0),
    ]
    if last_weights == "m128":
        layers[2][0][:, 0] = -128
    for k, (w, bias, code) in enumerate(layers):
        n = w.shape[0] if per_channel else 1
        w_q = quant(rng.uniform(0.001, 0.1, n).astype(F32), np.zeros(n, int))
        wi = b.tensor(f"w{k}", w.shape, I8, data=w, quantization=w_q)
        bi = -1 if bias is None else b.tensor(f"b{k}", bias.shape, F32, data=bias)
        y = b.tensor(f"y{k}", (1, w.shape[0]), F32)
        b.op("FULLY_CONNECTED", [x, wi, bi], [y], {**opts, "fused_activation_function": code})
        x = y
    b.output(x)
    return b.build()


def _interpreter(model: bytes, **kw):
    it = litert_py.Interpreter(model_content=model, **kw)
    it.allocate_tensors()
    return it


def _invoke(it, x: np.ndarray) -> np.ndarray:
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


NAMES = list(hostile_rows(MID))


@pytest.mark.parametrize("act", [1, 3], ids=["RELU", "RELU6"])
@pytest.mark.parametrize(
    "asym, last_weights, per_channel",
    [(True, "plain", True), (True, "m128", False), (False, "plain", False), (False, "m128", True)],
    ids=["asym-shifted-per-channel", "asym-sse-fix", "sym", "sym-sse-fix-per-channel"],
)
def test_hybrid_fc_chain_on_hostile_rows(asym, last_weights, per_channel, act):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, DEPTH)).astype(F32)
    lo = NONNEG_MAX_MIN if asym else SYM_R_MIN
    planned = set()
    for name, mid_bias in hostile_rows(MID).items():
        model = _model(asym, mid_bias, last_weights, per_channel, act)
        it = _interpreter(model)
        ((chain, _, _),) = it._subgraphs[0].steps
        assert type(chain) is BoundChain and [op._chain_nonneg for op in chain.ops] == [False, True, True]
        reference = _interpreter(model, experimental_preserve_all_tensors=True)  # unfused: each op's own call
        relu = np.fmax(mid_bias if act == 1 else np.minimum(mid_bias, F32(6)), F32(0))  # ApplyRelu*: NaN gives 0
        (theirs,) = run_litert(model, [x])
        (_, check), (_, last) = chain._bound[2][1]  # the last layer's check: whether its nonneg plan gave its result
        for k in range(3):  # after a fallback the members one by one
            ours = _invoke(it, x)
            assert ours.tobytes() == _invoke(reference, x).tobytes(), (name, k)
            assert np.array_equal(ours.view(np.int32), theirs.view(np.int32)), (name, ours, theirs)
        top = float(relu.max())  # the row's max within the bound
        assert last() == (lo <= top <= FLT_MAX), name
        assert (chain._bound[2] is None) == (not last()), name
        if last():
            planned.add(name)
    assert {"positive", "asym-ties-nonneg", "sym-ties-nonneg", "flt-max", "normal"} <= planned
    assert not {"zeros", "denormal-positive", "nonneg-max-min-below"} & planned
    assert ("inf-positive" in planned) == (act == 3)  # RELU6 clamps inf to 6
    assert ("nonneg-max-min-above" in planned) == asym and ("sym-r-min-below" in planned) == asym


def test_hybrid_fc_chain_member_without_relu_input_runs_its_own_call():
    """A layer after one without RELU (its row may be signed) runs its own call in the chain (no check); a chain
    called on other arrays calls its members (their unbound paths): both equal the unfused graph's bytes."""
    rng = np.random.default_rng(4)
    model = _model(True, rng.standard_normal(MID).astype(F32), "plain", False, 0)
    it = _interpreter(model)
    ((chain, ins, outs),) = it._subgraphs[0].steps
    assert [op._chain_nonneg for op in chain.ops] == [False, True, False]
    assert [i for i, _ in chain._bound[2][1]] == [1]
    reference = _interpreter(model, experimental_preserve_all_tensors=True)
    for _ in range(3):
        x = rng.standard_normal((1, DEPTH)).astype(F32)
        assert _invoke(it, x).tobytes() == _invoke(reference, x).tobytes()
    other_ins = [None if a is None else a.copy() for a in ins]
    other_outs = [np.full_like(a, np.nan) for a in outs]
    with np.errstate(all="ignore"):
        chain(other_ins, other_outs)
    assert other_outs[-1].tobytes() == _invoke(reference, ins[0].copy()).tobytes()
