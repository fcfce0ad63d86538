"""CPU backend against PySCF's NumInt on the same grid, element by element.

Acceptance at t_b = t_d = 1e-12: |dExc| <= 1e-9 Eh, max |dVxc| <= 1e-8, |dN| <= 1e-9.
"""

from __future__ import annotations

import numpy as np
import pytest
from xc_cases import EXC_TOL, NELEC_TOL, VXC_TOL

import kerneldi

FUNCTIONALS = ["lda,vwn", "pbe", "m062x"]
# (molecule, basis, grid level): real molecules, small bases and grids for CI
CLOSED = [
    ("water_clusters/003", "def2-svp", 0),
    ("organic/020_Vitamin_C", "6-31g", 0),
]
OPEN = [("water_clusters/002", "def2-svp", 1), ("organic/020_Vitamin_C", "6-31g", 0)]


def check(got, ref, kind):
    n, e, v = got
    n0, e0, v0 = ref
    assert np.shape(v) == np.shape(v0) and np.shape(n) == np.shape(n0)
    assert np.max(np.abs(np.asarray(n) - n0)) <= NELEC_TOL
    assert abs(e - e0) <= EXC_TOL
    assert np.abs(v - v0).max() <= VXC_TOL
    assert np.abs(v - np.swapaxes(v, -1, -2)).max() <= 1e-14 * np.abs(v).max()


@pytest.mark.parametrize("xc", FUNCTIONALS)
@pytest.mark.parametrize("case", CLOSED, ids=lambda c: c[0].split("/")[-1])
def test_rks_matches_pyscf(case, xc, get_system, get_reference):
    mol, grids, dm = get_system(*case)
    ni = kerneldi.NumInt(backend="cpu")
    check(ni.nr_rks(mol, grids, xc, dm), get_reference(*case, xc, "rks"), "rks")


@pytest.mark.parametrize("xc", FUNCTIONALS)
@pytest.mark.parametrize("case", OPEN, ids=lambda c: c[0].split("/")[-1])
def test_uks_matches_pyscf(case, xc, get_system, get_reference):
    mol, grids, dm = get_system(*case, charge=1, spin=1)
    assert dm.shape == (2, mol.nao, mol.nao)
    ni = kerneldi.NumInt(backend="cpu")
    check(ni.nr_uks(mol, grids, xc, dm), get_reference(*case, xc, "uks", 1, 1), "uks")


@pytest.mark.parametrize(
    "options",
    [
        {"block_size": 16},
        {"block_size": 7, "grid_order": "input", "basis_order": "input"},
        {"leaf_order": "greedy"},
    ],
    ids=["d16", "d7-input-order", "greedy-leaves"],
)
def test_settings_do_not_change_the_result(options, get_system, get_reference):
    case = CLOSED[0]
    mol, grids, dm = get_system(*case)
    ni = kerneldi.NumInt(backend="cpu", **options)
    check(ni.nr_rks(mol, grids, "pbe", dm), get_reference(*case, "pbe", "rks"), "rks")


def test_without_screening_agrees_to_rounding(get_system, get_reference):
    case = CLOSED[0]
    mol, grids, dm = get_system(*case)
    n, e, v = kerneldi.NumInt(t_b=0.0, t_d=0.0).nr_rks(mol, grids, "m062x", dm)
    n0, e0, v0 = get_reference(*case, "m062x", "rks")
    assert abs(e - e0) < 1e-12 and np.abs(v - v0).max() < 1e-12


def test_several_density_matrices_and_the_dense_baseline(get_system, get_reference):
    case = CLOSED[0]
    mol, grids, dm = get_system(*case)
    n0, e0, v0 = get_reference(*case, "pbe", "rks")
    for engine in ("block", "dense"):
        ni = kerneldi.NumInt(engine=engine)
        n, e, v = ni.nr_rks(mol, grids, "pbe", np.stack([dm, dm]))
        assert n.shape == (2,) and e.shape == (2,) and v.shape == (2, mol.nao, mol.nao)
        assert np.abs(e - e0).max() <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL


def test_block_structure_is_built_once_per_geometry_and_grid(get_system):
    mol, grids, dm = get_system(*CLOSED[0])
    ni = kerneldi.NumInt()
    ni.nr_rks(mol, grids, "pbe", dm)
    engine = ni.get_engine(mol, grids, "GGA")
    ni.nr_rks(mol, grids, "pbe", 0.9 * dm)
    ni.nr_rks(mol, grids, "lda,vwn", dm)  # needs fewer AO derivatives: same engine
    assert ni.get_engine(mol, grids, "LDA") is engine
    moved = mol.copy().set_geom_(mol.atom_coords() + 0.01, unit="Bohr")
    assert ni.get_engine(moved, grids, "GGA") is not engine
    stats = ni.stats()
    assert 0 < stats["retained_fraction"] <= 1 and stats["retained_blocks"] > 0


@pytest.mark.parametrize("xc", ["lda,vwn", "m062x"])
def test_ao_values_recomputed_batch_by_batch(xc, get_system, monkeypatch):
    """Without the AO cache every call evaluates each batch's AO values once (only the shells
    its kept blocks hold) and runs density, XC and potential on it: the cached result."""
    from kerneldi import cpu

    mol, grids, dm = get_system(*OPEN[0], charge=1, spin=1)
    monkeypatch.setattr(cpu, "BATCH_BYTES", 2e6)  # several batches
    cached = kerneldi.NumInt()
    again = kerneldi.NumInt(ao_cache="never")
    for kind, d in (("rks", dm[0] + dm[1]), ("uks", dm)):
        (n0, e0, v0), (n, e, v) = (
            getattr(ni, f"nr_{kind}")(mol, grids, xc, d) for ni in (cached, again)
        )
        assert np.abs(np.asarray(n) - n0).max() <= 1e-12 and abs(e - e0) <= 1e-12
        assert np.abs(v - v0).max() <= 1e-13
    assert cached.stats()["ao_cached"] and not again.stats()["ao_cached"]
    assert again._engine.chunks[0].ao is None
