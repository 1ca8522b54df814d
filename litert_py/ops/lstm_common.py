"""What the LSTM kernels share: the input indices of the full kernel, 0-d constants for the per-step loops,
and the gemmlowp int16 fixed point of the integer kernels (sigmoid/tanh tables over all 65536 inputs, MBQM
variants). Sources: see lstm.py."""

from __future__ import annotations

import functools

import numpy as np

from ..quant import (
    multiply_by_quantized_multiplier,
    saturating_rounding_doubling_high_mul,
    wrap32,
)
from .common import clip_ufunc
from .unary import get_inv_sqrt_quantized_multiplier_exp

F32 = np.float32
GATES = ("i", "f", "c", "o")
# full-kernel input indices per gate
IN_W = {"i": 1, "f": 2, "c": 3, "o": 4}
REC_W = {"i": 5, "f": 6, "c": 7, "o": 8}
PEEP_W = {"i": 9, "f": 10, "o": 11}
BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
PROJ_W, PROJ_B, OUT_STATE, CELL_STATE = 16, 17, 18, 19
LN = {"i": 20, "f": 21, "c": 22, "o": 23}


# 0-d constants for the per-step loops (a numpy scalar operand costs a ufunc call ~0.5 us more)
ZERO, ONE, MINUS_ONE, EPS_LN = (np.array(v, F32) for v in (0, 1, -1, 1e-8))
P14, P30, P31, S31, M32 = (np.array(v, np.int64) for v in (1 << 14, 1 << 30, 1 << 31, 31, 0xFFFFFFFF))
I16_LO, I16_HI, I16_OFF, I8_LO, I8_HI = (np.array(v, np.int64) for v in (-32768, 32767, 32768, -128, 127))
Z64, S10, S15, S20, K512, K1024 = (np.array(v, np.int64) for v in (0, 10, 15, 20, 512, 1024))



# -------------------------------------------------------------------------------------------------------------
# Integer 8x8_16: gemmlowp int16 fixed point (tables over all 65536 inputs)
# -------------------------------------------------------------------------------------------------------------


def w16(x):
    return ((x + 32768) & 0xFFFF) - 32768


def _srdhm16(a, b):
    r = (a * b + (1 << 14)) >> 15
    return np.where((a == -32768) & (b == -32768), 32767, r)


def rdbpot(x, e: int):
    if e == 0:
        return x
    mask = (1 << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


def _satpot16(x, e: int):
    if e > 0:
        return clip_ufunc(x << e, -32768, 32767)
    return rdbpot(x, -e)


def _c16(c32: int) -> int:
    """A gemmlowp Q0.31-style int32 constant as the int16 FixedPoint constant: RDBPOT(c, 16)."""
    return int(rdbpot(np.int64(c32), 16))


def _exp_on_interval(a):
    c, third = _c16(1895147668), _c16(715827883)
    x = w16(a + (1 << 12))
    x2 = _srdhm16(x, x)
    x3 = _srdhm16(x2, x)
    x4 = _srdhm16(x2, x2)
    inner = w16(_srdhm16(w16(_satpot16(x4, -2) + x3), third) + x2)
    return clip_ufunc(c + _srdhm16(c, w16(x + _satpot16(inner, -1))), -32768, 32767)


def _exp_on_negative_values(a, ib: int):
    fb = 15 - ib
    q = 1 << (fb - 2)
    r = w16((a & (q - 1)) - q)
    res = _exp_on_interval(_satpot16(r, ib))
    rem = w16(r - a)
    for k, ck in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
                  (3, 720401), (4, 242)):
        if ib > k:
            res = np.where((rem & (1 << (fb + k))) != 0, _srdhm16(res, _c16(ck)), res)
    if ib > 5:
        res = np.where(a < _c16(-(1 << (36 - ib))), 0, res)
    return np.where(a == 0, 32767, res)


