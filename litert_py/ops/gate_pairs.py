"""Sibling gates as one step, fused at prepare (issue 16): two float32 arithmetic -> LOGISTIC steps
(activations.ArithmeticThenActivation over LogisticFloatSmall, made by ops/slice_views.fuse_feeding) whose operands
are views of the same two tensors, the second's slices continuing the first's along the last axis (a
converter-unrolled Keras GRU's update and reset gates in its WHILE body: ``LOGISTIC(x[:, 0:n] + h[:, 0:n])`` and
``LOGISTIC(x[:, n:2n] + h[:, n:2n])``, x and h the two FULLY_CONNECTED outputs the SPLITs were read from).

:func:`fuse_logistic_pairs` makes them one :class:`LogisticPair` step at the first one's place: the arithmetic and
the LOGISTIC over the union of the slices (one ArithmeticThenActivation of the union's shape, its own scratches),
then each output assigned from its part of the result: 10 numpy calls instead of 16, one step instead of two.

Exact: the ufunc is elementwise, so each value of the union is the one the separate step computes from the same
two operand values (the same bits; only which NaN propagates where both operands are NaN may differ on numpy 1.x,
as for every view-reading step: activations.ArithmeticThenActivation); LogisticFloat computes each value from its
own value and branch only (its docstring), and LogisticFloatSmall gives LogisticFloat's bytes on the values that
take the main branch and runs LogisticFloat itself otherwise, so every value gets the bytes of its own step,
whichever path the union or either half takes; numpy's float32 ufunc loops compute each lane alike wherever it
lies in the array. Moving the second step up to the first's place is sound: it reads only the tensors the first
reads (written before it, once), and its output is read only after its own old place.

Conditions (checked here, else the steps stay): both steps are ArithmeticThenActivation with a LogisticFloatSmall,
the same ufunc and clamp, both operands read as views (``indices``) of the same two source tensors; per operand
the two views are the same slices but on the last axis, where they are step-1 ranges [s, m) and [m, e); each view
has its step's output shape (no broadcasting); the union has at most activations.LOGISTIC_SMALL_MAX values. The
interpreter does not fuse when it must keep every tensor (experimental_preserve_all_tensors) or runs its dynamic
path; ops/fusion.py runs this pass after fuse_feeding.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import numpy as np

from .activations import LOGISTIC_SMALL_MAX, ArithmeticThenActivation, LogisticFloatSmall


@dataclass(frozen=True, eq=False)
class LogisticPair:
    """Two sibling arithmetic -> LOGISTIC steps as one (module docstring): ``merged`` (the union's step) writes
    ``u``; output k is ``u[parts[k]]``, assigned by calls bound to the output arrays (``bind``, ops/fusion.bind_steps;
    called with other outputs, the same assignments made at the call). ``merged`` keeps its own views of the inputs
    and makes new ones when called with other inputs."""

    merged: ArithmeticThenActivation
    u: tuple  # (the union's result array,): the outputs sequence ``merged`` is called with
    parts: tuple  # per output: its basic index into u

    _copies = None  # bind's (out0, out1, their two bound assignments)

    def bind(self, inputs, outputs) -> None:
        self.merged.bind(inputs, self.u)
        u = self.u[0]
        o0, o1 = outputs
        copies = (
            partial(o0.__setitem__, Ellipsis, u[self.parts[0]]),
            partial(o1.__setitem__, Ellipsis, u[self.parts[1]]),
        )
        object.__setattr__(self, "_copies", (o0, o1, copies))

    def __call__(self, inputs, outputs):
        self.merged(inputs, self.u)
        c = self._copies
        if c is not None and c[0] is outputs[0] and c[1] is outputs[1]:
            c[2][0]()
            c[2][1]()
            return
        u = self.u[0]
        outputs[0][...] = u[self.parts[0]]
        outputs[1][...] = u[self.parts[1]]


def _ranges(index: tuple, shape: tuple) -> list | None:
    """The basic index over ``shape`` as one range per axis, or None when it is not slices only."""
    if len(index) > len(shape) or any(not isinstance(s, slice) for s in index):
        return None
    full = tuple(index) + (slice(None),) * (len(shape) - len(index))
    return [range(n)[s] for n, s in zip(shape, full)]


def _union(a: tuple, b: tuple, shape: tuple) -> tuple | None:
    """The index of ``x[a]`` followed by ``x[b]`` along the last axis for ``x`` of ``shape``: equal ranges on every
    other axis, step-1 ranges [s, m) and [m, e) on the last; else None."""
    ra, rb = _ranges(a, shape), _ranges(b, shape)
    if ra is None or rb is None or not shape or ra[:-1] != rb[:-1]:
        return None
    la, lb = ra[-1], rb[-1]
    if la.step != 1 or lb.step != 1 or not len(la) or not len(lb) or la.stop != lb.start:
        return None
    return tuple(slice(r.start, r.stop, r.step) for r in ra[:-1]) + (slice(la.start, lb.stop),)


def _pair(a_op, b_op, sources: tuple, a_shape: tuple, b_shape: tuple, infos: list) -> LogisticPair | None:
    """The merged step of ``a_op`` then ``b_op`` (outputs of ``a_shape`` and ``b_shape``), or None."""
    for op in (a_op, b_op):
        if type(op) is not ArithmeticThenActivation or type(op.act) is not LogisticFloatSmall or op.t is None:
            return None
        if op.indices is None or None in op.indices or len(op.indices) != 2:
            return None
    if a_op.ufunc is not b_op.ufunc or (a_op.clamp is None) != (b_op.clamp is None):
        return None
    if a_op.clamp is not None and not all(x == y for x, y in zip(a_op.clamp, b_op.clamp)):
        return None
    if len(a_shape) != len(b_shape) or not a_shape or a_shape[:-1] != b_shape[:-1]:
        return None
    shape = (*a_shape[:-1], a_shape[-1] + b_shape[-1])
    if int(np.prod(shape)) > LOGISTIC_SMALL_MAX:
        return None
    indices = []
    for src, ia, ib in zip(sources, a_op.indices, b_op.indices):
        if src < 0 or infos[src].dynamic:
            return None
        src_shape = tuple(infos[src].shape)
        probe = np.broadcast_to(np.uint8(0), src_shape)
        if probe[ia].shape != tuple(a_shape) or probe[ib].shape != tuple(b_shape):
            return None  # a broadcasting operand: not one slice of the union
        union = _union(ia, ib, src_shape)
        if union is None or probe[union].shape != shape:
            return None
        indices.append(union)
    act = LogisticFloatSmall(np.empty(shape, bool), np.empty(shape, np.float32), np.empty(shape, np.float64), None)
    merged = ArithmeticThenActivation(a_op.ufunc, a_op.clamp, act, np.empty(shape, np.float32), tuple(indices))
    lead = (slice(None),) * (len(shape) - 1)
    parts = ((*lead, slice(0, a_shape[-1])), (*lead, slice(a_shape[-1], shape[-1])))
    return LogisticPair(merged, (np.empty(shape, np.float32),), parts)


def fuse_logistic_pairs(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each pair of sibling arithmetic ->
    LOGISTIC steps (module docstring) as one LogisticPair step at the first one's place."""
    new_steps: list = list(steps)
    changed = False
    for k, step in enumerate(new_steps):
        if step is None or type(step[1]) is not ArithmeticThenActivation:
            continue
        a_node, a_op = step
        sources = tuple(a_node.operator.inputs)
        for j in range(k + 1, len(new_steps)):
            if new_steps[j] is None:
                continue
            b_node, b_op = new_steps[j]
            if type(b_op) is not ArithmeticThenActivation or tuple(b_node.operator.inputs) != sources:
                continue
            if len(a_node.operator.outputs) != 1 or len(b_node.operator.outputs) != 1:
                continue
            (a_out,), (b_out,) = a_node.operator.outputs, b_node.operator.outputs
            shapes = tuple(infos[a_out].shape), tuple(infos[b_out].shape)
            if a_out == b_out or infos[a_out].dynamic or infos[b_out].dynamic:
                continue
            fused = _pair(a_op, b_op, sources, *shapes, infos)
            if fused is None:
                continue
            operator = dataclasses.replace(a_node.operator, outputs=(a_out, b_out))
            new_steps[k], new_steps[j] = (dataclasses.replace(a_node, operator=operator), fused), None
            changed = True
            break
    return [s for s in new_steps if s is not None] if changed else steps
