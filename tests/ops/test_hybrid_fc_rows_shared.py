"""FullyConnectedHybridRows ops reading the same input (a transformer's query, key and value projections) share its
quantization (ops/hybrid_fc_rows.SharedQuantization): the first bound quantizes at every call, the others reuse its
values where the input's bytes are those it quantized. Against BUILTIN_REF bit for bit over inputs in and out of
the quantizer's bound, in turn on one interpreter; a follower run alone on changed bytes, and on other arrays,
against the general path."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.schema.builder import ModelBuilder
from tests.oracle import quant, run_litert

F32, I8 = np.float32, np.int8
ROWS, DEPTH = 5, 520  # the all-127 op: 128 * 2 * 127 * 520 > 2^24, a float64 product


def _model() -> bytes:
    """x (ROWS, DEPTH) -> four FCs on x: two plain (shared), one RELU per channel (shared), one with -128 weights
    (SSE fix columns: its own quantization), one whose product runs in float64 (another operand type: a second
    SharedQuantization); the second FC's output through a RESHAPE between them (steps in between)."""
    rng = np.random.default_rng(12)
    b = ModelBuilder()
    x = b.input("x", (ROWS, DEPTH), F32)
    outs = []
    specs = [(7, "plain", 1, 0), (6, "plain", 1, 0), (9, "plain", 9, 1), (4, "m128", 1, 0), (3, "f64", 1, 0)]
    for k, (units, kind, n, act) in enumerate(specs):
        if kind == "f64":  # the augmented product in float64
            w = np.full((units, DEPTH), 127, I8)
        else:
            w = rng.integers(-128 if kind == "m128" else -127, 128, (units, DEPTH)).astype(I8)
        if kind == "m128":
            w[:, 2] = -128
        w_q = quant(rng.uniform(0.01, 0.1, n).astype(F32), np.zeros(n, int))
        wi = b.tensor(f"w{k}", w.shape, I8, data=w, quantization=w_q)
        bi = b.tensor(f"b{k}", (units,), F32, data=rng.standard_normal(units).astype(F32))
        y = b.tensor(f"y{k}", (ROWS, units), F32)
        opts = {"fused_activation_function": act, "keep_num_dims": False, "asymmetric_quantize_inputs": True}
        b.op("FULLY_CONNECTED", [x, wi, bi], [y], opts)
        if k == 1:
            r = b.tensor("r", (ROWS * units,), F32)
            b.op("RESHAPE", [y, b.const("shape", np.array([ROWS * units], np.int32))], [r])
            y = r
        outs.append(y)
    b.output(*outs)
    return b.build()


def _inputs():
    rng = np.random.default_rng(5)
    normal = rng.standard_normal((ROWS, DEPTH)).astype(F32)
    zero_row = normal.copy()
    zero_row[2] = 0  # the quantizer declines: every op's general path
    inf = normal.copy()
    inf[1, 3] = np.inf  # (a NaN row is a listed difference: docs/litert-differences.md)
    ties = (np.round(normal * 4) / 4 + F32(0.25)).astype(F32)
    return [normal, normal.copy(), zero_row, ties, inf, (normal * F32(1e3)).astype(F32), normal]


def _rows_ops(it):
    return [
        (op, ins, outs) for op, ins, outs in it._subgraphs[0].steps if type(op).__name__ == "FullyConnectedHybridRows"
    ]


def test_rows_ops_share_the_quantization_of_one_input():
    model = _model()
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    ops = _rows_ops(it)
    assert len(ops) == 5
    bound = [op._bound for op, _, _ in ops]
    assert [b[4] for b in bound] == [True, False, False, True, True]  # leaders: the first, the SSE one, the f64 one
    assert bound[1][2] is bound[0][2] is bound[2][2] and bound[3][2] is not bound[0][2]
    assert bound[4][2] is not bound[0][2] and bound[4][2].qq.dtype == np.float64
    index = it.get_input_details()[0]["index"]
    names = [d["index"] for d in it.get_output_details()]
    for k, x in enumerate(_inputs()):
        it.set_tensor(index, x)
        it.invoke()
        theirs = run_litert(model, [x])
        for i, want in zip(names, theirs):
            got = it.get_tensor(i)
            assert np.array_equal(got.view(np.int32), want.view(np.int32)), (k, i, got, want)


def test_rows_follower_alone_on_changed_bytes_and_on_other_arrays():
    """A follower called without its leader after the input's bytes changed quantizes them itself; called on other
    arrays, it is bound to them (a SharedQuantization of their own): both equal the general path's bytes."""
    it = litert_py.Interpreter(model_content=_model())
    it.allocate_tensors()
    index = it.get_input_details()[0]["index"]
    it.set_tensor(index, _inputs()[0])
    it.invoke()
    (_, _, _), (follower, ins, outs), *_ = _rows_ops(it)
    assert follower._bound[4] is False
    ins[0][...] = _inputs()[3]  # new bytes in the bound input, the leader not run
    got = np.full_like(outs[0], np.nan)
    follower(ins, [got])  # other output array: bound anew
    want = np.full_like(outs[0], np.nan)
    follower.general(ins, [want])
    assert got.tobytes() == want.tobytes()
    follower(ins, outs)  # its bound arrays again (bound to them anew), the leader still not run
    assert outs[0].tobytes() == want.tobytes()
    x = _inputs()[5].copy()
    got, want = np.full_like(outs[0], np.nan), np.full_like(outs[0], np.nan)
    follower([x, *ins[1:]], [got])
    follower.general([x, *ins[1:]], [want])
    assert got.tobytes() == want.tobytes()


def test_a_quantization_stopped_part_way_is_not_reused():
    """The leader's quantization raising part way (a direct call under np.errstate(all="raise"): the scale's division
    underflows after the zero points are written) leaves no bytes claiming the half-written buffers: a follower on
    the earlier bytes quantizes them anew (LiteRT's values, and the general path's)."""
    model = _model()
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    x0 = _inputs()[0]
    it.set_tensor(it.get_input_details()[0]["index"], x0)
    it.invoke()
    (leader, ins, outs), (follower, fins, fouts), *_ = _rows_ops(it)
    assert leader._bound[4] and not follower._bound[4] and follower._bound[2] is leader._bound[2]
    x = ins[0]
    x[...] = x0 * F32(3) - F32(1)
    x[2] = 0.0
    x[2, 0] = 1e-44  # row 2's range / 255 underflows in float32
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        leader(ins, outs)
    x[...] = x0
    got = np.empty_like(fouts[0])
    follower(fins, [got])
    want = run_litert(model, [x0])[1].reshape(got.shape)
    assert got.tobytes() == want.tobytes()