def _newton_x(a):
    hd = a + 32767
    hd = np.where(hd >= 0, (hd + 1) // 2, -((1 - hd) // 2))  # RoundingHalfSum(a, One): (s + sign) / 2, truncated
    x = w16(_c16(1515870810) + _srdhm16(hd, _c16(-1010580540)))
    for _ in range(3):
        x = w16(x + _satpot16(_srdhm16(x, w16((1 << 13) - _srdhm16(hd, x))), 2))
    return x


@functools.cache
def sigmoid16_table(ib: int) -> np.ndarray:
    """gemmlowp ``logistic`` of FixedPoint<int16, ib> for every raw input (index raw + 32768), Q0.15 out."""
    a = np.arange(-32768, 32768, dtype=np.int64)
    pos = a > 0
    e = _exp_on_negative_values(w16(-np.where(pos, a, w16(-a))), ib)
    rp = _satpot16(_newton_x(e), 1)
    return np.where(a == 0, 16384, np.where(pos, rp, w16(32767 - rp))).astype(np.int64)


@functools.cache
def tanh16_table(ib: int) -> np.ndarray:
    """gemmlowp ``tanh`` of FixedPoint<int16, ib> for every raw input (index raw + 32768), Q0.15 out."""
    a = np.arange(-32768, 32768, dtype=np.int64)
    neg = a < 0
    t = _satpot16(w16(_newton_x(_exp_on_negative_values(np.where(neg, a, w16(-a)), ib + 1)) - (1 << 13)), 2)
    return np.where(a == 0, 0, np.where(neg, w16(-t), t)).astype(np.int64)


def tdiv(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def tdiv_arr(a: np.ndarray, b: int) -> np.ndarray:
    """C++ integer division (truncates toward zero) of an int64 array by a positive int."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


def rdbpot_arr(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``rdbpot`` with an int64 exponent array (broadcast; 0 allowed)."""
    mask = (np.int64(1) << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


@functools.lru_cache(maxsize=65536)
def inv_sqrt_cached(x: int) -> tuple:
    return get_inv_sqrt_quantized_multiplier_exp(x, -1)


def mbqm(x, m: int, e: int):
    """``MultiplyByQuantizedMultiplier(int32 x, M >= 0, e)`` (double rounding) for an int64 array ``x`` that is
    wrapped to int32 first; the scalar-multiplier fast path of litert_py.quant's version (same results)."""
    x = ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    if m < 0 or not -31 <= e <= 31:
        return multiply_by_quantized_multiplier(x, m, e)
    if e > 0:
        x = (((x << e) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    y = (x * m + (1 << 30)) >> 31
    return rdbpot(y, -e) if e < 0 else y


def mbqm_small(x, m: int, e: int):
    """``mbqm`` in place for an int64 array whose values already fit int32 (no wrap)."""
    if m < 0 or not -31 <= e <= 31:
        return mbqm(x, m, e)
    if e > 0:
        x = (((x << e) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    x *= m
    x += P30
    x >>= S31
    if e < 0:
        neg = x < 0
        x += 1 << (-e - 1)
        x -= neg
        x >>= -e
    return x


def signed_index_table(table: np.ndarray) -> np.ndarray:
    """``table`` (indexed by raw + 32768) rolled so that indexing with the raw int16 value (negative indices
    wrap around) gives the same entry."""
    return np.ascontiguousarray(np.concatenate([table[32768:], table[:32768]]))


def mbqm_neon(x, m: int, e: int):
    """MultiplyByQuantizedMultiplier4Rows (common.h, double rounding, NEON via NEON_2_SSE): vqrdmulh, then a
    rounding right shift that rounds ties up (vrshl) instead of away from zero."""
    left, right = max(e, 0), -min(e, 0)
    y = saturating_rounding_doubling_high_mul(wrap32(np.left_shift(x, left)), m)
    return (y + (1 << (right - 1))) >> right if right else y


def lstm_sizes(ctx, ins: list, diagonal_ok: bool) -> tuple[int, int, int]:
    """(n_input, n_cell, n_output) from the input and the output gate's weights, checked as
    CheckInputTensorDimensions does; ``diagonal_ok``: 1-D (diagonal) recurrent weights are allowed."""
    n_input = ins[0].shape[-1]
    w_o = ins[IN_W["o"]]
    ctx.check(w_o is not None and len(w_o.shape) == 2 and w_o.shape[1] == n_input,
              "input_to_output_weights->dims->data[1] != n_input")
    n_cell = w_o.shape[0]
    r_o = ins[REC_W["o"]]
    ctx.check(r_o is not None and (len(r_o.shape) == 2 or diagonal_ok) and r_o.shape[0] == n_cell,
              "recurrent_to_output_weights->dims->data[0] != n_cell")
    return n_input, n_cell, (r_o.shape[1] if len(r_o.shape) == 2 else r_o.shape[0])
