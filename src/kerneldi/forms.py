"""Which product forms the densities: R = D Phi (the paper's Eq. 4) or R = C^T Phi.

A density matrix built from occupied orbitals, D = C diag(n) C^T, gives the same densities as
rho = sum_i n_i |phi_i|^2 with phi_i = sum_mu C_mu,i Phi_mu. PySCF and GPU4PySCF tag the
density matrices of an SCF with ``mo_coeff`` and ``mo_occ``; the engines then form
R = (C sqrt(n))^T Phi on the kept blocks, which takes fewer block products than R = D Phi when
there are fewer occupied orbitals than basis functions a grid block keeps (large, diffuse
bases). ``Settings.density_form`` picks the form: ``"auto"`` by the estimated product count,
``"matrix"`` always R = D Phi, ``"orbitals"`` whenever the orbitals are given.

Canonical orbitals spread over the whole molecule, so every orbital tile meets every kept AO
block. Any orthogonal rotation C sqrt(n) U gives the same D; ``CholeskyRotation`` takes the one
that makes them Cholesky orbitals of D (Aquilante et al., J. Chem. Phys. 125, 174101 (2006)):
orbital k is D's column at a pivot basis function minus its parts along the earlier ones, so
it lives near that function and the t_d screening of ``max|C_oq| max|Phi_qg|`` skips the
orbital tiles far from a grid block, as the matrix form skips far tiles of D.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

DENSITY_FORMS = ("auto", "matrix", "orbitals")
# the occupied orbitals as given, or rotated into Cholesky orbitals of D
ORBITAL_ROTATIONS = ("cholesky", "none")
DIAG_TOL = 1e-10  # relative: the diagonal of C diag(n) C^T against that of D
ORTHO_TOL = 1e-12  # max |U^T U - I| of a Cholesky rotation; beyond it the pivots are redone


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


def cholesky_pivots(orbitals) -> np.ndarray:
    """The basis functions that pivot a QR factorization with column pivoting of
    (C sqrt(n))^T, i.e. the pivots of a pivoted Cholesky factorization of D (host, SciPy)."""
    host = orbitals.get() if hasattr(orbitals, "get") else np.asarray(orbitals)
    _, pivots = scipy.linalg.qr(host.T, mode="r", pivoting=True)
    return pivots[: host.shape[1]]


def _solve_lower(xp):
    if xp is np:
        return scipy.linalg.solve_triangular
    import cupyx.scipy.linalg

    return cupyx.scipy.linalg.solve_triangular


def cholesky_rotation(orbitals, pivots, xp):
    """C sqrt(n) U with U = M^T G^-T, M the pivot rows of C sqrt(n) and G G^T = M M^T =
    D[P, P]: the Cholesky factor of D in the pivots' order (``pivots`` in layout order, so
    neighbouring orbitals live near neighbouring basis functions). None when U is not
    orthogonal to ``ORTHO_TOL`` (pivots of another density that no longer suit this one)."""
    m = orbitals[xp.asarray(pivots)]
    try:
        with np.errstate(all="ignore"):
            g = xp.linalg.cholesky(m @ m.T)
            u = _solve_lower(xp)(g, m, lower=True).T
    except np.linalg.LinAlgError:  # D[P, P] singular
        return None
    err = xp.abs(u.T @ u - xp.eye(len(u))).max()
    if not float(err) <= ORTHO_TOL:  # also NaN where a factorization does not raise
        return None
    return orbitals @ u


class CholeskyRotation:
    """Rotates occupied orbitals into Cholesky orbitals of D. The pivots depend on where the
    orbitals live, not on the SCF iteration: they are kept per orbital count and made again
    only when they stop giving an orthogonal rotation; when new ones do not give one either,
    the orbitals stay as given (the same D, denser tiles)."""

    def __init__(self, layout_position: np.ndarray):
        self.position = layout_position  # of every basis function in the engine's layout
        self.pivots: dict[int, np.ndarray] = {}

    def _pivots(self, orbitals) -> np.ndarray:
        pivots = cholesky_pivots(orbitals)
        return pivots[np.argsort(self.position[pivots], kind="stable")]

    def __call__(self, orbitals, xp):
        nocc = orbitals.shape[1]
        if nocc in self.pivots:
            rotated = cholesky_rotation(orbitals, self.pivots[nocc], xp)
            if rotated is not None:
                return rotated
        self.pivots[nocc] = self._pivots(orbitals)
        rotated = cholesky_rotation(orbitals, self.pivots[nocc], xp)
        return orbitals if rotated is None else rotated


def tile_products(kept: np.ndarray, xctype: str, form: str, norb_blocks: int, fill: float):
    """Block products one density evaluation executes (before the t_d screening): ``kept``
    holds the kept basis blocks of every grid block, ``norb_blocks`` the blocks of d orbitals,
    ``fill`` the fraction of D's tiles (matrix form), or of the orbital tiles on a kept basis
    block (orbital form), at or above t_b."""
    n = kept.astype(np.float64)
    if form == "orbitals":
        return float(n.sum()) * norb_blocks * fill * (1 if xctype == "LDA" else 4)
    if xctype == "GGA":  # every (p, q); the gradient comes from the left AO factor
        return float((n * n).sum()) * fill
    # LDA and meta-GGA: p <= q; meta-GGA multiplies D by the three AO derivatives as well
    return float((n * (n + 1) / 2).sum()) * fill * (4 if xctype == "MGGA" else 1)


def choose(setting: str, orbitals, kept, xctype: str, d: int, d_fill, c_fill) -> str:
    """ "matrix" or "orbitals" for one density: ``d_fill`` and ``c_fill`` are callables giving
    the fills of D and of the orbital tiles (only called when the estimate decides). A spin
    without electrons takes the matrix form, where D = 0 skips every product."""
    if orbitals is None or orbitals.shape[1] == 0 or setting == "matrix":
        return "matrix"
    if setting == "orbitals":
        return "orbitals"
    nob = -(-orbitals.shape[1] // d)
    orb = tile_products(kept, xctype, "orbitals", nob, c_fill())
    mat = tile_products(kept, xctype, "matrix", nob, d_fill())
    return "orbitals" if orb < mat else "matrix"


def orbital_fill(cmax, row_idx, t_b: float, xp) -> float:
    """The fraction of orbital tiles at or above t_b on the kept blocks (``row_idx``: the basis
    block of every kept block)."""
    per_block = (cmax >= t_b).sum(axis=0)
    return float(per_block[xp.asarray(row_idx)].sum()) / max(1, cmax.shape[0] * len(row_idx))


def orbital_operands(orbitals, rotation: CholeskyRotation, settings, layout, xp):
    """The C^T tiles and their max-norms (``orbital_tiles``) of the orbitals one density may
    use, rotated as ``settings.orbital_rotation`` says; None where the matrix form is certain
    (no orbitals, a spin without electrons, ``density_form="matrix"``)."""
    if orbitals is None or orbitals.shape[1] == 0 or settings.density_form == "matrix":
        return None
    orbitals = xp.asarray(orbitals)
    if settings.orbital_rotation == "cholesky":
        orbitals = rotation(orbitals, xp)
    return orbital_tiles(orbitals, layout.basis_perm, layout.nao_pad, layout.d, xp)


def orbital_tiles(orbitals, basis_perm, nao_pad: int, d: int, xp):
    """(C^T tiles (nob, nbb, d, d) in layout order, their max-norms (nob, nbb)): tile [o, q]
    holds orbitals o d .. o d + d - 1 (rows) on the basis functions of block q (columns)."""
    nao, nocc = orbitals.shape
    nob = -(-nocc // d)
    cpad = xp.zeros((nao_pad, nob * d))
    cpad[:nao, :nocc] = orbitals[xp.asarray(basis_perm)]
    ct = xp.ascontiguousarray(cpad.reshape(nao_pad // d, d, nob, d).transpose(2, 0, 3, 1))
    return ct, xp.ascontiguousarray(xp.abs(ct).max(axis=(2, 3)))
