"""GPU check of the classes whose kernels read the next ket pair row ahead (at most
PREFETCH_MAX_ACCUMULATORS accumulators) against PySCF: three shell quartets per class, water
dimer cc-pVQZ and ANO, spherical and Cartesian.

    FUSIONRCG_KERNEL_DIR=KERNELS python verify_small.py OUT.jsonl
"""

import json
import sys

import numpy as np

from fusionrcg.angmom import canonical_classes
from fusionrcg.lowering.kernel import PREFETCH_MAX_ACCUMULATORS
from fusionrcg.orchestration.plan import plan_class
from fusionrcg.verify import Tolerance, adjudicate, sample_quartets, verify_class
from qcbench.molecules import load


def main() -> None:
    tol = Tolerance()
    classes = [
        c for c in canonical_classes(4) if plan_class(c).n_accumulators <= PREFETCH_MAX_ACCUMULATORS
    ]
    print(len(classes), "classes:", " ".join(map(str, classes)), flush=True)
    with open(sys.argv[1], "w") as out:
        for basis in ("cc-pvqz", "ano"):
            for cart in (False, True):
                mol = load("water_clusters/002", basis, cart=cart)
                rng = np.random.default_rng(11)
                worst = 0.0
                for cls in classes:
                    row = verify_class(
                        mol, cls, sample_quartets(mol, cls, 3, rng), "gpu", "full", tol
                    )
                    rec = row.row() | {"basis": basis, "cartesian": cart}
                    if not row.passed:
                        a = adjudicate(
                            mol, row.worst_quartet, row.worst_element, tol=tol, backend="gpu"
                        )
                        rec |= {"exact": a.exact, "engine_right": a.engine_right}
                    worst = max(worst, row.max_normalized_error)
                    out.write(json.dumps(rec, default=str) + "\n")
                print(basis, "cart" if cart else "sph", "worst normalized error", worst, flush=True)


if __name__ == "__main__":
    main()
