"""The int8 kernels' bound plans (issue 16): a prepared op's numpy calls on the arrays ops/fusion.bind_steps bound
it to, made once, as partial objects its __call__ runs in order when called with those same arrays (an identity
test per call; other arrays take its general path). Bit-identical by construction: the same calls on the same
arrays in the same order, without the views, nested Python calls and attribute reads of the general path
(ops/conv/requant.epilogue_calls, conv2d_quantized.gemm_calls, the kernels' ``bound_calls``)."""

from __future__ import annotations

from functools import partial

import numpy as np


def bound_plan(calls) -> tuple:
    """epilogue_calls-style (function, args, kwargs) triples as the partial objects a bound __call__ runs in order
    (``for call in plan: call()``: about 10 % less per call than unpacking the triples), a lone ``out`` of a
    ufunc or np.dot and np.take's ``out`` and ``mode`` passed by position (the same call; a keyword costs about
    0.1 us more per call)."""
    plan = []
    for f, a, k in calls:
        if k.keys() == {"out"} and (f is np.dot or (isinstance(f, np.ufunc) and len(a) == f.nin)):
            a, k = (*a, k["out"]), {}
        elif f is np.take and k.keys() == {"out", "mode"} and len(a) == 2:
            a, k = (*a, None, k["out"], k["mode"]), {}
        plan.append(partial(f, *a, **k))
    return tuple(plan)


class BoundCalls:
    """Mixin for a prepared op (a frozen dataclass) of one input and one output whose invoke is a fixed sequence of
    numpy calls: ``bind`` (ops/fusion.bind_steps) makes them once from ``bound_calls(x, out)`` on the bound arrays
    (views made, nested calls flattened: ``bound_plan``); ``__call__`` runs them when called with those arrays
    (an identity test), else ``general``, the op on any arrays (a delegate's fallback chain, a resized op's).
    Subclasses define ``bound_calls``; the default ``general`` binds the op to the arrays it is given and runs
    their plan (the same calls: one path, no hand copy; an op called with new arrays each time rebuilds its plan
    each time). A subclass may define its own ``general`` (the same calls in the same order: tests/ops/_bound.py
    compares the two)."""

    _bound = None  # bind's (input, output, its calls as partial objects), or None

    def bind(self, inputs, outputs) -> None:
        x, out = inputs[0], outputs[0]
        if x is not None and out is not None:
            object.__setattr__(self, "_bound", (x, out, bound_plan(self.bound_calls(x, out))))

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is not None and b[0] is inputs[0] and b[1] is outputs[0]:
            for call in b[2]:
                call()
            return
        self.general(inputs, outputs)

    def general(self, inputs, outputs):
        """The op on any arrays: bound to them (``bind``), then their plan."""
        self.bind(inputs, outputs)
        b = self._bound
        if b is None:  # an omitted input or output: nothing a bound plan could run on
            raise ValueError(f"{type(self).__name__} needs its input and output arrays")
        for call in b[2]:
            call()
