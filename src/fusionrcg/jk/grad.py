"""Analytic gradients whose Coulomb and exchange derivatives come from the J/K engine.

``apply_grad(mf_grad)`` makes a gradient object of an SCF that ``fusionrcg.apply`` switched to
the engine take its J/K derivatives from the same engine (``JK.get_jk_deriv`` and
``JK.jk_energy_per_atom``); ``fusionrcg.apply`` does this for ``mf.nuc_grad_method()`` and
``mf.Gradients()``. PySCF's gradient objects (RHF, UHF, RKS, UKS) ask for the derivative
matrices through ``get_jk``, ``get_j`` and ``get_k``; GPU4PySCF's ask for per-atom energy
derivatives through ``jk_energy_per_atom``. Range-separated operators (omega != 0) run on the
engines of that operator; GPU4PySCF's explicit long- and short-range factors keep the object's
own code.
"""

from __future__ import annotations

import functools

from ..errors import InputError
from .engine import JK


class _FusionGradBase:
    def _fusion_jk(self, mol=None, omega=None, **factors) -> JK | None:
        """The SCF object's J/K engine of ``mol`` (default: the gradient's) for the operator
        of ``omega`` (``JK``'s convention), or None where the object's own code runs (an SCF
        without the engine, or GPU4PySCF's long- and short-range factors)."""
        from .scf import FusionJKMixin

        if any(v is not None for v in factors.values()):
            return None
        if not isinstance(self.base, FusionJKMixin):
            return None
        return self.base.fusion_engine(self.mol if mol is None else mol, omega)


class FusionGradMixin(_FusionGradBase):
    """``get_jk``, ``get_j`` and ``get_k`` of PySCF's gradient objects from the engine."""

    def get_jk(self, mol=None, dm=None, hermi=0, omega=None):
        engine = self._fusion_jk(mol, omega)
        if engine is None:
            return super().get_jk(mol, dm, hermi, omega)
        return engine.get_jk_deriv(self.base.make_rdm1() if dm is None else dm)

    def get_j(self, mol=None, dm=None, hermi=0, omega=None):
        engine = self._fusion_jk(mol, omega)
        if engine is None:
            return super().get_j(mol, dm, hermi, omega)
        return engine.get_jk_deriv(self.base.make_rdm1() if dm is None else dm, with_k=False)[0]

    def get_k(self, mol=None, dm=None, hermi=0, omega=None):
        engine = self._fusion_jk(mol, omega)
        if engine is None:
            return super().get_k(mol, dm, hermi, omega)
        return engine.get_jk_deriv(self.base.make_rdm1() if dm is None else dm, with_j=False)[1]


class FusionGPUGradMixin(_FusionGradBase):
    """``jk_energy_per_atom`` of GPU4PySCF's gradient objects from the engine."""

    def jk_energy_per_atom(
        self, dm=None, j_factor=1, k_factor=1, omega=None, lr_factor=None, sr_factor=None,
        hermi=0, verbose=None,
    ):  # fmt: skip
        engine = self._fusion_jk(None, omega, lr_factor=lr_factor, sr_factor=sr_factor)
        if engine is None:
            return super().jk_energy_per_atom(
                dm, j_factor, k_factor, omega, lr_factor, sr_factor, hermi, verbose
            )
        return engine.jk_energy_per_atom(
            self.base.make_rdm1() if dm is None else dm, j_factor, k_factor
        )


@functools.cache
def _with_fusion(mixin: type, cls: type) -> type:
    return type(f"FusionJK{cls.__name__}", (mixin, cls), {})


def apply_grad(mf_grad):
    """Makes this PySCF or GPU4PySCF gradient object take its J/K derivatives from its SCF
    object's J/K engine (``fusionrcg.apply``); returns it. Density-fitted gradient objects
    are refused (their J/K derivatives carry the auxiliary basis)."""
    if hasattr(mf_grad, "auxbasis_response"):
        raise InputError(
            "density-fitted gradient objects are not supported by fusionrcg.apply_grad; use the "
            "gradient object of an SCF without density fitting"
        )
    if type(mf_grad).__module__.startswith("gpu4pyscf"):
        mixin = FusionGPUGradMixin
    elif hasattr(mf_grad, "get_jk") and hasattr(mf_grad, "base"):
        mixin = FusionGradMixin
    else:
        raise InputError(f"expected a PySCF or GPU4PySCF gradient object, got {type(mf_grad)}")
    if not isinstance(mf_grad, mixin):
        mf_grad.__class__ = _with_fusion(mixin, type(mf_grad))
    return mf_grad
