"""Tier 2 store launches with every quartet of more than 3 primitive quartets split into items
(items added on the GPU) against PySCF, water dimer in the basis named by the second argument:
(3,3|2,2) (total 10, the model's Tier 2) and, as controls, (2,2|1,1) and (3,1|1,1) forced to
Tier 2.

    FUSIONRCG_KERNEL_DIR=KERNELS python split.py OUT.jsonl BASIS
"""

import json
import sys

import numpy as np

from fusionrcg.angmom import QuartetClass
from fusionrcg.runtime.basis import segment_basis
from fusionrcg.runtime.gpu import GpuExecutor
from fusionrcg.variants import get_variant
from fusionrcg.verify import Tolerance, reference_eri, sample_quartets
from qcbench.molecules import load


def main() -> None:
    tol = Tolerance()
    mol = load("water_clusters/002", sys.argv[2])
    basis = segment_basis(mol)
    ex = GpuExecutor(max_work=3)
    with open(sys.argv[1], "w") as out:
        for ls, variant in (((3, 3, 2, 2), "full"), ((2, 2, 1, 1), "tier2-only"),
                            ((3, 1, 1, 1), "tier2-only")):  # fmt: skip
            cls = QuartetClass(*ls)
            shells = sample_quartets(mol, cls, 6, np.random.default_rng(9))
            segs = np.array([basis.segment_quartets(q)[0] for q in shells], dtype=np.int32)
            kernel = ex.kernel(cls, get_variant(variant), True)
            launch = ex.prepare(kernel, segs, basis)
            launch()
            worst = 0.0
            first = tuple(slice(0, n) for n in kernel.output_shape)
            for q, value in zip(shells, launch.integrals()):
                ref = reference_eri(mol, q)[first]
                err = tol.normalized(np.abs(value.reshape(ref.shape) - ref), ref).max()
                worst = max(worst, float(err))
            rec = {"kind": "tier2_split", "class": str(cls), "variant": variant,
                   "tier": int(kernel.tier), "quartets": len(segs), "items": len(launch.order),
                   "summed": launch.add_items is not None, "max_normalized_error": worst,
                   "passed": worst <= 1.0}  # fmt: skip
            out.write(json.dumps(rec) + "\n")
            print(rec, flush=True)


if __name__ == "__main__":
    main()
