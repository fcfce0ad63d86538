"""The XC nuclear gradient through the block engine, and PySCF gradient objects that use it.

``get_vxc`` returns what PySCF's ``grad.rks.get_vxc`` / ``grad.uks.get_vxc`` return (and,
with ``grid_response``, their ``get_vxc_full_response``): ``vmat = -V`` with
V_k = sum_g w d_k(phi_mu) [...]_nu (``integrate.gradient_operands``) per spin, whose
contraction 2 sum_{mu in A} sum_nu vmat_k D summed over atom A's functions is the XC part of
dE/dR_A without the grid's motion. V comes from an engine of the same layout rules and
thresholds as the energy's (Morton grid blocks, basis order, retention at t_b, pair screening
at t_d) holding AO derivatives one order higher (``NumInt.get_grad_engine``).

Grid response (``grid_response=True``) follows PySCF's partition of the grid by atom
(``gen_grid.grids_response_cc``): each atom's points move with it and their Becke weights
depend on every atom. Per atom A, an engine on A's points (the same basis order) gives V^A,
whose trace with D is the points' motion (2 tr(V^A_k D) added to atom A), and
sum_g eps rho (dw_g/dR_B) the weights' response added to every atom B.

``Gradients(mf)`` / ``apply_grad(mf_grad)`` make a PySCF or GPU4PySCF RKS/UKS gradient object
take its XC part from ``mf._numint`` when that is a ``kerneldi.NumInt`` (other parts, the J/K
derivatives among them, unchanged).
"""

from __future__ import annotations

import functools

import numpy as np
from pyscf import lib

from . import integrate
from .errors import DensityMatrixError, FunctionalError, InputError
from .layout import make_layout


def _sets(ni, mol, dms, spin: int, xctype: str):
    """The density matrices (one per spin) in the backend's array type, their orbitals (or
    None each) and whether they came as device arrays; PySCF's gradient takes D as
    symmetric (hermi=1)."""
    if spin not in (0, 1):
        raise InputError(f"spin must be 0 (restricted) or 1 (unrestricted), got {spin!r}")
    nao = mol.nao_nr()
    dm, device_in = ni._array_in(dms, nao, uks=bool(spin))
    want = (nao, nao) if spin == 0 else (2, nao, nao)
    if tuple(dm.shape) != want:
        raise DensityMatrixError(
            f"the XC gradient takes one density matrix of shape {want} "
            f"({'restricted' if spin == 0 else 'unrestricted'}), got {tuple(dm.shape)}"
        )
    dm = ni._symmetrized(dm, 1, xctype)
    sets = [dm] if spin == 0 else [dm[0], dm[1]]
    orbitals = ni._orbitals(dms, dm) or [None] * len(sets)
    if len(orbitals) != len(sets):
        orbitals = [None] * len(sets)
    return sets, orbitals, device_in


def _gradient_matrices(eng, ni, xc_code: str, xctype: str, sets, orbitals, eps_rho=None):
    """V (3, nao, nao) per spin from one engine (``integrate`` with ``product="gradient"``)."""
    if len(sets) == 1:
        _, _, v = integrate.rks(eng, ni, xc_code, xctype, sets[0], orbitals[0], "gradient", eps_rho)
        return [v]
    _, _, (va, vb) = integrate.uks(
        eng, ni, xc_code, xctype, sets[0], sets[1], tuple(orbitals), "gradient", eps_rho
    )
    return [va, vb]


