"""Live ranges of an evaluation order and its PeakLive (Eq. 4)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import PlanError
from ..graph.ir import Dag

BEFORE_START = -1  # birth step of values that exist before the phase (Phase 2's accumulators)


@dataclass(frozen=True)
class LiveRanges:
    """Per vertex: the step that produces it and the last step that reads it.

    A vertex is live after step t when ``birth <= t < death``. Phase outputs without in-phase
    consumers are handed on at once (accumulated in Phase 1, written out in Phase 2), so their
    death equals their birth and they occupy no register across a step.
    """

    birth: np.ndarray
    death: np.ndarray
    n_steps: int

    def profile(self) -> np.ndarray:
        """Number of live values after each step (index 0 = before the first step)."""
        delta = np.zeros(self.n_steps + 2, dtype=np.int64)
        keep = self.death > self.birth
        np.add.at(delta, self.birth[keep] + 1, 1)
        np.add.at(delta, self.death[keep] + 1, -1)
        return np.cumsum(delta)[: self.n_steps + 1]

    def peak(self) -> int:
        prof = self.profile()
        return int(prof.max()) if prof.size else 0


def check_order(dag: Dag, order: Sequence[int]) -> None:
    """Raise if ``order`` is not a topological order of the computed vertices of ``dag``."""
    expected = {v for v in range(len(dag)) if not (dag.leaves_preexist and dag.nodes[v].is_leaf)}
    if len(order) != len(expected) or set(order) != expected:
        raise PlanError("an order must list every computed vertex exactly once")
    done = [dag.leaves_preexist and n.is_leaf for n in dag.nodes]
    for v in order:
        if not all(done[p] for p in dag.parents[v]):
            raise PlanError(f"vertex {v} is scheduled before one of its sources")
        done[v] = True


def live_ranges(dag: Dag, order: Sequence[int]) -> LiveRanges:
    n = len(dag)
    birth = np.full(n, BEFORE_START, dtype=np.int64)
    birth[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    death = birth.copy()
    for v in order:
        t = birth[v]
        for p in dag.parents[v]:
            if death[p] < t:
                death[p] = t
    return LiveRanges(birth, death, len(order))


def peak_live(dag: Dag, order: Sequence[int]) -> int:
    """PeakLive(pi): the most values live at once between two steps of ``order``."""
    return live_ranges(dag, order).peak()
