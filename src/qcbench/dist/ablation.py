"""The no-scheduling ablation, under MPI: the same distributed J/K and XC builds with the tasks
pulled from the shared counter and with the static partition (equal counts per rank), timed.

Per schedule and engine: the root's wall time of a build (median of ``repeats``; broadcast,
builds and reduction), and each rank's time building its tasks in that build; their maximum
over their mean is the load imbalance the schedule leaves.
"""

from __future__ import annotations

import statistics
import time


def run(ctx, mol, grids, xc: str, dm, repeats: int, task_pairs: int | None) -> list[dict]:
    """Rows of the ablation (root; the other ranks get []). Collective."""
    import qcdist

    rows = []
    for schedule in qcdist.SCHEDULES:
        jk = qcdist.DistributedJK(ctx, mol, schedule, task_pairs=task_pairs)
        ni = qcdist.distributed_numint(ctx, mol, schedule)
        builds = {
            "jk": (jk, lambda jk=jk: jk.get_jk(dm if ctx.root else None), lambda: jk.last),
            "xc": (ni, lambda ni=ni: ni.nr_rks(mol, grids, xc, dm if ctx.root else None),
                   lambda: ni.dist_last),
        }  # fmt: skip
        for engine, (_, build, last) in builds.items():
            build()  # warm: kernels, engines, the grid's first broadcast
            walls, busy = [], []
            for _ in range(repeats):
                ctx.comm.Barrier()
                t0 = time.perf_counter()
                build()
                walls.append(time.perf_counter() - t0)
                busy.append(ctx.comm.gather(last().build_seconds, root=0))
            if ctx.root:
                per_rank = [statistics.median(b[r] for b in busy) for r in range(ctx.size)]
                mean = statistics.fmean(per_rank)
                rows.append({
                    "engine": engine, "schedule": schedule, "ranks": ctx.size,
                    "backend": ctx.backend, "wall_seconds": statistics.median(walls),
                    "rank_build_seconds": per_rank,
                    "imbalance": max(per_rank) / mean if mean > 0 else 1.0,
                    "tasks": len(jk.costs) if engine == "jk" else len(ni._dist_costs.get(xc, [])),
                })  # fmt: skip
        jk.free()
        ni.free()
    return rows
