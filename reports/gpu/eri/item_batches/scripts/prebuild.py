"""Kernels of tests/fusionrcg/test_gpu.py (without the (4,4|4,4) case), built in parallel."""

import sys
from concurrent.futures import ProcessPoolExecutor, as_completed

from fusionrcg.angmom import QuartetClass, canonical_classes
from fusionrcg.build.library import get_kernel


def build(job):
    directory, ls, variant, epilogue = job
    try:
        k = get_kernel(QuartetClass(*ls), variant, epilogue=epilogue, directory=directory)
        return f"{ls} {variant} {epilogue} tier={int(k.tier)}"
    except Exception as e:  # noqa: BLE001
        return f"{ls} {variant} FAILED {e}"


def main():
    d, workers = sys.argv[1], int(sys.argv[2])
    jobs = {(d, ls, "full", "store") for ls in ((0, 0, 0, 0), (2, 0, 2, 0), (2, 2, 1, 1),
                                                (3, 3, 2, 2), (2, 0, 1, 0))}  # fmt: skip
    jobs |= {(d, c.ls, "full", e) for c in canonical_classes(2) for e in ("jk", "store")}
    jobs |= {(d, ls, "tier1-only", "store") for ls in ((1, 1, 1, 1), (3, 0, 2, 1), (3, 3, 0, 0))}
    jobs = sorted(jobs, key=lambda j: -sum(j[1]))
    with ProcessPoolExecutor(workers) as ex:
        for f in as_completed([ex.submit(build, j) for j in jobs]):
            print(f.result(), flush=True)


if __name__ == "__main__":
    main()
