"""Standalone float clamp activations fused at prepare into the op that produces their input.

Converters often emit a separate RELU after a CONV_2D, DEPTHWISE_CONV_2D or ADD instead of the fused activation
(MediaPipe's selfie segmentation: 22 RELUs, face detection: 17): each is a whole pass over the tensor. Every
float kernel of those producers already ends with a clamp to its fused activation's range
(ActivationFunctionWithMinMax; NONE is [-FLT_MAX, FLT_MAX]), so :func:`fuse_activations` drops the activation
step and lets the producer clamp to the intersection of both ranges, writing the activation's output tensor.

Exactness: bit-identical to the two steps. Both clamps are ``clip_ufunc(x, lo, hi)``, which keeps ``x`` unless
``x < lo`` (gives lo) or ``x > hi`` (gives hi): NaN and -0.0 pass through (LiteRT's ``min(max(x, lo), hi)`` with
std::max / std::min, and its Relu ``x < 0 ? 0 : x``, do the same). For ranges [a, b] and [c, d] that intersect,
``clip(clip(x, a, b), c, d) == clip(x, max(a, c), min(b, d))`` for every x: a value inside both is kept by both;
one below max(a, c) ends at max(a, c) (first at a when x < a, then at c when a < c), and symmetrically above
(an inf first becomes the producer's +-FLT_MAX, then the activation's bound, as the fused clamp gives). Disjoint
ranges (which no pair of TFLite activations has) are not fused.

Conditions: the activation is a float32 RELU, RELU6, RELU_N1_TO_1 or RELU_0_TO_1 (`ReluFloat`); its input has
one producer step, which has that one output and offers ``with_clamp(lo, hi)`` (the new prepared op, or None
when it cannot); the input is read by the activation only, is not a subgraph output, input or variable, and
has the activation output's shape and type. The interpreter does not fuse when it must keep every tensor
(experimental_preserve_all_tensors) or runs its dynamic path.

Measured (tools/profile_ops.py, sum of steps, medians of 3-5 alternating runs, 1 thread): selfie segmentation's
22 RELU steps (0.34 ms of 8.7 ms) are gone, 8.72 -> 8.23 ms; face detection's 17 (0.11 of 2.34 ms), 2.34 ->
2.27 ms. Not fused: HARD_SWISH / LOGISTIC / PRELU after a CONV_2D or ADD. Their passes stay (the producer's clamp
is still needed: -inf times 0 is NaN where -FLT_MAX times 0 is -0.0), and running them per cache block of the
producer's output measured slower below about 2 MB (ADD + PRELU over 96x96x16: 108 -> 160 us in 64 KB blocks;
clamp + HARD_SWISH over 128x128x16 equal at 128-256 KB blocks), the size of every such layer in those models.

The float kernels keep their clamp bounds as 0-d float32 arrays (:func:`float_bounds`, and :func:`intersect`'s
results): a ufunc converts a numpy scalar operand to an array on every call (0.15-0.2 us: a clamp of 16 values
0.47 -> 0.26 us), the prepared array it uses as it is. The same float32 values, the same loops: bit-identical.

This module registers no op; runtime/subgraph.py calls :func:`fuse_activations` on its prepared steps.
:class:`ClampLast` is the ``with_clamp`` of the float kernels whose last operation on every output value is
``clip_ufunc(out, self.out_min, self.out_max)``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .activations import ReluFloat
from .common import float_activation_range, scalar_operand


def float_bounds(activation: int) -> tuple[np.ndarray, np.ndarray]:
    """The fused activation's float32 clamp range (CalculateActivationRange<float>) as 0-d float32 arrays
    (module docstring)."""
    lo, hi = float_activation_range(activation)
    return scalar_operand(lo), scalar_operand(hi)


def intersect(lo, hi, lo2, hi2) -> tuple[np.ndarray, np.ndarray] | None:
    """The float32 range [lo, hi] intersected with [lo2, hi2] as 0-d float32 arrays, or None when they are
    disjoint."""
    a, b = np.float32(max(lo, lo2)), np.float32(min(hi, hi2))
    return (scalar_operand(a), scalar_operand(b)) if a <= b else None


class ClampLast:
    """Mixin for a frozen dataclass prepared op whose last operation on every output value is
    ``clip_ufunc(out, self.out_min, self.out_max, out=out)`` and whose only output is that tensor."""

    def with_clamp(self, lo, hi):
        """This op clamping to [lo, hi] within its own range (module docstring), or None."""
        r = intersect(self.out_min, self.out_max, lo, hi)
        return None if r is None else dataclasses.replace(self, out_min=r[0], out_max=r[1])


def with_clamp(op, lo, hi):
    """``op`` clamping to [lo, hi] within its own range, or None when it cannot."""
    method = getattr(op, "with_clamp", None)
    return None if method is None else method(lo, hi)


def fuse_activations(steps: list, infos: list, inputs, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each standalone clamp activation fused
    into its producer (module docstring)."""
    producer: dict[int, int] = {}  # tensor -> the step writing it
    readers: dict[int, list[int]] = {}  # tensor -> the steps reading it
    for k, (node, _) in enumerate(steps):
        for o in node.operator.outputs:
            producer[o] = k
        for i in node.operator.inputs:
            readers.setdefault(i, []).append(k)
    keep = set(outputs) | set(inputs)
    new_steps: list = list(steps)
    for j, (node, op) in enumerate(steps):
        if type(op) is not ReluFloat or len(node.operator.inputs) != 1 or len(node.operator.outputs) != 1:
            continue
        t, u = node.operator.inputs[0], node.operator.outputs[0]
        k = producer.get(t)
        if k is None or t < 0 or u < 0 or t in keep or readers.get(t) != [j] or new_steps[k] is None:
            continue
        ti, ui = infos[t], infos[u]
        if ti.dynamic or ui.dynamic or ti.is_variable or tuple(ti.shape) != tuple(ui.shape):
            continue
        if ti.dtype != np.float32 or ui.dtype != np.float32:
            continue
        pnode, pop = new_steps[k]
        if list(pnode.operator.outputs) != [t]:
            continue
        fused = with_clamp(pop, op.lo, op.hi)
        if fused is None:
            continue
        operator = dataclasses.replace(pnode.operator, outputs=(u,))
        new_steps[k] = (dataclasses.replace(pnode, operator=operator), fused)
        new_steps[j] = None
        producer[u] = k  # a next activation reading u folds into the same producer
    if all(s is not None for s in new_steps):
        return steps
    return [s for s in new_steps if s is not None]
