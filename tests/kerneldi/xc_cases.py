"""Shared cases of the XC engine tests: real molecules, grids, density matrices, tolerances."""

from __future__ import annotations

import functools

import numpy as np
from pyscf import dft

from qcbench.molecules import load

# Acceptance tolerances against PySCF's NumInt on the same grid (t_b = t_d = 1e-12).
EXC_TOL = 1e-9  # Hartree
VXC_TOL = 1e-8  # max |element|
NELEC_TOL = 1e-9


@functools.cache
def system(name: str, basis: str, level: int, charge: int = 0, spin: int | None = None):
    """(mol, grids, dm) with a Hueckel-guess density (delocalized, not block diagonal)."""
    mol = load(name, basis)
    if charge or spin is not None:
        mol.charge = charge
        mol.spin = mol.spin if spin is None else spin
        mol.build()
    grids = dft.gen_grid.Grids(mol)
    grids.level = level
    grids.build()
    if mol.spin == 0 and spin is None:
        dm = dft.RKS(mol).get_init_guess(key="huckel")
    else:
        dm = dft.UKS(mol).get_init_guess(key="huckel")
    return mol, grids, np.asarray(dm)


@functools.cache
def reference(name, basis, level, xc, kind, charge=0, spin=None):
    """PySCF's NumInt result on the same grid: nr_rks for kind 'rks', nr_uks for 'uks'."""
    mol, grids, dm = system(name, basis, level, charge, spin)
    ni = dft.numint.NumInt()
    return getattr(ni, f"nr_{kind}")(mol, grids, xc, dm)


def subgrid(grids, npoints: int, seed: int = 0):
    """A random subset of a real grid (weights rescaled): small enough for the kernel emulation."""
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(grids.size, npoints, replace=False))
    sub = dft.gen_grid.Grids(grids.mol)
    sub.coords = grids.coords[idx]
    sub.weights = grids.weights[idx] * (grids.size / npoints)
    sub.atm_idx = grids.atm_idx[idx]
    return sub


@functools.cache
def orbital_system(name: str, basis: str, level: int, kind: str = "rks"):
    """(mol, grids, dm) with dm tagged with core-Hamiltonian orbitals (``mo_coeff``,
    ``mo_occ``) as PySCF's SCF passes it to nr_rks/nr_uks; "uks" is the singly charged doublet."""
    mol = load(name, basis)
    if kind == "uks":
        mol.charge, mol.spin = 1, 1
        mol.build()
    grids = dft.gen_grid.Grids(mol)
    grids.level = level
    grids.build()
    mf = dft.RKS(mol) if kind == "rks" else dft.UKS(mol)
    h = mf.get_hcore()
    mo_energy, mo_coeff = mf.eig(h if kind == "rks" else np.stack([h, h]), mf.get_ovlp())
    mo_occ = mf.get_occ(mo_energy, mo_coeff)
    return mol, grids, mf.make_rdm1(mo_coeff, mo_occ)
