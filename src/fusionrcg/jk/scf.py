"""``apply(mf)``: a PySCF or GPU4PySCF SCF object whose Coulomb and exchange builds run on the
J/K engine.

The object keeps its class's behaviour otherwise (DIIS, incremental Fock builds, the XC part of
DFT, scaling of K by the hybrid fraction); its ``get_jk``, ``get_j`` and ``get_k`` go to one
``JK`` engine per molecule, made on first use and kept for later SCF runs on the same molecule
and threshold. GPU4PySCF's restricted Fock builds ask for J and then for K of the same density:
the engine builds both in the first call (one pass over the integrals) and hands K to the second.
Range-separated exchange (``omega`` != 0) raises ``NotImplementedError``. Its analytic gradient
objects (``nuc_grad_method``, ``Gradients``) take their J/K derivatives from the same engine
(``jk.grad``). A basis with shells
above l = 4 keeps the object's own J/K (with a warning), since the generated path stops at g
functions.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..angmom import LMAX
from .engine import JK


class FusionJKMixin:
    """Routes an SCF object's J/K builds to ``fusionrcg.JK``."""

    _keys = {"fusion_backend", "fusion_options", "fusion_kernel_dir"}

    def fusion_engine(self, mol=None) -> JK:
        """The engine of ``mol`` (default: the object's) at the object's ``direct_scf_tol``."""
        mol = self.mol if mol is None else mol
        key = (id(mol), mol._env.tobytes(), float(self.direct_scf_tol))
        engines = self.__dict__.setdefault("_fusion_engines", {})
        if key not in engines:
            engines.clear()  # one molecule at a time: a new geometry replaces the old engine
            engines[key] = JK(
                mol,
                backend=self.fusion_backend,
                tol=self.direct_scf_tol,
                options=self.fusion_options,
                kernel_dir=self.fusion_kernel_dir,
            )
        return engines[key]

    def nuc_grad_method(self):
        """The object's analytic gradient with its J/K derivatives from the same engine
        (``jk.grad.apply_grad``)."""
        from .grad import apply_grad

        return apply_grad(super().nuc_grad_method())

    def Gradients(self):  # noqa: N802 (PySCF's name)
        """As ``nuc_grad_method``."""
        from .grad import apply_grad

        return apply_grad(super().Gradients())

    def get_jk(self, mol=None, dm=None, hermi=1, with_j=True, with_k=True, omega=None, **kwargs):
        if mol is None:
            mol = self.mol
        if dm is None:
            dm = self.make_rdm1()
        _exchange_factor(mol, omega, kwargs)  # only the full-range operator is implemented
        self.__dict__.pop("_fusion_pending_k", None)
        return self.fusion_engine(mol).get_jk(dm, hermi, with_j, with_k)

    def get_j(self, mol=None, dm=None, hermi=1, omega=None):
        if not self._fusion_restricted_with_exchange():
            return self.get_jk(mol, dm, hermi, with_k=False, omega=omega)[0]
        vj, vk = self.get_jk(mol, dm, hermi, omega=omega)
        self._fusion_pending_k = (dm, _fingerprint(dm), hermi, vk)
        return vj

    def get_k(self, mol=None, dm=None, hermi=1, omega=None, *factors, **kwargs):
        if mol is None:
            mol = self.mol
        if factors:  # GPU4PySCF passes (lr_factor, sr_factor) by position
            kwargs.update(zip(("lr_factor", "sr_factor"), factors))
        factor = _exchange_factor(mol, omega, kwargs)
        pending = self.__dict__.pop("_fusion_pending_k", None)
        if pending is not None and pending[0] is dm and pending[1:3] == (_fingerprint(dm), hermi):
            vk = pending[3]
        else:
            vk = self.get_jk(mol, dm, hermi, with_j=False, omega=omega)[1]
        return vk * factor if factor != 1.0 else vk

    def _fusion_restricted_with_exchange(self) -> bool:
        """Whether a J request will be followed by a K request of the same density: restricted
        Hartree-Fock, or restricted Kohn-Sham with a hybrid functional."""
        names = {c.__name__ for c in type(self).__mro__}
        if names & {"UHF", "UKS", "GHF", "GKS", "ROHF", "ROKS"}:
            return False
        xc = getattr(self, "xc", None)
        if xc is None:
            return True
        return bool(self._numint.libxc.is_hybrid_xc(xc))


def _fingerprint(dm) -> tuple:
    return (tuple(dm.shape), float(dm.sum()))


def _exchange_factor(mol, omega, kwargs) -> float:
    """The factor of the full-range exchange asked for; refuses range separation."""
    if omega or getattr(mol, "omega", 0.0):
        raise NotImplementedError(
            f"range-separated exchange (omega = {omega or mol.omega}) is not implemented by "
            "the generated kernels; use the SCF object without fusionrcg.apply"
        )
    lr, sr = kwargs.get("lr_factor"), kwargs.get("sr_factor")
    if lr is None and sr is None:
        return 1.0
    if lr is not None and sr is not None and lr != sr:
        raise NotImplementedError(
            f"exchange with long-range factor {lr} and short-range factor {sr} needs the "
            "range-separated operator, which the generated kernels do not implement"
        )
    return float(sr if lr is None else lr)


def apply(mf, backend: str = "auto", options="full", kernel_dir=None):
    """Make ``mf`` (PySCF or GPU4PySCF RHF, UHF, RKS, UKS, ...) build J and K with the
    generated kernels; returns ``mf`` itself. ``backend``: ``"auto"`` (the GPU when CuPy sees
    one), ``"gpu"`` or ``"cpu"``; ``options``: the kernels' ``KernelOptions`` or preset name.
    The screening threshold is ``mf.direct_scf_tol``."""
    if isinstance(mf, FusionJKMixin):
        mf.fusion_backend, mf.fusion_options, mf.fusion_kernel_dir = backend, options, kernel_dir
        mf.__dict__.pop("_fusion_engines", None)
        return mf
    mol = mf.mol
    lmax = int(np.max(mol._bas[:, 1])) if mol.nbas else 0
    if lmax > LMAX:
        warnings.warn(
            f"the basis has shells up to l = {lmax}; the generated kernels stop at l = {LMAX}, "
            "so this SCF object keeps its own J/K",
            stacklevel=2,
        )
        return mf
    base = type(mf)
    mf.__class__ = type(f"{base.__name__}FusionJK", (FusionJKMixin, base), {})
    mf.fusion_backend, mf.fusion_options, mf.fusion_kernel_dir = backend, options, kernel_dir
    return mf
