"""The bound small-step forms a converter-unrolled GRU's WHILE body runs (issue 16): LogisticFloatSmall (float32
LOGISTIC of at most LOGISTIC_SMALL_MAX values whose values all take the main branch), Split's and CopyReshaped's
copies as bound assignments. Each gives the bytes of the general form (LogisticFloat; the copies made at the
call) and LiteRT's values (exactly for the copies), just inside and just outside its bounds."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.activations import LOGISTIC_SMALL_MAX, LOGISTIC_UPPER, LogisticFloat, LogisticFloatSmall
from litert_py.ops.shape import CopyReshaped
from litert_py.ops.slicing import Split
from tests.compare import assert_close
from tests.ops._bound import check_bound
from tests.oracle import T, run_both, single_op_model

_RTOL = 1e-6  # float32 exp: glibc vs NumPy, an ulp or two (tests/ops/test_activations.py's logistic tolerance)


def _general(x: np.ndarray) -> np.ndarray:
    """LogisticFloat (every branch, as before the small form) on a copy of ``x``."""
    op = LogisticFloat(np.empty(x.shape, bool), np.empty(x.shape, np.float32), np.empty(x.shape, np.float64), None)
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        op((x.copy(),), (out,))
    return out


def _logistic(n: int):
    model = single_op_model("LOGISTIC", [T((1, n))], [T((1, n))])
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op, _, _), *_ = it._subgraphs[0].steps
    return model, it, op


@pytest.mark.parametrize("n", [LOGISTIC_SMALL_MAX, LOGISTIC_SMALL_MAX + 1])
def test_logistic_small_size_bound(n):
    """At the size bound the small form is taken, one value above it LogisticFloat; both give the general form's
    bytes (in-range values, then values in every branch) and LiteRT's values within the float tolerance."""
    model, it, op = _logistic(n)
    assert type(op) is (LogisticFloatSmall if n <= LOGISTIC_SMALL_MAX else LogisticFloat)
    rng = np.random.default_rng(n)
    for x in (rng.uniform(-9, 16.6, (1, n)), rng.uniform(-120, 40, (1, n))):
        x = x.astype(np.float32)
        ours, theirs = run_both(model, [x])
        np.testing.assert_array_equal(ours[0].view(np.uint32), _general(x).view(np.uint32))
        assert_close(ours, theirs, rtol_each=_RTOL)


@pytest.mark.parametrize(
    "edge",
    [
        "inside",  # exactly -9 and exactly the upper cutoff: the main branch, the small form's four passes
        "below",  # one ulp below -9: exp(x), LogisticFloat's call
        "above",  # one ulp above the upper cutoff: 1, LogisticFloat's call
        "nan",
    ],
)
def test_logistic_small_range_bound(edge, monkeypatch):
    """Just inside the main branch's range the small form's own passes run (its check leaves no value flagged),
    just outside LogisticFloat's call: the general form's bytes and LiteRT's values either way, inside two bound
    invokes (the second with other values) and on fresh copies of the arrays (tests/ops/_bound.check_bound)."""
    model, it, op = _logistic(32)
    assert type(op) is LogisticFloatSmall
    x = np.random.default_rng(3).uniform(-8, 16, (1, 32)).astype(np.float32)
    lo, hi = np.float32(-9), LOGISTIC_UPPER
    x[0, :2] = {
        "inside": (lo, hi),
        "below": (np.nextafter(lo, np.float32(-np.inf)), lo),
        "above": (hi, np.nextafter(hi, np.float32(np.inf))),
        "nan": (np.nan, hi),
    }[edge]
    general_calls = []
    general = LogisticFloat.__call__

    def counted(self, inputs, outputs):
        general_calls.append(1)
        general(self, inputs, outputs)

    monkeypatch.setattr(LogisticFloat, "__call__", counted)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    monkeypatch.undo()
    ours = it.get_tensor(it.get_output_details()[0]["index"])
    assert len(general_calls) == (edge != "inside")  # inside: the small form's own passes; else LogisticFloat's
    want = _general(x)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(ours), nan)
    np.testing.assert_array_equal(ours[~nan].view(np.uint32), want[~nan].view(np.uint32))
    theirs = run_both(model, [x])[1]
    assert_close([ours], theirs, rtol_each=_RTOL)
    if edge == "above":
        assert ours[0, 1] == 1 and ours[0, 0] < 1
    check_bound(model, x, LogisticFloatSmall)


def test_split_bound_copies():
    """A (1, 96) -> 3 x (1, 32) SPLIT (a GRU's gates) bound to its arrays: LiteRT's bytes at two invokes with
    different values (the bound slices see the new values), and the same bytes called on fresh copies."""
    model = single_op_model("SPLIT", [T.const(np.array(1, np.int32)), T((1, 96))], [T((1, 32))] * 3, {"num_splits": 3})
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op, ins, outs), *rest = it._subgraphs[0].steps
    assert not rest and type(op) is Split and op.__dict__.get("_bound") is not None
    rng = np.random.default_rng(0)
    for _ in range(2):
        x = rng.standard_normal((1, 96)).astype(np.float32)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        ours = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        theirs = run_both(model, [x])[1]
        for a, b, k in zip(ours, theirs, range(3)):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
            np.testing.assert_array_equal(a, x[:, 32 * k : 32 * (k + 1)])
        fresh = [np.empty_like(o) for o in outs]
        op([a.copy() for a in ins], fresh)  # not the bound arrays: slices made at the call
        for a, b in zip(ours, fresh):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_reshape_bound_copy():
    """A RESHAPE's copy bound to its arrays: the bytes it gives on fresh copies at two invokes (the second with
    special values), LiteRT's exactly; a non-contiguous input takes np.copyto."""
    model = single_op_model("RESHAPE", [T((2, 16)), T.const(np.array([1, 32], np.int32))], [T((1, 32))])
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    check_bound(model, x, CopyReshaped)
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0].view(np.uint32), theirs[0].view(np.uint32))


@pytest.mark.parametrize(
    ("shape", "axes"),
    [
        ((1, 32, 64), [2]),  # a layer norm's mean over the last axis: the transposed rows copied at each call
        ((64, 2, 16), [0]),  # the reduced axis leads: the rows are a view of the input
    ],
)
def test_mean_float_columns_bound(shape, axes):
    """MeanFloatColumns as a bound plan: BUILTIN_REF's bytes (sums whose order shows: wide magnitudes), the bytes
    it gives on fresh and on Fortran-ordered copies of its arrays (tests/ops/_bound.check_bound), and into a
    non-contiguous output (its sum goes to a scratch, then is copied)."""
    from litert_py.ops.reduce import MeanFloatColumns

    rng = np.random.default_rng(len(axes) + shape[0])
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-12, 12, shape))).astype(np.float32)
    out_shape = tuple(1 if k in axes else s for k, s in enumerate(shape))
    model = single_op_model("MEAN", [T(shape), T.const(np.array(axes, np.int32))], [T(out_shape)], {"keep_dims": True})
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0].view(np.uint32), theirs[0].view(np.uint32))
    check_bound(model, x, MeanFloatColumns)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    ((op, ins, _),) = it._subgraphs[0].steps
    strided = np.full((*out_shape[:-1], 2 * out_shape[-1]), 7, np.float32)[..., ::2]
    op([x, *ins[1:]], [strided])
    np.testing.assert_array_equal(strided.view(np.uint32), theirs[0].view(np.uint32))
