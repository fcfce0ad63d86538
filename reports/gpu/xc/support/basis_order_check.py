"""Kept basis blocks per grid block and block pairs under the support and the overlap-row
basis orders, on 800 random grid blocks (run as ``python basis_order_check.py MOLECULE BASIS
GRID_LEVEL`` on the development machine; Taxol/def2-TZVP at grid level 4 in README.md)."""

import sys
import time

import numpy as np
from pyscf import dft
from pyscf.dft import numint

from kerneldi.layout import make_layout
from kerneldi.settings import Settings
from qcbench.molecules import load

mol = load(sys.argv[1], sys.argv[2])
grids = dft.gen_grid.Grids(mol)
grids.level = int(sys.argv[3])
grids.build(with_non0tab=False)

for order in ("support", "cluster"):
    t0 = time.time()
    st = Settings(basis_order=order)
    lay = make_layout(mol, grids.coords, grids.weights, None, st)
    t1 = time.time() - t0
    rng = np.random.default_rng(1)
    gs = np.sort(rng.choice(lay.ngb - 1, 800, replace=False))
    d, nbb = lay.d, lay.nbb
    k = []
    for g in gs:
        a = np.abs(numint.eval_ao(mol, lay.coords[g * d : (g + 1) * d], deriv=1)).max(axis=(0, 1))[
            lay.basis_perm
        ]
        pad = np.zeros(nbb * d)
        pad[: mol.nao] = a
        k.append((pad.reshape(nbb, d).max(axis=1) >= st.t_b).sum())
    k = np.array(k, float)
    print(
        order,
        "layout s",
        round(t1, 1),
        "kept",
        round(k.mean() / nbb, 4),
        "pairs",
        round((k**2).mean() / nbb**2, 4),
        flush=True,
    )
