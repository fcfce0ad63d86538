"""GPU4PySCF's nr_rks on Taxol/def2-TZVP with a new NumInt per call (as the bench did) and with
one NumInt reused (as an SCF does), and ours, five calls each after a warm-up call."""

import json
import sys
import time

from gpu4pyscf.dft import numint as g4

from kerneldi import NumInt
from kerneldi.bench import Env, load, realistic
from kerneldi.settings import Settings

env = Env("gpu", modes=("fp64-tc",))
mol = load("organic/113_Taxol", "def2-tzvp")
dm, grids, _ = realistic(env, mol, 4)
out = {}


def run(key, fn, reps=5):
    fn()
    env.sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        env.sync()
        ts.append(time.perf_counter() - t0)
    out[key] = ts
    print(key, [round(t, 4) for t in ts], flush=True)


run("gpu4pyscf_new_numint", lambda: g4.NumInt().nr_rks(mol, grids, "m062x", dm))
ref = g4.NumInt()
run("gpu4pyscf_reused_numint", lambda: ref.nr_rks(mol, grids, "m062x", dm))
ni = NumInt(backend="gpu", settings=Settings(gpu_memory_fraction=0.85, mma="fp64-tc"))
run("ours", lambda: ni.nr_rks(mol, grids, "m062x", dm))
out["ours_phases"] = ni.phase_seconds(lambda: ni.nr_rks(mol, grids, "m062x", dm))
print(out["ours_phases"], flush=True)
ni = None
env.free()
run("gpu4pyscf_reused_numint_after", lambda: ref.nr_rks(mol, grids, "m062x", dm))
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
