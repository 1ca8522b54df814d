"""A plain float32 LSTM sequence (``LstmCell.plain`` with float recurrent weights) as one bound plan: every numpy
call of every time step made once into a partial object (ops/bound_plan.bound_plan) on buffers kept with the
plan, then run as ``for call in plan: call()``, with no Python work between calls (issue 16: on the (1, n) rows
of a small LSTM a numpy call costs ~0.25 us and the interpreter's own work per call about as much again).

The calls are those of lstm_cell._plain_run for one cell, in the same order on the same values (so the bytes are
the same): the recurrent product, ``pre[t] + W_h h``, Eigen's logistic of all gates and tanh of the cell gate
(eigen_math's prepared-scratch emulations, their ``calls`` listings), the cell update, the cell clip, the tanh of
the new cell state and ``o * tanh(c)`` written straight into the step's output row. The step's gate inputs
``pre`` (lstm_cell.LstmCell._sequence_inputs) are written into the plan's own buffer before it runs.

A plan is kept per cell for the memory layout of its state and output arrays (the runtime's tensors keep their
memory across invokes; the views an op makes of them anew each invoke have the same layout) and rebuilt when
that changes; sequences longer than ``MAX_PLAN_STEPS`` (the plan grows with the steps) keep the stepping loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bound_plan import bound_plan
from ..common import clip_ufunc
from ..eigen_math import logistic_work, tanh_work
from .lstm_common import F32

__all__ = ["MAX_PLAN_STEPS", "run_planned"]

#: longest sequence run through a bound plan (about 60 partial objects per step)
MAX_PLAN_STEPS = 256


def _layout(a: np.ndarray) -> tuple:
    """What a plan bound to ``a`` depends on: its memory, shape and strides."""
    return a.__array_interface__["data"][0], a.shape, a.strides


@dataclass(frozen=True, eq=False)
class SequencePlanBound:
    """One cell's plan for one layout (``key``): ``pre`` the gate-input buffer its calls read, ``calls`` the
    partial objects of every step."""

    key: tuple
    pre: np.ndarray
    calls: tuple

    def run(self) -> None:
        for call in self.calls:
            call()


def run_planned(cell, x3, aux3, h, c, out3, reverse: bool) -> bool:
    """``LstmCell.run`` of a plain float32 cell through its bound plan; False (nothing done) when the cell or the
    sequence does not qualify (then the caller steps as before)."""
    n_steps, n_batch = x3.shape[:2]
    d = cell._seq
    if not (cell.plain and d.h_wt is not None and n_steps <= MAX_PLAN_STEPS and c.dtype == F32):
        return False
    key = (n_steps, n_batch, reverse, _layout(h), _layout(c), _layout(out3))
    bound = getattr(cell, "_bound_sequence", None)
    if bound is None or bound.key != key:
        bound = _build(cell, key, n_steps, n_batch, h, c, out3, reverse)
        object.__setattr__(cell, "_bound_sequence", bound)
    cell._sequence_inputs(x3, aux3, out=bound.pre)
    bound.run()
    return True


def _build(cell, key, n_steps, n_batch, h, c, out3, reverse) -> SequencePlanBound:
    """The plan's buffers and calls (lstm_cell._plain_run's, one cell)."""
    d, n = cell._seq, cell.n_cell
    k, mul, add = d.k, np.multiply, np.add
    pre = np.empty((n_steps, n_batch, 4 * n), F32)
    acc, sg, rs = (np.empty((n_batch, 4 * n), F32) for _ in range(3))
    gates = sg.reshape(n_batch, 4, n)
    fg, ig, og, cg = gates[:, k - 1], gates[:, 0], gates[:, k + 1], acc.reshape(gates.shape)[:, k]
    g = cg if cg.flags.c_contiguous else np.empty(cg.shape, F32)
    cs = c if c.flags.c_contiguous else np.empty(c.shape, F32)  # a strided state runs on a copy
    t = np.empty_like(cs)
    acc_f, sg_f, g_f, c_f, t_f = (v.reshape(-1) for v in (acc, sg, g, cs, t))
    sig, tanh_g, tanh_c = logistic_work(acc.size), tanh_work(g.size), tanh_work(cs.size)
    step_act = sig.calls(acc_f, sg_f)
    if g is not cg:
        step_act.append((np.copyto, (g, cg), {}))
    step_act += tanh_g.calls(g_f, g_f)
    update = [(mul, (cs, fg, cs), {}), (mul, (g, ig, g), {}), (add, (cs, g, cs), {})]
    if cell.cell_clip > 0:
        update.append((clip_ufunc, (cs, d.cell_lo, d.cell_hi, cs), {}))
    update += tanh_c.calls(c_f, t_f)
    calls = [] if cs is c else [(np.copyto, (cs, c), {})]
    wt, h_prev = d.h_wt, h
    mm = np.dot if wt.shape[1] > 1 else np.matmul  # lstm_cell._float_dot
    for ts in range(n_steps - 1, -1, -1) if reverse else range(n_steps):
        dst = out3[ts]
        calls += [(mm, (h_prev, wt, rs), {}), (add, (pre[ts], rs, acc), {}), *step_act, *update]
        calls.append((mul, (t, og, dst), {}))
        h_prev = dst
    calls.append((np.copyto, (h, h_prev), {}))
    if cs is not c:
        calls.append((np.copyto, (c, cs), {}))
    return SequencePlanBound(key, pre, bound_plan(calls))
