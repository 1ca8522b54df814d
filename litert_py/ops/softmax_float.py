"""SOFTMAX's float prepared ops (float32 / float16), made by ``prepare_softmax_float``; the op is registered (and its
checks shared) by activations.py, the quantized kernels are in softmax.py. Semantics and sources: see activations.py's
docstring (SoftmaxPrepare, reference/softmax.h)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import Reduction

INPUT, OUTPUT = 0, 0


def _round_to_half(a: np.ndarray) -> None:
    """In place: round float32 values to the nearest float16 and back (an Eigen::half intermediate)."""
    a[...] = a.astype(np.float16)


@dataclass(frozen=True, eq=False)
class SoftmaxFloat:
    """reference/softmax.h over the last axis, in float32.

    The sum is accumulated in order along the axis, as the reference loop does (``reduction``, shared with
    MEAN; NumPy's own sum is pairwise). ``half`` (float16 tensors) rounds exp to half before the division,
    as the float16 kernel stores it in the output first, while the sum keeps the float32 values.
    """

    beta: np.float32
    reduction: Reduction  # the last axis of the input's shape
    half: bool = False

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        t = out if not self.half else np.empty(out.shape, np.float32)
        np.subtract(x, np.max(x, axis=-1, keepdims=True), out=t, dtype=np.float32)
        t *= self.beta
        np.exp(t, out=t)
        total = np.empty(t.shape[:-1] + (1,), np.float32)
        self.reduction.sum_in_order(t, total)
        if self.half:
            _round_to_half(t)
        t /= total
        if self.half:
            np.copyto(out, t, casting="same_kind")


#: numpy sums fewer than this many contiguous float values one after the other (pairwise_sum's short case); from
#: 8 on it adds 8 partial sums (tests/ops/test_softmax_float.py checks both on the installed numpy)
IN_ORDER_SUM_MAX = 7


@dataclass(frozen=True, eq=False)
class SoftmaxFloatShortRows:
    """SoftmaxFloat (float32) for rows of at most ``IN_ORDER_SUM_MAX`` values: ``np.add.reduce`` over the last axis
    sums them in order, as the reference loop does, so the row sum needs no accumulate; the row maxima and sums go
    into buffers made at prepare, and beta = 1 costs no pass (x * 1 is x). Six numpy calls (a classifier's
    3-class softmax: 7.5 -> ~3 us)."""

    beta: np.ndarray | None  # 0-d float32, None when 1
    row_max: np.ndarray  # float32 (..., 1)
    total: np.ndarray  # float32 (..., 1)

    def __call__(self, inputs, outputs):
        x, t = inputs[INPUT], outputs[OUTPUT]
        np.maximum.reduce(x, axis=-1, keepdims=True, out=self.row_max)
        np.subtract(x, self.row_max, out=t)
        if self.beta is not None:  # decided at prepare
            np.multiply(t, self.beta, out=t)
        np.exp(t, out=t)
        np.add.reduce(t, axis=-1, keepdims=True, out=self.total)
        np.divide(t, self.total, out=t)


@dataclass(frozen=True, eq=False)
class SoftmaxFloatColumns:
    """SoftmaxFloat (float32) for several rows (an attention's (1, heads, queries, keys) scores), computed in a
    prepared transposed buffer ``cols`` (n, m): the m rows of n values are its columns, so every step is one
    numpy call over a C-contiguous array: the copy in (through ``view``, ``cols`` seen in the input's shape),
    the row maxima ``np.maximum.reduce`` over axis 0 (numpy's reduction over a short last axis costs about
    10 ns per row and value, over axis 0 a fraction), ``x - max``, ``* beta`` (none when beta is 1: x * 1 is
    x), exp, the row sums over axis 0, the division, the copy out. 8 numpy calls instead of SoftmaxFloat's ~12
    with its strided reductions (transformer_float's (1, 4, 32, 32): about 40 -> 12 us).

    Exactness: byte-identical to SoftmaxFloat. The maximum is exact in any order (a zero maximum's sign shows
    only in x - max = +-0, and exp(+-0) = 1); the subtraction, product, exp and division are elementwise
    float32 operations on the same values (numpy's exp loop on a contiguous array in both); the sum is the
    same call on the same (n, m) C-contiguous array as ``Reduction.sum_in_order`` (rows added one after the
    other), which is also SoftmaxFloatShortRows' sum (numpy adds at most IN_ORDER_SUM_MAX contiguous values in
    order). Chosen at prepare for float32 (``prepare_softmax_float``); an input of another shape goes to
    SoftmaxFloat."""

    beta: np.ndarray | None  # 0-d float32, None when 1
    cols: np.ndarray  # float32 (n, m): row i of the input is column i
    view: np.ndarray  # cols.T seen in the input's shape (a view: the split of an axis)
    row_max: np.ndarray  # float32 (m,)
    total: np.ndarray  # float32 (m,)
    beta32: np.float32  # beta, for SoftmaxFloat on an input of another shape

    def __call__(self, inputs, outputs):
        x, t = inputs[INPUT], self.cols
        if x.shape != self.view.shape:  # SoftmaxFloat's reduction is made for one shape: a new one for this one
            return SoftmaxFloat(self.beta32, Reduction.of(x.shape, (x.ndim - 1,)))(inputs, outputs)
        np.copyto(self.view, x)
        np.maximum.reduce(t, axis=0, out=self.row_max)
        np.subtract(t, self.row_max, out=t)
        if self.beta is not None:  # decided at prepare
            np.multiply(t, self.beta, out=t)
        np.exp(t, out=t)
        np.add.reduce(t, axis=0, out=self.total)
        np.divide(t, self.total, out=t)
        np.copyto(outputs[OUTPUT], self.view)

    @staticmethod
    def build(beta: np.float32, shape: tuple) -> SoftmaxFloatColumns:
        n = shape[-1]
        m = int(np.prod(shape[:-1], dtype=np.int64))
        cols = np.empty((n, m), np.float32)
        row = np.empty(m, np.float32)
        view = cols.T.reshape(shape)  # splitting the first axis of cols.T: a view
        return SoftmaxFloatColumns(None if beta == 1 else np.array(beta), cols, view, row, np.empty_like(row), beta)


@dataclass(frozen=True, eq=False)
class SoftmaxFloatRow:
    """SoftmaxFloat (float32) for one row of more than IN_ORDER_SUM_MAX values (every dimension but the last is 1: a
    classifier's probabilities over its classes), into buffers made at prepare: the row's maximum, ``x - max``,
    ``* beta`` (none when beta is 1: x * 1 is x), exp, the running sums ``np.add.accumulate`` in float32 along the
    row (the reference's loop adds in order; SoftmaxFloat's one-row sum is this accumulate too), the division by
    the last of them. Six numpy calls instead of SoftmaxFloat's ~12 with their temporaries (a 12-class row, 1
    thread: 9.8 -> 3.9 us). Byte-identical to SoftmaxFloat: the same elementwise float32 operations on the same
    values and the same in-order sum. An input of another shape than prepared takes SoftmaxFloat."""

    beta: np.ndarray | None  # 0-d float32, None when 1
    row_max: np.ndarray  # float32, the input's shape with a last axis of 1
    sums: np.ndarray  # float32, the input's shape: the running sums of exp
    total: np.ndarray  # sums[..., -1:], the row's sum (a view made once)
    beta32: np.float32  # beta, for SoftmaxFloat on an input of another shape

    def __call__(self, inputs, outputs):
        x, t = inputs[INPUT], outputs[OUTPUT]
        if x.shape != self.sums.shape:
            return SoftmaxFloat(self.beta32, Reduction.of(x.shape, (x.ndim - 1,)))(inputs, outputs)
        np.maximum.reduce(x, axis=-1, keepdims=True, out=self.row_max)
        np.subtract(x, self.row_max, out=t)
        if self.beta is not None:  # decided at prepare
            np.multiply(t, self.beta, out=t)
        np.exp(t, out=t)
        np.add.accumulate(t, axis=-1, out=self.sums)
        np.divide(t, self.total, out=t)

    @staticmethod
    def build(beta: np.float32, shape: tuple) -> SoftmaxFloatRow:
        sums = np.empty(shape, np.float32)
        row_max = np.empty(tuple(shape[:-1]) + (1,), np.float32)
        return SoftmaxFloatRow(None if beta == 1 else np.array(beta), row_max, sums, sums[..., -1:], beta)


#: From this many rows on, rows of at most IN_ORDER_SUM_MAX values take SoftmaxFloatColumns (its two transposing
#: copies cost less than the reductions over a short last axis; process CPU time, numpy 2.4: (8, 4) 4.1 us vs
#: 4.8, (16, 4) 5.4 vs 4.8, (64, 4) 8.1 vs 5.5, a segmentation head's (1, 64, 64, 4) 265 vs 50 us)
SHORT_ROWS_COLUMNS_MIN = 16

#: Rows longer than this keep SoftmaxFloat: the transposing copies cost more than the strided reductions save
#: (process CPU time, numpy 2.4, columns vs SoftmaxFloat: (8, 128) 14.4 vs 15.5 us, (8, 256) 23.6 vs 20.0,
#: (64, 512) 136 vs 107, an LM's (8, 32000) logits 1913 vs 962)
COLUMNS_MAX_ROW = 128


def prepare_softmax_float(beta: float, shape: tuple, half: bool):
    """The float SOFTMAX prepared op for an input of ``shape`` (float16 when ``half``): SoftmaxFloatColumns for
    several rows of at most COLUMNS_MAX_ROW values (at least SHORT_ROWS_COLUMNS_MIN rows of at most
    IN_ORDER_SUM_MAX values), SoftmaxFloatRow for one row of more than IN_ORDER_SUM_MAX values,
    SoftmaxFloatShortRows for fewer short rows, SoftmaxFloat for several longer rows and float16."""
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if shape else 1
    short = bool(shape) and 0 < shape[-1] <= IN_ORDER_SUM_MAX
    if (
        not half
        and len(shape) >= 2
        and rows >= (SHORT_ROWS_COLUMNS_MIN if short else 2)
        and shape[-1] <= COLUMNS_MAX_ROW
    ):
        return SoftmaxFloatColumns.build(np.float32(beta), tuple(shape))
    if not half and rows == 1 and len(shape) >= 1 and shape[-1] > IN_ORDER_SUM_MAX:
        return SoftmaxFloatRow.build(np.float32(beta), tuple(shape))
    if not half and short:
        b = np.float32(beta)
        row = tuple(shape[:-1]) + (1,)
        return SoftmaxFloatShortRows(
            None if b == 1 else np.array(b), np.empty(row, np.float32), np.empty(row, np.float32)
        )
    return SoftmaxFloat(np.float32(beta), Reduction.of(shape, (len(shape) - 1,)), half=half)
