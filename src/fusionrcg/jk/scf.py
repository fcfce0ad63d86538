"""``apply(mf)``: a PySCF or GPU4PySCF SCF object whose Coulomb and exchange builds run on the
J/K engine.

The object keeps its class's behaviour otherwise (DIIS, incremental Fock builds, the XC part of
DFT, scaling of K by the hybrid fraction); its ``get_jk``, ``get_j`` and ``get_k`` go to one
``JK`` engine per molecule, made on first use and kept for later SCF runs on the same molecule
and threshold. GPU4PySCF's restricted Fock builds ask for J and then for K of the same density:
the engine builds both in the first call (one pass over the integrals) and hands K to the second.
Range-separated exchange (``omega`` != 0, and GPU4PySCF's long- and short-range factors) is a
sum of full-range and long-range builds (erf(omega r)/r kernels). Its analytic gradient objects
(``nuc_grad_method``, ``Gradients``) take their J/K derivatives from the same engine
(``jk.grad``). A basis with shells
above l = 4 keeps the object's own J/K (with a warning), since the generated path stops at g
functions.
"""

from __future__ import annotations

import inspect
import threading
import warnings

import numpy as np

from ..angmom import LMAX
from .engine import JK, JKInputError


class FusionJKMixin:
    """Routes an SCF object's J/K builds to ``fusionrcg.JK``."""

    _keys = {"fusion_backend", "fusion_options", "fusion_kernel_dir", "fusion_engine_options"}

    def fusion_engine(self, mol=None, omega: float | None = None) -> JK:
        """The engine of ``mol`` (default: the object's) at the object's ``direct_scf_tol``,
        for the operator of ``omega`` (default ``mol.omega``; ``JK``'s convention)."""
        mol = self.mol if mol is None else mol
        omega = float(mol.omega if omega is None else omega)
        key = (id(mol), mol._env.tobytes(), float(self.direct_scf_tol))
        engines = self.__dict__.setdefault("_fusion_engines", {})
        if engines.get("key") != key:
            # one molecule at a time: a new geometry replaces the old engines
            engines.clear()
            engines["key"] = key
        if omega not in engines:
            engines[omega] = JK(
                mol,
                backend=self.fusion_backend,
                tol=self.direct_scf_tol,
                options=self.fusion_options,
                kernel_dir=self.fusion_kernel_dir,
                omega=omega,
                **self.fusion_engine_options,
            )
        return engines[omega]

    def nuc_grad_method(self):
        """The object's analytic gradient with its J/K derivatives from the same engine
        (``jk.grad.apply_grad``)."""
        from .grad import apply_grad

        return wrapped_gradient(self, FusionJKMixin, "nuc_grad_method", apply_grad)

    def Gradients(self):  # noqa: N802 (PySCF's name)
        """As ``nuc_grad_method``."""
        from .grad import apply_grad

        return wrapped_gradient(self, FusionJKMixin, "Gradients", apply_grad)

    def get_jk(self, mol=None, dm=None, hermi=1, with_j=True, with_k=True, omega=None, **kwargs):
        if mol is None:
            mol = self.mol
        if dm is None:
            dm = self.make_rdm1()
        self.__dict__.pop("_fusion_pending_k", None)
        factor = 1.0
        if kwargs.get("lr_factor") is not None or kwargs.get("sr_factor") is not None:
            terms = _exchange_terms(mol, omega, kwargs)
            if len(terms) != 1 or terms[0][0] != 0.0:
                raise NotImplementedError(
                    "get_jk of a mixture of long- and short-range operators: ask get_k for the "
                    "exchange"
                )
            omega, factor = 0.0, terms[0][1]
        vj, vk = self.fusion_engine(mol, omega).get_jk(dm, hermi, with_j, with_k)
        return vj, (vk * factor if vk is not None and factor != 1.0 else vk)

    def get_j(self, mol=None, dm=None, hermi=1, omega=None):
        if omega or not self._fusion_restricted_with_exchange():
            return self.get_jk(mol, dm, hermi, with_k=False, omega=omega)[0]
        vj, vk = self.get_jk(mol, dm, hermi, omega=omega)
        self._fusion_pending_k = (dm, _fingerprint(dm), hermi, vk)
        return vj

    def get_k(self, mol=None, dm=None, hermi=1, omega=None, *factors, **kwargs):
        """K of the operator asked for: ``omega`` alone (PySCF: > 0 long range, < 0 short
        range), or GPU4PySCF's lr_factor erf(|omega| r)/r + sr_factor erfc(|omega| r)/r, as
        a sum of full-range and long-range builds (``_exchange_terms``)."""
        if mol is None:
            mol = self.mol
        if dm is None:
            dm = self.make_rdm1()
        if factors:  # GPU4PySCF passes (lr_factor, sr_factor) by position
            kwargs.update(zip(("lr_factor", "sr_factor"), factors))
        pending = self.__dict__.pop("_fusion_pending_k", None)
        vk = None
        for term_omega, factor in _exchange_terms(mol, omega, kwargs):
            if term_omega == 0.0 and _kept(pending, dm, hermi):
                part = pending[3]
            else:
                part = self.fusion_engine(mol, term_omega).get_jk(dm, hermi, with_j=False)[1]
            part = part * factor if factor != 1.0 else part
            vk = part if vk is None else vk + part
        return vk

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


