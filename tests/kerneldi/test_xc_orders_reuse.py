"""A new geometry close to the last one (an MD step) keeps the basis order; the results are
those of PySCF's NumInt at the new geometry (|dExc| <= 1e-10 Eh, max |dVxc| <= 1e-9), as with
an order made anew."""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft, gto

import kerneldi

ATOMS = [("O", (0.0, 0.0, 0.117)), ("H", (0.0, 0.757, -0.467)), ("H", (0.0, -0.757, -0.467))]


def _system(shift_bohr: float):
    atoms = [(s, np.array(xyz) / 0.52917721092) for s, xyz in ATOMS]
    atoms[1] = (atoms[1][0], atoms[1][1] + np.array([0.0, shift_bohr, 0.0]))
    mol = gto.M(atom=[(s, tuple(x)) for s, x in atoms], unit="Bohr", basis="6-31g", verbose=0)
    grids = dft.gen_grid.Grids(mol)
    grids.level = 1
    grids.build()
    dm = dft.RKS(mol).get_init_guess()
    return mol, grids, dm


def _check(ni, shift: float) -> None:
    mol, grids, dm = _system(shift)
    n, exc, vxc = ni.nr_rks(mol, grids, "pbe", dm)
    rn, rexc, rvxc = dft.numint.NumInt().nr_rks(mol, grids, "pbe", dm)
    assert abs(exc - rexc) <= 1e-10
    assert np.abs(vxc - rvxc).max() <= 1e-9


@pytest.mark.parametrize(
    "shift, limit, reused", [(0.05, 0.5, True), (1.0, 0.5, False), (0.05, 0.0, False)]
)
def test_orders_are_kept_for_a_nearby_geometry(shift, limit, reused):
    ni = kerneldi.NumInt(backend="cpu", reuse_orders_bohr=limit)
    _check(ni, 0.0)
    assert not ni.orders_reused
    _check(ni, shift)
    assert ni.orders_reused is reused
    assert ni.stats()["orders_reused"] is reused
