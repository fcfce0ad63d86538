"""Per-task costs of the J/K and XC builds on one device (one process), and the broadcast and
reduction costs between MPI ranks: the scaling model's inputs.

A task's cost is the time of a build restricted to it less the time of a build restricted to
nothing (the density's screening maxima, the symmetrization and the result's allocation, which
every build pays once per rank and the model books separately as ``overhead_seconds``); the
median of ``repeats`` runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from ..provenance import provenance


def _median_seconds(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def jk_task_costs(mol, dm, backend: str, task_pairs: int | None, repeats: int) -> dict:
    """Seconds of every J/K task of ``mol`` at density ``dm``, and the empty build's."""
    from fusionrcg.jk import JK

    jk = JK(mol, backend=backend, task_pairs=task_pairs)
    jk.get_jk(dm)  # kernels loaded, caches warm
    empty = _median_seconds(lambda: jk.get_jk(dm, tasks=[]), repeats)
    whole = _median_seconds(lambda: jk.get_jk(dm), repeats)
    rows = []
    for t in jk.tasks:
        s = _median_seconds(lambda t=t: jk.get_jk(dm, tasks=[t.index]), repeats)
        rows.append({"index": t.index, "class": t.cls, "quartets": t.quartets,
                     "estimate": t.cost, "seconds": max(0.0, s - empty)})  # fmt: skip
    return {"overhead_seconds": empty, "build_seconds": whole, "tasks": rows,
            "task_pairs": task_pairs}  # fmt: skip


def xc_task_costs(mol, grids, xc: str, dm, backend: str, repeats: int) -> dict:
    """Seconds of every grid task of the KerneLDI block engine, and the empty call's."""
    import kerneldi

    ni = kerneldi.NumInt(backend=backend)
    whole = _median_seconds(lambda: ni.nr_rks(mol, grids, xc, dm), repeats)
    tasks = ni.xc_tasks(mol, grids, xc)

    def restricted(chosen):
        ni.select_tasks(chosen)
        try:
            return ni.nr_rks(mol, grids, xc, dm)
        finally:
            ni.select_tasks(None)

    empty = _median_seconds(lambda: restricted([]), repeats)
    rows = []
    for t in tasks:
        s = _median_seconds(lambda t=t: restricted([t.index]), repeats)
        rows.append({"index": t.index, "g0": t.g0, "g1": t.g1, "estimate": t.cost,
                     "seconds": max(0.0, s - empty)})  # fmt: skip
    return {"overhead_seconds": empty, "build_seconds": whole, "tasks": rows}


def measure(mol, xc: str, grid_level: int, backend: str, task_pairs: int | None,
            repeats: int) -> dict:  # fmt: skip
    """Both engines' per-task costs of ``mol`` at its initial-guess density."""
    from pyscf import dft

    mf = dft.RKS(mol)
    dm = mf.get_init_guess()
    grids = dft.gen_grid.Grids(mol)
    grids.level = grid_level
    grids.build()
    return {
        "provenance": provenance(backend=backend),
        "nao": int(mol.nao),
        "natm": int(mol.natm),
        "grid_points": int(grids.weights.size),
        "jk": jk_task_costs(mol, dm, backend, task_pairs, repeats),
        "xc": xc_task_costs(mol, grids, xc, dm, backend, repeats) | {"functional": xc},
    }


def communication(ctx, sizes: list[int], repeats: int) -> dict:
    """Seconds of the density broadcast and of the partial-result reduction between the ranks
    of ``ctx`` (``qcdist``'s own calls), for square matrices of each size in ``sizes``; with
    an empty-message round trip for the latency. Collective."""
    from qcdist import Reducer, broadcast

    reducer = Reducer(ctx)
    rows = []
    for n in sizes:
        a = np.ones((n, n))
        ctx.comm.Barrier()
        bcast = _median_seconds(lambda a=a: broadcast(ctx, a if ctx.root else None), repeats)
        ctx.comm.Barrier()
        reduce = _median_seconds(lambda a=a: reducer.sum(a, root=0), repeats)
        rows.append({"n": n, "bytes": 8 * n * n, "broadcast_seconds": bcast,
                     "reduce_seconds": reduce})  # fmt: skip
    ctx.comm.Barrier()
    latency = _median_seconds(lambda: ctx.comm.bcast(None, root=0), repeats)
    return {"ranks": ctx.size, "via": reducer.via, "latency_seconds": latency, "rows": rows}
