"""The one value generator of the tests and the op dashboard (tools/op_coverage.py): random tensor values per
dtype, drawn from a numpy Generator (tests draw its seed with hypothesis), in named *regimes*.

``values(rng, shape, dtype, regime)`` dispatches on the dtype:

- floats (and complex: real and imaginary parts drawn alike): ``"unit"`` normal with sigma 3 and 10% zeros;
  ``"wide"`` the same times 10**uniform(-30, 30) (float16: -4, 4), many decades; ``"special"`` "unit" with 30%
  replaced by inf, -inf, NaN, -0.0, 0.0, the largest and smallest normal magnitudes, 1, -1; ``"spread"`` (the
  default) normal with sigma 10, no ties: a misplaced element shows;
- integers: ``"small"`` uniform in [-10, 10] clipped to the type; ``"full"`` (the default) the whole type
  (overflow, wrap-around); ``"narrow"`` a window of 17 values around a random centre (near-equal rows);
  ``"ends"`` the type's two extremes, one step inside them, and zero;
- bools: fair coin flips; strings (numpy object arrays of bytes): ``"letters"`` (the default) 0-3 lowercase
  letters, ``"words"`` from ``WORDS`` (empty, short, UTF-8).

The building blocks (``uniform``, ``ints``, ``bools``, ``words``, ``quantize``, ``quantized``) are what the op
dashboard's inputs are drawn with: a given seed gives the same values there as before they moved here.

numpy only (the dashboard imports this module without hypothesis); hypothesis strategies over regimes and
shapes are in tests/ops/_values.py.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "FLOAT_REGIMES",
    "INT4",
    "INT_REGIMES",
    "TENSOR_DTYPES",
    "WORDS",
    "bools",
    "int_range",
    "ints",
    "pack_int4",
    "quantize",
    "quantized",
    "uniform",
    "values",
    "words",
]

#: the numpy types of TFLite's fixed-size tensor types (CAST's and SELECT's, every pair tried; no strings, no int4)
TENSOR_DTYPES = [
    np.float32,
    np.float16,
    np.float64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.bool_,
    np.complex64,
]
#: the regimes hypothesis tests sample from (tests/ops/_values.py ``regimes``)
FLOAT_REGIMES = ("unit", "wide", "special")
INT_REGIMES = ("small", "full")
#: strings of the "words" regime: empty, one letter, short words, non-ASCII UTF-8
WORDS = [b"", b"a", b"bc", b"lite", b"rt", b"numpy", b"tflite", b"\xc3\xa9t\xc3\xa9"]


#: TensorType.INT4: a graph holds it unpacked, one int8 a value; a constant buffer packs two a byte (pack_int4)
INT4 = 17


def int_range(dtype) -> tuple[int, int]:
    """[min, max] of an integer type or of INT4."""
    if dtype == INT4:
        return -8, 7
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def pack_int4(values) -> np.ndarray:
    """INT4 constant buffer: two values per byte, the first in the low nibble."""
    v = (np.asarray(values, np.int64).reshape(-1) & 0xF).astype(np.uint8)
    if v.size % 2:
        v = np.append(v, np.uint8(0))
    return v[0::2] | (v[1::2] << 4)


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def bools(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.random(shape) < 0.5


def words(rng: np.random.Generator, shape, pool=WORDS) -> np.ndarray:
    """Strings picked from ``pool`` (an object array of bytes)."""
    return np.array([pool[i] for i in rng.integers(0, len(pool), _size(shape))], dtype=object).reshape(shape)


def letters(rng: np.random.Generator, shape) -> np.ndarray:
    """Strings of 0-3 random lowercase letters (an object array of bytes)."""
    items = np.empty(_size(shape), dtype=object)
    items[:] = [bytes(rng.integers(97, 123, rng.integers(0, 4)).astype(np.uint8)) for _ in range(items.size)]
    return items.reshape(shape)


def ints(rng: np.random.Generator, shape, dtype, lo: int, hi: int) -> np.ndarray:
    """Integers uniform in [lo, hi] (both included; within int64), as ``dtype``."""
    return rng.integers(int(lo), int(hi) + 1, shape, dtype=np.int64).astype(dtype)


def uniform(rng: np.random.Generator, shape, dtype, lo: float, hi: float) -> np.ndarray:
    """Floats uniform in [lo, hi) (complex: real and imaginary parts each), as ``dtype``."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dt)
    return rng.uniform(lo, hi, shape).astype(dt)


