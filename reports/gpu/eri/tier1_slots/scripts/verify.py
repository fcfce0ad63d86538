"""GPU check of every class up to total 9 (all routed to Tier 1) against PySCF: two shell
quartets per class, water dimer cc-pVQZ, spherical (and Cartesian up to total 6), and J/K of
cc-pVDZ water dimer through the model's routing.

    FUSIONRCG_KERNEL_DIR=KERNELS python verify.py OUT.jsonl [MAX_SPHERICAL_TOTAL]

MAX_SPHERICAL_TOTAL (default 9) lowers the spherical limit (``tiled_output/`` ran it with 6).
"""

import json
import sys

import numpy as np
from pyscf import scf

from fusionrcg.angmom import canonical_classes
from fusionrcg.jk import get_jk
from fusionrcg.verify import Tolerance, adjudicate, sample_quartets, verify_class
from qcbench.molecules import load


def main() -> None:
    tol = Tolerance()
    with open(sys.argv[1], "w") as out:
        spherical_max = int(sys.argv[2]) if len(sys.argv) > 2 else 9
        for cart, max_total in ((False, spherical_max), (True, 6)):
            mol = load("water_clusters/002", "cc-pvqz", cart=cart)
            rng = np.random.default_rng(5)
            worst = 0.0
            for cls in canonical_classes(4):
                if cls.total > max_total:
                    continue
                quartets = sample_quartets(mol, cls, 2, rng)
                row = verify_class(mol, cls, quartets, "gpu", "full", tol)
                rec = row.row() | {"basis": "cc-pvqz", "cartesian": cart}
                if not row.passed:
                    a = adjudicate(
                        mol, row.worst_quartet, row.worst_element, tol=tol, backend="gpu"
                    )
                    rec |= {"exact": a.exact, "engine_right": a.engine_right}
                worst = max(worst, row.max_normalized_error)
                out.write(json.dumps(rec, default=str) + "\n")
            print("cart" if cart else "sph", "worst normalized error", worst, flush=True)
        mol = load("water_clusters/002", "cc-pvdz")
        a = np.random.default_rng(2).standard_normal((mol.nao, mol.nao))
        dm = (a + a.T) / mol.nao
        vj, vk = get_jk(mol, dm, backend="gpu")
        rj, rk = scf.hf.get_jk(mol, dm)
        jk = {
            "kind": "jk",
            "basis": "cc-pvdz",
            "max_abs_dj": float(np.abs(vj - rj).max()),
            "max_abs_dk": float(np.abs(vk - rk).max()),
        }
        out.write(json.dumps(jk) + "\n")
        print(jk, flush=True)


if __name__ == "__main__":
    main()
