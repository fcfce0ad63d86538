"""One Tier 1 store launch of each slot-bound class, for ncu's SASS-level stall sampling."""

import sys

from fusionrcg import bench as B
from fusionrcg.angmom import QuartetClass
from fusionrcg.lowering.target import Epilogue
from fusionrcg.runtime.basis import SegmentedBasis
from fusionrcg.runtime.gpu import GpuExecutor
from fusionrcg.variants import get_variant

ex = GpuExecutor(kernel_dir=sys.argv[1])
cp = ex.cp
for ls, name in [((2, 2, 1, 1), "cc-pvdz"), ((2, 1, 2, 1), "cc-pvdz"), ((3, 1, 1, 1), "cc-pvtz")]:
    b = SegmentedBasis.load(f".gpu/prof/in/{name}.npz")
    cls = QuartetClass(*ls)
    k = ex.kernel(cls, get_variant("tier1-only"), True, Epilogue.STORE)
    run = ex.prepare(k, B.sample_quartets(b, cls, 1 << 18, 0), b)
    run()
    cp.cuda.Device().synchronize()
    print(ls, name, k.name, flush=True)
