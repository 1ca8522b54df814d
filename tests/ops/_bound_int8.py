"""The int8 kernels' bound plans (``bind``, called by ops/fusion.bind_steps: the step's numpy calls on its bound
arrays, made once as partial objects (ops/bound_plan.py), the last item of ``_bound``): tests/ops/_bound.check_bound
on 8-bit inputs holding both extremes and random values, and check_each_call_needed, which removes each call of
the plan in turn and asserts the invoke then differs from the op bound to fresh copies of its inputs (its full
plan on other arrays: so the equality checks can fail: a call missing from a plan, or a plan that does not see a
new input, shows)."""

from __future__ import annotations

import numpy as np

from litert_py import Interpreter
from litert_py.errors import InvokeError
from litert_py.ops.common import clip_ufunc
from tests.ops._bound import check_bound, on_copies


def int8_values(shape, dtype, seed: int, extremes: float = 0.2) -> np.ndarray:
    """Random values of the 8-bit ``dtype``, a share ``extremes`` of them its minimum or maximum."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, shape)
    mask = rng.random(shape) < extremes
    x[mask] = rng.choice([info.min, info.max], int(mask.sum()))
    return x.astype(dtype)


def feeds_of(model: bytes, seed: int = 0, extremes: float = 0.2) -> list:
    """int8_values for every input of ``model``."""
    details = Interpreter(model_content=model).get_input_details()
    return [int8_values(tuple(d["shape"]), d["dtype"], seed + k, extremes) for k, d in enumerate(details)]


def check_bound_int8(model: bytes, kind: type, exempt=None) -> None:
    """The single step of ``model`` is a bound ``kind`` whose invokes give the bytes of the op bound to fresh copies
    (check_bound, extremes and random values), and every call of its plan is needed (check_each_call_needed,
    ``exempt``)."""
    check_bound(model, feeds_of(model), kind)
    check_each_call_needed(model, exempt)


#: the input draws of check_each_call_needed: (seed offset, share of extreme values); mostly extremes make large
#: sums, which the activation's clip then bounds
DRAWS = ((1, 0.2), (2, 0.9), (3, 0.5), (4, 1.0))


def check_each_call_needed(model: bytes, exempt=None) -> None:
    """With each call of the single step's bound plan removed in turn, the invoke leaves the output or some array
    the plan's calls touch (its scratch: a sign term, an index buffer) different from what the op's full plan on
    fresh copies of the same inputs leaves there (``on_copies``, which gives the op back its shortened plan), on
    one of the DRAWS (new inputs each time, so stale values show). ``exempt``: None, or a function of (op, calls)
    giving the indices of calls not required to show, each for a stated reason (the sign term's add of
    2^-(rs+1), which changes results only on exact rounding ties, rare among a few hundred random values; a clip
    to the output type's range that a layer without activation does not reach). An invoke that fails without the
    call shows it too (its values index tables: the classifier tail's softmax)."""
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    ((op, ins, outs),) = it._subgraphs[0].steps
    bound = op.__dict__["_bound"]
    calls = bound[-1]
    assert len(calls) >= 1
    excused = () if exempt is None else exempt(op, calls)
    touched = {id(a): a for c in calls for a in (*c.args, *c.keywords.values()) if isinstance(a, np.ndarray)}
    arrays = [outs[0], *touched.values()]
    details = it.get_input_details()
    for i in range(len(calls)):
        object.__setattr__(op, "_bound", (*bound[:-1], calls[:i] + calls[i + 1 :]))
        shown = False
        for seed, extremes in DRAWS:
            for d, feed in zip(details, feeds_of(model, 10 * (i + 1) + seed, extremes)):
                it.set_tensor(d["index"], feed)
            try:
                it.invoke()
            except InvokeError:  # the values the call makes are indices (a softmax's table rows): a failure shows
                shown = True
                break
            after_bound = [a.copy() for a in arrays]
            on_copies(op, ins, outs[0])  # other input arrays: the full plan made on them
            if not all(a.tobytes() == b.tobytes() for a, b in zip(after_bound, arrays)):
                shown = True
                break
        name = getattr(calls[i].func, "__name__", calls[i].func)
        assert shown or i in excused, f"call {i} ({name}) removed: nothing differs"
    object.__setattr__(op, "_bound", bound)


def sign_add(op, calls) -> tuple:
    """check_each_call_needed's ``exempt``: the adds of the epilogues' sign terms (``np.add(v, sign, out=v)``, the
    op's epilogue and a fused pair's conv epilogue)."""
    signs = [getattr(e, "sign", None) for e in (getattr(op, "epilogue", None), getattr(op, "conv_epilogue", None))]
    signs = [a for a in signs if a is not None]
    return tuple(i for i, c in enumerate(calls) if c.func is np.add and any(c.args[1] is s for s in signs))


def last_clip(op, calls) -> tuple:
    """check_each_call_needed's ``exempt``: the last clip of the plan (a pointwise conv's clip to its output type's
    range, in a layer without activation whose outputs stay well inside it)."""
    return (max(i for i, c in enumerate(calls) if c.func is clip_ufunc),)