def get_vxc(ni, mol, grids, xc_code, dms, spin: int = 0, grid_response: bool = False):
    """(exc1_grid, vmat): PySCF's ``grad.rks.get_vxc`` / ``grad.uks.get_vxc`` results
    (exc1_grid None; vmat (3, nao, nao) or (2, 3, nao, nao)), or with ``grid_response`` those
    of their ``get_vxc_full_response`` (exc1_grid (natm, 3), Eh/Bohr)."""
    xctype = ni.checked_xctype(xc_code)
    sets, orbitals, device_in = _sets(ni, mol, dms, spin, xctype)
    if xctype == "HF":  # no XC functional: zeros, as PySCF's
        vmat = np.zeros(((3,) if spin == 0 else (2, 3)) + sets[0].shape)
        exc1 = np.zeros((mol.natm, 3)) if grid_response else None
        if exc1 is not None:
            exc1 = ni._array_out(exc1, device_in)
        return exc1, ni._array_out(vmat, device_in)
    if grid_response:
        exc1, vs = _full_response(ni, mol, grids, xc_code, xctype, sets, orbitals)
    else:
        eng = ni.get_grad_engine(mol, grids, xctype)
        exc1, vs = None, _gradient_matrices(eng, ni, xc_code, xctype, sets, orbitals)
    xp = _xp_of(vs[0])
    vmat = -(vs[0] if spin == 0 else xp.stack(vs))
    if exc1 is not None:
        exc1 = ni._array_out(exc1, device_in)
    return exc1, ni._array_out(vmat, device_in)


def _full_response(ni, mol, grids, xc_code: str, xctype: str, sets, orbitals):
    """PySCF's ``get_vxc_full_response`` through one engine per atom's points."""
    if grids.coords is None:
        grids.build(with_non0tab=True)
    deriv = integrate.AO_DERIV[xctype] + 1
    basis_perm = _whole_grid_basis_order(ni, mol, grids)
    exc1 = np.zeros((mol.natm, 3))
    total = None
    for atm_id, (coords, weight, weight1) in enumerate(_grids_response(grids)(grids)):
        coords, weight, weight1 = _host(coords), _host(weight), _host(weight1)
        layout = make_layout(
            mol, coords, weight, np.full(len(weight), atm_id), ni.settings, basis_perm
        )
        eng = ni._new_engine(mol, layout, xctype, deriv)
        eps_rho: list = []
        vs = _gradient_matrices(eng, ni, xc_code, xctype, sets, orbitals, eps_rho)
        for v, dm in zip(vs, sets):
            exc1[atm_id] += 2 * _host(_xp_of(v).einsum("xij,ji->x", v, dm))
        exc1 += _weight_response(eng.layout, eps_rho, weight1)
        total = vs if total is None else [t + v for t, v in zip(total, vs)]
    return exc1, total


def _whole_grid_basis_order(ni, mol, grids) -> np.ndarray:
    """The basis order every atom's engine shares: the energy engine's for this geometry, or
    one made on the whole grid (orders only: no AO values are evaluated for it)."""
    basis_perm = ni.basis_order_of(mol)
    if basis_perm is not None:
        return basis_perm
    coords, weights, atm_idx = ni._grid_arrays(mol, grids)
    atm_idx = None if atm_idx is None else _host(atm_idx)
    return make_layout(mol, _host(coords), _host(weights), atm_idx, ni.settings).basis_perm


def _grids_response(grids):
    """The per-atom grids and weight derivatives of ``grids``' own code: GPU4PySCF's
    (device arrays) for its grids, PySCF's (host arrays) for PySCF's, whatever the backend."""
    if type(grids).__module__.startswith("gpu4pyscf."):
        from gpu4pyscf.grad.rks import grids_response_cc
    else:
        from pyscf.grad.rks import grids_response_cc
    return grids_response_cc


def _weight_response(layout, eps_rho: list, weight1: np.ndarray) -> np.ndarray:
    """sum_g eps rho (dw_g/dR_B) per atom B: ``eps_rho`` as ``integrate`` collects it, at the
    layout's points (``grid_perm`` of the atom's points). Points of zero weight, which the
    layout leaves out, count with dw/dR = 0: a zero weight comes from a zero quadrature
    weight, a factor of dw/dR too (Becke's partition vanishes only on another nucleus)."""
    er = np.zeros(layout.npts)
    for points, values in eps_rho:
        er[points] = _host(values)[: len(er[points])]
    return np.einsum("r,nxr->nx", er, weight1[:, :, layout.grid_perm])


