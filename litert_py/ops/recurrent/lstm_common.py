"""What the LSTM kernels share: the input indices of the full kernel, 0-d constants for the per-step loops,
and the gemmlowp int16 fixed point of the integer kernels (sigmoid/tanh tables over all 65536 inputs, MBQM
variants). Sources: see lstm.py."""

from __future__ import annotations

import numpy as np

from ...quant import (
    multiply_by_quantized_multiplier,
    saturating_rounding_doubling_high_mul,
    wrap32,
)

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


def rdbpot(x, e: int):
    if e == 0:
        return x
    mask = (1 << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


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
    ctx.check(
        w_o is not None and len(w_o.shape) == 2 and w_o.shape[1] == n_input,
        "input_to_output_weights->dims->data[1] != n_input",
    )
    n_cell = w_o.shape[0]
    r_o = ins[REC_W["o"]]
    ctx.check(
        r_o is not None and (len(r_o.shape) == 2 or diagonal_ok) and r_o.shape[0] == n_cell,
        "recurrent_to_output_weights->dims->data[0] != n_cell",
    )
    return n_input, n_cell, (r_o.shape[1] if len(r_o.shape) == 2 else r_o.shape[0])


def float_dot(wt: np.ndarray | None):
    """The product of the float32 recurrent kernels' steps (LSTM, RNN) by ``wt`` (in, out): ``np.dot`` (~0.4 us less
    overhead than np.matmul for small operands; bit-identical results, checked over row counts 1-8, depths 1-512, 2-1024
    columns, contiguous and strided rows) except for a single output column (or none), where the two take different BLAS
    paths: np.matmul then, as the one-step code."""
    return np.dot if wt is not None and wt.shape[1] > 1 else np.matmul
