"""A new geometry close to the last one (an MD step) keeps the basis order; the results are
those of PySCF's NumInt at the new geometry (|dExc| <= 1e-10 Eh, max |dVxc| <= 1e-9), as with
an order made anew."""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft, gto

import kerneldi
from kerneldi.layout import kept_grid_order, make_layout

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


def test_a_grid_order_is_kept_only_for_the_same_points_nearby():
    mol, grids, _ = _system(0.0)
    settings = kerneldi.Settings()
    layout = make_layout(mol, grids.coords, grids.weights, None, settings)
    limit = settings.reuse_orders_bohr

    def kept(coords, weights, limit=limit):
        found = kept_grid_order(coords, weights, layout, limit)
        return None if found is None else found[0]

    assert kept(grids.coords, grids.weights) is layout.grid_perm
    moved = grids.coords + np.array([0.0, 0.01, 0.0])  # every point moved with its atom
    assert kept(moved, grids.weights) is layout.grid_perm
    assert kept(moved, grids.weights, limit=0.0) is None  # reuse switched off
    assert kept(grids.coords + 1.0, grids.weights) is None  # moved too far
    assert kept(grids.coords[::-1], grids.weights[::-1]) is None  # listed in another order
    weights = grids.weights.copy()
    weights[layout.grid_perm[0]] = 0.0  # a point of the order has no weight now
    assert kept(grids.coords, weights) is None
    zero = np.flatnonzero(grids.weights == 0)
    if zero.size:  # a point outside the order has a weight now
        weights = grids.weights.copy()
        weights[zero[0]] = 1e-3
        assert kept(grids.coords, weights) is None
    # the layout made with the kept order holds the moved grid in that order
    again = make_layout(mol, moved, grids.weights, None, settings, layout.basis_perm, layout)
    assert again.grid_perm is layout.grid_perm
    np.testing.assert_array_equal(again.coords, moved[layout.grid_perm])
    np.testing.assert_array_equal(again.weights, grids.weights[layout.grid_perm])


def test_the_gradient_keeps_the_energy_layouts_orders():
    """The gradient's engine of the energy's geometry and grid takes both of its orders."""
    mol, grids, dm = _system(0.0)
    ni = kerneldi.NumInt(backend="cpu")
    ni.nr_rks(mol, grids, "pbe", dm)
    energy = ni.energy_layout_of(mol)
    grad = ni.get_grad_engine(mol, grids, "GGA").layout
    assert grad.grid_perm is energy.grid_perm and grad.basis_perm is energy.basis_perm
