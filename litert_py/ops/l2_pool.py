"""L2_POOL_2D (float32).

Sources matched (ai-edge-litert 2.3.0, BUILTIN_REF): tflite/kernels/pooling.cc (GenericPrepare, shared with
AVERAGE/MAX_POOL_2D: one 4-D input, output type == input type, positive strides, the unchecked
ComputePaddingHeightWidth; L2Eval supports FLOAT32 only: "Type %s not currently supported.") and
tflite/kernels/internal/reference/pooling.h L2Pool: per output the float32 sum of val*val over the window's
in-input taps in (filter_y, filter_x) order from 0.f, divided by their count, std::sqrt, then
ActivationFunctionWithMinMax with the float CalculateActivationRange.

Vectorized: the squares are taken once over the whole input, then the taps (rectangles clipped to the input,
pool_common.py's helpers) are added in the reference's order: bit-exact with the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .common import clip_ufunc, float_activation_range
from .conv.common import EMPTY_OUTPUT
from .pool_common import float_divisor, pool_geometry, pool_taps_2d, sum_taps
from .registry import OpContext, PreparedOp, register

INPUT = 0
OUTPUT = 0


@dataclass(frozen=True, eq=False)
class L2PoolFloat:
    taps: tuple  # ((output index, input index), ...) in (filter_y, filter_x) order
    count: np.float32 | np.ndarray  # taps inside the input: one count or (OH, OW, C)
    squares: np.ndarray  # scratch of the input's shape
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        sq = self.squares
        np.multiply(x, x, out=sq)
        sum_taps(sq, self.taps, 0, out)
        np.divide(out, self.count, out=out)
        np.sqrt(out, out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


@register(BuiltinOperator.L2_POOL_2D)
def prepare_l2_pool_2d(ctx: OpContext) -> PreparedOp:
    x, geo = pool_geometry(ctx)
    ctx.check(x.dtype == np.float32, f"Type {x.type_name} not currently supported.")
    if geo.empty:
        return EMPTY_OUTPUT
    taps = pool_taps_2d(geo)
    count = float_divisor(ctx, geo)
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    return L2PoolFloat(tuple((oi, ii) for oi, ii, _ in taps), count, np.empty(x.shape, np.float32), lo, hi)
