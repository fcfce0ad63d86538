"""GPU check against PySCF of every class of total 10-16 (Tier 2, spherical) with the current
runtime (store launches split into items of at most 64 primitive quartets, items added on the
GPU): water dimer, two quartets per class, in cc-pVQZ and ANO-RCC; elements outside the
tolerance adjudicated in 40-digit arithmetic; per class how many items the quartets made.

    FUSIONRCG_KERNEL_DIR=KERNELS python verify.py OUT.jsonl
"""

import json
import sys
import time

import numpy as np

from fusionrcg.angmom import canonical_classes
from fusionrcg.runtime.basis import segment_basis
from fusionrcg.runtime.gpu import MAX_WORK
from fusionrcg.runtime.pairs import primitive_pairs
from fusionrcg.verify import Tolerance, adjudicate, sample_quartets, verify_class
from qcbench.molecules import load


def main() -> None:
    tol = Tolerance()
    classes = [c for c in canonical_classes(4) if c.total >= 10]
    start = time.perf_counter()
    with open(sys.argv[1], "w") as out:
        for basis_name in ("ano-rcc", "cc-pvqz"):
            mol = load("water_clusters/002", basis_name)
            basis = segment_basis(mol)
            rng = np.random.default_rng(11)
            worst = 0.0
            for cls in classes:
                quartets = sample_quartets(mol, cls, 2, rng)
                segs = np.array([basis.segment_quartets(q)[0] for q in quartets], dtype=np.int32)
                items = len(primitive_pairs(basis, segs, MAX_WORK).quartet)
                row = verify_class(mol, cls, quartets, "gpu", "full", tol)
                rec = row.row() | {"basis": basis_name, "items": items}
                if not row.passed:
                    a = adjudicate(mol, row.worst_quartet, row.worst_element, tol=tol,
                                   backend="gpu")  # fmt: skip
                    rec |= {"exact": a.exact, "engine_right": a.engine_right}
                worst = max(worst, row.max_normalized_error)
                out.write(json.dumps(rec, default=str) + "\n")
                out.flush()
                print(cls, basis_name, items, f"{row.max_normalized_error:.3g}",
                      f"{time.perf_counter() - start:.0f}s", flush=True)  # fmt: skip
            print(basis_name, "worst normalized error", worst, flush=True)


if __name__ == "__main__":
    main()
