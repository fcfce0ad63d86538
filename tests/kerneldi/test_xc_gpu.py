"""The GPU backend on a real GPU (CuPy, GPU4PySCF): skipped where there is none."""

from __future__ import annotations

import numpy as np
import pytest
from xc_cases import EXC_TOL, VXC_TOL, orbital_system

import kerneldi

pytestmark = pytest.mark.gpu

CASE = ("water_clusters/003", "def2-svp", 1)


@pytest.mark.parametrize("mma", ["fp64", "fp64-tc"])
@pytest.mark.parametrize("xc", ["lda,vwn", "pbe", "m062x"])
def test_gpu_backend_matches_pyscf(xc, mma, get_system, get_reference):
    import cupy

    mol, grids, dm = get_system(*CASE)
    n0, e0, v0 = get_reference(*CASE, xc, "rks")
    n, e, v = kerneldi.NumInt(backend="gpu", mma=mma).nr_rks(mol, grids, xc, cupy.asarray(dm))
    assert isinstance(v, cupy.ndarray)
    assert abs(e - e0) <= EXC_TOL and float(abs(v.get() - v0).max()) <= VXC_TOL


@pytest.mark.parametrize(
    "option",
    [
        {"tiling": "warp"},
        {"staging": "async"},
        {"staging": "sync"},
        {"potential_tiles": "2x2"},
        {"potential_tiles": "1x1"},
        {"potential_tiles": "4x4"},
    ],
    ids=["warp", "async", "sync", "2x2", "1x1", "4x4"],
)
@pytest.mark.parametrize("form", ["matrix", "orbitals"])
@pytest.mark.parametrize("xc", ["lda,vwn", "pbe", "m062x"])
def test_gpu_kernel_options_match_pyscf(xc, form, option):
    """The warp-tiled kernels, both density stagings and both potential tilings (FP64 tensor
    cores)."""
    from pyscf import dft

    mol, grids, dm = orbital_system(*CASE)
    n0, e0, v0 = dft.numint.NumInt().nr_rks(mol, grids, xc, np.asarray(dm))
    ni = kerneldi.NumInt(backend="gpu", mma="fp64-tc", density_form=form, **option)
    n, e, v = ni.nr_rks(mol, grids, xc, dm)
    assert ni.stats()["density_form"] == form
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL


def test_gpu_backend_unrestricted(get_system, get_reference):
    case = ("water_clusters/002", "def2-svp", 1)
    mol, grids, dm = get_system(*case, charge=1, spin=1)
    n0, e0, v0 = get_reference(*case, "m062x", "uks", 1, 1)
    n, e, v = kerneldi.NumInt(backend="gpu").nr_uks(mol, grids, "m062x", dm)
    assert isinstance(v, np.ndarray)  # host in, host out
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL


@pytest.mark.parametrize("mma", ["fp64", "fp64-tc"])
@pytest.mark.parametrize(("xc", "kind"), [("lda,vwn", "rks"), ("pbe", "rks"), ("m062x", "uks")])
def test_gpu_orbital_form_matches_pyscf(xc, kind, mma):
    from pyscf import dft

    mol, grids, dm = orbital_system("water_clusters/003", "def2-svp", 1, kind)
    n0, e0, v0 = getattr(dft.numint.NumInt(), f"nr_{kind}")(mol, grids, xc, np.asarray(dm))
    ni = kerneldi.NumInt(backend="gpu", mma=mma, density_form="orbitals")
    n, e, v = getattr(ni, f"nr_{kind}")(mol, grids, xc, dm)
    assert ni.stats()["density_form"] == "orbitals"
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL


def test_gpu4pyscf_scf_with_the_engine():
    from gpu4pyscf import dft

    from qcbench.molecules import load

    mol = load("water_clusters/002", "def2-svp")
    energies = []
    # GPU4PySCF's SCF passes densities tagged with their orbitals: both forms run an SCF
    for numint in (
        None,
        kerneldi.NumInt(backend="gpu", density_form="matrix"),
        kerneldi.NumInt(backend="gpu", density_form="orbitals"),
    ):
        mf = dft.RKS(mol, xc="m062x")
        mf.grids.level = 3
        mf.conv_tol = 1e-10
        if numint is not None:
            mf._numint = numint
        energies.append(mf.kernel())
        if numint is not None:
            assert numint.stats()["density_form"] == numint.settings.density_form
    assert max(abs(e - energies[0]) for e in energies[1:]) <= 1e-7


def test_grid_order_on_device_gives_the_hosts_layout(get_system):
    """``Settings.grid_order_on_device``: the layout made from the grid's device arrays (the
    Morton order sorted on the GPU) equals the host's, with and without the grid's atoms, and
    with points of zero weight left out."""
    import cupy

    from kerneldi.layout import make_layout
    from kerneldi.settings import Settings

    mol, grids, _ = get_system(*CASE)
    weights = np.array(grids.weights)
    weights[::7] = 0.0
    host, device = Settings(), Settings(grid_order_on_device=True)
    for atoms in (np.asarray(grids.atm_idx), None):
        want = make_layout(mol, grids.coords, weights, atoms, host)
        got = make_layout(
            mol, cupy.asarray(grids.coords), cupy.asarray(weights),
            None if atoms is None else cupy.asarray(atoms), device,
        )  # fmt: skip
        np.testing.assert_array_equal(got.grid_perm, want.grid_perm)
        np.testing.assert_array_equal(got.coords, want.coords)
        np.testing.assert_array_equal(got.weights, want.weights)
        np.testing.assert_array_equal(got.basis_perm, want.basis_perm)
