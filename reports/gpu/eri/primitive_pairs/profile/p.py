"""Where Tier 1 time goes: the same classes on different bases (timed), and single launches
for ncu (--ncu)."""

import os
import sys

from fusionrcg import bench as B
from fusionrcg.angmom import QuartetClass
from fusionrcg.lowering.target import Epilogue
from fusionrcg.runtime.basis import SegmentedBasis
from fusionrcg.runtime.gpu import GpuExecutor
from fusionrcg.variants import get_variant

ex = GpuExecutor(kernel_dir=os.path.expanduser("~/k"))
cp = ex.cp
bases = {
    n: SegmentedBasis.load(f".gpu/prof2/cin/{n}.npz") for n in ("cc-pvdz", "cc-pvtz", "cc-pvqz")
}
TIMED = [
    ((4, 0, 0, 0), "cc-pvqz"),
    ((2, 2, 0, 0), "cc-pvdz"),
    ((2, 2, 0, 0), "cc-pvqz"),
    ((3, 1, 0, 0), "cc-pvtz"),
    ((3, 1, 0, 0), "cc-pvdz"),
    ((3, 1, 0, 0), "cc-pvqz"),
    ((2, 0, 2, 0), "cc-pvdz"),
    ((2, 0, 2, 0), "cc-pvqz"),
    ((2, 2, 1, 1), "cc-pvdz"),
    ((1, 1, 1, 1), "cc-pvdz"),
    ((1, 1, 1, 1), "cc-pvqz"),
]
PROF = [
    ((4, 0, 0, 0), "cc-pvqz"),
    ((2, 2, 0, 0), "cc-pvdz"),
    ((2, 2, 0, 0), "cc-pvqz"),
    ((2, 2, 1, 1), "cc-pvdz"),
]
if "--ncu" in sys.argv:
    for ls, name in PROF:
        b = bases[name]
        cls = QuartetClass(*ls)
        k = ex.kernel(cls, get_variant("tier1-only"), True, Epilogue.STORE)
        q = B.sample_quartets(b, cls, 1 << 20, 0)
        run = ex.prepare(k, q, b)
        run()
        cp.cuda.Device().synchronize()
        print(ls, name, flush=True)
else:
    peak = B.fp64_peak(cp)
    for ls, name in TIMED:
        m = B.measure(ex, QuartetClass(*ls), "tier1-only", bases[name], name, Epilogue.STORE, peak)
        pq = m.quartets_per_second * m.mean_primitive_quartets
        print(
            f"{m.cls} {name} {m.quartets_per_second:.3e} q/s {m.fraction_of_peak:6.1%} "
            f"prim/q {m.mean_primitive_quartets:.2f} pq/s {pq:.3e}",
            flush=True,
        )
