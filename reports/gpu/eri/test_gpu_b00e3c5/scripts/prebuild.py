"""Kernels tests/fusionrcg/test_gpu.py asks the default library for, built in parallel into DIR:
J/K and store kernels of every class up to l = 2 (the J/K test), the verification classes and
the Tier 1 shared-slot classes."""

import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from fusionrcg.angmom import QuartetClass, canonical_classes
from fusionrcg.build.library import get_kernel


def build(job):
    directory, ls, variant, epilogue = job
    t = time.perf_counter()
    try:
        k = get_kernel(QuartetClass(*ls), variant, True, epilogue, directory=directory)
        return f"{ls} {variant} {epilogue} tier={int(k.tier)} {time.perf_counter() - t:.0f}s"
    except Exception as e:  # noqa: BLE001
        return f"{ls} {variant} {epilogue} FAILED {e}"


def main():
    d, workers = sys.argv[1], int(sys.argv[2])
    jobs = {(d, c.ls, "full", e) for c in canonical_classes(2) for e in ("jk", "store")}
    for ls in [(0, 0, 0, 0), (2, 0, 2, 0), (2, 2, 1, 1), (3, 3, 2, 2), (4, 4, 4, 4), (2, 0, 1, 0)]:
        jobs.add((d, QuartetClass(*ls).canonical().ls, "full", "store"))
    for ls in [(1, 1, 1, 1), (3, 0, 2, 1), (3, 3, 0, 0)]:
        jobs.add((d, ls, "tier1-only", "store"))
    jobs = sorted(jobs, key=lambda j: -sum(j[1]))  # the longest first
    print(len(jobs), "kernels", flush=True)
    with ProcessPoolExecutor(workers) as ex:
        for f in as_completed([ex.submit(build, j) for j in jobs]):
            print(f.result(), flush=True)


if __name__ == "__main__":
    main()
