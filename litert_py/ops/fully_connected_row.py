"""Float32 FULLY_CONNECTED over a single input row, and chains of them (tiny float models: tflite-micro's sine
predictor, small dense regressors and classifiers). Also a float CONV_2D with one output pixel whose window is the
whole unpadded input (conv/conv2d.py ``one_window_row``: the SE gates' 1x1 convs over a pooled pixel), whose
filter rows in (kh, kw, c) order are an FC's weights over the input in its own order.

The general float path (``FullyConnectedFloat`` in fully_connected.py) makes four or five numpy calls per invoke
(two reshapes, matmul, bias add, clamp) of 0.15-0.8 us each, most of a tiny model's time. With one row:

- the bias folds into the product: the prepared row ``[x, 1]`` times the weights stacked over the bias gives
  ``sum_k x_k w_kc + b_c`` in one BLAS call (``np.dot``). The bias is then added inside the sum, as LiteRT's
  default kernels (XNNPACK) do by starting their accumulators at it; the reference kernel
  (reference/fully_connected.h) adds it after the sum. Float FULLY_CONNECTED is never bit-exact across BLAS
  orders, and the tests compare it within a tolerance against both;
- the fused activation is one in-place clamp to ``[act_min, act_max]`` (ActivationFunctionWithMinMax; NONE
  clamps to +-FLT_MAX as there, so an overflow to inf gives FLT_MAX, hence no clamp is ever skipped). The bounds
  are 0-d float32 arrays, not numpy scalars: a ufunc converts a scalar operand on every call (a clamp of 16 values:
  0.47 -> 0.26 us), the same float32 values either way;
- the products are ``ndarray.dot`` (np.dot without its ``__array_function__`` dispatch: 0.41 -> 0.29 us on a
  16-unit row), the same BLAS call;
- an FC whose output only another row FC reads writes its clamped values straight into that FC's prepared row
  (``feeding``, fused by ops/slice_views.fuse_feeding): the copy into the row is dropped. The bypassed tensor is
  not written, as with the other fusions (off with ``experimental_preserve_all_tensors``).

The input's values are copied into the first row's ``x`` part in its own shape (a view prepared at prepare), so
no reshape runs per invoke; the output is written in place when its shape is ``(1, units)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import numpy as np

from .activation_fusion import intersect
from .common import clip_ufunc, float_activation_range, scalar_operand


def row_weights(weights: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """``(depth [+ 1], units)`` float32, C-contiguous: the transposed weights, over the bias row when there is one."""
    w_t = weights.T.astype(np.float32)
    if bias is not None:
        w_t = np.concatenate([w_t, bias.reshape(1, -1).astype(np.float32)])
    return np.ascontiguousarray(w_t)


def input_row(depth: int, with_bias: bool) -> np.ndarray:
    """The prepared ``(1, depth [+ 1])`` input row; its last element is the 1 that multiplies the bias row."""
    row = np.zeros((1, depth + int(with_bias)), np.float32)
    if with_bias:
        row[0, depth] = 1.0
    return row


@dataclass(frozen=True, eq=False)
class RowLink:
    """One FC of a chain: ``out = clamp(row @ weights)``; ``out`` is the next link's row head, or None for the
    chain's output tensor."""

    row: np.ndarray
    weights: np.ndarray
    lo: np.ndarray  # 0-d float32
    hi: np.ndarray
    out: np.ndarray | None


