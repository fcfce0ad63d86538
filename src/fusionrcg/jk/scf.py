"""``apply(mf)``: a PySCF or GPU4PySCF SCF object whose Coulomb and exchange builds run on the
J/K engine.

The object keeps its class's behaviour otherwise (DIIS, incremental Fock builds, the XC part of
DFT, scaling of K by the hybrid fraction); its ``get_jk``, ``get_j`` and ``get_k`` go to one
``JK`` engine per molecule, made on first use and kept for later SCF runs on the same molecule
and threshold. Range-separated exchange (``omega`` != 0) raises ``NotImplementedError``. A basis
with shells above l = 4 keeps the object's own J/K (with a warning), since the generated path
stops at g functions.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..angmom import LMAX
from .engine import JK


class FusionJKMixin:
    """Routes an SCF object's J/K builds to ``fusionrcg.JK``."""

    _keys = {"fusion_backend", "fusion_variant", "fusion_kernel_dir"}

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
                variant=self.fusion_variant,
                kernel_dir=self.fusion_kernel_dir,
            )
        return engines[key]

    def get_jk(self, mol=None, dm=None, hermi=1, with_j=True, with_k=True, omega=None, **kwargs):
        if mol is None:
            mol = self.mol
        if dm is None:
            dm = self.make_rdm1()
        _check_omega(mol, omega, kwargs)
        return self.fusion_engine(mol).get_jk(dm, hermi, with_j, with_k)

    def get_j(self, mol=None, dm=None, hermi=1, omega=None):
        return self.get_jk(mol, dm, hermi, with_k=False, omega=omega)[0]

    def get_k(self, mol=None, dm=None, hermi=1, omega=None, **kwargs):
        return self.get_jk(mol, dm, hermi, with_j=False, omega=omega, **kwargs)[1]


def _check_omega(mol, omega, kwargs) -> None:
    if omega or getattr(mol, "omega", 0.0):
        raise NotImplementedError(
            f"range-separated exchange (omega = {omega or mol.omega}) is not implemented by "
            "the generated kernels; use the SCF object without fusionrcg.apply"
        )
    if kwargs.get("lr_factor") is not None or kwargs.get("sr_factor") is not None:
        raise NotImplementedError("long/short-range exchange factors are not implemented")


def apply(mf, backend: str = "auto", variant: str = "full", kernel_dir=None):
    """Make ``mf`` (PySCF or GPU4PySCF RHF, UHF, RKS, UKS, ...) build J and K with the
    generated kernels; returns ``mf`` itself. ``backend``: ``"auto"`` (the GPU when CuPy sees
    one), ``"gpu"`` or ``"cpu"``. The screening threshold is ``mf.direct_scf_tol``."""
    if isinstance(mf, FusionJKMixin):
        mf.fusion_backend, mf.fusion_variant, mf.fusion_kernel_dir = backend, variant, kernel_dir
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
    mf.fusion_backend, mf.fusion_variant, mf.fusion_kernel_dir = backend, variant, kernel_dir
    return mf
