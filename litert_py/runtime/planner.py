"""Tensor arena planning: lifetimes -> offsets in one buffer.

Placement is greedy, as TFLite Micro's GreedyMemoryPlanner and TFLite's ArenaPlanner do: tensors are taken
in some order and each goes to the lowest aligned offset where it overlaps (in time) with no tensor
already placed in that address range. The order decides the quality, and no single order is best on
every graph, so the planner tries a few (largest first, the classic; TFLite's whole-lifetime tensors
first; largest size x lifetime; first use; the busiest step a tensor is live in) and then, while the plan
is above the lower bound, a bounded number of randomized ones (sizes scaled by a random factor, or two
tensors of the best order swapped; seeded, so plans are reproducible). It stops as soon as a plan meets
the bound, which most real graphs reach with the first order.

The plan reports the arena size next to the lower bound, the largest sum of bytes live at any one step,
so its quality is measurable. Offsets are ``ALIGNMENT``-byte aligned.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

ALIGNMENT = 64
#: Randomized orders tried at most, on top of the heuristic ones, while the plan is above the bound.
SEARCH_TRIES = 64
#: Work allowed for the orders after the first (a unit is one placed tensor compared; placing a tensor
#: costs as much as ``_TENSOR_WORK`` comparisons), about 0.05-0.1 s: big graphs get the first order only.
SEARCH_WORK = 25_000_000
_TENSOR_WORK = 5_000


def align_up(n: int, alignment: int = ALIGNMENT) -> int:
    return (n + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class Lifetime:
    first: int  # first step the tensor must hold its value (its writer, or -1 for graph inputs)
    last: int  # last step that reads it

    def overlaps(self, other: Lifetime) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class ArenaPlan:
    offsets: dict[int, int]  # tensor index -> byte offset
    sizes: dict[int, int]  # tensor index -> bytes
    lifetimes: dict[int, Lifetime]
    arena_bytes: int
    lower_bound: int  # max over steps of the bytes live at that step
    alignment: int = ALIGNMENT

    @property
    def efficiency(self) -> float:
        """lower_bound / arena_bytes: 1.0 is a perfect plan."""
        return self.lower_bound / self.arena_bytes if self.arena_bytes else 1.0

    @property
    def aligned_lower_bound(self) -> int:
        """The lower bound with every size rounded up to the alignment: what a perfect plan needs here."""
        return lower_bound({t: align_up(n, self.alignment) for t, n in self.sizes.items()}, self.lifetimes)

    def check(self) -> None:
        """Raise AssertionError if two tensors live at the same time share a byte, or one leaves the arena."""
        spans = sorted((self.offsets[t], self.offsets[t] + n, t) for t, n in self.sizes.items() if n)
        for k, (a0, a1, a) in enumerate(spans):
            if a0 < 0 or a1 > self.arena_bytes:
                raise AssertionError(f"tensor {a} at [{a0}, {a1}) lies outside the {self.arena_bytes}-byte arena")
            for b0, _, b in spans[k + 1 :]:
                if b0 >= a1:
                    break
                if self.lifetimes[a].overlaps(self.lifetimes[b]):
                    raise AssertionError(f"tensors {a} and {b} overlap in time and space")


def lower_bound(sizes: Mapping[int, int], lifetimes: Mapping[int, Lifetime]) -> int:
    """The largest total of bytes live at one step: no plan can use less."""
    events: dict[int, int] = {}
    for t, n in sizes.items():
        lt = lifetimes[t]
        events[lt.first] = events.get(lt.first, 0) + n
        events[lt.last + 1] = events.get(lt.last + 1, 0) - n
    best = live = 0
    for step in sorted(events):
        live += events[step]
        best = max(best, live)
    return best


class _Placer:
    """First-fit placement of tensors in a given order, vectorized over the tensors already placed."""

    def __init__(self, sizes: Mapping[int, int], lifetimes: Mapping[int, Lifetime], alignment: int):
        self.need = {t: align_up(n, alignment) for t, n in sizes.items()}
        self.lifetimes = lifetimes
        self.work = 0

    def place(self, order: Sequence[int]) -> tuple[dict[int, int], int]:
        n = len(order)
        first, last = np.empty(n, np.int64), np.empty(n, np.int64)
        start, stop = np.empty(n, np.int64), np.empty(n, np.int64)  # placed byte ranges [start, stop)
        offsets: dict[int, int] = {}
        end = 0
        for k, t in enumerate(order):
            need, lt = self.need[t], self.lifetimes[t]
            pos = 0
            if need and k:
                live = (first[:k] <= lt.last) & (last[:k] >= lt.first) & (stop[:k] > start[:k])
                o, e = start[:k][live], stop[:k][live]
                self.work += k + _TENSOR_WORK
                if o.size:
                    order_ = np.argsort(o, kind="stable")
                    o, e = o[order_], np.maximum.accumulate(e[order_])
                    # Gap i lies between the furthest end of ranges before i and the start of range i.
                    lo = np.concatenate(([0], e[:-1]))
                    fits = np.flatnonzero(o - lo >= need)
                    pos = int(lo[fits[0]]) if fits.size else int(e[-1])
            offsets[t] = pos
            first[k], last[k], start[k], stop[k] = lt.first, lt.last, pos, pos + need
            end = max(end, pos + need)
        return offsets, end


def _order_makers(sizes: Mapping[int, int], lifetimes: Mapping[int, Lifetime]) -> list[Callable[[], list[int]]]:
    """The heuristic orders, best first on typical graphs; each is built only if the planner gets to it."""
    ts = sorted(sizes)
    lt = lifetimes

    def whole_lifetime_first() -> list[int]:  # TFLite's ArenaPlanner: tensors live throughout go first
        first, last = min(lt[t].first for t in ts), max(lt[t].last for t in ts)
        return sorted(ts, key=lambda t: (not (lt[t].first == first and lt[t].last == last), -sizes[t], lt[t].first, t))

    def busiest_step_first() -> list[int]:  # "greedy by breadth" (Pisarchyk & Lee 2020)
        points = sorted({s for t in ts for s in (lt[t].first, lt[t].last)})
        delta = np.zeros(len(points) + 1, np.int64)
        lo = {t: bisect.bisect_left(points, lt[t].first) for t in ts}
        hi = {t: bisect.bisect_left(points, lt[t].last) + 1 for t in ts}
        for t in ts:
            delta[lo[t]] += sizes[t]
            delta[hi[t]] -= sizes[t]
        live = np.cumsum(delta)
        breadth = {t: int(live[lo[t] : hi[t]].max()) for t in ts}
        return sorted(ts, key=lambda t: (-breadth[t], -sizes[t], lt[t].first, t))

    return [
        lambda: sorted(ts, key=lambda t: (-sizes[t], lt[t].first, t)),  # greedy by size (TFLM, TFLite)
        whole_lifetime_first,
        lambda: sorted(ts, key=lambda t: (-sizes[t] * (lt[t].last - lt[t].first + 1), lt[t].first, t)),
        lambda: sorted(ts, key=lambda t: (lt[t].first, -sizes[t], t)),  # first use
        busiest_step_first,
    ]


def plan_arena(
    sizes: Mapping[int, int],
    lifetimes: Mapping[int, Lifetime],
    reuse: bool = True,
    alignment: int = ALIGNMENT,
    search_tries: int = SEARCH_TRIES,
) -> ArenaPlan:
    """Offsets for every tensor of ``sizes`` (bytes). ``reuse=False`` gives each tensor its own bytes."""
    bound = lower_bound(sizes, lifetimes)
    if not reuse:
        offsets: dict[int, int] = {}
        pos = 0
        for t in sorted(sizes):
            offsets[t] = pos
            pos += align_up(sizes[t], alignment)
        return ArenaPlan(offsets, dict(sizes), dict(lifetimes), pos, bound, alignment)
    placer = _Placer(sizes, lifetimes, alignment)
    target = lower_bound(placer.need, lifetimes)  # the bound with aligned sizes: no plan can beat it
    best_offsets, best_end, best_order = None, None, None
    for make_order in _order_makers(sizes, lifetimes):
        if best_end is not None and (best_end <= target or placer.work > SEARCH_WORK):
            break
        order = make_order()
        offsets, end = placer.place(order)
        if best_end is None or end < best_end:
            best_offsets, best_end, best_order = offsets, end, order
    rng = random.Random(len(sizes))
    for k in range(search_tries):
        if best_end <= target or placer.work > SEARCH_WORK:
            break
        if k % 2 == 0:  # a greedy-by-size order with each size scaled by a random factor
            noise = {t: sizes[t] * rng.uniform(0.3, 1.7) for t in sizes}
            order = sorted(sizes, key=lambda t: (-noise[t], t))
        else:  # the best order so far with two tensors swapped
            order = list(best_order)
            i, j = rng.randrange(len(order)), rng.randrange(len(order))
            order[i], order[j] = order[j], order[i]
        offsets, end = placer.place(order)
        if end < best_end:
            best_offsets, best_end, best_order = offsets, end, order
    return ArenaPlan(best_offsets, dict(sizes), dict(lifetimes), best_end, bound, alignment)