def xc_gradient(ni, mol, grids, xc_code, dms, spin: int = 0, grid_response: bool = False):
    """(natm, 3): the XC part of dE/dR (Eh/Bohr) as PySCF's ``grad_elec`` adds it: per atom,
    2 sum over its functions of vmat_k . D (per spin), plus the grid response if asked."""
    exc1, vmat = get_vxc(ni, mol, grids, xc_code, dms, spin, grid_response)
    de = per_atom_gradient(mol, vmat, dms)  # shapes checked by get_vxc
    return de if exc1 is None else de + _host(exc1)


def per_atom_gradient(mol, vmat, dms) -> np.ndarray:
    """(natm, 3) host array: 2 sum_s sum_{i on atom} sum_j vmat[s, x, i, j] D[s, i, j], the
    per-atom sum ``grad_elec`` makes of ``get_vxc``'s matrices (PySCF's or ours)."""
    nao = mol.nao_nr()
    vmat = _host(vmat).reshape(-1, 3, nao, nao)
    dm = _host(dms).reshape(-1, nao, nao)
    per_ao = 2 * np.einsum("sxij,sij->xi", vmat, dm)
    de = np.zeros((mol.natm, 3))
    for atom, (_, _, p0, p1) in enumerate(mol.aoslice_by_atom()):
        de[atom] = per_ao[:, p0:p1].sum(axis=1)
    return de


def _xp_of(a):
    if hasattr(a, "__cuda_array_interface__"):
        import cupy

        return cupy
    return np


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "__cuda_array_interface__") else np.asarray(a)


# -- PySCF gradient objects ---------------------------------------------------------------------
class _KerneLDIGradBase:
    """What both gradient mixins read of their SCF object before the XC part."""

    def _kerneldi_inputs(self, mol, dm, **grid_build):
        """(ni, mol, dm, grids) with the defaults filled in and the grid built (``grid_build``:
        the library's build options), or None where ``mf._numint`` is not a
        ``kerneldi.NumInt`` (the parent's code runs). VV10 is refused."""
        from .numint import KerneLDIMixin

        mf = self.base
        ni = mf._numint
        if not isinstance(ni, KerneLDIMixin):
            return None
        if mf.do_nlc():
            raise FunctionalError("non-local (VV10) correlation is not supported by kerneldi")
        mol = self.mol if mol is None else mol
        dm = mf.make_rdm1() if dm is None else dm
        grids = self.grids if self.grids is not None else mf.grids
        if grids.coords is None:
            grids.build(**grid_build)
        return ni, mol, dm, grids


class KerneLDIGradMixin(_KerneLDIGradBase):
    """``get_veff`` of PySCF's RKS/UKS gradients with the XC part from ``kerneldi``: the same
    J/K terms and ``exc1_grid`` tag as PySCF's ``grad.rks.get_veff`` / ``grad.uks.get_veff``;
    falls back to the parent where ``mf._numint`` is not a ``kerneldi.NumInt``."""

    def get_veff(self, mol=None, dm=None):
        found = self._kerneldi_inputs(mol, dm, with_non0tab=True)
        if found is None:
            return super().get_veff(mol, dm)
        ni, mol, dm, grids = found
        mf = self.base
        unrestricted = np.ndim(dm) == 3
        exc, vxc = ni.get_vxc_grad(mol, grids, mf.xc, dm, int(unrestricted), self.grid_response)
        vxc = vxc + self._coulomb_exchange(mol, dm, ni, unrestricted)
        return lib.tag_array(vxc, exc1_grid=exc)

    def _coulomb_exchange(self, mol, dm, ni, unrestricted: bool):
        """J - K terms of the gradient's effective potential, as PySCF's ``get_veff``."""
        mf = self.base
        if not ni.libxc.is_hybrid_xc(mf.xc):
            vj = self.get_j(mol, dm)
            return vj[0] + vj[1] if unrestricted else vj
        omega, alpha, hyb = ni.rsh_and_hybrid_coeff(mf.xc, spin=mol.spin)
        vj, vk = self.get_jk(mol, dm)
        vk = vk * hyb
        if omega != 0:
            vk += self.get_k(mol, dm, omega=omega) * (alpha - hyb)
        return vj[0] + vj[1] - vk if unrestricted else vj - vk * 0.5


