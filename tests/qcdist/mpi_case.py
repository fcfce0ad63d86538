"""One distributed run of the J/K and XC builds, for the tests: under ``mpiexec -n N``, every
rank builds the same water molecule and grid; rank 0 writes the summed results of both
schedules (and which tasks each rank built) to the .npz file named by the first argument.

``python mpi_case.py OUT.npz [cpu|gpu]``."""

from __future__ import annotations

import sys

import numpy as np
from pyscf import dft

import qcdist
from qcdist.__main__ import molecule

BASIS = "6-31g"
XC = "b3lyp"
TASK_PAIRS = 3  # blocks cut into pieces: more tasks than ranks, triangle pieces included


def water_xyz(path: str) -> str:
    with open(path, "w") as f:
        f.write("3\nwater\nO 0 0 0\nH 0 0.757 0.587\nH 0 -0.757 0.587\n")
    return path


def densities(mol):
    """A symmetric and a general density (fixed seeds) and a UKS pair."""
    rng = np.random.default_rng(7)
    sym = dft.RKS(mol).get_init_guess()
    general = rng.standard_normal((mol.nao, mol.nao)) * 0.1 + sym
    return sym, general, np.array([sym * 0.55, sym * 0.45])


def grid(mol):
    g = dft.gen_grid.Grids(mol)
    g.level = 1
    return g.build()


def main() -> None:
    out, backend = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "cpu")
    ctx = qcdist.init(backend=backend)
    mol = molecule(water_xyz(f"{out}.{ctx.rank}.xyz"), BASIS)
    sym, general, pair = densities(mol)
    g = grid(mol)
    found: dict[str, np.ndarray] = {}
    for schedule in qcdist.SCHEDULES:
        jk = qcdist.DistributedJK(ctx, mol, schedule, task_pairs=TASK_PAIRS)
        ni = qcdist.distributed_numint(ctx, mol, schedule)
        vj, vk = jk.get_jk(sym if ctx.root else None)
        jk_tasks = ctx.comm.gather(jk.last.tasks, root=0)
        gj, gk = jk.get_jk(general if ctx.root else None, hermi=0, everywhere=True)
        rks = ni.nr_rks(mol, g, XC, sym)
        xc_tasks = ctx.comm.gather(ni.dist_last.tasks, root=0)
        uks = ni.nr_uks(mol, g, XC, pair)
        jk.free()
        ni.free()
        if not ctx.root:
            continue
        found |= {
            f"{schedule}_vj": vj, f"{schedule}_vk": vk, f"{schedule}_gj": gj,
            f"{schedule}_gk": gk, f"{schedule}_rks_nelec": np.asarray(rks[0]),
            f"{schedule}_rks_exc": np.asarray(rks[1]), f"{schedule}_rks_vxc": rks[2],
            f"{schedule}_uks_nelec": np.asarray(uks[0]),
            f"{schedule}_uks_exc": np.asarray(uks[1]), f"{schedule}_uks_vxc": uks[2],
            f"{schedule}_reduction": np.array(jk.reducer.via),
        }  # fmt: skip
        for name, per_rank in (("jk", jk_tasks), ("xc", xc_tasks)):
            for r, tasks in enumerate(per_rank):
                found[f"{schedule}_{name}_tasks_{r}"] = np.asarray(tasks, dtype=np.int64)
    if ctx.root:
        np.savez(out, ranks=ctx.size, **found)


if __name__ == "__main__":
    main()