def quantize(real, q, dtype) -> np.ndarray:
    """``real`` quantized with ``q`` (QuantizationParameters; its first scale and zero point): round half to even,
    saturate to the type."""
    info = np.iinfo(dtype)
    v = np.round(np.asarray(real, np.float64) / q.scale[0]) + q.zero_point[0]
    return np.clip(v, info.min, info.max).astype(dtype)


def quantized(rng: np.random.Generator, shape, dtype, q, lo: float | None = None, hi: float | None = None):
    """A quantized tensor: real values uniform in [lo, hi] quantized with ``q``; without a range, integers over
    the whole type."""
    if lo is None and hi is None:
        info = np.iinfo(dtype)
        return ints(rng, shape, dtype, info.min, info.max)
    return quantize(rng.uniform(-3.0 if lo is None else lo, 3.0 if hi is None else hi, shape), q, dtype)


def _floats(rng: np.random.Generator, shape, dtype: np.dtype, regime: str) -> np.ndarray:
    size = _size(shape)
    if dtype.kind == "c":
        re = _floats(rng, shape, np.dtype(np.float32), regime)
        im = _floats(rng, shape, np.dtype(np.float32), regime)
        with np.errstate(invalid="ignore"):  # inf * 1j
            return (re + 1j * im).astype(dtype)
    if regime == "spread":
        return (rng.standard_normal(shape) * 10).astype(dtype)
    if regime not in FLOAT_REGIMES:
        raise ValueError(f"no float regime {regime!r}")
    x = rng.standard_normal(size) * 3
    if regime == "wide":
        decades = 4 if dtype == np.float16 else 30
        x *= 10.0 ** rng.uniform(-decades, decades, size)
    x[rng.random(size) < 0.1] = 0.0
    if regime == "special" and size:
        finfo = np.finfo(dtype)
        specials = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, finfo.max, -finfo.max, finfo.tiny, 1.0, -1.0])
        pick = rng.random(size) < 0.3
        x[pick] = rng.choice(specials, int(pick.sum()))
    with np.errstate(over="ignore"):
        return x.astype(dtype).reshape(shape)


def _ints(rng: np.random.Generator, shape, dtype: np.dtype, regime: str) -> np.ndarray:
    info = np.iinfo(dtype)
    if regime == "small":
        return np.asarray(rng.integers(max(-10, info.min), 11, size=shape)).astype(dtype)
    if regime == "full":
        return np.asarray(rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True))
    if regime == "narrow":
        c = int(rng.integers(info.min, info.max, endpoint=True))
        return np.clip(c + rng.integers(-8, 9, shape), info.min, info.max).astype(dtype)
    if regime == "ends":
        return rng.choice(np.array([info.min, info.min + 1, 0, info.max - 1, info.max], dtype), shape)
    raise ValueError(f"no integer regime {regime!r}")


def values(rng: np.random.Generator, shape, dtype, regime: str | None = None) -> np.ndarray:
    """Random values of ``dtype`` (strings: ``np.bytes_``) in ``regime`` (the module docstring). None is the
    dtype's default ("spread", "full", "letters"); a regime of the other kind (an integer regime for a float type,
    as a test drawing one regime for several dtypes passes) is "unit" for floats and "small" for integers."""
    dt = np.dtype(dtype)
    shape = tuple(shape)
    if dt.kind == "S":
        return words(rng, shape) if regime == "words" else letters(rng, shape)
    if dt.kind == "b":
        return bools(rng, shape)
    if dt.kind in "fc":
        float_regime = "spread" if regime is None else regime if regime in (*FLOAT_REGIMES, "spread") else "unit"
        return _floats(rng, shape, dt, float_regime)
    int_regime = "full" if regime is None else regime if regime in ("small", "full", "narrow", "ends") else "small"
    return _ints(rng, shape, dt, int_regime)
