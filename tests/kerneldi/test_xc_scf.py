"""An SCF through the engine reproduces PySCF's energy (M06-2X, the paper's functional)."""

from __future__ import annotations

import pytest
from pyscf import dft

import kerneldi
from qcbench.molecules import load

SCF_TOL = 1e-7  # Hartree


def energy(mol, kind: str, numint=None) -> float:
    mf = getattr(dft, kind)(mol, xc="m062x")
    mf.grids.level = 1
    mf.conv_tol = 1e-10
    if numint is not None:
        mf._numint = numint  # the one line that switches the XC engine
    e = mf.kernel()
    assert mf.converged
    return e


@pytest.mark.parametrize("kind", ["RKS", "UKS"])
def test_m062x_scf_energy_matches_pyscf(kind):
    mol = load("water_clusters/002", "def2-svp")
    if kind == "UKS":
        mol.charge, mol.spin = 1, 1
        mol.build()
    reference = energy(mol, kind)
    ni = kerneldi.NumInt(backend="cpu")
    assert abs(energy(mol, kind, ni) - reference) <= SCF_TOL
    assert ni.stats()["retained_blocks"] > 0  # the engine did the XC work
