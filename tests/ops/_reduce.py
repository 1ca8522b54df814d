"""Shared by the reduction tests (test_reduce, test_reduce_generic): axis lists LiteRT accepts and the output
shape they give."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def axes_for(draw, rank: int):
    """Axis lists LiteRT accepts: any length (repeats and negatives included), possibly empty."""
    if rank == 0:
        return draw(st.lists(st.integers(-1, 0), max_size=2))
    return draw(st.lists(st.integers(-rank, rank - 1), max_size=rank + 1))


def _expected_shape(shape, axes, keep):
    resolved = {a % len(shape) for a in axes} if shape else set()
    if keep:
        return tuple(1 if i in resolved else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in resolved)
