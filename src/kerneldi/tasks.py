"""Grid tasks: a block engine's integration cut into ranges of consecutive grid blocks that can
run anywhere, for callers that spread one XC integration over workers.

A block engine restricted to a set of tasks (``select``) integrates only their grid points:
nelec, Exc and Vxc of the restriction are the sums over those points, so the results of a
partition of the tasks add up to the whole grid's. A task's cost is the number of kept
(basis block, basis block) pairs over its grid blocks, times d^3: the work of the block-pair
products of the density and the potential, which dominate a block engine's time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .errors import InputError


@dataclass(frozen=True)
class XcTask:
    """Grid blocks [g0, g1) of the engine's layout, and their estimated cost."""

    index: int
    g0: int
    g1: int
    cost: float


def grid_tasks(col_ptr: np.ndarray, d: int, ranges: Iterable[tuple[int, int]]) -> list[XcTask]:
    """The tasks of the grid-block ``ranges``, costed from the kept blocks per grid block
    (``col_ptr`` of the engine's BCSC pattern)."""
    kept = np.diff(np.asarray(col_ptr, dtype=np.int64)).astype(np.float64)
    return [
        XcTask(i, int(g0), int(g1), float((kept[g0:g1] ** 2).sum() * d**3))
        for i, (g0, g1) in enumerate(ranges)
    ]


def checked_selection(tasks, count: int) -> tuple[int, ...] | None:
    """``tasks`` (indices into an engine's task list of ``count``) as a sorted tuple, or None
    for every task."""
    if tasks is None:
        return None
    chosen = tuple(sorted({int(t) for t in tasks}))
    if chosen and (chosen[0] < 0 or chosen[-1] >= count):
        raise InputError(f"task indices must lie in [0, {count}), got {list(chosen)}")
    return chosen


def runs(indices: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive runs [a, b) of sorted ``indices``."""
    out: list[list[int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return [(a, b) for a, b in out]
