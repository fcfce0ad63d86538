"""The XC step shared by every engine: densities -> libxc -> weighted potentials -> Vxc.

It follows PySCF's ``nr_rks``/``nr_uks`` term by term (Eqs. 1-5): ``nelec = sum w rho``,
``Exc = sum w rho eps``, ``wv = w v`` with the GGA density term halved because the engine
returns ``F + F^T`` and the tau term halved for tau = 1/2 |grad phi|^2. Engines provide
``density(dm, xctype, orbitals)`` (rows: rho, grad rho, tau; ``orbitals`` C sqrt(n) of D or
None, see ``forms.py``) and ``potential(wv, xctype)``; ``xc_pass`` below joins them.

The nuclear gradient runs the same step with ``product="gradient"``: engines holding AO
derivatives one order higher return ``gradient(wv, xctype)``, the matrices
V_k = sum_c L_kc R_c^T of ``gradient_operands`` from the same (halved) weighted potentials.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

XCTYPES = ("LDA", "GGA", "MGGA")
NVAR = {"LDA": 1, "GGA": 4, "MGGA": 5}
AO_DERIV = {"LDA": 0, "GGA": 1, "MGGA": 1}
NCOMP = (1, 4, 10)  # AO components PySCF's eval_ao returns for derivative order 0, 1, 2
# rows of d/dr_k d/dr_j phi in PySCF's deriv-2 order (xx, xy, xz, yy, yz, zz at 4..9)
_D2 = ((4, 5, 6), (5, 7, 8), (6, 8, 9))


class Engine(Protocol):
    xp: object
    weights: object

    def density(self, dm, xctype: str, orbitals=None): ...

    def potential(self, wv, xctype: str): ...


# ``xc(points, rhos)``: the weighted potentials of the densities ``rhos`` on grid ``points``
XcStep = Callable[[slice, list], list]


def xc_pass(
    engine: Engine, densities: list, xctype: str, xc: XcStep, product: str = "potential"
) -> list:
    """The potential matrices (``product="gradient"``: gradient matrices) of ``densities``
    ((dm, orbitals) pairs). Engines that evaluate the AO values batch by batch run density,
    ``xc`` and product per batch (their ``xc_pass``), so that every batch's AO values are made
    once per call; others over the whole grid."""
    own = getattr(engine, "xc_pass", None)
    if own is not None and product == "potential":
        return own(densities, xctype, xc)
    if own is not None and getattr(engine, "batched_gradient", False):
        return own(densities, xctype, xc, product)
    return whole_grid_pass(engine, densities, xctype, xc, product)


def whole_grid_pass(
    engine: Engine, densities: list, xctype: str, xc: XcStep, product: str = "potential"
) -> list:
    rhos = [engine.density(dm, xctype, orbitals) for dm, orbitals in densities]
    make = getattr(engine, product)
    return [make(wv, xctype) for wv in xc(slice(None), rhos)]


def gradient_operands(ao, wv, xctype: str, xp):
    """(L, R) with V_k = sum_c L[k, :, c] R[:, c]^T (sums over points), the matrix whose
    negative is PySCF's gradient ``vmat`` (``pyscf.grad.rks.get_vxc``): with ``wv`` halved as
    ``_halve`` does, V_k = d_k(Phi) (wv_0 Phi + sum_j wv_j d_j Phi)^T (GGA: + the density
    term's own derivative (wv_0 d_k Phi + sum_j wv_j d_k d_j Phi) Phi^T; meta-GGA: + sum_j
    d_k d_j(Phi) wv_tau d_j(Phi)^T); LDA: d_k(Phi) wv_0 Phi^T. ``ao``: (functions, comp,
    points) with comp = ``NCOMP[AO_DERIV[xctype] + 1]``; ``wv``: (``NVAR``, points).
    Returns L (3, functions, m, points) and R (functions, m, points)."""
    if xctype == "LDA":
        return ao[:, 1:4].transpose(1, 0, 2)[:, :, None], (ao[:, 0] * wv[0])[:, None]
    lefts = []
    for k in range(3):
        dk_density = ao[:, 1 + k] * wv[0] + xp.einsum("ijp,jp->ip", ao[:, list(_D2[k])], wv[1:4])
        lefts.append([ao[:, 1 + k], dk_density])
    rights = [xp.einsum("icp,cp->ip", ao[:, :4], wv[:4]), ao[:, 0]]
    if xctype == "MGGA":
        for k in range(3):
            lefts[k] += [ao[:, c] for c in _D2[k]]
        rights += [ao[:, 1 + j] * wv[4] for j in range(3)]
    left = xp.stack([xp.stack(terms, axis=1) for terms in lefts])
    return left, xp.stack(rights, axis=1)


def _halve(wv, xctype: str):
    if xctype in ("GGA", "MGGA"):
        wv[..., 0, :] *= 0.5  # F + F^T doubles the density term
    if xctype == "MGGA":
        wv[..., 4, :] *= 0.5  # tau = 1/2 |grad phi|^2
    return wv


def rks(
    engine: Engine, ni, xc_code: str, xctype: str, dm, orbitals=None,
    product: str = "potential", eps_rho: list | None = None,
):  # fmt: skip
    """(nelec, exc, vmat) of one closed-shell density matrix; ``product="gradient"`` gives the
    gradient matrices (3, nao, nao) as vmat. ``eps_rho``: a list to which (points, eps rho)
    of every batch is appended (the energy density without weights, for the grid response)."""
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
        if eps_rho is not None:
            eps_rho.append((points, xp.asarray(exc).ravel() * rho[0]))
        return [_halve(xp.asarray(vxc).reshape(NVAR[xctype], -1) * w, xctype)]

    (vmat,) = xc_pass(engine, [(dm, orbitals)], xctype, xc, product)
    return float(sums[0]), float(sums[1]), vmat


def uks(
    engine: Engine, ni, xc_code: str, xctype: str, dma, dmb, orbitals=(None, None),
    product: str = "potential", eps_rho: list | None = None,
):  # fmt: skip
    """((nelec_a, nelec_b), exc, (vmat_a, vmat_b)) of one spin-polarized density; ``product``
    and ``eps_rho`` as in ``rks`` (eps times the total density)."""
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
        if eps_rho is not None:
            eps_rho.append((points, exc * (rho_a[0] + rho_b[0])))
        wv = _halve(xp.asarray(vxc).reshape(2, NVAR[xctype], -1) * w, xctype)
        return [wv[0], wv[1]]

    densities = [(dma, orbitals[0]), (dmb, orbitals[1])]
    vmat_a, vmat_b = xc_pass(engine, densities, xctype, xc, product)
    return (float(sums[0]), float(sums[1])), float(sums[2]), (vmat_a, vmat_b)


def _libxc_rho(rho, xctype: str, ni):
    """The density layout each libxc wrapper expects: PySCF takes LDA densities without the
    component axis, GPU4PySCF keeps it."""
    if xctype == "LDA" and getattr(ni, "_kerneldi_backend", "cpu") == "cpu":
        return rho[..., 0, :]
    return rho
