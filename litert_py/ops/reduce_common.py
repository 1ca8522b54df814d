"""The axis handling every reducer shares (MEAN / SUM in reduce.py; REDUCE_MAX, REDUCE_MIN, REDUCE_PROD,
REDUCE_ANY, REDUCE_ALL in reduce_generic.py). Registers no op.

Axis handling and output shape follow reduce.cc (ResolveAxis, GetOutputShape):
the axis tensor is int32 (any shape; its values are read flat); negative axes count from the end,
repeated axes count once, an axis outside [-rank, rank) is rejected; ``keep_dims`` keeps reduced axes as 1.
A rank-0 input ignores the axes and gives a rank-0 output. A constant axis tensor gives a static output shape;
otherwise the output is dynamic and the axes are read at eval (`ReduceDynamicAxes`).

Sources matched: tflite/kernels/reduce.cc (ResolveAxis, GetOutputShape), tflite/kernels/internal/reference/reduce.h.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputValueError
from .bound_plan import run_calls
from .common import Reduction
from .registry import OpContext

INPUT, AXIS, OUTPUT = 0, 1, 0


def resolve_axes(rank: int, axis_values: Sequence[int]) -> tuple[int, ...]:
    """ResolveAxis: non-negative axes in the order given, repeats dropped. Raises ValueError when out of range."""
    if rank == 0:
        return ()
    axes: list[int] = []
    for a in (int(v) for v in axis_values):
        r = a + rank if a < 0 else a
        if not 0 <= r < rank:
            raise InputValueError(f"Invalid axis index {a} for a rank-{rank} input.")
        if r not in axes:
            axes.append(r)
    return tuple(axes)


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keep_dims: bool) -> tuple[int, ...]:
    """GetOutputShape: reduced axes become 1 (keep_dims) or disappear."""
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@dataclass(frozen=True, eq=False)
class ReduceDynamicAxes:
    """A reduction whose axis tensor is not constant: the axes, the output shape and the prepared op at eval;
    ``make(x, axes, reduction)`` builds the op (MEAN / SUM: reduce.py's ``_reduce_make``; REDUCE_MAX/MIN/PROD/ANY/ALL:
    reduce_generic.py's makers), a partial holding its constants."""

    keep_dims: bool
    make: functools.partial

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        axes = resolve_axes(x.ndim, inputs[AXIS].reshape(-1))
        out = np.empty(reduced_shape(x.shape, axes, self.keep_dims), x.dtype)
        op = self.make(x, axes, Reduction.of(x.shape, axes))
        if getattr(op, "bound_inputs", None) == 1:  # a BoundCalls made for this invoke: its calls, no bound plan
            run_calls(op.bound_calls(x, out))
        else:
            op([x], [out])
        outputs[OUTPUT] = out


def refuse_empty_quantized(ctx: OpContext, reduction: Reduction) -> None:
    """int8 / int16 SUM and REDUCE_PROD over no element: LiteRT's kernels return uninitialized scratch values
    (e.g. SUM int16 of a (0, 3, 4) input over axes 0 and 2 gives [0 16128 32670], its optimized kernel
    [7792 16383 32670]; the sum is 0), so the model is refused rather than answered differently."""
    ctx.check(
        reduction.n > 0 or reduction.m == 0,
        f"quantized {ctx.op_name} over an empty dimension: LiteRT returns uninitialized values there",
    )
