"""Phase planes of a strided window: a zero-padded axis split by position modulo the stride, so that every
filter tap reads a unit-stride run of one phase (taps.DepthwisePhaseTaps, depthwise_einsum,
conv2d_planes)."""

from __future__ import annotations

from math import gcd


def phase_axis(size: int, pad: int, padded: int, stride: int) -> tuple[int, list]:
    """Along one axis: the length of a phase plane and, per phase q, (plane slice, input slice) of the input
    elements that phase holds (padded position q + stride * a), or None when it holds none."""
    fills = []
    for q in range(stride):
        a0, a1 = max(0, -((q - pad) // stride)), (pad + size - 1 - q) // stride + 1
        fills.append(
            (slice(a0, a1), slice(a0 * stride + q - pad, (a1 - 1) * stride + q - pad + 1, stride)) if a1 > a0 else None
        )
    return -(-padded // stride), fills


def tap_groups(size: int, dilation: int, stride: int) -> list:
    """Along one axis, per phase q holding taps: (q, first tap, tap step, count, first offset, offset step)
    where tap k reads plane q at offset (k * dilation) // stride (the taps of one phase form such progressions)."""
    step = stride // gcd(dilation, stride)
    groups = []
    for k0 in range(min(step, size)):
        ks = range(k0, size, step)
        groups.append(
            ((k0 * dilation) % stride, k0, step, len(ks), (k0 * dilation) // stride, dilation * step // stride)
        )
    return groups
