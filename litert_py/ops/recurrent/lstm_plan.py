"""A plain float32 LSTM sequence (``LstmCell.plain`` with float recurrent weights) as one bound plan: every numpy
call of every time step made once into a partial object (ops/bound_plan.bound_plan) on buffers kept with the
plan, then run as ``for call in plan: call()``, with no Python work between calls (issue 16: on the (1, n) rows
of a small LSTM a numpy call costs ~0.25 us and the interpreter's own work per call about as much again).

The calls are those of lstm_cell._plain_run for one cell, in the same order on the same values (so the bytes are
the same, NaN payloads included): the recurrent product, ``pre[t] + W_h h``, Eigen's logistic of all gates and tanh
of the cell gate (eigen_math's prepared-scratch emulations, their ``calls`` listings), the cell update, the cell
clip, the tanh of the new cell state and ``o * tanh(c)`` written straight into the step's output row. The step's
gate inputs ``pre`` (lstm_cell.LstmCell._sequence_inputs) are written into the plan's own buffer before it runs.

A plan is kept per cell for the memory layout of its state and output arrays (the runtime's tensors keep their
memory across invokes; the views an op makes of them anew each invoke have the same layout) and rebuilt when
that changes; sequences longer than ``MAX_PLAN_STEPS`` (the plan grows with the steps) keep the stepping loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bound_plan import bound_plan
from ..common import clip_ufunc
from ..eigen_math import LogisticTanhWork, tanh_listing
from .lstm_common import F32, ZERO, float_dot

__all__ = ["MAX_PLAN_STEPS", "run_planned", "step_activation"]

#: longest sequence run through a bound plan (about 60 partial objects per step)
MAX_PLAN_STEPS = 256


def _layout(a: np.ndarray) -> tuple:
    """What a plan bound to ``a`` depends on: its memory, shape and strides."""
    return a.__array_interface__["data"][0], a.shape, a.strides


@dataclass(frozen=True, eq=False)
class SequencePlanBound:
    """One cell's plan for one layout (``key``): ``pre`` the gate-input buffer its calls read, ``inputs`` the
    partial objects computing ``pre`` without an aux input (lstm_cell.LstmCell._sequence_inputs' products and
    sums; None with an aux input: that function then runs), ``calls`` those of every step."""

    key: tuple
    pre: np.ndarray
    inputs: tuple | None
    calls: tuple


def run_planned(cell, x3, aux3, h, c, out3, reverse: bool) -> bool:
    """``LstmCell.run`` of a plain float32 cell through its bound plan; False (nothing done) when the cell or the
    sequence does not qualify (then the caller steps as before)."""
    n_steps, n_batch = x3.shape[:2]
    d = cell._seq
    if not (cell.plain and d.h_wt is not None and n_steps <= MAX_PLAN_STEPS and c.dtype == F32):
        return False
    planned_x = aux3 is None and cell.x.combined.wt is not None  # the input products in the plan
    key = (n_steps, n_batch, reverse, _layout(h), _layout(c), _layout(out3), planned_x and _layout(x3))
    bound = getattr(cell, "_bound_sequence", None)
    if bound is None or bound.key != key:
        bound = _build(cell, key, x3 if planned_x else None, h, c, out3, reverse)
        object.__setattr__(cell, "_bound_sequence", bound)
    if bound.inputs is None:
        cell._sequence_inputs(x3, aux3, out=bound.pre)
    else:
        for call in bound.inputs:
            call()
        nz = x3.reshape(n_steps, -1).any(axis=1)
        if not nz.all():  # an all-zero step skips its product (IsZeroVector): its gate inputs are the biases
            bound.pre[~nz] = d.base
    for call in bound.calls:
        call()
    return True


def _input_calls(cell, x3, pre) -> list:
    """``_sequence_inputs``' products and sums without an aux input (its zero steps aside): one product per step
    (lstm_cell.LstmCell._input_products), ``+ 0`` (-0 -> +0), ``+ bias``."""
    wt = cell.x.combined.wt
    mm = float_dot(wt)
    calls = [(mm, (x3[t], wt, pre[t]), {}) for t in range(x3.shape[0])]
    return [*calls, (np.add, (pre, ZERO, pre), {}), (np.add, (pre, cell._seq.base, pre), {})]


def _build(cell, key, x3, h, c, out3, reverse) -> SequencePlanBound:
    """The plan's buffers and calls: the gate inputs of every step (``_input_calls``; when ``x3`` is given), then
    per step the recurrent product, the gate inputs, ``step_activation``'s calls and ``o * tanh(c)`` into the
    step's output."""
    d, n, mul, add = cell._seq, cell.n_cell, np.multiply, np.add
    n_steps, n_batch = out3.shape[:2]
    pre = np.empty((n_steps, n_batch, 4 * n), F32)
    inputs = None if x3 is None else bound_plan(_input_calls(cell, x3, pre))
    acc, rs = np.empty((n_batch, 4 * n), F32), np.empty((n_batch, 4 * n), F32)
    first, step, last, og, t = step_activation(cell, acc, c)
    calls, wt, h_prev = list(first), d.h_wt, h
    mm = float_dot(wt)
    for ts in range(n_steps - 1, -1, -1) if reverse else range(n_steps):
        dst = out3[ts]
        calls += [(mm, (h_prev, wt, rs), {}), (add, (pre[ts], rs, acc), {}), *step, (mul, (t, og, dst), {})]
        h_prev = dst
    calls += [(np.copyto, (h, h_prev), {}), *last]
    return SequencePlanBound(key, pre, inputs, bound_plan(calls))