class KerneLDIGPUGradMixin(_KerneLDIGradBase):
    """``energy_ee`` of GPU4PySCF's RKS/UKS gradients (its per-atom two-electron part) with
    the XC part from ``kerneldi`` (``xc_gradient``, grid response as asked) and the Coulomb
    and exchange part from the object's own ``jk_energy_per_atom``; falls back to the parent
    where ``mf._numint`` is not a ``kerneldi.NumInt``."""

    def energy_ee(self, mol=None, dm=None, verbose=None):
        found = self._kerneldi_inputs(mol, dm, sort_grids=True)
        if found is None:
            return super().energy_ee(mol, dm, verbose)
        ni, mol, dm, grids = found
        mf = self.base
        spin = int(np.ndim(dm) == 3)
        # a host (natm, 3) array, as GPU4PySCF's energy_ee returns (xc_gradient's is host)
        de = xc_gradient(ni, mol, grids, mf.xc, dm, spin, self.grid_response)
        # exchange of a range-separated hybrid: alpha of the full-range operator plus
        # (hyb - alpha) of the short-range one (omega < 0 selects it)
        omega, alpha, hyb = ni.rsh_and_hybrid_coeff(mf.xc, spin=mol.spin)
        hybrid = ni.libxc.is_hybrid_xc(mf.xc)
        k_full = (alpha if omega != 0 else hyb) if hybrid else 0.0
        de += _host(self.jk_energy_per_atom(dm, 1.0, k_full, verbose=verbose))
        if hybrid and omega != 0:
            de += _host(
                self.jk_energy_per_atom(dm, 0.0, hyb - alpha, omega=-omega, verbose=verbose)
            )
        return de


@functools.cache
def _with_kerneldi(mixin: type, cls: type) -> type:
    return type(f"KerneLDI{cls.__name__}", (mixin, cls), {})


def apply_grad(mf_grad):
    """Makes this PySCF or GPU4PySCF RKS/UKS gradient object (only it) take its XC part from
    KerneLDI; returns it. ``mf_grad.base._numint`` must be a ``kerneldi.NumInt`` (of the
    matching backend) when the gradient runs, else the object's own XC code runs."""
    from pyscf.grad import rks as rks_grad

    if _is_gpu4pyscf_ks_grad(mf_grad):
        mixin = KerneLDIGPUGradMixin
    elif isinstance(mf_grad, rks_grad.Gradients) or _is_uks_grad(mf_grad):
        mixin = KerneLDIGradMixin
    else:
        raise InputError(
            f"expected a PySCF or GPU4PySCF RKS or UKS gradient object, got {type(mf_grad)}"
        )
    if hasattr(mf_grad, "auxbasis_response"):
        # density fitting: PySCF's get_veff there also carries the auxiliary basis response
        raise InputError(
            "density-fitted gradient objects are not supported by kerneldi.apply_grad; "
            "use the gradient object of an SCF without density fitting"
        )
    if not isinstance(mf_grad, mixin):
        mf_grad.__class__ = _with_kerneldi(mixin, type(mf_grad))
    return mf_grad


def _is_gpu4pyscf_ks_grad(obj) -> bool:
    """Whether ``obj`` is a GPU4PySCF RKS/UKS gradient object (without importing GPU4PySCF
    where no one has)."""
    import sys

    if "gpu4pyscf" not in sys.modules:
        return False
    from gpu4pyscf.grad import rks, uks

    return isinstance(obj, (rks.Gradients, uks.Gradients))


def _is_uks_grad(obj) -> bool:
    from pyscf.grad import uks as uks_grad

    return isinstance(obj, uks_grad.Gradients)


def Gradients(mf):
    """``mf.Gradients()`` with its XC part from KerneLDI (``apply_grad``)."""
    return apply_grad(mf.Gradients())
