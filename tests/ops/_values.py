"""Hypothesis strategies shared by the op tests: value regimes, shapes, broadcastable shape pairs, quantization.

Values come from a hypothesis-drawn seed and a drawn *regime* (tests/values.py: each example mixes negatives,
zeros and large magnitudes, and some add inf / NaN / -0.0); shapes are drawn directly by hypothesis.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests.values import FLOAT_REGIMES, INT_REGIMES


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
