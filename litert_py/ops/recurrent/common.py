"""Helpers of the recurrent sequence kernels (lstm.py, rnn.py): a lean per-step hybrid product.

``StepHybridProduct`` is FULLY_CONNECTED's hybrid arithmetic (``FullyConnectedHybrid`` without bias or
activation: per-row ``BatchQuantizeFloats``, an exact integer dot product, the SSE -128 quirk, the asymmetric
row-sum correction, ``f32(dot) * f32(sf * s_w)``) with preallocated scratch and fewer numpy calls, for the
recurrent product that runs once per time step. The symmetric quantization is ``batch_quantize_floats``'s
(``R = max |x|`` per row, equal to ``max(|min|, |max|)``; an all-zero row gets scale 1), the rounding its
``neon_round_inplace``, and a row of non-finite or denormal range its ``neon_to_int8`` conversion. The dot
products run in float32 when every partial sum is an integer below 2^24 (exact), else in float64 as
FullyConnectedHybrid does.

Sources: see fully_connected.py and hybrid_fc.py (FullyConnectedHybrid) and litert_py/quant/hybrid.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...quant import batch_quantize_floats
from ...quant.hybrid import HALF_DOWN, neon_to_int8
from ..common import clip_ufunc

F32 = np.float32
# 0-d constants: a numpy scalar operand costs a ufunc call ~0.5 us more than a 0-d array
C127, CM127, ZERO, HALF = (np.array(v, F32) for v in (127, -127, 0, 0.5))
HALF_DOWN32 = np.array(HALF_DOWN[np.dtype(F32)], F32)


@dataclass(frozen=True, eq=False)
class StepHybridProduct:
    """One matrix product ``[q, min(q, 0), zp] @ [W; 256 M; -row_sums]``: the int8 dot product, the SSE -128
    quirk (``M``: 1 where a weight in the 16-wide blocks is -128, see SseMinus128Fix) and the asymmetric
    zero-point correction at once (every partial sum an integer below the dtype's exact range)."""

    w_aug: np.ndarray  # (depth [+ depth] [+ 1], units) float32 or float64
    w_scale: np.ndarray  # float32 (units,)
    asymmetric: bool
    depth: int
    k_vec: int
    with_fix: bool

    @staticmethod
    def of(fc) -> StepHybridProduct:
        """From a prepared ``FullyConnectedHybrid`` with constant weights, no bias and no activation."""
        wt = fc.weights_t
        depth, units = wt.shape
        # |q| <= 128, |w| <= 128, the -128 fix adds <= 256 * 128 per term, the zero point <= 128 * 128 per term
        dtype = F32 if 4 * 128 * 128 * max(depth, 1) < 2**24 else np.float64
        parts = [wt]
        fix = fc.sse_fix
        if fix is not None:
            m = np.zeros((depth, units))
            m[fix.cols] = fix.mask_t
            parts.append(256 * m)
        if fc.asymmetric:
            parts.append(-fc.row_sums.reshape(1, units))
        return StepHybridProduct(
            np.ascontiguousarray(np.concatenate(parts).astype(dtype)),
            np.broadcast_to(np.asarray(fc.w_scale, F32), (units,)).copy(),
            fc.asymmetric,
            depth,
            depth & ~7,
            fix is not None,
        )

    def __call__(self, x: np.ndarray, out: np.ndarray, per_row: bool = False) -> bool:
        """``out`` (B, units) float32 = the hybrid product of the float32 rows ``x`` (B, depth); when ``x`` is
        all zeros (IsZeroVector) nothing is computed or written and False is returned. ``per_row`` (a caller
        that skips row by row, as LiteRT's batch-major sequence loops do): the rows of an all-zero row are -0.0,
        which adds nothing to a sum."""
        k = self.depth
        qq = np.empty((x.shape[0], self.w_aug.shape[0]), F32)
        q = qq[:, :k]
        zero = None  # the all-zero rows, once known that some but not all rows are zero
        if self.asymmetric:
            if per_row and x.shape[0] > 1:
                nonzero = np.logical_or.reduce(x, axis=1)
                if not nonzero.all():
                    if not nonzero.any():
                        return False
                    zero = ~nonzero
            elif not np.logical_or.reduce(x, axis=None):
                return False
            q[...], sf, zp = batch_quantize_floats(x, True)
            qq[:, -1] = zp
        else:
            r = np.maximum.reduce(np.abs(x), axis=1)  # max |x| (NaN propagates): zero only for all-zero rows
            if bool(r[0]) if r.shape[0] == 1 else r.all():
                sf = np.divide(r, C127)
            else:
                zero = r == 0
                if zero.all():
                    return False
                r[zero] = 1
                sf = np.divide(r, C127)
                sf[zero] = 1
            inv = np.divide(C127, r)  # inf for a denormal range
            np.multiply(x, inv[:, None], out=q)
            # neon_round_inplace: trunc(v + copysign(0.5, v)), the tail past the 8-wide loop with roundf
            k_vec = self.k_vec
            if k_vec == k:
                half = np.copysign(HALF, q)
            else:
                half = np.empty_like(q)
                np.copysign(HALF, q[:, :k_vec], out=half[:, :k_vec])
                np.copysign(HALF_DOWN32, q[:, k_vec:], out=half[:, k_vec:])
            q += half
            np.trunc(q, out=q)
            if math.isfinite(np.dot(r, inv)):  # r * inv = 127 unless r or inv is NaN / inf
                clip_ufunc(q, CM127, C127, out=q)
            else:  # a non-finite or denormal state row: batch_quantize_floats' int32 conversion
                neon_to_int8(q, k_vec, None)
        if self.with_fix:
            np.minimum(q, ZERO, out=qq[:, k : 2 * k])
        w = self.w_aug
        dot = np.dot(qq, w) if w.dtype == F32 else np.dot(qq.astype(w.dtype), w).astype(F32)
        np.multiply(sf[:, None], self.w_scale, out=out)
        out *= dot  # f32(dot) * f32(sf * s_w)
        if per_row and zero is not None:
            out[zero] = -0.0
        return True


def bidirectional_views(x, aux, outputs, n_fw: int, merge: bool, bw_reads_aux: bool, use_aux: bool, time_major: bool):
    """Time-major views (x, backward input, aux or None, forward output, backward output) of a bidirectional
    sequence op's arrays: merged outputs split at ``n_fw``; batch-major arrays transposed (views, so writes
    land in the outputs). Shared by BIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_LSTM."""
    fw_out = outputs[0]
    if merge:
        bw_out, fw_out = fw_out[..., n_fw:], fw_out[..., :n_fw]
    else:
        bw_out = outputs[1]
    bw_x = aux if bw_reads_aux else x
    real_aux = aux if use_aux else None
    if not time_major:
        x, bw_x = x.transpose(1, 0, 2), bw_x.transpose(1, 0, 2)
        fw_out, bw_out = fw_out.transpose(1, 0, 2), bw_out.transpose(1, 0, 2)
        if real_aux is not None:
            real_aux = real_aux.transpose(1, 0, 2)
    return x, bw_x, real_aux, fw_out, bw_out


def check_aux_input(ctx, x, aux, use_aux: bool) -> None:
    """A bidirectional sequence op's aux input (BIDIRECTIONAL_SEQUENCE_RNN / _LSTM Prepare): float32 with the
    input's first two dimensions, and present when the aux weights are."""
    if aux is not None:
        ctx.check(
            aux.dtype == np.float32 and len(aux.shape) == 3 and aux.shape[:2] == x.shape[:2],
            "aux_input must be FLOAT32 with the input's first two dimensions",
        )
    if use_aux:
        ctx.check(aux is not None, "aux weights need an aux input")
