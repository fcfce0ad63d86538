"""Store launches of split quartets on the GPU against PySCF: how many of verify.py's
quartets run as several items at the default max_work, and Tier 2 kernels (forced) with every
quartet of more than 3 primitive quartets split, water dimer cc-pVQZ.

    FUSIONRCG_KERNEL_DIR=KERNELS python split.py OUT.jsonl
"""

import json
import sys

import numpy as np

from fusionrcg.angmom import QuartetClass, canonical_classes
from fusionrcg.runtime.basis import segment_basis
from fusionrcg.runtime.gpu import MAX_WORK, GpuExecutor
from fusionrcg.runtime.pairs import primitive_pairs
from fusionrcg.variants import get_variant
from fusionrcg.verify import Tolerance, reference_eri, sample_quartets
from qcbench.molecules import load


def main() -> None:
    tol = Tolerance()
    mol = load("water_clusters/002", "cc-pvqz")
    basis = segment_basis(mol)
    with open(sys.argv[1], "w") as out:
        rng = np.random.default_rng(5)  # verify.py's quartets (spherical pass)
        split_classes = 0
        for cls in canonical_classes(4):
            if cls.total > 9:
                continue
            shells = sample_quartets(mol, cls, 2, rng)
            segs = np.array([basis.segment_quartets(q)[0] for q in shells], dtype=np.int32)
            items = len(primitive_pairs(basis, segs, MAX_WORK).quartet)
            split_classes += items > len(segs)
            out.write(json.dumps({"kind": "items", "class": str(cls), "quartets": len(segs),
                                  "items": items}) + "\n")  # fmt: skip
        print("classes with split quartets among verify.py's:", split_classes, flush=True)
        ex = GpuExecutor(max_work=3)
        for ls in ((1, 1, 1, 1), (2, 1, 1, 1), (2, 2, 1, 1), (3, 1, 1, 1), (3, 3, 2, 2)):
            cls = QuartetClass(*ls)
            shells = sample_quartets(mol, cls, 6, np.random.default_rng(9))
            segs = np.array([basis.segment_quartets(q)[0] for q in shells], dtype=np.int32)
            kernel = ex.kernel(cls, get_variant("tier2-only"), True)
            launch = ex.prepare(kernel, segs, basis)
            launch()
            worst = 0.0
            first = tuple(slice(0, n) for n in kernel.output_shape)
            for q, value in zip(shells, launch.integrals()):
                ref = reference_eri(mol, q)[first]
                err = tol.normalized(np.abs(value.reshape(ref.shape) - ref), ref).max()
                worst = max(worst, float(err))
            rec = {"kind": "tier2_split", "class": str(cls), "tier": int(kernel.tier),
                   "quartets": len(segs), "items": len(launch.order),
                   "summed": launch.add_items is not None, "max_normalized_error": worst,
                   "passed": worst <= 1.0}  # fmt: skip
            out.write(json.dumps(rec) + "\n")
            print(rec, flush=True)


if __name__ == "__main__":
    main()
