"""Grid tasks: a block engine's integration cut into ranges of consecutive grid blocks that can
run anywhere, for callers that spread one XC integration over workers.

A block engine restricted to a set of tasks (``select``) integrates only their grid points:
nelec, Exc and Vxc of the restriction are the sums over those points, so the results of a
partition of the tasks add up to the whole grid's. The selection is a collection (kept for
every later call) or an iterator, drawn from lazily by the next call, task by task, as a
scheduler hands tasks out. A task's cost is the number of kept
(basis block, basis block) pairs over its grid blocks, times d^3: the work of the block-pair
products of the density and the potential, which dominate a block engine's time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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


def checked_selection(tasks, count: int):
    """``tasks`` (indices into an engine's task list of ``count``): a collection as a sorted
    tuple, an iterator as a checked lazy iterator of distinct indices, None as None (every
    task)."""
    if tasks is None:
        return None
    if isinstance(tasks, Iterator):
        return _checked_stream(tasks, count)
    chosen = tuple(sorted({int(t) for t in tasks}))
    if chosen and (chosen[0] < 0 or chosen[-1] >= count):
        raise InputError(f"task indices must lie in [0, {count}), got {list(chosen)}")
    return chosen


def _checked_stream(tasks: Iterator, count: int) -> Iterator[int]:
    seen: set[int] = set()
    for t in tasks:
        t = int(t)
        if not 0 <= t < count or t in seen:
            raise InputError(f"task {t}: not in [0, {count}) or drawn twice")
        seen.add(t)
        yield t


def runs(indices: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive runs [a, b) of sorted ``indices``."""
    out: list[list[int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return [(a, b) for a, b in out]
