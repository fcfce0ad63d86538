"""Tier 2 buffer slots: a two-pass lifetime allocator.

Pass 1 is the forward dry run (``live_ranges``) giving each buffered value its birth and death
step. Pass 2 walks time backwards: a value becomes live at its death, takes the best-fitting
free slot (all slots hold one double, so the lowest-numbered free slot), and frees it at its
birth. A slot may be reused by a value born in the very step that reads the previous tenant for
the last time, because a step reads its sources before it writes its result.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .liveness import LiveRanges


@dataclass(frozen=True)
class SlotPlan:
    slot_of: dict[int, int]
    """Vertex id -> slot index for every buffered vertex."""
    n_values: int
    """Slots before packing: one per buffered value."""
    n_slots: int
    """Slots after packing."""


def pack_slots(ranges: LiveRanges, buffered: list[int]) -> SlotPlan:
    birth, death = ranges.birth, ranges.death
    by_death = sorted(buffered, key=lambda v: (-int(death[v]), v))
    free: list[int] = []
    active: list[tuple[int, int, int]] = []  # (-birth, vertex, slot): next to release first
    slot_of: dict[int, int] = {}
    n_slots = 0
    for v in by_death:
        now = int(death[v])
        while active and -active[0][0] >= now:
            _, _, s = heapq.heappop(active)
            heapq.heappush(free, s)
        if free:
            s = heapq.heappop(free)
        else:
            s = n_slots
            n_slots += 1
        slot_of[v] = s
        heapq.heappush(active, (-int(birth[v]), v, s))
    return SlotPlan(slot_of, len(buffered), n_slots)


def check_slots(ranges: LiveRanges, plan: SlotPlan) -> None:
    """Raise if two values that are live at the same time share a slot."""
    per_slot: dict[int, list[int]] = {}
    for v, s in plan.slot_of.items():
        per_slot.setdefault(s, []).append(v)
    for s, vs in per_slot.items():
        vs.sort(key=lambda v: int(ranges.birth[v]))
        ends = np.array([int(ranges.death[v]) for v in vs])
        starts = np.array([int(ranges.birth[v]) for v in vs])
        if np.any(starts[1:] < ends[:-1]):
            raise AssertionError(f"slot {s} holds overlapping values")
