"""Single Tier 1 store launches for ncu: (4,0|0,0) and (1,1|1,1) at 255 and 168 registers."""

import sys

from fusionrcg import bench as B
from fusionrcg.angmom import QuartetClass
from fusionrcg.lowering.target import Epilogue
from fusionrcg.runtime.basis import SegmentedBasis
from fusionrcg.runtime.gpu import GpuExecutor
from fusionrcg.variants import get_variant

root = sys.argv[1]
for ls, name, cfg in [
    ((4, 0, 0, 0), "cc-pvqz", "255_130"),
    ((1, 1, 1, 1), "cc-pvdz", "255_130"),
    ((1, 1, 1, 1), "cc-pvdz", "168_80"),
]:
    ex = GpuExecutor(kernel_dir=f"{root}/k_{cfg}")
    b = SegmentedBasis.load(f".gpu/rt/{name}.npz")
    cls = QuartetClass(*ls)
    k = ex.kernel(cls, get_variant("tier1-only"), True, Epilogue.STORE)
    run = ex.prepare(k, B.sample_quartets(b, cls, 1 << 18, 0), b)
    run()
    ex.cp.cuda.Device().synchronize()
    print(ls, cfg, flush=True)
