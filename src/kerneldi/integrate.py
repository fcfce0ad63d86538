"""The XC step shared by every engine: densities -> libxc -> weighted potentials -> Vxc.

It follows PySCF's ``nr_rks``/``nr_uks`` term by term (Eqs. 1-5): ``nelec = sum w rho``,
``Exc = sum w rho eps``, ``wv = w v`` with the GGA density term halved because the engine
returns ``F + F^T`` and the tau term halved for tau = 1/2 |grad phi|^2. Engines provide
``density(dm, xctype, orbitals)`` (rows: rho, grad rho, tau; ``orbitals`` C sqrt(n) of D or
None, see ``forms.py``) and ``potential(wv, xctype)``; ``xc_pass`` below joins them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

XCTYPES = ("LDA", "GGA", "MGGA")
NVAR = {"LDA": 1, "GGA": 4, "MGGA": 5}
AO_DERIV = {"LDA": 0, "GGA": 1, "MGGA": 1}


class Engine(Protocol):
    xp: object
    weights: object

    def density(self, dm, xctype: str, orbitals=None): ...

    def potential(self, wv, xctype: str): ...


# ``xc(points, rhos)``: the weighted potentials of the densities ``rhos`` on grid ``points``
XcStep = Callable[[slice, list], list]


def xc_pass(engine: Engine, densities: list, xctype: str, xc: XcStep) -> list:
    """The potential matrices of ``densities`` ((dm, orbitals) pairs). Engines that evaluate the
    AO values batch by batch run density, ``xc`` and potential per batch (their ``xc_pass``), so
    that every batch's AO values are made once per call; others over the whole grid."""
    own = getattr(engine, "xc_pass", None)
    if own is not None:
        return own(densities, xctype, xc)
    return whole_grid_pass(engine, densities, xctype, xc)


def whole_grid_pass(engine: Engine, densities: list, xctype: str, xc: XcStep) -> list:
    rhos = [engine.density(dm, xctype, orbitals) for dm, orbitals in densities]
    return [engine.potential(wv, xctype) for wv in xc(slice(None), rhos)]


def _halve(wv, xctype: str):
    if xctype in ("GGA", "MGGA"):
        wv[..., 0, :] *= 0.5  # F + F^T doubles the density term
    if xctype == "MGGA":
        wv[..., 4, :] *= 0.5  # tau = 1/2 |grad phi|^2
    return wv


def rks(engine: Engine, ni, xc_code: str, xctype: str, dm, orbitals=None):
    """(nelec, exc, vmat) of one closed-shell density matrix."""
    xp = engine.xp
    sums = [0.0, 0.0]  # nelec, exc: device scalars until the end

    def xc(points: slice, rhos: list) -> list:
        (rho,) = rhos
        exc, vxc = ni.eval_xc_eff(
            xc_code, _libxc_rho(rho, xctype, ni), deriv=1, xctype=xctype, spin=0
        )[:2]
        w = engine.weights[points]
        den = rho[0] * w
        sums[0] = sums[0] + den.sum()
        sums[1] = sums[1] + xp.dot(den, xp.asarray(exc).ravel())
        return [_halve(xp.asarray(vxc).reshape(NVAR[xctype], -1) * w, xctype)]

    (vmat,) = xc_pass(engine, [(dm, orbitals)], xctype, xc)
    return float(sums[0]), float(sums[1]), vmat


def uks(engine: Engine, ni, xc_code: str, xctype: str, dma, dmb, orbitals=(None, None)):
    """((nelec_a, nelec_b), exc, (vmat_a, vmat_b)) of one spin-polarized density."""
    xp = engine.xp
    sums = [0.0, 0.0, 0.0]  # nelec of each spin, exc

    def xc(points: slice, rhos: list) -> list:
        rho_a, rho_b = rhos
        exc, vxc = ni.eval_xc_eff(
            xc_code, _libxc_rho(xp.stack(rhos), xctype, ni), deriv=1, xctype=xctype, spin=1
        )[:2]
        exc = xp.asarray(exc).ravel()
        w = engine.weights[points]
        den_a, den_b = rho_a[0] * w, rho_b[0] * w
        sums[0] = sums[0] + den_a.sum()
        sums[1] = sums[1] + den_b.sum()
        sums[2] = sums[2] + xp.dot(den_a, exc) + xp.dot(den_b, exc)
        wv = _halve(xp.asarray(vxc).reshape(2, NVAR[xctype], -1) * w, xctype)
        return [wv[0], wv[1]]

    vmat_a, vmat_b = xc_pass(engine, [(dma, orbitals[0]), (dmb, orbitals[1])], xctype, xc)
    return (float(sums[0]), float(sums[1])), float(sums[2]), (vmat_a, vmat_b)


def _libxc_rho(rho, xctype: str, ni):
    """The density layout each libxc wrapper expects: PySCF takes LDA densities without the
    component axis, GPU4PySCF keeps it."""
    if xctype == "LDA" and getattr(ni, "_kerneldi_backend", "cpu") == "cpu":
        return rho[..., 0, :]
    return rho
