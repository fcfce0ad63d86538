"""Distributed J/K: the tasks of ``fusionrcg.JK`` (a canonical class's screened pair-group
block each, costed from graph FLOPs and primitive counts) built on every rank, pulled from a
shared counter largest first (or from the static partition), and the partial J/K summed.

Every rank builds the same ``JK`` (pairs, bounds and kernels once, each on its own device);
per build the root's density is broadcast once, each rank screens its tasks against the whole
density and builds their quartets, and the partial matrices go to the root in one reduction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from fusionrcg.jk import JK

from .comm import Context, DistError
from .reduce import Reducer, broadcast
from .schedule import Scheduler


@dataclass
class BuildStats:
    """This rank's part of its last build: tasks built, and seconds building, reducing and
    receiving the density."""

    tasks: list[int] = field(default_factory=list)
    build_seconds: float = 0.0
    reduce_seconds: float = 0.0
    broadcast_seconds: float = 0.0


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "__cuda_array_interface__") else np.asarray(a)


def _recorded(source, into: list[int]):
    for t in source:
        into.append(t)
        yield t


TASK_PAIRS = 256
"""Bra pairs per task by default (``JK(task_pairs=...)``): a large molecule's biggest blocks
cut into tasks a device still fills, and enough of them for a pulled schedule to even out."""


class DistributedJK:
    """J and K of ``mol`` over the ranks of ``ctx``. ``schedule``: "pull" or "static";
    ``jk_options``: ``fusionrcg.JK``'s (``tol``, ``options``, ``task_pairs``, ...), the same
    on every rank. Making one is collective (the pull queue's window)."""

    def __init__(
        self, ctx: Context, mol, schedule: str = "pull", reducer: Reducer | None = None,
        **jk_options,
    ) -> None:  # fmt: skip
        self.ctx = ctx
        # one rank builds everything: the engine's whole-class launches, no task cuts
        jk_options.setdefault("task_pairs", TASK_PAIRS if ctx.size > 1 else None)
        self.jk = JK(mol, backend=ctx.backend, **jk_options)
        self.costs = [t.cost for t in self.jk.tasks]
        self.scheduler = Scheduler(ctx.comm, schedule)
        self.reducer = reducer if reducer is not None else Reducer(ctx)
        self.last = BuildStats()

    @property
    def schedule(self) -> str:
        return self.scheduler.schedule

    def get_jk(self, dm=None, hermi: int = 1, with_j: bool = True, with_k: bool = True,
               everywhere: bool = False):  # fmt: skip
        """(vj, vk) of the root's ``dm``, as ``JK.get_jk`` returns them, at the root (None on
        the other ranks, whose arguments are not read) or on every rank with ``everywhere``.
        Collective: every rank calls it, or serves it (``Service``)."""
        header = None
        if self.ctx.root:
            self.scheduler.start()  # before the broadcast: see schedule.py
            header = ("jk", int(hermi), bool(with_j), bool(with_k), bool(everywhere),
                      hasattr(dm, "__cuda_array_interface__"))  # fmt: skip
        header = self.ctx.comm.bcast(header, root=0)
        return self.follow(header, dm)

    def follow(self, header: tuple, dm=None):
        """The rank's part of the build that ``header`` (the root's broadcast) describes."""
        op, hermi, with_j, with_k, everywhere, device_in = header
        if op != "jk":
            raise DistError(f"ranks out of step: a J/K build met a {op!r} request")
        stats = self.last = BuildStats()
        t0 = time.perf_counter()
        dms = broadcast(self.ctx, _host(dm) if self.ctx.root else None)
        if self.ctx.backend == "gpu":
            import cupy

            dms = cupy.asarray(dms)
        t1 = time.perf_counter()
        if self.ctx.size == 1:  # every task is this rank's: the single-process build
            stats.tasks, drawn = list(range(len(self.costs))), None
        else:
            drawn = _recorded(self.scheduler.mine(self.costs), stats.tasks)
        vj, vk = self.jk.get_jk(dms, hermi, with_j, with_k, tasks=drawn)
        xp = np if isinstance(vj if vj is not None else vk, np.ndarray) else _cupy()
        parts = [v for v in (vj, vk) if v is not None]
        t2 = time.perf_counter()
        total = self.reducer.sum(xp.stack(parts), root=None if everywhere else 0)
        t3 = time.perf_counter()
        stats.broadcast_seconds, stats.build_seconds, stats.reduce_seconds = (
            t1 - t0,
            t2 - t1,
            t3 - t2,
        )
        if total is None:
            return None, None
        out = iter(total)
        vj = next(out) if with_j else None
        vk = next(out) if with_k else None
        return _like(vj, device_in), _like(vk, device_in)

    def free(self) -> None:
        self.scheduler.free()


def _like(v, device: bool):
    """``v`` as a CuPy array when the root's density was one, else as a NumPy array."""
    if v is None:
        return None
    return _cupy().asarray(v) if device else _host(v)


def _cupy():
    import cupy

    return cupy
