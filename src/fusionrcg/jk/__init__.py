"""Coulomb and exchange matrices for SCF from the generated kernels.

``JK(mol)`` is the engine of one molecule and basis (setup once, then ``get_jk(dm)`` per
build, ``get_jk_deriv(dm)`` and ``jk_energy_per_atom(dm)`` for gradients); ``apply(mf)`` makes
a PySCF or GPU4PySCF SCF object use it, and its gradient objects (``apply_grad``); ``get_jk(mol,
dm)`` is a one-shot call with the arguments of ``pyscf.scf.hf.get_jk``.
"""

from __future__ import annotations

from .engine import DEFAULT_TOL, JK, BuildProfile, JKInputError, JKTask
from .grad import apply_grad
from .kernels import prebuild
from .scf import FusionJKMixin, apply, engine_option_names


def get_jk(
    mol, dm, hermi: int = 1, with_j: bool = True, with_k: bool = True, backend: str = "auto",
    tol: float = DEFAULT_TOL, options="full",
):  # fmt: skip
    """(vj, vk) of ``dm`` as ``pyscf.scf.hf.get_jk`` returns them, through a new ``JK``."""
    return JK(mol, backend, tol, options).get_jk(dm, hermi, with_j, with_k)


__all__ = [
    "DEFAULT_TOL",
    "JK",
    "BuildProfile",
    "FusionJKMixin",
    "JKInputError",
    "JKTask",
    "apply",
    "apply_grad",
    "engine_option_names",
    "get_jk",
    "prebuild",
]
