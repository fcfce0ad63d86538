"""The kernel library the GPU check ran (built on the development machine, then carried over):
variant 'full' of every class of total 7-9 that the register model routes to Tier 1, spherical
and Cartesian with the store epilogue and spherical with the J/K epilogue, and the J/K kernels of
every class with l <= 2 (cc-pVDZ).

    python build_tier1_kernels.py KERNEL_DIR
"""

import sys
from concurrent.futures import ProcessPoolExecutor

from fusionrcg.angmom import canonical_classes
from fusionrcg.build.library import get_kernel
from fusionrcg.orchestration.plan import plan_class
from fusionrcg.variants import Tier


def routed_to_tier1() -> list:
    return [
        c
        for c in canonical_classes(4)
        if 7 <= c.total <= 9 and plan_class(c, "full").tier is Tier.REGISTER
    ]


def build(job) -> str:
    directory, cls, spherical, epilogue = job
    k = get_kernel(cls, "full", spherical=spherical, epilogue=epilogue, directory=directory)
    return f"{cls} spherical={spherical} {epilogue} tier={int(k.tier)}"


def main() -> None:
    out = sys.argv[1]
    classes = routed_to_tier1()
    jobs = [(out, c, True, "store") for c in classes]
    jobs += [(out, c, False, "store") for c in classes]
    jobs += [(out, c, True, "jk") for c in classes]
    jobs += [(out, c, True, "jk") for c in canonical_classes(2)]
    with ProcessPoolExecutor(2) as pool:
        for line in pool.map(build, jobs):
            print(line, flush=True)


if __name__ == "__main__":
    main()
