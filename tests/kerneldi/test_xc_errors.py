"""Bad input gets an error that names the cause."""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft

import kerneldi
from kerneldi import (
    BackendUnavailable,
    DensityMatrixError,
    FunctionalError,
    GridError,
    InputError,
    SettingsError,
)

CASE = ("water_clusters/002", "sto-3g", 0)


@pytest.fixture(scope="module")
def water(get_system):
    return get_system(*CASE)


@pytest.mark.parametrize("xc", ["not-a-functional", "", "b88,foo"])
def test_unknown_functional(water, xc):
    mol, grids, dm = water
    with pytest.raises(FunctionalError, match="functional"):
        kerneldi.NumInt().nr_rks(mol, grids, xc, dm)


def test_laplacian_meta_gga_is_refused(water):
    mol, grids, dm = water
    with pytest.raises(FunctionalError, match="Laplacian"):
        kerneldi.NumInt().nr_rks(mol, grids, "br89,", dm)


def test_empty_grid(water):
    mol, _, dm = water
    grids = dft.gen_grid.Grids(mol)
    grids.coords, grids.weights = np.zeros((0, 3)), np.zeros(0)
    with pytest.raises(GridError, match="no points"):
        kerneldi.NumInt().nr_rks(mol, grids, "pbe", dm)
    grids.coords, grids.weights = np.zeros((5, 3)), np.zeros(5)
    with pytest.raises(GridError, match="nonzero weight"):
        kerneldi.NumInt().nr_rks(mol, grids, "pbe", dm)
    grids.coords, grids.weights = np.zeros((5, 2)), np.ones(5)
    with pytest.raises(GridError, match=r"\(n, 3\)"):
        kerneldi.NumInt().nr_rks(mol, grids, "pbe", dm)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda dm: dm[:-1], "shape"),
        (lambda dm: np.zeros((3, 2) + dm.shape), "shape"),
        (lambda dm: dm + 1j, "complex"),
        (lambda dm: np.where(dm == dm.max(), np.nan, dm), "NaN"),
        (lambda dm: np.array(["a"] * dm.size).reshape(dm.shape), "real"),
    ],
    ids=["wrong-nao", "too-many-axes", "complex", "nan", "strings"],
)
def test_bad_density_matrix(water, make, match):
    mol, grids, dm = water
    with pytest.raises(DensityMatrixError, match=match):
        kerneldi.NumInt().nr_rks(mol, grids, "pbe", make(dm))


def test_bad_uks_density_matrix(water):
    mol, grids, dm = water
    with pytest.raises(DensityMatrixError, match="shape"):
        kerneldi.NumInt().nr_uks(mol, grids, "pbe", np.stack([dm, dm, dm]))


@pytest.mark.parametrize(
    "options",
    [{"block_size": 0}, {"t_b": 2.0}, {"t_d": -1.0}, {"mma": "fp8"}, {"grid_order": "hilbert"},
     {"grid_order_on_device": "yes"}],
)  # fmt: skip
def test_bad_settings(options):
    with pytest.raises(SettingsError):
        kerneldi.NumInt(**options)


def test_unknown_backend_and_engine():
    with pytest.raises(BackendUnavailable, match="backend"):
        kerneldi.NumInt(backend="tpu")
    with pytest.raises(InputError, match="engine"):
        kerneldi.NumInt(engine="sparse")


def test_relativistic_xc_is_refused(water):
    mol, grids, dm = water
    with pytest.raises(InputError, match="relativistic"):
        kerneldi.NumInt().nr_rks(mol, grids, "pbe", dm, relativity=1)


def gpu_present() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.skipif(gpu_present(), reason="a GPU is present, so the GPU backend is available")
def test_gpu_backend_without_a_gpu():
    with pytest.raises(BackendUnavailable, match="GPU|CuPy"):
        kerneldi.NumInt(backend="gpu")


def test_hartree_fock_returns_zeros_like_pyscf(water):
    mol, grids, dm = water
    n, e, v = kerneldi.NumInt().nr_rks(mol, grids, "hf", dm)
    n0, e0, v0 = dft.numint.NumInt().nr_rks(mol, grids, "hf", dm)
    assert n == n0 == 0 and e == e0 == 0 and not v.any() and v.shape == v0.shape
