"""Kernels of verify.py and tests/fusionrcg/test_gpu.py, built in parallel into KERNEL_DIR."""

import sys
from concurrent.futures import ProcessPoolExecutor, as_completed

from fusionrcg.angmom import QuartetClass, canonical_classes
from fusionrcg.build.library import get_kernel


def build(job):
    directory, ls, variant, spherical, epilogue = job
    try:
        k = get_kernel(
            QuartetClass(*ls), variant, spherical=spherical, epilogue=epilogue, directory=directory
        )
        regs = k.report.registers
        return f"{ls} {variant} sph={spherical} {epilogue} tier={int(k.tier)} regs={regs}"
    except Exception as e:  # noqa: BLE001
        return f"{ls} {variant} FAILED {e}"


def main():
    d, workers = sys.argv[1], int(sys.argv[2])
    jobs = {(d, (3, 3, 2, 2), "full", True, "store"), (d, (2, 0, 1, 0), "full", True, "store")}
    jobs |= {(d, c.ls, "full", True, e) for c in canonical_classes(2) for e in ("jk", "store")}
    jobs |= {
        (d, ls, "tier1-only", True, "store")
        for ls in (
            (1, 1, 1, 1),
            (3, 0, 2, 1),
            (3, 3, 0, 0),
            (2, 2, 1, 1),
            (2, 1, 2, 1),
            (3, 1, 1, 1),
        )
    }
    for c in canonical_classes(4):
        if c.total <= 6:
            jobs |= {(d, c.ls, "full", sph, "store") for sph in (True, False)}
            jobs.add((d, c.ls, "full", True, "jk"))
    jobs = sorted(jobs, key=lambda j: -sum(j[1]))
    with ProcessPoolExecutor(workers) as ex:
        for f in as_completed([ex.submit(build, j) for j in jobs]):
            print(f.result(), flush=True)


if __name__ == "__main__":
    main()
