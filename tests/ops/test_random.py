"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL, MULTINOMIAL against the oracle (ai-edge-litert BUILTIN_REF).

With nonzero seeds LiteRT is deterministic (Philox4x32-10): the same numbers are required over several
consecutive invokes of one interpreter (the generator state advances across invokes; a new
allocate_tensors re-seeds). seed == seed2 == 0 draws random seeds: only shape, dtype and range are checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.oracle import T, oracle, single_op_model

#: Allowed difference in float32 ulps (of the reference value, or 1e-6 absolute near 0): uniform is exact bit
#: manipulation; Box-Muller's logf/sinf/cosf in LiteRT are not correctly rounded: about 1.4% of outputs differ
#: by 1-2 ulps from the correctly rounded ones (measured max 2 over 40000 draws); 4 allowed.
ULPS = {"RANDOM_UNIFORM": 0, "RANDOM_STANDARD_NORMAL": 4, "MULTINOMIAL": 0}
INVOKES = 3

SEEDS = st.tuples(st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1)).filter(
    lambda s: (s[0] & 0xFFFFFFFF, s[1] & 0xFFFFFFFF) != (0, 0))  # LiteRT keeps the low 32 bits; (0, 0) is random


def _invokes(it, inputs, n=INVOKES):
    it.allocate_tensors()
    res = []
    for _ in range(n):
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], np.asarray(x))
        it.invoke()
        res.append([it.get_tensor(d["index"]).copy() for d in it.get_output_details()])
    return res


def _pair(model):
    LiteRT, OpResolverType = oracle()
    theirs = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    return Interpreter(model_content=model), theirs


def run_both_invokes(model, inputs, n=INVOKES):
    ours, theirs = _pair(model)
    return _invokes(ours, inputs, n), _invokes(theirs, inputs, n)


def assert_ulps(ours, theirs, ulps):
    for x, y in zip(ours, theirs):
        for a, b in zip(x, y):
            assert a.shape == b.shape and a.dtype == b.dtype
            if a.dtype.kind == "f" and ulps:
                ok = np.abs(a - b) <= np.maximum(ulps * np.spacing(np.abs(b)), np.float32(1e-6))
                assert np.all(ok), f"{a[~ok]} != {b[~ok]}"
            else:
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("op", ["RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL"])
@given(seeds=SEEDS, shape=st.lists(st.integers(1, 7), min_size=0, max_size=3), const=st.booleans())
def test_random_float32(op, seeds, shape, const):
    shp = np.array(shape, np.int32)
    inp = T.const(shp) if const else T((len(shape),), np.int32)
    model = single_op_model(op, [inp], [T(tuple(shape), np.float32)], {"seed": seeds[0], "seed2": seeds[1]})
    ours, theirs = run_both_invokes(model, [] if const else [shp])
    assert_ulps(ours, theirs, ULPS[op])


@pytest.mark.parametrize("op", ["RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL"])
def test_random_float32_large(op):
    """Many Box-Muller pairs (incl. u1 near 0 clamps) and several invokes."""
    model = single_op_model(op, [T.const(np.array([1001], np.int32))], [T((1001,), np.float32)],
                            {"seed": 12345, "seed2": 678})
    ours, theirs = run_both_invokes(model, [], n=5)
    assert_ulps(ours, theirs, ULPS[op])


@given(seeds=SEEDS, batch=st.integers(1, 4), classes=st.integers(1, 6), n=st.integers(1, 9),
       out=st.sampled_from([np.int32, np.int64]), const=st.booleans(), vseed=st.integers(0, 2**31 - 1),
       special=st.booleans())
def test_multinomial(seeds, batch, classes, n, out, const, vseed, special):
    # n >= 1: the oracle's get_tensor fails ("Invalid tensor size") on an empty output
    logits = (np.random.default_rng(vseed).standard_normal((batch, classes)) * 3).astype(np.float32)
    if special:  # non-finite logits count as probability 0
        logits.reshape(-1)[:: 3] = np.float32(-np.inf)
    ns = np.array(n, np.int32)
    inputs = [T((batch, classes), np.float32), T.const(ns) if const else T((), np.int32)]
    model = single_op_model("MULTINOMIAL", inputs, [T((batch, n), out)], {"seed": seeds[0], "seed2": seeds[1]})
    ours, theirs = run_both_invokes(model, [logits] if const else [logits, ns])
    assert_ulps(ours, theirs, 0)


