"""Densities from occupied orbitals (R = C^T Phi): the same results as PySCF, on the CPU backend
and on the GPU kernels' emulation, and the choice between the two density forms."""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft, gto, lib
from test_xc_gpu_emulated import EmulatedNumInt, cxx20
from xc_cases import EXC_TOL, NELEC_TOL, VXC_TOL, orbital_system, subgrid

import kerneldi
from kerneldi import forms


def check(got, ref):
    (n, e, v), (n0, e0, v0) = got, ref
    assert np.abs(np.asarray(n) - np.asarray(n0)).max() <= NELEC_TOL
    assert abs(e - e0) <= EXC_TOL
    assert np.abs(np.asarray(v) - np.asarray(v0)).max() <= VXC_TOL


@pytest.mark.parametrize("xc", ["lda,vwn", "pbe", "m062x"])
def test_orbital_form_matches_pyscf_on_the_cpu(xc):
    mol, grids, dm = orbital_system("water_clusters/003", "def2-svp", 1)
    ref = dft.numint.NumInt().nr_rks(mol, grids, xc, np.asarray(dm))  # untagged: D Phi
    ni = kerneldi.NumInt(density_form="orbitals")
    check(ni.nr_rks(mol, grids, xc, dm), ref)
    stats = ni.stats()
    assert stats["density_form"] == "orbitals"
    nob = -(-int(round(mol.nelectron / 2)) // 32)
    assert 0 < stats["density_pair_fraction"] <= 1.0 and nob == 1
    # the matrix form ignores the tags
    mat = kerneldi.NumInt(density_form="matrix")
    check(mat.nr_rks(mol, grids, xc, dm), ref)
    assert mat.stats()["density_form"] == "matrix"


def test_unrestricted_and_split_closed_shell_orbitals():
    mol, grids, dm = orbital_system("water_clusters/002", "def2-svp", 1, "uks")
    ref = dft.numint.NumInt().nr_uks(mol, grids, "m062x", np.asarray(dm))
    ni = kerneldi.NumInt(density_form="orbitals")
    check(ni.nr_uks(mol, grids, "m062x", dm), ref)
    assert ni.stats()["density_form"] == "orbitals"
    # a closed-shell density given to nr_uks: each spin has half the occupations
    mol, grids, dm = orbital_system("water_clusters/002", "def2-svp", 1)
    ref = dft.numint.NumInt().nr_uks(mol, grids, "pbe", np.asarray(dm))
    check(ni.nr_uks(mol, grids, "pbe", dm), ref)
    assert ni.stats()["density_form"] == "orbitals"


@pytest.mark.parametrize("backend", ["cpu", "emulated"])
def test_a_spin_without_electrons(backend):
    """The hydrogen atom: no beta electron, so no beta orbital to form the density from. The
    beta potential at rho_b = 0 amplifies the last bits of rho_a: PySCF's own orbital and matrix
    forms of rho_a differ there (by 8e-6 on elements of 50 with OpenBLAS 0.3.31), so the beta
    potential is held to ten times that spread (at least VXC_TOL); the electron counts, Exc
    and the alpha potential to the usual tolerances against PySCF given the same tagged matrix."""
    if backend == "emulated" and not cxx20():
        pytest.skip("needs g++ with C++20 (std::barrier)")
    mol = gto.M(atom="H 0 0 0", basis="6-31g", spin=1, verbose=0)
    mf = dft.UKS(mol)
    mf.grids.level = 0
    grids = mf.grids.build()
    h = mf.get_hcore()
    mo_energy, mo_coeff = mf.eig(np.stack([h, h]), mf.get_ovlp())
    dm = mf.make_rdm1(mo_coeff, mf.get_occ(mo_energy, mo_coeff))
    n0, e0, v0 = dft.numint.NumInt().nr_uks(mol, grids, "pbe", dm)
    untagged = dft.numint.NumInt().nr_uks(mol, grids, "pbe", np.asarray(dm))[2]
    spread = np.abs(untagged[1] - v0[1]).max()
    options = {"density_form": "orbitals"}
    ni = EmulatedNumInt(**options) if backend == "emulated" else kerneldi.NumInt(**options)
    n, e, v = ni.nr_uks(mol, grids, "pbe", dm)
    check((n, e, v[0]), (n0, e0, v0[0]))
    assert np.abs(v[1] - v0[1]).max() <= max(VXC_TOL, 10 * spread)


def test_occupied_orbitals_from_tags():
    c = np.arange(12.0).reshape(4, 3)
    occ = np.array([2.0, 0.5, 0.0])
    dm = lib.tag_array((c * occ) @ c.T, mo_coeff=c, mo_occ=occ)
    (orb,) = forms.occupied_orbitals(dm, np)
    assert np.allclose(orb, c[:, :2] * np.sqrt([2.0, 0.5]))
    (half,) = forms.occupied_orbitals(dm, np, spin_halves=True)
    assert np.allclose(half, c[:, :2] * np.sqrt([1.0, 0.25]))
    assert forms.occupied_orbitals(np.zeros((4, 4)), np) is None  # untagged
    bad_occ = lib.tag_array(np.asarray(dm), mo_coeff=c, mo_occ=np.array([2.0, -0.1, 0.0]))
    assert forms.occupied_orbitals(bad_occ, np) is None  # not a sum of squares
    wrong = lib.tag_array(np.zeros((5, 5)), mo_coeff=c, mo_occ=np.ones(3))
    assert forms.occupied_orbitals(wrong, np) is None  # tags of another basis
    stale = lib.tag_array(0.5 * dm, mo_coeff=c, mo_occ=np.array([2.0, 0.5, 0.0]))
    assert forms.occupied_orbitals(stale, np) is None  # D is not C diag(n) C^T


def test_auto_form_follows_the_product_estimate():
    kept = np.full(10, 40)  # 40 kept basis blocks in every grid block
    few = np.zeros((64 * 32, 100))  # 100 occupied orbitals: 4 blocks of 32
    many = np.zeros((64 * 32, 1500))  # 47 blocks
    # meta-GGA, matrix: 40 * 41 / 2 * 4 products; orbitals: 40 * nob * 4
    assert forms.choose("auto", few, kept, "MGGA", 32, lambda: 1.0, lambda: 1.0) == "orbitals"
    assert forms.choose("auto", many, kept, "MGGA", 32, lambda: 1.0, lambda: 1.0) == "matrix"
    assert forms.choose("orbitals", many, kept, "MGGA", 32, lambda: 1.0, lambda: 1.0) == "orbitals"
    assert forms.choose("matrix", few, kept, "MGGA", 32, lambda: 1.0, lambda: 1.0) == "matrix"
    assert forms.choose("auto", None, kept, "MGGA", 32, lambda: 1.0, lambda: 1.0) == "matrix"
    # a sparse D makes the matrix form cheaper
    assert forms.choose("auto", few, kept, "MGGA", 32, lambda: 0.1, lambda: 1.0) == "matrix"
    # and sparse orbital tiles the orbital form
    assert forms.choose("auto", many, kept, "MGGA", 32, lambda: 1.0, lambda: 0.1) == "orbitals"


def test_cholesky_rotation_keeps_the_density_and_localizes():
    """A chain of 24 hydrogen molecules, 2.5 bohr apart: the Cholesky orbitals give the same
    D, are the Cholesky factor of D in the pivots' order (zero above the diagonal), and their
    tiles of 8 orbitals by 8 basis functions are sparser than those of the canonical ones."""
    atoms = [("H", (0, 0, 2.5 * i + 1.4 * k)) for i in range(0, 48, 2) for k in (0, 1)]
    mol = gto.M(atom=atoms, basis="sto-3g", unit="bohr", verbose=0)
    mf = dft.RKS(mol, xc="lda,vwn")
    mf.grids.level = 0
    mf.kernel()
    c = mf.mo_coeff[:, mf.mo_occ > 0] * np.sqrt(2.0)
    position = np.arange(mol.nao)
    rot = forms.CholeskyRotation(position)
    local = rot(c, np)
    assert np.abs(local @ local.T - c @ c.T).max() <= 1e-12
    pivots = rot.pivots[c.shape[1]]
    assert np.all(np.diff(pivots) > 0)  # kept in layout order
    assert np.abs(np.triu(local[pivots], 1)).max() <= 1e-12
    perm = np.arange(mol.nao)
    _, cmax = forms.orbital_tiles(c, perm, mol.nao, 8, np)
    _, lmax = forms.orbital_tiles(local, perm, mol.nao, 8, np)
    blocks = np.arange(cmax.shape[1])
    canonical = forms.orbital_fill(cmax, blocks, 1e-4, np)
    localized = forms.orbital_fill(lmax, blocks, 1e-4, np)
    assert localized < 0.7 * canonical
    # the pivots are reused while they fit, and made again when they do not
    assert rot(c, np) is not None and rot.pivots[c.shape[1]] is pivots
    rot.pivots[c.shape[1]] = np.arange(c.shape[1])  # pivots that do not suit this density
    rot.pivots[c.shape[1]][-1] = mol.nao - 1
    c_cut = c.copy()
    c_cut[mol.nao - 1] = 0.0  # a zero pivot row: M is singular
    again = rot(c_cut, np)
    assert np.abs(again @ again.T - c_cut @ c_cut.T).max() <= 1e-12
    assert not np.array_equal(rot.pivots[c.shape[1]], np.arange(c.shape[1]))


@pytest.mark.parametrize("rotation", ["cholesky", "none"])
def test_both_orbital_rotations_match_pyscf(rotation):
    mol, grids, dm = orbital_system("water_clusters/003", "def2-svp", 1)
    ref = dft.numint.NumInt().nr_rks(mol, grids, "m062x", np.asarray(dm))
    ni = kerneldi.NumInt(density_form="orbitals", orbital_rotation=rotation)
    check(ni.nr_rks(mol, grids, "m062x", dm), ref)


def test_settings_reject_an_unknown_form():
    with pytest.raises(kerneldi.SettingsError, match="density_form"):
        kerneldi.Settings(density_form="cholesky")
    with pytest.raises(kerneldi.SettingsError, match="orbital_rotation"):
        kerneldi.Settings(orbital_rotation="boys")


@pytest.mark.skipif(not cxx20(), reason="needs g++ with C++20 (std::barrier)")
@pytest.mark.parametrize(
    ("xc", "mma", "tiling"),
    [
        ("lda,vwn", "fp64", "block"),
        ("pbe", "fp64", "block"),
        ("m062x", "fp64", "block"),
        ("m062x", "fp64-tc", "block"),
        ("lda,vwn", "fp64-tc", "warp"),
        ("pbe", "fp64-tc", "warp"),
        ("m062x", "fp64-tc", "warp"),
    ],
)
def test_orbital_kernel_matches_pyscf_and_the_cpu_products(xc, mma, tiling):
    mol, grids, dm = orbital_system("water_clusters/003", "6-31g", 0)
    grids = subgrid(grids, 700)
    ref = dft.numint.NumInt().nr_rks(mol, grids, xc, np.asarray(dm))
    emu = EmulatedNumInt(density_form="orbitals", mma=mma, tiling=tiling)
    check(emu.nr_rks(mol, grids, xc, dm), ref)
    cpu = kerneldi.NumInt(density_form="orbitals")
    cpu.nr_rks(mol, grids, xc, dm)
    for key in ("density_form", "density_pair_fraction"):
        assert emu.stats()[key] == cpu.stats()[key]
    # a loose t_d drops products on both in the same way
    emu.update_settings(t_d=1e-3)
    cpu.update_settings(t_d=1e-3)
    emu.nr_rks(mol, grids, xc, dm)
    cpu.nr_rks(mol, grids, xc, dm)
    loose = emu.stats()["density_pair_fraction"]
    assert loose == cpu.stats()["density_pair_fraction"] and loose < 1.0


@pytest.mark.skipif(not cxx20(), reason="needs g++ with C++20 (std::barrier)")
@pytest.mark.parametrize("tiling", ["block", "warp"])
def test_several_orbital_blocks_with_fractional_occupations(tiling):
    """Every orbital carries some occupation: 65 of them, three blocks of 32 (three warps)."""
    mol, grids, dm = orbital_system("water_clusters/003", "6-31g", 0)
    grids = subgrid(grids, 500)
    c = dm.mo_coeff
    occ = 2.0 * np.exp(-np.arange(c.shape[1]) / 20.0)
    frac = lib.tag_array((c * occ) @ c.T, mo_coeff=c, mo_occ=occ)
    ref = dft.numint.NumInt().nr_rks(mol, grids, "m062x", np.asarray(frac))
    emu = EmulatedNumInt(density_form="orbitals", mma="fp64-tc", tiling=tiling)
    check(emu.nr_rks(mol, grids, "m062x", frac), ref)
    assert c.shape[1] > 64 and emu.stats()["density_form"] == "orbitals"
