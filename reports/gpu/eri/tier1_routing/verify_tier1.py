"""GPU check of the classes the register model routes to Tier 1 above total 6: two shell
quartets per class against PySCF (water dimer, cc-pVQZ and ANO, spherical and Cartesian, as
the verify campaign), and J/K of cc-pVDZ water dimer through the model's routing.

    FUSIONRCG_KERNEL_DIR=KERNELS python verify_tier1.py OUT.jsonl
"""

import json
import sys

import numpy as np
from build_tier1_kernels import routed_to_tier1
from pyscf import scf

from fusionrcg.jk import get_jk
from fusionrcg.verify import Tolerance, adjudicate, sample_quartets, verify_class
from qcbench.molecules import load

SETS = (("water_clusters/002", "cc-pvqz"), ("water_clusters/002", "ano"))


def quartet_records(tol: Tolerance, classes: list):
    print(len(classes), "classes", flush=True)
    for name, basis in SETS:
        for cart in (False, True):
            mol = load(name, basis, cart=cart)
            rng = np.random.default_rng(5)
            worst = 0.0
            for cls in classes:
                quartets = sample_quartets(mol, cls, 2, rng)
                if not quartets:
                    continue
                row = verify_class(mol, cls, quartets, "gpu", "full", tol)
                rec = row.row() | {"molecule": name, "basis": basis, "cartesian": cart}
                if not row.passed:
                    a = adjudicate(
                        mol, row.worst_quartet, row.worst_element, tol=tol, backend="gpu"
                    )
                    rec |= {"exact": a.exact, "engine_right": a.engine_right}
                worst = max(worst, row.max_normalized_error)
                yield rec
            form = "cart" if cart else "sph"
            print(name, basis, form, "worst normalized error", worst, flush=True)


def jk_record() -> dict:
    mol = load("water_clusters/002", "cc-pvdz")
    a = np.random.default_rng(2).standard_normal((mol.nao, mol.nao))
    dm = (a + a.T) / mol.nao
    vj, vk = get_jk(mol, dm, backend="gpu")
    rj, rk = scf.hf.get_jk(mol, dm)
    return {
        "kind": "jk",
        "molecule": "water_clusters/002",
        "basis": "cc-pvdz",
        "max_abs_dj": float(np.abs(vj - rj).max()),
        "max_abs_dk": float(np.abs(vk - rk).max()),
    }


def main() -> None:
    with open(sys.argv[1], "w") as out:
        for rec in quartet_records(Tolerance(), routed_to_tier1()):
            out.write(json.dumps(rec, default=str) + "\n")
        jk = jk_record()
        out.write(json.dumps(jk) + "\n")
        print(jk, flush=True)


if __name__ == "__main__":
    main()
