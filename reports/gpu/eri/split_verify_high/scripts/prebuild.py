"""Kernels of every class of total 10-16 (full, spherical, store), built in parallel into DIR."""

import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from fusionrcg.angmom import canonical_classes
from fusionrcg.build.library import get_kernel


def build(job):
    directory, ls = job
    t = time.perf_counter()
    try:
        k = get_kernel(_cls(ls), "full", True, "store", directory=directory)
        return f"{ls} tier={int(k.tier)} {time.perf_counter() - t:.0f}s"
    except Exception as e:  # noqa: BLE001
        return f"{ls} FAILED {e}"


def _cls(ls):
    from fusionrcg.angmom import QuartetClass

    return QuartetClass(*ls)


def main():
    d, workers = sys.argv[1], int(sys.argv[2])
    jobs = [(d, c.ls) for c in canonical_classes(4) if c.total >= 10]
    jobs.sort(key=lambda j: sum(j[1]))
    print(len(jobs), "kernels", flush=True)
    with ProcessPoolExecutor(workers) as ex:
        for f in as_completed([ex.submit(build, j) for j in jobs]):
            print(f.result(), flush=True)


if __name__ == "__main__":
    main()
