"""Splitting work items into groups of similar cost, one pipeline job per group."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def balanced_groups(items: Sequence[T], cost: Callable[[T], float], n: int) -> list[list[T]]:
    """``items`` in at most ``n`` non-empty groups, largest cost first onto the lightest group
    (LPT); each group keeps the items' original order."""
    if n < 1:
        raise ValueError(f"need at least one group, got {n}")
    n = min(n, len(items))
    heap = [(0.0, g) for g in range(n)]
    members: list[list[int]] = [[] for _ in range(n)]
    for i in sorted(range(len(items)), key=lambda i: -cost(items[i])):
        load, g = heapq.heappop(heap)
        members[g].append(i)
        heapq.heappush(heap, (load + cost(items[i]), g))
    return [[items[i] for i in sorted(m)] for m in members]
