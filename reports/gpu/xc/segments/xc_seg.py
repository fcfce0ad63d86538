"""The potential phase against the segment size (grid blocks per thread block) and the output
tiles per thread block, on one engine per molecule (M06-2X, grid level 4, FP64 tensor cores).

    python xc_seg.py OUT.json MOLECULE:BASIS[,...] SEGMENTS TILES
    e.g. python xc_seg.py seg_taxol.json organic/113_Taxol:def2-tzvp 1024,128,32,16,8,4 1x1,2x2,4x4
"""

import json
import sys
import time

from kerneldi import NumInt
from kerneldi.bench import Env, errors, load, realistic
from kerneldi.settings import Settings

XC = "m062x"


def timed_reference(env: Env, mol, grids, dm, reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        env.sync()
        t0 = time.perf_counter()
        env.reference.NumInt().nr_rks(mol, grids, XC, dm)
        env.sync()
        times.append(time.perf_counter() - t0)
    return sorted(times)[reps // 2]


def sweep(env: Env, spec: str, segments: list[int], tiles: list[str]) -> list[dict]:
    name, basis = spec.split(":")
    mol = load(name, basis)
    dm, grids, _ = realistic(env, mol, 4)
    ref = env.reference.NumInt().nr_rks(mol, grids, XC, dm)
    reference_s = timed_reference(env, mol, grids, dm)
    ni = NumInt(backend="gpu", settings=Settings(gpu_memory_fraction=0.85, mma="fp64-tc"))

    def call():
        return ni.nr_rks(mol, grids, XC, dm)

    call()
    print(spec, "gpu4pyscf", round(reference_s, 4), ni.stats()["retained_fraction"], flush=True)
    records = []
    for tile in tiles:
        ni.update_settings(potential_tiles=tile)
        for seg in segments:
            ni.get_engine(mol, grids, "MGGA").segment_blocks = seg
            err = errors(call(), ref)
            best = min((ni.phase_seconds(call) for _ in range(2)), key=lambda p: p["potential"])
            records.append(
                {
                    "molecule": name,
                    "basis": basis,
                    "tiles": tile,
                    "segment_blocks": seg,
                    "gpu4pyscf_s": reference_s,
                    "phases": best,
                    "err": err,
                }
            )
            rounded = {k: round(v, 4) for k, v in best.items()}
            print(spec, tile, seg, rounded, err["max_d_vxc"], flush=True)
    return records


def main() -> None:
    out, specs, segments, tiles = sys.argv[1:5]
    env = Env("gpu", modes=("fp64-tc",))
    records = []
    for spec in specs.split(","):
        records += sweep(env, spec, [int(s) for s in segments.split(",")], tiles.split(","))
        env.free()
    with open(out, "w") as fh:
        json.dump(records, fh, indent=1)


if __name__ == "__main__":
    main()
