"""Shared strategies and checks for the elementwise / activation / reduction op tests.

Values come from a hypothesis-drawn seed and a drawn *regime* (so each example mixes negatives, zeros and
large magnitudes, and some add inf / NaN / -0.0); shapes are drawn directly by hypothesis.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

#: value regimes the tests draw from
FLOAT_REGIMES = ("unit", "wide", "special")
INT_REGIMES = ("small", "full")


def float_values(rng: np.random.Generator, shape, dtype, regime: str) -> np.ndarray:
    """Floats with negatives and zeros; "wide" spans many decades, "special" adds inf, NaN, -0.0, extremes."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "c":
        re = float_values(rng, shape, np.float32, regime)
        im = float_values(rng, shape, np.float32, regime)
        return (re + 1j * im).astype(dtype)
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


def int_values(rng: np.random.Generator, shape, dtype, regime: str) -> np.ndarray:
    """Integers: "small" in [-10, 10] (clipped to the type), "full" over the whole type (overflow and wrap)."""
    info = np.iinfo(dtype)
    if regime == "small":
        x = rng.integers(max(-10, info.min), 11, size=shape, endpoint=False)
    else:
        x = rng.integers(info.min, info.max, size=shape, dtype=np.dtype(dtype), endpoint=True)
    return np.asarray(x).astype(dtype)


def values(rng: np.random.Generator, shape, dtype, regime: str) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return float_values(rng, shape, dtype, regime if regime in FLOAT_REGIMES else "unit")
    return int_values(rng, shape, dtype, regime if regime in INT_REGIMES else "small")


def regimes(dtype) -> st.SearchStrategy[str]:
    return st.sampled_from(FLOAT_REGIMES if np.dtype(dtype).kind in "fc" else INT_REGIMES)


@st.composite
def shapes(draw, min_rank: int = 0, max_rank: int = 6, max_dim: int = 4, allow_empty: bool = True):
    rank = draw(st.integers(min_rank, max_rank))
    low = 0 if allow_empty and draw(st.integers(0, 9)) == 0 else 1
    return tuple(draw(st.integers(low, max_dim)) for _ in range(rank))


@st.composite
def broadcast_pair(draw, max_rank: int = 6, max_dim: int = 4):
    """Two shapes that broadcast together: suffixes of one output shape with some dims set to 1."""
    out = draw(shapes(0, max_rank, max_dim))

    def operand():
        rank = draw(st.integers(0, len(out)))
        dims = out[len(out) - rank :]
        return tuple(1 if draw(st.integers(0, 2)) == 0 else d for d in dims)

    a, b = operand(), operand()
    if draw(st.booleans()):
        b = a  # equal shapes: LiteRT's non-broadcast path
    return a, b


@st.composite
def qparams(draw, dtype, min_exp: float = -6.0, max_exp: float = 3.0, symmetric: bool = False):
    """(scale, zero_point) of a quantized tensor: the scale log-uniform over 10**[min_exp, max_exp] (float32),
    the zero point 0 when ``symmetric``, else often at an end of the type's range."""
    scale = float(np.float32(10.0 ** draw(st.floats(min_exp, max_exp), label="log10_scale")))
    if symmetric:
        return scale, 0
    info = np.iinfo(dtype)
    zp = draw(
        st.one_of(st.sampled_from([int(info.min), int(info.max), 0]), st.integers(int(info.min), int(info.max))),
        label="zero_point",
    )
    return scale, zp
