"""What the StableHLO kernel modules share: the element functions ``fn(a, b, out)`` of STABLEHLO_ADD, MULTIPLY,
MAXIMUM and MINIMUM as LiteRT computes them (stablehlo_elementwise.h: integers wrap like C++, bool add is logical
or, bool multiply logical and, max / min are std::max / std::min), used by their kernels (elementwise.py) and as
REDUCE_WINDOW / SCATTER bodies (core.py). Registers no op."""

from __future__ import annotations

import numpy as np


def hlo_add(a, b, out):
    if out.dtype == np.bool_:
        np.logical_or(a, b, out=out)
    else:
        np.add(a, b, out=out)


def hlo_multiply(a, b, out):
    if out.dtype == np.bool_:
        np.logical_and(a, b, out=out)
    else:
        np.multiply(a, b, out=out)


def hlo_maximum(a, b, out):
    np.copyto(out, np.where(a < b, b, a))  # std::max(a, b) = (a < b) ? b : a (NaN in a wins)


def hlo_minimum(a, b, out):
    np.copyto(out, np.where(b < a, b, a))  # std::min(a, b) = (b < a) ? b : a
