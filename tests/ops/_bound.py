"""check_bound: a one-step model's prepared op, bound to its arrays (``bind``, called by ops/fusion.bind_steps), gives
inside invokes the bytes it gives called on fresh copies of those arrays (``on_copies``: bound to the copies, then
their plan; one path since issue 16, so this compares the plan made once at prepare with one made on new arrays:
a plan that does not see its arrays' new values, or that depends on which arrays it was made on, shows)."""

from __future__ import annotations

import numpy as np

from litert_py import Interpreter

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.0e38, -3.0e38, 1.0e-45], np.float32)


def _with_specials(x: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = x.copy()
    mask = rng.random(y.shape) < 0.2
    y[mask] = rng.choice(SPECIAL, int(mask.sum()))
    return y


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """The same bytes, except that a NaN may be any NaN (its sign and payload are not defined by LiteRT, and numpy
    1.x's einsum gives a NaN product of inf and 0 a sign that depends on the operands' alignment): NaN at the same
    places, every other float bit for bit (-0.0 is not 0.0)."""
    if a.dtype.kind != "f":
        return np.array_equal(a.view(np.uint8), b.view(np.uint8))
    nan = np.isnan(a)
    return np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(np.uint8), b[~nan].view(np.uint8))


def on_copies(op, ins, out: np.ndarray) -> None:
    """``op`` called on fresh copies of ``ins`` into ``out`` (bound to them: ops/bound_plan.BoundCalls.general),
    then given back the plan it had (so that the next invoke runs the plan bind_steps made, not a new one)."""
    bound = op.__dict__.get("_bound")
    op([None if a is None else a.copy() for a in ins], [out])
    object.__setattr__(op, "_bound", bound)


def check_bound(model: bytes, x, kind: type) -> None:
    """The single step of ``model`` is a bound ``kind``; two invokes (the second with special values in the
    first input) give the bits the same op gives called on fresh copies of its arrays (``on_copies``). ``x``: the
    first input's values, or the values of every input."""
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op, ins, outs), *rest = it._subgraphs[0].steps
    assert not rest and type(op) is kind
    assert op.__dict__.get("_bound") is not None  # the bound plan is taken inside invokes
    feeds = list(x) if isinstance(x, (list, tuple)) else [x]
    first = feeds[0]
    details = it.get_input_details()
    # the second invoke: special values (float), else the values moved by 7 places (a new input at any shape)
    moved = np.roll(first.reshape(-1), 7).reshape(first.shape)
    second = _with_specials(first, 1) if first.dtype == np.float32 else moved
    for k, value in enumerate((first, second)):
        for d, feed in zip(details, [value, *feeds[1:]]):
            it.set_tensor(d["index"], feed)
        with np.errstate(all="ignore"):
            it.invoke()
            fresh = np.empty_like(outs[0])
            on_copies(op, ins, fresh)  # not the bound arrays: bound to the copies
        ours = it.get_tensor(it.get_output_details()[0]["index"])
        assert same_bits(ours, fresh), f"invoke {k}"
    k = next(j for j, a in enumerate(ins) if a is it._subgraphs[0].tensors[details[0]["index"]])
    check_non_contiguous(op, ins, outs[0], k, (first, moved))


def check_non_contiguous(op, ins, out: np.ndarray, k: int, values) -> None:
    """``op`` called on Fortran-ordered (not C-contiguous) copies of ``ins``, twice on the same arrays with input
    ``k`` rewritten in place in between (``values``), gives at the second call the bytes it gives on C-contiguous
    copies: a plan that binds a copy its view of a non-contiguous array would be (a reshape merging axes) reads
    the first call's values. The op gets its plan back after."""
    bound = op.__dict__.get("_bound")
    xs = [None if a is None else np.asfortranarray(a) for a in ins]
    got, expected = np.empty_like(out), np.empty_like(out)
    with np.errstate(all="ignore"):
        for v in values:
            xs[k][...] = v
            op(xs, [got])
        op([None if a is None else np.ascontiguousarray(a) for a in xs], [expected])
    object.__setattr__(op, "_bound", bound)
    assert same_bits(got, expected), "non-contiguous input, second call"
