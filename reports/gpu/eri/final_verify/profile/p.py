"""Single Tier 1 store launches of the slot-bound classes for ncu."""

import os

from fusionrcg import bench as B
from fusionrcg.angmom import QuartetClass
from fusionrcg.lowering.target import Epilogue
from fusionrcg.runtime.basis import SegmentedBasis
from fusionrcg.runtime.gpu import GpuExecutor
from fusionrcg.variants import get_variant

ex = GpuExecutor(kernel_dir=os.path.expanduser("~/k"))
cp = ex.cp
PROF = [((2, 2, 1, 1), "cc-pvdz"), ((2, 1, 2, 1), "cc-pvdz"), ((3, 1, 1, 1), "cc-pvtz"),
        ((1, 1, 1, 1), "cc-pvdz")]  # fmt: skip
for ls, name in PROF:
    b = SegmentedBasis.load(f".gpu/v/cin/{name}.npz")
    cls = QuartetClass(*ls)
    k = ex.kernel(cls, get_variant("tier1-only"), True, Epilogue.STORE)
    run = ex.prepare(k, B.sample_quartets(b, cls, 1 << 18, 0), b)
    run()
    cp.cuda.Device().synchronize()
    print(ls, name, flush=True)
