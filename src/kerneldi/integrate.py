"""The XC step shared by every engine: densities -> libxc -> weighted potentials -> Vxc.

It follows PySCF's ``nr_rks``/``nr_uks`` term by term (Eqs. 1-5): ``nelec = sum w rho``,
``Exc = sum w rho eps``, ``wv = w v`` with the GGA density term halved because the engine
returns ``F + F^T`` and the tau term halved for tau = 1/2 |grad phi|^2. Engines provide
``density(dm, xctype, orbitals)`` (rows: rho, grad rho, tau; ``orbitals`` C sqrt(n) of D or
None, see ``forms.py``) and ``potential(wv, xctype)``.
"""

from __future__ import annotations

from typing import Protocol

XCTYPES = ("LDA", "GGA", "MGGA")
NVAR = {"LDA": 1, "GGA": 4, "MGGA": 5}
AO_DERIV = {"LDA": 0, "GGA": 1, "MGGA": 1}


class Engine(Protocol):
    xp: object
    weights: object

    def density(self, dm, xctype: str, orbitals=None): ...

    def potential(self, wv, xctype: str): ...


def _halve(wv, xctype: str):
    if xctype in ("GGA", "MGGA"):
        wv[..., 0, :] *= 0.5  # F + F^T doubles the density term
    if xctype == "MGGA":
        wv[..., 4, :] *= 0.5  # tau = 1/2 |grad phi|^2
    return wv


def rks(engine: Engine, ni, xc_code: str, xctype: str, dm, orbitals=None):
    """(nelec, exc, vmat) of one closed-shell density matrix."""
    xp = engine.xp
    w = engine.weights
    rho = engine.density(dm, xctype, orbitals)
    exc, vxc = ni.eval_xc_eff(xc_code, _libxc_rho(rho, xctype, ni), deriv=1, xctype=xctype, spin=0)[
        :2
    ]
    den = rho[0] * w
    nelec = float(den.sum())
    excsum = float(xp.dot(den, xp.asarray(exc).ravel()))
    wv = _halve(xp.asarray(vxc).reshape(NVAR[xctype], -1) * w, xctype)
    return nelec, excsum, engine.potential(wv, xctype)


def uks(engine: Engine, ni, xc_code: str, xctype: str, dma, dmb, orbitals=(None, None)):
    """((nelec_a, nelec_b), exc, (vmat_a, vmat_b)) of one spin-polarized density."""
    xp = engine.xp
    w = engine.weights
    rho_a = engine.density(dma, xctype, orbitals[0])
    rho_b = engine.density(dmb, xctype, orbitals[1])
    rho = xp.stack([rho_a, rho_b])
    exc, vxc = ni.eval_xc_eff(xc_code, _libxc_rho(rho, xctype, ni), deriv=1, xctype=xctype, spin=1)[
        :2
    ]
    exc = xp.asarray(exc).ravel()
    den_a, den_b = rho_a[0] * w, rho_b[0] * w
    nelec = (float(den_a.sum()), float(den_b.sum()))
    excsum = float(xp.dot(den_a, exc)) + float(xp.dot(den_b, exc))
    wv = _halve(xp.asarray(vxc).reshape(2, NVAR[xctype], -1) * w, xctype)
    return nelec, excsum, (engine.potential(wv[0], xctype), engine.potential(wv[1], xctype))


def _libxc_rho(rho, xctype: str, ni):
    """The density layout each libxc wrapper expects: PySCF takes LDA densities without the
    component axis, GPU4PySCF keeps it."""
    if xctype == "LDA" and getattr(ni, "_kerneldi_backend", "cpu") == "cpu":
        return rho[..., 0, :]
    return rho
