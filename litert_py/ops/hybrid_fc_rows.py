"""FULLY_CONNECTED's hybrid product over a fixed number of rows with constant weights and asymmetric inputs (a
transformer's projections), bound once: ``FullyConnectedHybridRows``. Ops reading the same input array (a
transformer's query, key and value projections) share its quantization (``SharedQuantization``): the first one
bound quantizes at every call, the others reuse its values when the input's bytes are those it quantized (about
14 of 22 us at 32 x 64 -> 64). Semantics and sources: see hybrid_fc.py and litert_py/quant/hybrid.py."""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from ..quant.hybrid import AsymmetricRowsQuantizer
from .bound_plan import bound_plan
from .hybrid_fc import F32, INPUT, FullyConnectedHybrid, augmented_weights, bindable, bound_to, product_calls


@dataclass(eq=False)
class SharedQuantization:
    """The quantized operand ``[q, zp]`` (``qq``) of the rows of one input array ``x`` and the quantizer's calls bound
    to it, in buffers of its own, for every FullyConnectedHybridRows op without SSE -128 columns bound to ``x`` with
    the same row count, depth and product type (``shared``). ``leader``, the op bound first (usually the first of
    them in an invoke; only speed depends on it), runs the calls at each call and keeps ``x``'s bytes (``memo``)
    and whether the quantizer's bound held (``ok``); the others run them only where ``x``'s bytes differ from
    ``memo`` (a direct call, an op run without the leader): the values are a function of those bytes alone, so each
    op multiplies the quantization of its input as it is at its call. Only the calls bound to ``x`` write these
    buffers."""

    x: np.ndarray  # kept: its id keys _SHARED while this object lives
    quantizer: AsymmetricRowsQuantizer
    qq: np.ndarray  # (rows, depth + 1): q, zp
    calls: tuple  # the quantizer's calls bound to x
    finite: object  # AsymmetricRowsQuantizer.finite's dot product, bound
    leader: int  # id() of the op bound first (not the op: no reference cycle through its _bound)
    shared: bool = True  # False: one op's own quantization (no followers: no memo kept)
    memo: bytes | None = None
    ok: bool = False

    def run(self) -> None:
        self.memo = None  # a run stopped part way (an exception) leaves no bytes claiming the buffers' values
        for call in self.calls:
            call()
        self.ok = math.isfinite(self.finite())
        if self.shared:
            self.memo = self.x.tobytes()

    @staticmethod
    def make(x: np.ndarray, rows: int, dtype, leader, own: tuple | None = None) -> SharedQuantization:
        """The quantization of ``x``'s ``rows`` rows, in new buffers of ``dtype`` (shared), or ``own``: an op's own
        (AsymmetricRowsQuantizer, qq)."""
        if own is None:
            qq = np.zeros((rows, x.size // rows + 1), dtype)
            quantizer = AsymmetricRowsQuantizer.build(qq[:, :-1], qq[:, -1:])
        else:
            quantizer, qq = own
        calls = bound_plan(quantizer.calls(x.reshape(rows, -1)))
        (finite,) = bound_plan([(np.dot, (quantizer.sf, quantizer.inv[:, 0]), {})])
        return SharedQuantization(x, quantizer, qq, calls, finite, id(leader), own is None)


#: (id(x), rows, product type) -> the SharedQuantization of the ops bound to x (it keeps x, so the id stays x's)
_SHARED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def shared(x: np.ndarray, rows: int, dtype, op) -> SharedQuantization:
    """The SharedQuantization of ``x``'s ``rows`` rows in ``dtype``; made (``op`` its leader) where there is none."""
    key = (id(x), rows, np.dtype(dtype).str)
    s = _SHARED.get(key)
    if s is None or s.x is not x:
        s = SharedQuantization.make(x, rows, dtype, op)
        _SHARED[key] = s
    return s


@dataclass(frozen=True, eq=False)
class FullyConnectedHybridRows:
    """FullyConnectedHybrid for a fixed number (at least two) of rows with constant weights and asymmetric inputs (a
    transformer's projections: 32 x 64 -> 64 asymmetric, about 75 -> 22 us of process CPU time): the rows quantized
    by quant.hybrid.AsymmetricRowsQuantizer (batch_quantize_floats' values in half the numpy calls, into buffers
    made at prepare; without SSE -128 columns a SharedQuantization's, shared by the ops reading the same input),
    then one GEMM of
    ``[q, min(q[:, cols], 0), zp]`` by ``[W, 256 M, -row_sums]`` (FullyConnectedHybridRow's augmented product: the
    SSE -128 fix and the zero point as extra columns; exact in float32 within 2^24, else float64, see
    augmented_weights), ``f32(f32(dot) * f32(sf * w_scale))``, ``+ bias`` (zeros without bias: 0 + (-0.0) is +0.0
    as in C++), the activation. Inputs of another row count, and rows the quantizer declines (all-zero rows, a
    range below NONNEG_MAX_MIN or past FLT_MAX, inf or NaN: AsymmetricRowsQuantizer.finite), take the general path
    (``general``): every result equals FullyConnectedHybrid's. The quantizer's calls run before that test, so a
    direct call outside an invoke (whose fp errors are quiet) may warn (divide by zero) on such rows: the values are
    the general path's."""

    general: FullyConnectedHybrid
    quantize: AsymmetricRowsQuantizer | None  # with SSE -128 columns (fix_q): the op's own; else None (shared's)
    w_aug_t: np.ndarray  # (depth + len(fix_cols) + 1, units) C-contiguous: augmented_weights transposed (q @ w_aug_t:
    # BLAS's (rows, k) x (k, units) without transposes, about 2.5x faster than on a transposed view at 32 x 64 x 64)
    qq: np.ndarray | None  # with fix_q: (rows, depth + len(fix_cols) + 1) w_aug's dtype: q, min(q[:, cols], 0), zp
    fix_q: np.ndarray | None  # (rows, len(fix_cols)) view of qq
    fix_cols: np.ndarray | None
    w_scale: np.ndarray  # () or (units,) float32
    scale: np.ndarray  # (rows, 1) or (rows, units) float32
    bias: np.ndarray  # (rows, units) float32, the bias repeated: a full-sized operand (a broadcast row costs twice)
    dot: np.ndarray | None  # (rows, units) float64 when the product runs in float64
    rows: int

    @staticmethod
    def build(general: FullyConnectedHybrid, wi: np.ndarray, rows: int) -> FullyConnectedHybridRows:
        units, depth = wi.shape
        w_aug = augmented_weights(general, wi)
        fix = general.sse_fix
        # own buffers only with SSE -128 columns (they are the op's own); else bind takes a SharedQuantization's
        qq = None if fix is None else np.zeros((rows, w_aug.shape[1]), w_aug.dtype)
        per_tensor = general.w_scale.ndim == 0
        return FullyConnectedHybridRows(
            general,
            None if fix is None else AsymmetricRowsQuantizer.build(qq[:, :depth], qq[:, -1:]),
            np.ascontiguousarray(w_aug.T),
            qq,
            None if fix is None else qq[:, depth : depth + fix.cols.shape[0]],
            None if fix is None else fix.cols,
            general.w_scale,
            np.zeros((rows, 1) if per_tensor else (rows, units), F32),
            np.zeros((rows, units), F32) if general.bias is None else np.tile(general.bias, (rows, 1)),
            None if w_aug.dtype == np.float32 else np.empty((rows, units), w_aug.dtype),
            rows,
        )

    _bound = None  # bind's (input, output, the SharedQuantization, the product's calls, whether this op leads it)
    # as partial objects, or None

    def bind(self, inputs, outputs) -> None:
        """The quantization (shared, or the op's own with SSE -128 columns) and the product's calls bound once to
        ``inputs[0]`` and ``outputs[0]`` (views of their memory; C-contiguous arrays of this op's size, else no
        plan: the general path)."""
        x, out = inputs[INPUT], outputs[0]
        bound = None
        if bindable(x, out, self.rows * self.general.depth, self.bias.size):
            if self.fix_q is None:
                s = shared(x, self.rows, self.w_aug_t.dtype, self)
            else:  # the op's own buffers (its fix columns are its own)
                s = SharedQuantization.make(x, self.rows, self.w_aug_t.dtype, self, (self.quantize, self.qq))
            product = bound_plan(self.product_calls(out.reshape(self.rows, -1), s.quantizer, s.qq))
            bound = (x, out, s, product, s.leader == id(self))
        object.__setattr__(self, "_bound", bound)

    def product_calls(self, out: np.ndarray, quantizer: AsymmetricRowsQuantizer, qq: np.ndarray) -> list:
        calls = []
        if self.fix_q is not None:
            calls += [
                (np.take, (quantizer.q, self.fix_cols), {"axis": 1, "out": self.fix_q}),
                (np.minimum, (self.fix_q, 0.0), {"out": self.fix_q}),
            ]
        sf = quantizer.sf
        if self.scale.shape[1] == 1:  # per tensor: scaling_factors[b] *= filter scale
            calls.append((np.multiply, (sf, self.w_scale), {"out": self.scale[:, 0]}))
        else:  # per channel: scale = f32(w_scale[c] * sf[b])
            calls.append((np.multiply, (sf.reshape(-1, 1), self.w_scale), {"out": self.scale}))
        return calls + product_calls(qq, self.w_aug_t, self.dot, self.scale, self.bias, self.general.activation, out)

    def __call__(self, inputs, outputs):
        b = bound_to(self, inputs, outputs)
        if b is None:
            return self.general(inputs, outputs)
        s = b[2]
        if b[4] or s.memo != b[0].tobytes():  # the leader, or bytes it has not quantized
            s.run()
        if not s.ok:  # AsymmetricRowsQuantizer.finite
            return self.general(inputs, outputs)
        for call in b[3]:
            call()
