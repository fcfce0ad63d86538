"""The GPU XC gradient: the device-generic engine on the host device (NumPy, PySCF's AO values;
runs everywhere) and on a real GPU (CuPy, GPU4PySCF; marked ``gpu``, skipped without one).

Acceptance at t_b = t_d = 1e-12: max |d vmat| <= 1e-8 against PySCF's
``grad.rks/uks.get_vxc`` (and ``get_vxc_full_response`` on the GPU).
"""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft, gto
from pyscf.grad import rks as rks_grad
from pyscf.grad import uks as uks_grad
from xc_cases import system

import kerneldi
from kerneldi import integrate
from kerneldi.gpu.device import EmulatedDevice
from kerneldi.gpu.gradient import GPUGradientEngine
from kerneldi.layout import make_layout

GRAD_TOL = 1e-8
CLOSED = ("water_clusters/002", "def2-svp", 0)
OPEN = ("water_clusters/002", "def2-svp", 0, 1, 1)


def _host_engine(mol, grids, xctype: str, dense: bool = False, chunk_bytes=None, **options):
    settings = kerneldi.Settings(block_size=8, **options)
    layout = make_layout(mol, grids.coords, grids.weights, grids.atm_idx, settings)
    deriv = integrate.AO_DERIV[xctype] + 1
    extra = {} if chunk_bytes is None else {"chunk_bytes": chunk_bytes}
    return GPUGradientEngine(mol, layout, settings, deriv, EmulatedDevice(), dense, **extra)


@pytest.mark.parametrize("dense", [False, True], ids=["block", "dense"])
@pytest.mark.parametrize("xc,xctype", [("svwn", "LDA"), ("pbe", "GGA"), ("m062x", "MGGA")])
def test_device_engine_on_host_matches_pyscf(xc, xctype, dense):
    mol, grids, dm = system(*CLOSED)
    eng = _host_engine(mol, grids, xctype, dense)
    ni = kerneldi.NumInt(backend="cpu")
    _, _, v = integrate.rks(eng, ni, xc, xctype, dm, None, "gradient")
    _, v0 = rks_grad.get_vxc(dft.numint.NumInt(), mol, grids, xc, dm)
    assert np.abs(-v - v0).max() <= GRAD_TOL
    if not dense:
        assert eng.counts["gradient_pairs"] <= eng.counts["gradient_candidates"]


def test_device_engine_on_host_unrestricted_uncached():
    mol, grids, dm = system(*OPEN)
    eng = _host_engine(mol, grids, "MGGA", ao_cache="never")
    assert not eng.cached
    ni = kerneldi.NumInt(backend="cpu")
    _, _, (va, vb) = integrate.uks(eng, ni, "m062x", "MGGA", dm[0], dm[1], (None, None), "gradient")
    _, v0 = uks_grad.get_vxc(dft.numint.NumInt(), mol, grids, "m062x", dm)
    assert np.abs(-np.stack([va, vb]) - v0).max() <= GRAD_TOL


