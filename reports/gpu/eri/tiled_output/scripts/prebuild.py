"""Kernels of tests/fusionrcg/test_gpu.py and of verify.py, built in parallel into KERNEL_DIR
(largest classes first)."""

import json
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed

from fusionrcg.angmom import QuartetClass, canonical_classes
from fusionrcg.build.library import get_kernel


def build(job):
    directory, tag, variant, spherical, epilogue = job
    ls = tuple(int(c) for c in tag)
    try:
        k = get_kernel(
            QuartetClass(*ls), variant, spherical=spherical, epilogue=epilogue, directory=directory
        )
        return f"{ls} {variant} sph={spherical} {epilogue} tier={int(k.tier)} slots={k.n_slots}"
    except Exception as e:  # noqa: BLE001
        return f"{ls} {variant} FAILED {e}"


def main():
    d = sys.argv[1]
    with open(sys.argv[2]) as fh:
        plan = json.load(fh)
    jobs = {(d, p["class"], p["variant"], True, p["epilogue"]) for p in plan}
    jobs |= {(d, c.tag, "full", True, e) for c in canonical_classes(2) for e in ("jk", "store")}
    for spherical in (True, False):
        jobs |= {
            (d, c.tag, "full", spherical, "store") for c in canonical_classes(4) if c.total <= 6
        }
    order = sorted(jobs, key=lambda j: -sum(map(int, j[1])))
    with ProcessPoolExecutor(2) as pool:
        for f in as_completed([pool.submit(build, j) for j in order]):
            print(f.result(), flush=True)


if __name__ == "__main__":
    main()
