"""A float32 ADD / SUB / MUL / DIV whose only reader is LOGISTIC or TANH runs as one fused step
(activations.ArithmeticThenActivation, through elementwise.Arithmetic.feeding and slice_views.fuse_feeding), which
skips the arithmetic's clamp to the float32 range: its outputs equal the unfused pair's (every step run:
experimental_preserve_all_tensors) bit for bit, NaN payloads included, on sums and products that overflow to
+-inf, NaN, -0.0, denormals and values at LOGISTIC's cutoffs; a fused RELU-type clamp is kept. The intermediate
with a second reader, or kept as a model output, is not fused. Against BUILTIN_REF within test_activations.py's
tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import run_litert

F32 = np.float32
#: operand values: overflowing sums and products, NaN, infinities, signed zeros, denormals, LOGISTIC's cutoffs
VALUES = np.array(
    [3e38, -3e38, 2e38, np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-45, -1e-40, -9.0, -9.5, 16.619047, 16.625, 87.5]
    + [-104.5, 0.5, -2.0, 1e-20, 1e20],
    F32,
)
UFUNCS = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide}
OPS = tuple(UFUNCS)


def _model(op: str, act: str, shapes: tuple, fused_act: int, extra_reader: bool = False, keep: bool = False):
    b = ModelBuilder()
    a, c = b.input("a", shapes[0], F32), b.input("b", shapes[1], F32)
    out_shape = np.broadcast_shapes(*shapes)
    t = b.tensor("t", out_shape, F32)
    y = b.tensor("y", out_shape, F32)
    b.op(op, [a, c], [t], {"fused_activation_function": fused_act})
    b.op(act, [t], [y])
    outs = [y]
    if extra_reader:  # a second reader of the intermediate
        z = b.tensor("z", out_shape, F32)
        b.op("NEG", [t], [z])
        outs.append(z)
    if keep:
        outs.append(t)
    b.output(*outs)
    return b.build()


def _run(model: bytes, feeds, **kw):
    it = litert_py.Interpreter(model_content=model, **kw)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], x)
    it.invoke()
    names = [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]
    return names, [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def _feeds(rng, shapes):
    """Every pair of VALUES where the shapes allow, the rest random."""
    a = rng.choice(VALUES, shapes[0]).astype(F32)
    b = rng.choice(VALUES, shapes[1]).astype(F32)
    if shapes[0] == shapes[1] and a.size >= VALUES.size**2:
        pairs = np.stack(np.meshgrid(VALUES, VALUES)).reshape(2, -1)
        a.reshape(-1)[: pairs.shape[1]], b.reshape(-1)[: pairs.shape[1]] = pairs
    return [a, b]


CASES = [(op, act, fa) for op in OPS for act in ("LOGISTIC", "TANH") for fa in (0, 1, 3)]  # NONE, RELU, RELU6
SHAPES = [((1, 400), (1, 400)), ((4, 1, 5), (3, 1)), ((1, 32), ())]


@pytest.mark.parametrize("op,act,fused_act", CASES, ids=[f"{o.lower()}-{a.lower()}-act{f}" for o, a, f in CASES])
def test_fused_equals_unfused_and_litert(op, act, fused_act):
    rng = np.random.default_rng(len(op) + 7 * fused_act + len(act))
    for shapes in SHAPES:
        model = _model(op, act, shapes, fused_act)
        feeds = _feeds(rng, shapes)
        names, (fused,) = _run(model, feeds)
        unfused_names, (unfused,) = _run(model, feeds, experimental_preserve_all_tensors=True)
        assert names == ["ArithmeticThenActivation"], names
        assert len(unfused_names) == 2, unfused_names
        assert fused.dtype == unfused.dtype == F32 and fused.shape == unfused.shape
        assert np.array_equal(fused.view(np.uint32), unfused.view(np.uint32)), (fused, unfused)
        if shapes == SHAPES[0]:  # every pair of VALUES: results that overflow to +-inf, and NaN
            with np.errstate(all="ignore"):
                raw = UFUNCS[op](*feeds)
            assert np.isinf(raw[np.isfinite(feeds[0]) & np.isfinite(feeds[1])]).any() and np.isnan(fused).any()
        (lit,) = run_litert(model, feeds, "BUILTIN_REF")
        assert_close([fused], [lit], rtol_each=1e-6, atol=0.0)


@pytest.mark.parametrize("extra_reader,keep", [(True, False), (False, True)], ids=["two-readers", "kept-output"])
def test_not_fused_when_the_intermediate_is_used_elsewhere(extra_reader, keep):
    model = _model("ADD", "LOGISTIC", SHAPES[0], 0, extra_reader, keep)
    feeds = _feeds(np.random.default_rng(3), SHAPES[0])
    names, outs = _run(model, feeds)
    assert "ArithmeticThenActivation" not in names, names
    (lit_outs) = run_litert(model, feeds, "BUILTIN_REF")
    assert_close(outs, lit_outs, rtol_each=1e-6, atol=0.0)
    with np.errstate(all="ignore"):
        assert np.isinf(feeds[0] + feeds[1]).any() and not np.isinf(outs[-1]).any()  # the intermediate is clamped
