"""GPU check of the Tier 1 kernels up to total 6 against PySCF with plain slot reads and the
denser placements: every class, four shell quartets each, water dimer cc-pVQZ, spherical and
Cartesian (the store kernel the library picked: registers, slots); the fused J/K epilogue of
every class up to total 6 against the generated C++ (CPU) J/K on 96 random quartets of the
class and one density; J/K of cc-pVDZ water dimer against PySCF.

    FUSIONRCG_KERNEL_DIR=KERNELS python verify.py OUT.jsonl
"""

import json
import sys

import numpy as np
from pyscf import scf

from fusionrcg.angmom import canonical_classes
from fusionrcg.build.library import get_kernel
from fusionrcg.jk import get_jk, unique_segment_quartets
from fusionrcg.runtime.basis import segment_basis
from fusionrcg.runtime.launch import executor
from fusionrcg.variants import get_variant
from fusionrcg.verify import Tolerance, adjudicate, sample_quartets, verify_class
from qcbench.molecules import load


def main() -> None:
    tol = Tolerance()
    classes = [c for c in canonical_classes(4) if c.total <= 6]
    with open(sys.argv[1], "w") as out:
        for cart in (False, True):
            mol = load("water_clusters/002", "cc-pvqz", cart=cart)
            rng = np.random.default_rng(5)
            worst = 0.0
            for cls in classes:
                quartets = sample_quartets(mol, cls, 4, rng)
                row = verify_class(mol, cls, quartets, "gpu", "full", tol)
                k = get_kernel(cls, "full", spherical=not cart)
                rec = row.row() | {"basis": "cc-pvqz", "cartesian": cart, "n_slots": k.n_slots,
                                   "registers": k.report.registers}  # fmt: skip
                if not row.passed:
                    a = adjudicate(
                        mol, row.worst_quartet, row.worst_element, tol=tol, backend="gpu"
                    )
                    rec |= {"exact": a.exact, "engine_right": a.engine_right}
                worst = max(worst, row.max_normalized_error)
                out.write(json.dumps(rec, default=str) + "\n")
            print("cart" if cart else "sph", "worst normalized error", worst, flush=True)
        mol = load("water_clusters/002", "cc-pvqz")
        basis = segment_basis(mol)
        quartets, weight = unique_segment_quartets(basis)
        ls = basis.l[quartets]
        a = np.random.default_rng(3).standard_normal((basis.nao, basis.nao))
        dm = (a + a.T) / basis.nao
        gpu, cpu, full = executor("gpu"), executor("cpu"), get_variant("full")
        pick = np.random.default_rng(4)
        for cls in classes:
            rows = np.flatnonzero((ls == np.array(cls.ls)).all(axis=1))
            rows = np.sort(pick.choice(rows, min(96, len(rows)), replace=False))
            got = gpu.jk(cls, full, True, quartets[rows], weight[rows], basis, dm)
            ref = cpu.jk(cls, full, True, quartets[rows], weight[rows], basis, dm)
            diff = max(float(np.abs(g - r).max()) for g, r in zip(got, ref))
            scale = max(float(np.abs(r).max()) for r in ref)
            rec = {"kind": "jk_class", "class": str(cls), "quartets": len(rows),
                   "max_abs_diff": diff, "max_abs": scale}  # fmt: skip
            out.write(json.dumps(rec) + "\n")
            print(rec, flush=True)
        mol = load("water_clusters/002", "cc-pvdz")
        a = np.random.default_rng(2).standard_normal((mol.nao, mol.nao))
        dm = (a + a.T) / mol.nao
        vj, vk = get_jk(mol, dm, backend="gpu")
        rj, rk = scf.hf.get_jk(mol, dm)
        jk = {"kind": "jk", "basis": "cc-pvdz", "max_abs_dj": float(np.abs(vj - rj).max()),
              "max_abs_dk": float(np.abs(vk - rk).max())}  # fmt: skip
        out.write(json.dumps(jk) + "\n")
        print(jk, flush=True)


if __name__ == "__main__":
    main()
