"""Range-separated Coulomb and exchange (``JK(omega=...)``, ``fusionrcg.apply`` of range-separated
hybrids) against PySCF's ``mol.with_range_coulomb``.

The long-range operator erf(omega r)/r runs on its own kernels (``KernelOptions.omega``); the
short-range erfc(omega r)/r is the full-range build less the long-range one. Tolerances as in
``test_jk``: J and K to 1e-10 at a screening threshold of 1e-14, their derivatives likewise,
SCF energies to 1e-8 Eh and analytic gradients to 1e-7 Eh/Bohr. s and p shells (6-31G) keep
the default run's compile time small; the kernels are the same lowering at every l.
"""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft, gto, scf
from pyscf.grad import rhf as rhf_grad

import fusionrcg
from fusionrcg.errors import OptionsError
from fusionrcg.jk import JK
from fusionrcg.jk.grad import FusionGradMixin

JK_TOL = 1e-10
ENERGY_TOL = 1e-8
GRADIENT_TOL = 1e-7
OMEGA = 0.33

BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def water():
    return gto.M(atom="O 0 0 0.1; H 0 0.75 -0.45; H 0.1 -0.7 -0.5", basis="6-31g", verbose=0)


@pytest.fixture(scope="module")
def densities(water):
    """An RHF density and UHF's two spin densities after three cycles (neither guess nor
    converged)."""
    found = {}
    for label, mf in (("rhf", scf.RHF(water)), ("uhf", scf.UHF(water))):
        mf.max_cycle, mf.verbose = 3, 0
        mf.kernel()
        found[label] = np.asarray(mf.make_rdm1())
    return found


@pytest.mark.parametrize("omega", [OMEGA, -OMEGA], ids=["long-range", "short-range"])
def test_jk_and_derivatives_match_pyscf(water, densities, omega, backend):
    engine = JK(water, backend=backend, tol=1e-14, omega=omega)
    for dm in densities.values():
        vj, vk = engine.get_jk(dm)
        dj, dk = engine.get_jk_deriv(dm)
        with water.with_range_coulomb(omega):
            rj, rk = scf.hf.get_jk(water, dm)
            gj, gk = rhf_grad.get_jk(water, dm)
        assert np.abs(vj - rj).max() <= JK_TOL and np.abs(vk - rk).max() <= JK_TOL
        assert np.abs(dj - gj).max() <= JK_TOL and np.abs(dk - gk).max() <= JK_TOL
    # the operator differs from the full-range one by far more than the tolerance
    assert np.abs(vk - scf.hf.get_jk(water, dm)[1]).max() > 1e-3


def test_the_molecules_omega_is_the_default(water, densities):
    mol = water.copy()
    mol.omega = OMEGA
    vj, vk = JK(mol, backend="cpu", tol=1e-14).get_jk(densities["rhf"])
    with water.with_range_coulomb(OMEGA):
        rj, rk = scf.hf.get_jk(water, densities["rhf"])
    assert np.abs(vj - rj).max() <= JK_TOL and np.abs(vk - rk).max() <= JK_TOL


def test_gpu4pyscf_long_and_short_range_factors(water, densities):
    """GPU4PySCF's get_k(omega, lr_factor, sr_factor): lr erf + sr erfc, one full-range and
    one long-range build."""
    mf = fusionrcg.apply(scf.RHF(water), backend="cpu")
    mf.direct_scf_tol = 1e-14
    dm = densities["rhf"]
    full = scf.hf.get_jk(water, dm)[1]
    with water.with_range_coulomb(OMEGA):
        long_range = scf.hf.get_jk(water, dm)[1]
    vk = mf.get_k(water, dm, 1, OMEGA, 0.8, 0.2)
    assert np.abs(vk - (0.2 * full + 0.6 * long_range)).max() <= JK_TOL
    vk = mf.get_k(water, dm, 1, -OMEGA)  # PySCF: short range by the sign
    assert np.abs(vk - (full - long_range)).max() <= JK_TOL


@pytest.mark.parametrize(
    "make",
    [
        lambda m: dft.RKS(m, xc="camb3lyp"),
        lambda m: dft.UKS(m.copy().set(charge=1, spin=1), xc="wb97x"),
    ],
    ids=["camb3lyp", "uks-wb97x"],
)
def test_range_separated_hybrids_scf_and_gradients(water, make):
    ref = make(water)
    ref.conv_tol = 1e-11
    ref.kernel()
    ours = fusionrcg.apply(make(water), backend="cpu")
    ours.conv_tol = 1e-11
    ours.direct_scf_tol = 1e-14
    ours.kernel()
    assert ours.converged and abs(ours.e_tot - ref.e_tot) <= ENERGY_TOL
    assert abs(ours.cycles - ref.cycles) <= 1
    grad_object = ours.nuc_grad_method()
    assert isinstance(grad_object, FusionGradMixin)  # the J/K derivatives are the engine's
    assert np.abs(grad_object.kernel() - ref.nuc_grad_method().kernel()).max() <= GRADIENT_TOL


def test_bad_omega_is_named(water):
    with pytest.raises(OptionsError, match="omega"):
        fusionrcg.KernelOptions(omega=-0.1)
    with pytest.raises(fusionrcg.InputError, match="finite"):
        JK(water, backend="cpu", omega=float("nan"))
