"""Which product forms the densities: R = D Phi (the paper's Eq. 4) or R = C^T Phi.

A density matrix built from occupied orbitals, D = C diag(n) C^T, gives the same densities as
rho = sum_i n_i |phi_i|^2 with phi_i = sum_mu C_mu,i Phi_mu. PySCF and GPU4PySCF tag the
density matrices of an SCF with ``mo_coeff`` and ``mo_occ``; the engines then form
R = (C sqrt(n))^T Phi on the kept blocks, which takes fewer block products than R = D Phi when
there are fewer occupied orbitals than basis functions a grid block keeps (large, diffuse
bases). ``Settings.density_form`` picks the form: ``"auto"`` by the estimated product count,
``"matrix"`` always R = D Phi, ``"orbitals"`` whenever the orbitals are given.
"""

from __future__ import annotations

import numpy as np

DENSITY_FORMS = ("auto", "matrix", "orbitals")
DIAG_TOL = 1e-10  # relative: the diagonal of C diag(n) C^T against that of D


def _array(a, xp):
    if xp is np:
        return a.get() if hasattr(a, "get") else np.asarray(a)
    return xp.asarray(a)


def occupied_orbitals(dms, xp, spin_halves: bool = False):
    """C sqrt(n) of every density matrix of ``dms`` (a list of (nao, nocc) ``xp`` arrays) from
    its ``mo_coeff``/``mo_occ`` tags, or None: untagged, tags that do not fit the matrices (shape,
    or a diagonal of D that C diag(n) C^T does not reproduce), or negative occupations (not a sum
    of squares). ``spin_halves``: a closed-shell density split into two spin densities, each with
    half the occupations."""
    mo_coeff = getattr(dms, "mo_coeff", None)
    mo_occ = getattr(dms, "mo_occ", None)
    if mo_coeff is None or mo_occ is None:
        return None
    mo_coeff, mo_occ = _array(mo_coeff, xp), _array(mo_occ, xp)
    lead, nao = tuple(dms.shape[:-2]), dms.shape[-1]
    if mo_coeff.ndim < 2 or tuple(mo_coeff.shape[:-1]) != lead + (nao,):
        return None
    if tuple(mo_occ.shape) != lead + (mo_coeff.shape[-1],):
        return None
    coeff = mo_coeff.reshape(-1, nao, mo_coeff.shape[-1])
    occ = mo_occ.reshape(len(coeff), -1) * (0.5 if spin_halves else 1.0)
    if bool((occ < 0).any()):
        return None
    diag = _array(dms, xp).reshape(len(coeff), nao, nao).diagonal(axis1=1, axis2=2)
    diag = diag * (0.5 if spin_halves else 1.0)
    out = []
    for c, n, d in zip(coeff, occ, diag):
        keep = xp.flatnonzero(n > 0)
        orb = c[:, keep] * xp.sqrt(n[keep])
        # stale tags (a matrix changed after it was tagged) must not define the density
        if float(xp.abs((orb * orb).sum(axis=1) - d).max()) > DIAG_TOL * max(1.0, float(d.max())):
            return None
        out.append(orb)
    return out


def tile_products(kept: np.ndarray, xctype: str, form: str, norb_blocks: int, d_fill: float):
    """Block products one density evaluation executes (before the t_d screening): ``kept``
    holds the kept basis blocks of every grid block, ``norb_blocks`` the blocks of d orbitals,
    ``d_fill`` the fraction of D's tiles at or above t_b."""
    n = kept.astype(np.float64)
    if form == "orbitals":
        return float(n.sum()) * norb_blocks * (1 if xctype == "LDA" else 4)
    if xctype == "GGA":  # every (p, q); the gradient comes from the left AO factor
        return float((n * n).sum()) * d_fill
    # LDA and meta-GGA: p <= q; meta-GGA multiplies D by the three AO derivatives as well
    return float((n * (n + 1) / 2).sum()) * d_fill * (4 if xctype == "MGGA" else 1)


def choose(setting: str, orbitals, kept, xctype: str, d: int, d_fill) -> str:
    """ "matrix" or "orbitals" for one density: ``d_fill`` is a callable giving D's fill (only
    called when the estimate decides). A spin without electrons takes the matrix form, where
    D = 0 skips every product."""
    if orbitals is None or orbitals.shape[1] == 0 or setting == "matrix":
        return "matrix"
    if setting == "orbitals":
        return "orbitals"
    nob = -(-orbitals.shape[1] // d)
    orb = tile_products(kept, xctype, "orbitals", nob, 1.0)
    mat = tile_products(kept, xctype, "matrix", nob, d_fill())
    return "orbitals" if orb < mat else "matrix"


def orbital_tiles(orbitals, basis_perm, nao_pad: int, d: int, xp):
    """(C^T tiles (nob, nbb, d, d) in layout order, their max-norms (nob, nbb)): tile [o, q]
    holds orbitals o d .. o d + d - 1 (rows) on the basis functions of block q (columns)."""
    nao, nocc = orbitals.shape
    nob = -(-nocc // d)
    cpad = xp.zeros((nao_pad, nob * d))
    cpad[:nao, :nocc] = orbitals[xp.asarray(basis_perm)]
    ct = xp.ascontiguousarray(cpad.reshape(nao_pad // d, d, nob, d).transpose(2, 0, 3, 1))
    return ct, xp.ascontiguousarray(xp.abs(ct).max(axis=(2, 3)))
