"""Phases of one Taxol/def2-TZVP M06-2X call (FP64 tensor cores, 2x2 tiles); under ncu the
kernels selected on its command line are profiled."""

import sys

from kerneldi import NumInt
from kerneldi.bench import Env, load, realistic
from kerneldi.settings import Settings

env = Env("gpu", modes=("fp64-tc",))
mol = load("organic/113_Taxol", "def2-tzvp")
dm, grids, _ = realistic(env, mol, 4)
ni = NumInt(backend="gpu", settings=Settings(gpu_memory_fraction=0.85, mma="fp64-tc"))


def call():
    return ni.nr_rks(mol, grids, "m062x", dm)


call()
if "--timed" in sys.argv:
    for _ in range(2):
        print({k: round(v, 4) for k, v in ni.phase_seconds(call).items()}, flush=True)
    print(ni.stats(), flush=True)
