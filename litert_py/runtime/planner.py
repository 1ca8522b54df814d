"""Tensor arena planning: lifetimes -> offsets in one buffer.

Greedy by size, as TFLite Micro's GreedyMemoryPlanner and TFLite's ArenaPlanner do: tensors are placed
largest first, each at the lowest aligned offset where it overlaps (in time) with no tensor already placed
in that address range. The plan reports the arena size next to a lower bound, the largest sum of bytes
live at any one step, so its quality is measurable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ALIGNMENT = 64


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

    @property
    def efficiency(self) -> float:
        """lower_bound / arena_bytes: 1.0 is a perfect plan."""
        return self.lower_bound / self.arena_bytes if self.arena_bytes else 1.0

    def check(self) -> None:
        """Raise AssertionError if two tensors live at the same time share a byte."""
        items = sorted(self.offsets)
        for a_i, a in enumerate(items):
            for b in items[a_i + 1 :]:
                if self.lifetimes[a].overlaps(self.lifetimes[b]):
                    a0, b0 = self.offsets[a], self.offsets[b]
                    if a0 < b0 + self.sizes[b] and b0 < a0 + self.sizes[a] and self.sizes[a] and self.sizes[b]:
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


def plan_arena(sizes: Mapping[int, int], lifetimes: Mapping[int, Lifetime], reuse: bool = True,
               alignment: int = ALIGNMENT) -> ArenaPlan:
    """Offsets for every tensor of ``sizes`` (bytes). ``reuse=False`` gives each tensor its own bytes."""
    offsets: dict[int, int] = {}
    if not reuse:
        pos = 0
        for t in sorted(sizes):
            offsets[t] = pos
            pos += align_up(sizes[t], alignment)
        return ArenaPlan(offsets, dict(sizes), dict(lifetimes), pos, lower_bound(sizes, lifetimes))
    placed: list[tuple[int, int, Lifetime]] = []  # (offset, aligned size, lifetime)
    order = sorted(sizes, key=lambda t: (-sizes[t], lifetimes[t].first, t))
    end = 0
    for t in order:
        need = align_up(sizes[t], alignment)
        lt = lifetimes[t]
        busy = sorted((o, s) for o, s, other in placed if other.overlaps(lt))
        pos = 0
        for o, s in busy:
            if o - pos >= need:
                break
            pos = max(pos, o + s)
        offsets[t] = pos
        placed.append((pos, need, lt))
        end = max(end, pos + need)
    return ArenaPlan(offsets, dict(sizes), dict(lifetimes), end, lower_bound(sizes, lifetimes))