@pytest.mark.parametrize("op", ["RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL", "MULTINOMIAL"])
def test_seed_zero_shape_dtype_range(op):
    if op == "MULTINOMIAL":
        model = single_op_model(op, [T.const(np.zeros((3, 4), np.float32)), T.const(np.array(50, np.int32))],
                                [T((3, 50), np.int64)], {"seed": 0, "seed2": 0})
    else:
        model = single_op_model(op, [T.const(np.array([40, 5], np.int32))], [T((40, 5), np.float32)],
                                {"seed": 0, "seed2": 0})
    ours, theirs = run_both_invokes(model, [], n=2)
    for (a,), (b,) in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        if op == "RANDOM_UNIFORM":
            assert a.min() >= 0 and a.max() < 1
        elif op == "MULTINOMIAL":
            assert a.min() >= 0 and a.max() < 4
        else:
            assert np.all(np.isfinite(a)) and abs(a.mean()) < 0.5
    assert not np.array_equal(ours[0][0], ours[1][0])  # the state advances


@pytest.mark.parametrize("case", [
    ("RANDOM_UNIFORM", [T.const(np.array([2, 3], np.int64))], [T((2, 3), np.float32)]),
    ("RANDOM_UNIFORM", [T.const(np.array([[2, 3]], np.int32))], [T((2, 3), np.float32)]),
    ("RANDOM_STANDARD_NORMAL", [T.const(np.array([2], np.int32))], [T((2,), np.int32)]),
    ("MULTINOMIAL", [T((2, 3), np.int32), T.const(np.array(2, np.int32))], [T((2, 2), np.int64)]),
    ("MULTINOMIAL", [T((2, 3), np.float32), T.const(np.array(2, np.int64))], [T((2, 2), np.int64)]),
    ("MULTINOMIAL", [T((2, 3), np.float32), T.const(np.array(2, np.int32))], [T((2, 2), np.float32)]),
], ids=["uniform-int64-shape", "uniform-2d-shape", "normal-int32-out", "multinomial-int32-logits",
        "multinomial-int64-num", "multinomial-float-out"])
def test_rejected(case):
    op, inputs, outputs = case
    model = single_op_model(op, inputs, outputs, {"seed": 1, "seed2": 2})
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()


def test_reseeded_when_prepared_again():
    """A resize to a new shape re-runs prepare, which re-seeds the generator (LiteRT's InitializeOpData)."""
    model = single_op_model("MULTINOMIAL", [T((1, 3), np.float32), T.const(np.array(4, np.int32))],
                            [T((1, 4), np.int64)], {"seed": 3, "seed2": 9})
    res = []
    for it in _pair(model):
        i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
        it.allocate_tensors()
        r = []
        for shp in ([1, 3], [2, 3], [1, 3]):
            if list(it.get_input_details()[0]["shape"]) != shp:
                it.resize_tensor_input(i, shp)
                it.allocate_tensors()
            for _ in range(2):
                it.set_tensor(i, np.linspace(-1, 1, int(np.prod(shp)), dtype=np.float32).reshape(shp))
                it.invoke()
                r.append(it.get_tensor(o).copy())
        res.append(r)
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


def test_allocate_twice_does_not_reseed():
    """LiteRT's AllocateTensors does nothing when nothing changed, so the generator's draws continue."""
    model = single_op_model("MULTINOMIAL", [T.const(np.log(np.full((1, 3), 1 / 3, np.float32))),
                                            T.const(np.array(2, np.int32))],
                            [T((1, 2), np.int32)], {"seed": 0, "seed2": 1})
    runs = []
    for I in (oracle()[0], Interpreter):
        it = I(model_content=model)
        outs = []
        for _ in range(3):
            it.allocate_tensors()
            it.invoke()
            outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
        runs.append(np.array(outs))
    np.testing.assert_array_equal(runs[1], runs[0])