_GRADIENTS_UNDER_WAY = threading.local()


def wrapped_gradient(mf, owner: type, name: str, wrap):
    """``wrap`` of the gradient object that the classes after ``owner`` in ``mf``'s MRO make
    by their ``name`` hook (``nuc_grad_method`` or ``Gradients``); for a mixin ``owner``
    that overrides both hooks. The SCF classes make one hook call the other on the object:
    GPU4PySCF's ``nuc_grad_method`` returns ``self.Gradients()``, PySCF's base class does the
    same, and a class may alias one to the other. That call comes back to ``owner``'s override
    of the other hook: while ``owner`` makes a gradient object of ``mf`` its overrides pass
    straight to the next class, and only the outermost call wraps (once)."""
    under_way = _GRADIENTS_UNDER_WAY.__dict__.setdefault("keys", set())
    key = (id(mf), owner)
    hook = getattr(super(owner, mf), name)
    if key in under_way:
        return hook()
    under_way.add(key)
    try:
        grad = hook()
    finally:
        under_way.discard(key)
    return wrap(grad)


def _fingerprint(dm) -> tuple:
    return (tuple(dm.shape), float(dm.sum()))


def _kept(pending, dm, hermi: int) -> bool:
    """Whether the K kept by ``get_j`` is the full-range K of this density."""
    return pending is not None and pending[0] is dm and pending[1:3] == (_fingerprint(dm), hermi)


def _exchange_terms(mol, omega, kwargs) -> list[tuple[float, float]]:
    """The exchange asked for as (omega, factor) terms whose K's add up to it, omega 0 the
    full-range operator and > 0 the long-range one; GPU4PySCF's and libcint's conventions
    (``gpu4pyscf.scf.jk._check_rsh_factors``): without factors the sign of omega picks long
    (> 0) or short (< 0) range; lr_factor erf(|omega| r)/r + sr_factor erfc(|omega| r)/r is
    sr_factor times the full-range K plus (lr_factor - sr_factor) times the long-range one."""
    omega = float(mol.omega if omega is None else omega)
    lr, sr = kwargs.get("lr_factor"), kwargs.get("sr_factor")
    if lr is None and sr is None:
        if omega < 0.0:  # short range: full less long range
            return [(0.0, 1.0), (-omega, -1.0)]
        return [(omega, 1.0)]
    if lr is None:
        lr = sr if omega == 0.0 else 0.0
    if sr is None:
        sr = lr if omega == 0.0 else 0.0
    lr, sr = float(lr), float(sr)
    if omega == 0.0 or lr == sr:
        if lr != sr:
            raise JKInputError(
                f"long-range factor {lr} and short-range factor {sr} without an omega"
            )
        return [(0.0, sr)]
    terms = [(0.0, sr)] if sr else []
    return terms + [(abs(omega), lr - sr)]


# JK arguments that the SCF object sets itself
ENGINE_SET = {"self", "mol", "backend", "tol", "options", "kernel_dir", "omega"}


def engine_option_names() -> frozenset[str]:
    """The ``JK`` arguments that ``apply`` passes through (those the SCF object does not set)."""
    return frozenset(inspect.signature(JK).parameters) - ENGINE_SET


def apply(mf, backend: str = "auto", options="full", kernel_dir=None, **engine_options):
    """Make ``mf`` (PySCF or GPU4PySCF RHF, UHF, RKS, UKS, ...) build J and K with the
    generated kernels; returns ``mf`` itself. ``backend``: ``"auto"`` (the GPU when CuPy sees
    one), ``"gpu"`` or ``"cpu"``; ``options``: the kernels' ``KernelOptions`` or preset name;
    ``engine_options``: further ``JK`` arguments (``streams``, ``max_work``, ``block_items``,
    ...). The screening threshold is ``mf.direct_scf_tol``."""
    allowed = engine_option_names()
    unknown = sorted(set(engine_options) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed))
        raise JKInputError(f"unknown J/K engine option(s) {', '.join(unknown)}; one of {known}")
    if isinstance(mf, FusionJKMixin):
        mf.fusion_backend, mf.fusion_options, mf.fusion_kernel_dir = backend, options, kernel_dir
        mf.fusion_engine_options = dict(engine_options)
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
    mf.fusion_engine_options = dict(engine_options)
    return mf
