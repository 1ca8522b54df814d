"""Bound-plan ops storing into the output of the RESHAPE / SQUEEZE / EXPAND_DIMS copies (shape.CopyReshaped) that
alone read their output, the copies dropped (ops/slice_views.py's fuse_feeding: the producer's ``feeding`` returns
``into_reshape``'s wrapper, whose own ``feeding`` absorbs a further copy). A keyword spotter's 1-D convolutions
between RESHAPEs (TC-ResNet: a CONV_2D or ADD, then two reshapes, 7 copies per invoke), the int8 CONV_2D's
ConvQuantizedFolded / ConvQuantizedScaled and the 8-bit pair tables.

Exact: the wrapped op's numpy calls are listed on the copy's output viewed with the op's own output shape (a
C-order reshape of a C-contiguous array is a view: the same values in the same order as the tensor the copy
would have read; an output, or a ring buffer's tail ``out[index]`` (``writing``), that is not C-contiguous gets
the values through a buffer of the op's shape and one copy)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .bound_plan import BoundCalls, BoundCalls2


def _into(out: np.ndarray, shape: tuple, listed) -> tuple:
    """``listed(target)``'s calls with ``target`` ``out`` viewed with ``shape``, or a buffer copied into ``out``."""
    if out.flags.c_contiguous:
        return tuple(listed(out.reshape(shape)))
    buffer = np.empty(shape, out.dtype)
    return (*listed(buffer), (np.copyto, (out, buffer.reshape(out.shape)), {}))


@dataclass(frozen=True, eq=False)
class IntoReshaped(BoundCalls):
    """A one-input BoundCalls op (``op``, whose own output has ``shape``) storing into a reshaped tensor, or into
    ``out[index]`` (``writing``: a streaming model's frame into its ring buffer's tail, ops/ring_buffer.py)."""

    op: BoundCalls
    shape: tuple
    index: tuple = (Ellipsis,)

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        return _into(out[self.index], self.shape, lambda target: self.op.bound_calls(x, target))

    def feeding(self, consumer):
        """This op storing into a further copy's output (its only reader), or None."""
        return _reshape_reader(self, consumer)

    def writing(self, index: tuple):
        """This op storing into ``out[index]`` instead of its whole output (once), or None."""
        return dataclasses.replace(self, index=index) if self.index == (Ellipsis,) else None


@dataclass(frozen=True, eq=False)
class IntoReshaped2(BoundCalls2):
    """IntoReshaped for a two-input BoundCalls2 op (the 8-bit pair tables)."""

    op: BoundCalls2
    shape: tuple
    index: tuple = (Ellipsis,)

    def bound_calls(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple:
        return _into(out[self.index], self.shape, lambda target: self.op.bound_calls(a, b, target))

    def feeding(self, consumer):
        """This op storing into a further copy's output (its only reader), or None."""
        return _reshape_reader(self, consumer)

    def writing(self, index: tuple):
        """This op storing into ``out[index]`` instead of its whole output (once), or None."""
        return dataclasses.replace(self, index=index) if self.index == (Ellipsis,) else None


def is_reshape_copy(consumer) -> bool:
    """Whether ``consumer`` is a RESHAPE / SQUEEZE / EXPAND_DIMS copy (shape.CopyReshaped): the kernels that absorb
    one ask here (a kernel module imports no other kernel module)."""
    from .shape import CopyReshaped  # shape.py registers kernels: imported where first needed

    return type(consumer) is CopyReshaped


def _reshape_reader(op, consumer):
    return op if is_reshape_copy(consumer) else None


def into_reshape(op, consumer, shape: tuple):
    """``op`` (a BoundCalls op whose output has ``shape``) storing into the output of ``consumer`` when that is a
    shape.CopyReshaped (the reshape of a tensor keeps its size), else None."""
    if _reshape_reader(op, consumer) is None:
        return None
    return IntoReshaped2(op, tuple(shape)) if isinstance(op, BoundCalls2) else IntoReshaped(op, tuple(shape))
