"""Phases of Taxol/def2-TZVP M06-2X (FP64 tensor cores) against the density row groups and the
potential tiles; errors against GPU4PySCF's nr_rks on the same grid and density."""

import json
import sys

from kerneldi import NumInt
from kerneldi.bench import Env, errors, load, realistic
from kerneldi.settings import Settings

out = sys.argv[1]
env = Env("gpu", modes=("fp64-tc",))
mol = load("organic/113_Taxol", "def2-tzvp")
dm, grids, _ = realistic(env, mol, 4)
ref = env.reference.NumInt().nr_rks(mol, grids, "m062x", dm)
ni = NumInt(backend="gpu", settings=Settings(gpu_memory_fraction=0.85, mma="fp64-tc"))


def call():
    return ni.nr_rks(mol, grids, "m062x", dm)


call()
records = []
for tiles in ("2x2", "1x1", "4x4"):
    ni.update_settings(potential_tiles=tiles)
    for groups in (1, 2, 4, 8) if tiles == "2x2" else (8,):
        ni.get_engine(mol, grids, "MGGA").density_row_groups = groups
        err = errors(call(), ref)
        best = min((ni.phase_seconds(call) for _ in range(2)), key=lambda p: p["call"])
        rec = {"tiles": tiles, "density_row_groups": groups, "phases": best, "err": err}
        records.append(rec)
        print(tiles, groups, {k: round(v, 4) for k, v in best.items()}, err, flush=True)
with open(out, "w") as fh:
    json.dump(records, fh, indent=1)
