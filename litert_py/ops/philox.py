"""Philox4x32-10 (tsl/lib/random/philox_random.h, tflite/kernels/rng_util.cc): the one copy, used by
RANDOM_UNIFORM / RANDOM_STANDARD_NORMAL / MULTINOMIAL (ops/random.py, a stateful generator with a 128-bit
counter) and STABLEHLO_RNG_BIT_GENERATOR (ops/stablehlo/core.py, counters from the op's state input).

Vectorized: all blocks of one call are computed at once in uint64-held uint32 arithmetic (up to
_SCALAR_BLOCKS blocks in Python ints instead, cheaper than the ~100 numpy calls of the vectorized rounds).
"""

from __future__ import annotations

import numpy as np

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_M32 = 0xFFFFFFFF
_MASK = np.uint64(_M32)
_S32 = np.uint64(32)
_M128 = (1 << 128) - 1
#: Up to this many generator calls, plain Python ints beat the ~100 numpy calls of the vectorized rounds
#: (measured: ~3 us per call in Python against ~50 us for the vectorized rounds, whatever their size)
_SCALAR_BLOCKS = 12
_VECTOR_BLOCKS = 8192  # generator calls per vectorized step


def key_schedule(key: tuple[int, int]) -> tuple:
    """The 10 round keys (raised by the Weyl constants), as Python ints."""
    k0, k1 = key
    return tuple(((k0 + r * _W0) & _M32, (k1 + r * _W1) & _M32) for r in range(10))


def philox_blocks(key: tuple, counter: int, n: int, key_np: tuple | None = None) -> np.ndarray:
    """Philox4x32-10 outputs for the 128-bit counters counter, counter+1, ..., counter+n-1: uint32 (n, 4).

    key: key_schedule(...); key_np: the same as np.uint64 scalars (precomputed by Philox)."""
    if n <= _SCALAR_BLOCKS:
        words = []
        for j in range(n):
            c = (counter + j) & _M128
            c0, c1, c2, c3 = c & _M32, (c >> 32) & _M32, (c >> 64) & _M32, c >> 96
            for k0, k1 in key:
                p0, p1 = _M0 * c0, _M1 * c2
                c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _M32, (p0 >> 32) ^ c3 ^ k1, p0 & _M32
            words += (c0, c1, c2, c3)
        return np.array(words, np.uint32).reshape(n, 4)
    key_np = key_np or tuple((np.uint64(a), np.uint64(b)) for a, b in key)
    out = np.empty((n, 4), np.uint32)
    for s in range(0, n, _VECTOR_BLOCKS):  # chunks: the uint64 temporaries stay in cache
        _philox_vector(key_np, (counter + s) & _M128, out[s : s + _VECTOR_BLOCKS])
    return out


def _philox_vector(key_np: tuple, counter: int, out: np.ndarray) -> None:
    """philox_blocks for len(out) counters from counter, vectorized, into out (uint32 (n, 4))."""
    n = len(out)
    base, hi = counter & 0xFFFFFFFFFFFFFFFF, counter >> 64
    lo = np.arange(n, dtype=np.uint64)
    lo += np.uint64(base)
    c0, c1 = lo & _MASK, lo >> _S32
    if base + n <= 1 << 64:
        c2, c3 = np.full(n, hi & _M32, np.uint64), np.full(n, hi >> 32, np.uint64)
    else:  # carry into the high 64 bits (wraps like the C++ counter)
        h = (lo < np.uint64(base)).astype(np.uint64)
        h += np.uint64(hi)
        c2, c3 = h & _MASK, h >> _S32
    c0, c1, c2, c3 = philox_rounds(key_np, c0, c1, c2, c3)
    out[:, 0], out[:, 1], out[:, 2], out[:, 3] = c0, c1, c2, c3


class Philox:
    """The mutable generator of one node: key and 128-bit counter (as in tsl::random::PhiloxRandom)."""

    __slots__ = ("key", "key_np", "counter")

    def __init__(self, seed: int, seed2: int):
        # ai-edge-litert 2.3.0 keeps only the low 32 bits of each int64 option, sign-extended (measured)
        seed, seed2 = (((v + 2**31) & 0xFFFFFFFF) - 2**31 for v in (seed, seed2))
        if seed == 0 and seed2 == 0:  # both unspecified: non-deterministic seeds, like LiteRT
            seed, seed2 = (int(v) for v in np.random.default_rng().integers(0, 2**64, 2, dtype=np.uint64))
        s = seed & 0xFFFFFFFFFFFFFFFF
        self.key = key_schedule((s & _M32, s >> 32))
        self.key_np = tuple((np.uint64(k0), np.uint64(k1)) for k0, k1 in self.key)
        self.counter = (seed2 & 0xFFFFFFFFFFFFFFFF) << 64

    def blocks(self, counter: int, n: int) -> np.ndarray:
        """The generator's outputs at counters counter .. counter+n-1 (state unchanged): uint32 (n, 4)."""
        return philox_blocks(self.key, counter, n, self.key_np)

    def words(self, count: int) -> np.ndarray:
        """The next ``count`` uint32 (whole generator calls of 4 are consumed)."""
        nb = -(-count // 4)
        out = self.blocks(self.counter, nb).reshape(-1)[:count]
        self.counter = (self.counter + nb) & _M128
        return out


def philox_rounds(key_np: tuple, c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, c3: np.ndarray) -> tuple:
    """The 10 Philox rounds over uint64 arrays holding the uint32 counter words (updated in place, returned).
    key_np: ``key_schedule(...)`` as np.uint64 pairs."""
    p0, p1 = np.empty_like(c0), np.empty_like(c0)
    m0, m1 = np.uint64(_M0), np.uint64(_M1)
    # in place: c0' = hi(M1 c2) ^ c1 ^ k0, c1' = lo(M1 c2), c2' = hi(M0 c0) ^ c3 ^ k1, c3' = lo(M0 c0)
    for k0, k1 in key_np:
        np.multiply(c0, m0, out=p0)
        np.multiply(c2, m1, out=p1)
        np.right_shift(p1, _S32, out=c0)
        c0 ^= c1
        c0 ^= k0
        np.right_shift(p0, _S32, out=c2)
        c2 ^= c3
        c2 ^= k1
        np.bitwise_and(p1, _MASK, out=c1)
        np.bitwise_and(p0, _MASK, out=c3)
    return c0, c1, c2, c3


def philox4x32(k0: int, k1: int, c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, c3: np.ndarray) -> tuple:
    """Philox-4x32-10 of key (k0, k1) over counter words given as uint64 arrays holding uint32 values (fresh
    arrays: they are overwritten): the four output words, uint64 arrays."""
    key_np = tuple((np.uint64(a), np.uint64(b)) for a, b in key_schedule((int(k0), int(k1))))
    return philox_rounds(key_np, c0, c1, c2, c3)
