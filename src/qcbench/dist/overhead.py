"""What one rank of the distributed path costs beyond the single-process engines: the same
J/K and XC builds of one density through ``fusionrcg.JK`` and ``kerneldi.NumInt`` directly
and through ``qcdist`` on a one-rank communicator (density broadcast, task draw from the pull
queue, reduction), interleaved and timed in one process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def _seconds(call: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    call()  # the engines return host arrays for a host density: the device has finished
    return time.perf_counter() - t0


def mid_scf_density(mol):
    """A realistic density, neither a guess nor converged: three density-fitted RHF cycles of
    PySCF on the host."""
    from pyscf import scf

    mf = scf.RHF(mol).density_fit()
    mf.max_cycle, mf.verbose = 3, 0
    mf.kernel()
    return mf.make_rdm1()


def one_rank_overhead(ctx, mol, grids, xc: str, dm, repeats: int) -> list[dict]:
    """Rows (engine, single-process and one-rank seconds, the median of ``repeats`` runs
    after one warm-up of each, and the overhead fraction). ``ctx`` must have one rank."""
    import kerneldi
    import qcdist
    from fusionrcg.jk import JK

    if ctx.size != 1:
        raise qcdist.DistError(f"the one-rank overhead runs on one rank, not {ctx.size}")
    single_jk = JK(mol, backend=ctx.backend)
    dist_jk = qcdist.DistributedJK(ctx, mol, "pull")
    single_ni = kerneldi.NumInt(backend=ctx.backend)
    dist_ni = qcdist.distributed_numint(ctx, mol, "pull")
    builds = {
        "jk": (lambda: single_jk.get_jk(dm), lambda: dist_jk.get_jk(dm)),
        "xc": (lambda: single_ni.nr_rks(mol, grids, xc, dm),
               lambda: dist_ni.nr_rks(mol, grids, xc, dm)),
    }  # fmt: skip
    rows = []
    for engine, (single, one_rank) in builds.items():
        single(), one_rank()
        times: dict[str, list[float]] = {"single": [], "one_rank": []}
        for _ in range(repeats):
            times["single"].append(_seconds(single))
            times["one_rank"].append(_seconds(one_rank))
        s, d = (statistics.median(times[k]) for k in ("single", "one_rank"))
        rows.append({"engine": engine, "backend": ctx.backend, "nao": mol.nao,
                     "single_seconds": s, "one_rank_seconds": d, "overhead": d / s - 1.0})  # fmt: skip
    dist_jk.free()
    dist_ni.free()
    return rows


def overhead_markdown(found: dict) -> str:
    """The one-rank overhead table of ``found`` (the ``overhead`` command's JSON)."""
    lines = [
        f"# One rank against the single-process engines: {found['molecule']} "
        f"({found['basis']}, {found['xc']}, grid level {found['grid_level']})",
        "",
        "| engine | backend | AOs | single process (s) | one rank (s) | overhead |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in found["rows"]:
        lines.append(
            f"| {r['engine']} | {r['backend']} | {r['nao']} | {r['single_seconds']:.4f} "
            f"| {r['one_rank_seconds']:.4f} | {100 * r['overhead']:+.1f}% |"
        )
    return "\n".join(lines) + "\n"
