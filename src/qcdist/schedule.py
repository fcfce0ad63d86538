"""Who builds which task: pulled on demand from a shared counter, or a static partition.

``PullQueue``: the tasks, largest estimated cost first, are numbered; a rank that is free takes
the next number with one MPI one-sided fetch-and-add on a counter in rank 0's window (passive
target: rank 0 takes no part in handing work out, so a rank costs the others nothing while it
computes, and the counter serves 64 ranks as it serves 2). Expensive tasks go out first and the
cheap tail evens out the ranks' finishing times. ``static_share``: the no-scheduling ablation,
the tasks in the engine's order cut into equal counts, one contiguous piece per rank.

A queue is reused build after build: rank 0 resets its counter at the start of a build, before
the build's broadcast. Every rank's last fetch of the previous build came before its partial
result, which rank 0 has received by then, so no fetch of the previous build can land after
the reset, and none of the new build before it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .comm import DistError, mpi

SCHEDULES = ("pull", "static")


def largest_first(costs: Sequence[float]) -> list[int]:
    """Task indices by descending cost, ties in the engine's order."""
    return sorted(range(len(costs)), key=lambda i: (-costs[i], i))


def static_share(count: int, rank: int, size: int) -> list[int]:
    """The ``rank``-th of ``size`` contiguous pieces of ``range(count)``, sizes differing by one
    at most (the first ``count % size`` pieces take one more)."""
    base, extra = divmod(count, size)
    start = rank * base + min(rank, extra)
    return list(range(start, start + base + (1 if rank < extra else 0)))


class PullQueue:
    """A counter in rank 0's memory that every rank of ``comm`` draws task numbers from.
    Collective to make and to ``free``."""

    def __init__(self, comm) -> None:
        MPI = mpi()
        self.comm = comm
        self._win = MPI.Win.Allocate(8 if comm.rank == 0 else 0, 8, comm=comm)
        self._one = np.ones(1, dtype=np.int64)
        self._got = np.zeros(1, dtype=np.int64)
        self.reset()
        comm.Barrier()

    def reset(self) -> None:
        """Rank 0: the counter back to zero (see the module's note on when that is safe)."""
        if self.comm.rank != 0:
            return
        MPI = mpi()
        self._win.Lock(0, MPI.LOCK_EXCLUSIVE)
        np.frombuffer(self._win.tomemory(), dtype=np.int64)[0] = 0
        self._win.Unlock(0)

    def take(self) -> int:
        """The next number (atomic fetch-and-add of one on rank 0's counter)."""
        MPI = mpi()
        self._win.Lock(0, MPI.LOCK_SHARED)
        self._win.Fetch_and_op(self._one, self._got, 0, 0, MPI.SUM)
        self._win.Unlock(0)
        return int(self._got[0])

    def drain(self, order: Sequence[int]) -> Iterator[int]:
        """The tasks of ``order`` this rank takes, one at a time, until the numbers run out."""
        while (k := self.take()) < len(order):
            yield order[k]

    def free(self) -> None:
        if self._win is not None:
            self._win.Free()
            self._win = None


class Scheduler:
    """The tasks of one engine's builds on the ranks of ``comm``: ``mine(costs)`` yields this
    rank's tasks of a build, pulled (``"pull"``) or from the static partition (``"static"``).
    Every rank calls ``mine`` of every build; rank 0 must have called ``start`` before it
    broadcast the build."""

    def __init__(self, comm, schedule: str = "pull") -> None:
        if schedule not in SCHEDULES:
            raise DistError(f"unknown schedule {schedule!r}; one of {', '.join(SCHEDULES)}")
        self.comm = comm
        self.schedule = schedule
        self.queue = PullQueue(comm) if schedule == "pull" and comm.size > 1 else None

    def start(self) -> None:
        if self.queue is not None:
            self.queue.reset()

    def mine(self, costs: Sequence[float]) -> Iterator[int]:
        if self.comm.size == 1:
            yield from range(len(costs))
        elif self.queue is not None:
            yield from self.queue.drain(largest_first(costs))
        else:
            yield from static_share(len(costs), self.comm.rank, self.comm.size)

    def free(self) -> None:
        if self.queue is not None:
            self.queue.free()