@pytest.mark.parametrize("xc,xctype", [("pbe", "GGA"), ("m062x", "MGGA")])
def test_uncached_chunks_evaluate_only_their_kept_shells(xc, xctype):
    """Two waters 12 Angstrom apart in small chunks: a chunk near one water keeps only that
    water's blocks, and re-evaluated (no AO cache) on those shells alone it gives PySCF's V."""
    mol = gto.M(
        atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59; O 12 0 0; H 12 0.76 0.59; H 12 -0.76 0.59",
        basis="def2-svp",
    )
    grids = dft.gen_grid.Grids(mol)
    grids.level = 0
    grids.build()
    dm = dft.RKS(mol).get_init_guess(key="huckel")
    eng = _host_engine(mol, grids, xctype, ao_cache="never", chunk_bytes=1)
    assert not eng.cached
    assert any(len(c.basis) <= eng.layout.nbb // 2 for c in eng.chunks)
    _, _, v = integrate.rks(eng, kerneldi.NumInt(backend="cpu"), xc, xctype, dm, None, "gradient")
    assert all(c.subset is not None for c in eng.chunks if len(c.basis))
    _, v0 = rks_grad.get_vxc(dft.numint.NumInt(), mol, grids, xc, dm)
    assert np.abs(-v - v0).max() <= GRAD_TOL


class HostDeviceNumInt(kerneldi.CPUNumInt):
    """PySCF's NumInt whose gradient engines are the device engine on the host device, as
    ``GPUNumInt`` builds them on a GPU."""

    def _new_engine(self, mol, layout, xctype, deriv=None):
        if deriv is not None and deriv > integrate.AO_DERIV[xctype]:
            return GPUGradientEngine(mol, layout, self.settings, deriv, EmulatedDevice())
        return super()._new_engine(mol, layout, xctype, deriv)


@pytest.mark.parametrize("spin,xc", [(0, "pbe"), (1, "svwn")], ids=["rks-pbe", "uks-svwn"])
def test_device_engine_grid_response_on_host(spin, xc):
    """The GPU backend's whole gradient path (one device engine per atom's points)."""
    mol, grids, dm = system(*(CLOSED if spin == 0 else OPEN))
    module = rks_grad if spin == 0 else uks_grad
    exc0, v0 = module.get_vxc_full_response(dft.numint.NumInt(), mol, grids, xc, dm)
    ni = HostDeviceNumInt(block_size=8)
    exc1, v = ni.get_vxc_grad(mol, grids, xc, dm, spin=spin, grid_response=True)
    assert ni._grad_engine is None  # only the per-atom engines ran
    assert np.abs(v - v0).max() <= GRAD_TOL
    assert np.abs(exc1 - exc0).max() <= GRAD_TOL


@pytest.mark.gpu
@pytest.mark.parametrize("grid_response", [False, True], ids=["fixed-grid", "grid-response"])
@pytest.mark.parametrize("xc", ["svwn", "pbe", "m062x"])
@pytest.mark.parametrize("spin", [0, 1], ids=["rks", "uks"])
def test_gpu_vxc_grad_matches_pyscf(spin, xc, grid_response):
    cupy = pytest.importorskip("cupy")
    mol, grids, dm = system(*(CLOSED if spin == 0 else OPEN))
    module = rks_grad if spin == 0 else uks_grad
    get = module.get_vxc_full_response if grid_response else module.get_vxc
    exc0, v0 = get(dft.numint.NumInt(), mol, grids, xc, dm)
    ni = kerneldi.NumInt(backend="gpu")
    exc1, v = ni.get_vxc_grad(mol, grids, xc, cupy.asarray(dm), spin, grid_response)
    assert isinstance(v, cupy.ndarray)
    assert float(abs(v.get() - v0).max()) <= GRAD_TOL
    if grid_response:
        assert float(abs(cupy.asnumpy(exc1) - exc0).max()) <= GRAD_TOL


@pytest.mark.gpu
def test_gpu_dense_gradient_matches_pyscf():
    mol, grids, dm = system(*CLOSED)
    _, v0 = rks_grad.get_vxc(dft.numint.NumInt(), mol, grids, "pbe", dm)
    _, v = kerneldi.NumInt(backend="gpu", engine="dense").get_vxc_grad(mol, grids, "pbe", dm)
    assert np.abs(v - v0).max() <= GRAD_TOL


@pytest.mark.gpu
@pytest.mark.parametrize("grid_response", [False, True], ids=["fixed-grid", "grid-response"])
@pytest.mark.parametrize("method,xc,charge,spin", [("RKS", "m062x", 0, 0), ("UKS", "pbe", 1, 1)])
def test_gpu4pyscf_gradient_xc_part_from_kerneldi(method, xc, charge, spin, grid_response):
    """The whole analytic gradient of a converged GPU4PySCF SCF, its own against the same
    object's with ``kerneldi.apply_grad``: equal to 1e-7 Eh/Bohr (the acceptance's bound)."""
    pytest.importorskip("cupy")
    g4dft = pytest.importorskip("gpu4pyscf.dft")
    mol, _, _ = system("water_clusters/002", "def2-svp", 1, charge, spin)
    mf = getattr(g4dft, method)(mol, xc=xc)
    mf.conv_tol, mf.verbose = 1e-10, 0
    mf.kernel()
    assert mf.converged
    own = mf.nuc_grad_method()
    own.grid_response = grid_response
    expected = own.kernel()
    mf._numint = kerneldi.NumInt(backend="gpu")
    ours = kerneldi.apply_grad(mf.nuc_grad_method())
    ours.grid_response = grid_response
    assert isinstance(ours, kerneldi.grad.KerneLDIGPUGradMixin)
    found = ours.kernel()
    assert np.abs(np.asarray(found) - np.asarray(expected)).max() <= 1e-7