def step_activation(cell, acc: np.ndarray, c: np.ndarray) -> tuple:
    """The calls of a plain cell's step after its gate inputs ``acc`` ((R, 4 n) float32, C-contiguous, gates i,
    f, c, o per row; R rows: the batch, or a bidirectional pair's two batches stacked) up to ``tanh(c)``: the gate
    nonlinearities, the cell update (and clip) of the cell state ``c`` ((R, n) float32) and the tanh of the new
    state. Returns (calls to run once before the steps, the step's calls, calls to run once after the steps, the
    output gate (R, n), tanh(c) (R, n)): a step's output is ``tanh(c) * o``. One row: ``_one_row``; several:
    ``_rows``."""
    first, step, last, cs, og = (_one_row if acc.shape[0] == 1 else _rows)(cell, acc, c)
    t = np.empty(cs.shape, F32)
    step += tanh_listing(cs.size).calls(cs.reshape(-1), t.reshape(-1))
    return first, step, last, og, t


def _cell_clip(cell, cs) -> list:
    d = cell._seq
    return [(clip_ufunc, (cs, d.cell_lo, d.cell_hi, cs), {})] if cell.cell_clip > 0 else []


def _one_row(cell, acc, c) -> tuple:
    """One row: eigen_math.LogisticTanhWork's joint calls write ``[s_i s_f s_c s_o | g]`` into a buffer
    ``[s_i s_f s_c s_o | g | c]`` whose last part is the cell state (copied in before the first step and out after
    the last); the cell update as ``_rows``': ``c * f``, ``g * i``, ``c + g i``. The two products stay two calls
    of n values: where both operands are NaN numpy returns one or the other by the lane's position in its SIMD
    loop, so one product over 2n values would change the sign of some NaN states. Returns (calls before the
    steps, the calls of a step up to the new cell state, calls after the steps, the cell state, the output
    gate)."""
    n = cell.n_cell
    big = np.empty(6 * n, F32)
    cs = big[5 * n :].reshape(c.shape)
    work = LogisticTanhWork(4 * n, 2 * n, 3 * n)  # gates i, f, c, o: the tanh of the cell gate
    step = work.calls(acc.reshape(-1), big[: 5 * n])
    c1, g1, i1, f1 = big[5 * n :], big[4 * n : 5 * n], big[:n], big[n : 2 * n]
    step += [
        (np.multiply, (c1, f1, c1), {}),
        (np.multiply, (g1, i1, g1), {}),
        (np.add, (c1, g1, c1), {}),
    ]
    step += _cell_clip(cell, cs)
    copy_in, copy_out = [(np.copyto, (cs, c), {})], [(np.copyto, (c, cs), {})]
    return copy_in, step, copy_out, cs, big[3 * n : 4 * n].reshape(c.shape)


def _rows(cell, acc, c) -> tuple:
    """Several rows: LogisticTanhWork's joint calls over all rows write ``[s (R, 4 n) | g (R, n)]`` into one
    buffer, then the cell update in three products on strided views of the sigmoids (``c * f``, ``g * i``, their
    sum); ``_one_row``'s tuple."""
    n, n_rows, k, mul, add = cell.n_cell, acc.shape[0], cell._seq.k, np.multiply, np.add
    out = np.empty(5 * n * n_rows, F32)
    gates, g = out[: 4 * n * n_rows].reshape(n_rows, 4, n), out[4 * n * n_rows :].reshape(n_rows, n)
    fg, ig, og = gates[:, k - 1], gates[:, 0], gates[:, k + 1]
    cs = c if c.flags.c_contiguous else np.empty(c.shape, F32)  # a strided state runs on a copy
    step = LogisticTanhWork(acc.size, 2 * n, 3 * n, n_rows).calls(acc.reshape(-1), out)  # gates i, f, c, o
    step += [(mul, (cs, fg, cs), {}), (mul, (g, ig, g), {}), (add, (cs, g, cs), {}), *_cell_clip(cell, cs)]
    if cs is c:
        return [], step, [], cs, og
    return [(np.copyto, (cs, c), {})], step, [(np.copyto, (c, cs), {})], cs, og