@dataclass(frozen=True, eq=False)
class FullyConnectedFloatRow:
    """One float32 FULLY_CONNECTED with one input row and constant weights (and bias): copy the input into the
    prepared row ``[x, 1]``, one ``np.dot``, one clamp (module docstring)."""

    head: np.ndarray  # the row's x part, shaped as the input tensor (a view of row)
    row: np.ndarray  # (1, depth [+ 1])
    weights: np.ndarray  # (depth [+ 1], units)
    lo: np.ndarray  # 0-d float32 (module docstring)
    hi: np.ndarray
    out_shape: tuple  # the output tensor's shape; written in place when it is (1, units)

    def __call__(self, inputs, outputs):
        self.head[...] = inputs[0]  # np.copyto's float32 values for a real input, without its dispatch
        _finish(self.row, self.weights, self.lo, self.hi, outputs[0], self.out_shape)

    def chain_calls(self, inputs, outputs) -> tuple | None:
        """This call's three calls on these arrays as partial objects (ops/bound_chain.py), or None when the
        output would be written through a copy (not C-contiguous)."""
        x, out = inputs[0], outputs[0]
        if x is None or out is None or not out.flags.c_contiguous:
            return None
        if out.shape != self.out_shape:
            out = out.reshape(1, -1)
        return (
            partial(self.head.__setitem__, Ellipsis, x),
            partial(self.row.dot, self.weights, out),
            partial(clip_ufunc, out, self.lo, self.hi, out),
        )

    def with_clamp(self, lo, hi):
        """This FC clamping to [lo, hi] within its own range (ops/activation_fusion.py), or None."""
        r = intersect(self.lo, self.hi, lo, hi)
        return None if r is None else dataclasses.replace(self, lo=r[0], hi=r[1])

    def feeding(self, consumer):
        """The fused step when ``consumer`` is a row FC reading this FC's output (module docstring)."""
        if not isinstance(consumer, FullyConnectedFloatRow):
            return None
        return FullyConnectedFloatRowChain(self.head, (self._link_into(consumer),), consumer)

    def _link_into(self, consumer: FullyConnectedFloatRow) -> RowLink:
        units = self.weights.shape[1]
        return RowLink(self.row, self.weights, self.lo, self.hi, consumer.row[:, :units])


@dataclass(frozen=True, eq=False)
class FullyConnectedFloatRowChain:
    """Row FCs each feeding the next: the first copies the model's input into its row, every link writes its
    clamped values into the next link's row, the last ``last`` writes the output tensor."""

    head: np.ndarray
    links: tuple  # RowLink per FC but the last
    last: FullyConnectedFloatRow
    plan: tuple = dataclasses.field(init=False, repr=False)  # made from links and last (__post_init__)
    end: tuple = dataclasses.field(init=False, repr=False)

    def __post_init__(self):
        # per link (row.dot bound, weights, out, lo, hi): no attribute reads in the loop (a tiny model's time)
        plan = tuple((link.row.dot, link.weights, link.out, link.lo, link.hi) for link in self.links)
        last = self.last
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "end", (last.row.dot, last.weights, last.lo, last.hi, last.out_shape))

    def __call__(self, inputs, outputs):
        self.head[...] = inputs[0]  # np.copyto's float32 values for a real input, without its dispatch
        for dot, weights, out, lo, hi in self.plan:
            dot(weights, out)  # positional out: ~0.1 us less per call than out=
            clip_ufunc(out, lo, hi, out)
        dot, weights, lo, hi, out_shape = self.end  # _finish inlined: one Python call less per invoke
        out = outputs[0]
        if out.shape != out_shape or not out.flags.c_contiguous:
            if not out.flags.c_contiguous:  # a direct call's strided output
                return _finish(self.last.row, weights, lo, hi, out, out_shape)
            out = out.reshape(1, -1)  # an output that is not (1, units): written through a reshaped view
        dot(weights, out)
        clip_ufunc(out, lo, hi, out)

    def feeding(self, consumer):
        if not isinstance(consumer, FullyConnectedFloatRow):
            return None
        return FullyConnectedFloatRowChain(self.head, (*self.links, self.last._link_into(consumer)), consumer)


def _finish(row, weights, lo, hi, out, out_shape) -> None:
    if out.shape != out_shape or not out.flags.c_contiguous:
        if not out.flags.c_contiguous:  # a direct call's strided output: dot writes C-contiguous arrays only
            values = row.dot(weights)
            clip_ufunc(values, lo, hi, values)
            out[...] = values.reshape(out.shape)
            return
        out = out.reshape(1, -1)  # an output that is not (1, units): written through a reshaped view
    row.dot(weights, out)  # positional out: ~0.1 us less per call than out=
    clip_ufunc(out, lo, hi, out)


def prepare_float_row(x_shape, weights: np.ndarray, bias: np.ndarray | None, act: int, out_shape):
    """The row FC for a constant-weight float32 FULLY_CONNECTED whose input is one row of ``depth`` values."""
    depth, units = weights.shape[1], weights.shape[0]
    row = input_row(depth, bias is not None)
    lo, hi = map(scalar_operand, float_activation_range(act))
    inplace = (1, units) if tuple(out_shape) == (1, units) else None
    head = row[0, :depth].reshape(x_shape)
    return FullyConnectedFloatRow(head, row, row_weights(weights, bias), lo, hi, inplace)
