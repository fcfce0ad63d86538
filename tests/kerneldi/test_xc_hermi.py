"""``hermi`` as PySCF's NumInt takes it, on a density matrix that is not symmetric.

PySCF (``NumInt._gen_rho_evaluator``) integrates (D + D^T)/2 for a real D unless hermi == 1;
with hermi == 1 it takes D as given: LDA densities are the same (phi^T D phi), GGA and
meta-GGA gradients are 2 grad(phi)^T D phi. The engine gives PySCF's result where it is that of
(D + D^T)/2 and refuses the rest.
"""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft
from xc_cases import EXC_TOL, NELEC_TOL, VXC_TOL

import kerneldi
from kerneldi.errors import DensityMatrixError

FUNCTIONALS = ["lda,vwn", "pbe", "m062x"]
CASES = {
    "rks": (("water_clusters/003", "def2-svp", 0), {}),
    "uks": (("water_clusters/002", "def2-svp", 1), {"charge": 1, "spin": 1}),
}


def asymmetric(dm, scale: float, seed: int = 1):
    """``dm`` plus a random perturbation that is not symmetric."""
    return dm + scale * np.random.default_rng(seed).standard_normal(dm.shape)


def assert_same(got, ref):
    n, e, v = got
    n0, e0, v0 = ref
    assert np.abs(np.asarray(n) - n0).max() <= NELEC_TOL
    assert abs(e - e0) <= EXC_TOL
    assert np.abs(v - v0).max() <= VXC_TOL


@pytest.mark.parametrize("xc", FUNCTIONALS)
@pytest.mark.parametrize("kind", ["rks", "uks"])
def test_hermi_as_pyscf_takes_it(kind, xc, get_system):
    case, spin = CASES[kind]
    mol, grids, dm = get_system(*case, **spin)
    dm = asymmetric(dm, 1e-3)
    pyscf_ni, ours = dft.numint.NumInt(), kerneldi.NumInt(backend="cpu")
    run = {name: getattr(ni, f"nr_{kind}") for name, ni in (("pyscf", pyscf_ni), ("ours", ours))}

    # hermi=0: both integrate (D + D^T)/2; so does nr_vxc, whose default is hermi=0
    ref0 = run["pyscf"](mol, grids, xc, dm, hermi=0)
    assert_same(run["ours"](mol, grids, xc, dm, hermi=0), ref0)
    assert_same(ours.nr_vxc(mol, grids, xc, dm, spin=int(kind == "uks")), ref0)

    ref1 = run["pyscf"](mol, grids, xc, dm, hermi=1)
    if xc == "lda,vwn":  # phi^T D phi: PySCF's hermi=1 result is that of (D + D^T)/2
        assert_same(run["ours"](mol, grids, xc, dm, hermi=1), ref1)
        assert_same(run["ours"](mol, grids, xc, dm), ref1)  # hermi=1 is the default
    else:  # PySCF's gradient of D as given differs: refused, with the way out in the message
        assert abs(ref1[1] - ref0[1]) > 100 * EXC_TOL
        with pytest.raises(DensityMatrixError, match=r"max\|D - D\^T\| = .*pass hermi=0"):
            run["ours"](mol, grids, xc, dm, hermi=1)
        with pytest.raises(DensityMatrixError, match="hermi=1"):
            run["ours"](mol, grids, xc, dm)


@pytest.mark.parametrize("kind", ["rks", "uks"])
def test_rounding_level_asymmetry_counts_as_symmetric(kind, get_system):
    """D = C n C^T is symmetric only up to rounding: hermi=1 takes it, as PySCF's result."""
    case, spin = CASES[kind]
    mol, grids, dm = get_system(*case, **spin)
    dm = asymmetric(dm, 1e-15)
    ref = getattr(dft.numint.NumInt(), f"nr_{kind}")(mol, grids, "m062x", dm, hermi=1)
    assert_same(getattr(kerneldi.NumInt(), f"nr_{kind}")(mol, grids, "m062x", dm, hermi=1), ref)
