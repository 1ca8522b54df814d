"""Bound plans (issue 16): a prepared op's numpy calls on the arrays ops/fusion.bind_steps bound it to, made once,
as partial objects its __call__ runs in order when called with those same arrays (an identity test per call;
other arrays are bound the same way first, then run: one path). The kernels list their calls once
(``bound_calls``, ops/conv/requant.epilogue_calls, im2col.gemm_calls): views made at bind, no nested Python
calls or attribute reads per invoke."""

from __future__ import annotations

from functools import partial

import numpy as np

from .common import dot_impl

#: ufuncs whose ``out`` stays a keyword (numpy 2 deprecates a positional out of np.maximum and np.minimum)
_OUT_KEYWORD = (np.maximum, np.minimum)


def bound_plan(calls) -> tuple:
    """epilogue_calls-style (function, args, kwargs) triples as the partial objects a bound __call__ runs in order
    (``for call in plan: call()``: about 10 % less per call than unpacking the triples), a lone ``out`` of a
    ufunc or np.dot and np.take's ``out`` and ``mode`` passed by position (the same call; a keyword costs about
    0.1 us more per call); np.take as the table's own ``take`` method and np.dot as its C implementation
    (common.dot_impl): the same C calls without numpy's Python wrapper and dispatch (about 1-4 us per call inside
    an invoke)."""
    plan = []
    for f, a, k in calls:
        if k.keys() == {"out"} and (
            f is np.dot or (isinstance(f, np.ufunc) and len(a) == f.nin and f not in _OUT_KEYWORD)
        ):
            a, k = (*a, k["out"]), {}
        elif f is np.take and k.keys() == {"out", "mode"} and len(a) == 2 and type(a[0]) is np.ndarray:
            f, a, k = a[0].take, (a[1], None, k["out"], k["mode"]), {}  # np.take's own call, without its wrapper
        if f is np.dot:
            f = dot_impl  # the same C function, without the array-function dispatch
        plan.append(partial(f, *a, **k))
    return tuple(plan)


def run_calls(calls) -> None:
    """(function, args, kwargs) triples run at once, in order: a kernel's listed calls on arrays that change at
    every call (no plan worth binding), the same calls a bound plan makes."""
    for f, a, k in calls:
        f(*a, **k)


class BoundCalls:
    """Mixin for a prepared op (a frozen dataclass) whose invoke is a fixed sequence of numpy calls on its first
    ``bound_inputs`` inputs and its output: ``bind`` (ops/fusion.bind_steps) makes them once from
    ``bound_calls(*inputs, out)`` on the bound arrays (views made, nested calls flattened: ``bound_plan``);
    ``__call__`` runs them when called with those arrays (an identity test per array), else ``general``, which
    binds the op to the arrays it is given and runs their plan (a delegate's fallback chain, a deferred
    subgraph's op called with new arrays). One path: subclasses define only ``bound_calls``, which must cover
    every case the op meets (other shapes, layouts, a constant read at each call). An op called with new arrays
    each time rebuilds its plan each time. This class tests one input (``inputs[0]``); `BoundCalls2` two,
    `BoundCalls3` three (their __call__ differs only in the identity test)."""

    bound_inputs = 1  # the inputs the plan reads (the first ones), each identity-tested per call
    _bound = None  # bind's (the bound inputs, the output, their plan as partial objects), or None

    def bind(self, inputs, outputs) -> None:
        arrays = (*inputs[: self.bound_inputs], outputs[0])
        bound = None
        if len(arrays) == self.bound_inputs + 1 and all(a is not None for a in arrays):
            bound = (*arrays, bound_plan(self.bound_calls(*arrays)))
        object.__setattr__(self, "_bound", bound)

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is not None and b[0] is inputs[0] and b[1] is outputs[0]:
            for call in b[2]:
                call()
            return
        self.general(inputs, outputs)

    def general(self, inputs, outputs):
        """The op on any arrays: bound to them (``bind``), then their plan; arrays that are new objects over the
        bound ones' very memory (``same_layout``: e.g. a view of its input a deferred subgraph's dynamic op
        makes anew at each invoke) keep the plan, which reads and writes that memory (about 1 us per array
        instead of a new plan: a float conv's takes about 10 us). An output that is not C-contiguous (a direct
        call's strided view) is written through a contiguous buffer: plans reshape their output, which makes a
        copy of such an array, and the values would be lost."""
        out = outputs[0]
        if out is not None and not out.flags.c_contiguous:
            buffer = np.empty(out.shape, out.dtype)
            self.general(inputs, [buffer, *outputs[1:]])
            np.copyto(out, buffer)
            return
        b = self._bound
        arrays = (*inputs[: self.bound_inputs], outputs[0])
        if b is not None and len(arrays) == len(b) - 1 and all(map(same_layout, arrays, b)):
            object.__setattr__(self, "_bound", (*arrays, b[-1]))  # the new objects: the identity test hits next
        else:
            self.bind(inputs, outputs)
            b = self._bound
            if b is None:  # an omitted input or output: nothing a bound plan could run on
                raise ValueError(f"{type(self).__name__} needs its input and output arrays")
        for call in b[-1]:
            call()


def same_layout(a: np.ndarray | None, b: np.ndarray) -> bool:
    """``a`` is ``b``, or an array over the same memory with the same dtype, shape and strides (a view made anew
    of the same bytes: whatever reads or writes ``b``'s memory through views of ``b`` reads or writes ``a``'s)."""
    if a is b:
        return True
    return (
        a is not None
        and a.shape == b.shape
        and a.strides == b.strides
        and a.dtype == b.dtype
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )


class BoundCalls2(BoundCalls):
    """BoundCalls over two inputs (``bound_calls(a, b, out)``): the 8-bit tables, the channel-row arithmetic."""

    bound_inputs = 2

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is not None and b[0] is inputs[0] and b[1] is inputs[1] and b[2] is outputs[0]:
            for call in b[3]:
                call()
            return
        self.general(inputs, outputs)


class BoundCalls3(BoundCalls):
    """BoundCalls over three inputs (``bound_calls(a, b, c, out)``): conv2d.ConvFloat (a filter or bias input
    that is not constant is read through views of it made at bind), padding.PadValueInput (its pad value)."""

    bound_inputs = 3

    def __call__(self, inputs, outputs):
        b = self._bound
        if b is not None and b[0] is inputs[0] and b[1] is inputs[1] and b[2] is inputs[2] and b[3] is outputs[0]:
            for call in b[4]:
                call()
            return
        self.general(inputs, outputs)


def contiguous_source(x: np.ndarray, calls: list) -> np.ndarray:
    """``x`` when it is C-contiguous (a reshape of it, made once, is a view that sees its new values), else a
    C-contiguous array of its shape that a call appended to ``calls`` (to run first) refreshes from ``x`` at each
    call: the same values (the runtime's tensors are always C-contiguous; an array a caller passes may not be)."""
    if x.flags.c_contiguous:
        return x
    copy = np.empty(x.shape, x.dtype)
    calls.append((np.copyto, (copy, x), {}))
    return copy
