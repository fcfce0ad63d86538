"""The CPU block engine gives the result of exactly the block pairs Eq. 17 keeps.

A direct sum over (grid block, block pair), written here from the definitions, against the
engine's chunk products and their corrections, at thresholds loose enough that many pairs are
dropped and the grid blocks of a chunk disagree about a pair.
"""

from __future__ import annotations

import numpy as np
import pytest
from xc_cases import orbital_system, subgrid

from kerneldi import cpu, forms
from kerneldi.integrate import AO_DERIV, NVAR
from kerneldi.layout import make_layout
from kerneldi.numint import CPUNumInt
from kerneldi.settings import Settings

D = 8  # block size: several basis blocks on a small molecule


class Tiles:
    """AO values of the layout as tiles (basis block, function, comp, grid block, point), zero
    where a grid block does not keep a block, and their max-norms (basis block, grid block)."""

    def __init__(self, mol, lay, settings, deriv: int):
        ao = cpu.eval_ao_cols(mol, lay.coords, deriv)  # (comp, nao, point)
        full = np.zeros((lay.nao_pad, ao.shape[0], lay.npts_pad))
        full[: lay.nao, :, : lay.npts] = ao[:, lay.basis_perm].transpose(1, 0, 2)
        t = full.reshape(lay.nbb, D, ao.shape[0], lay.ngb, D)
        norm = np.abs(t).max(axis=(1, 2, 4))
        self.kept = norm >= settings.t_b
        self.phimax = np.where(self.kept, norm, 0.0)
        self.t = t * self.kept[:, None, None, :, None]


def matrix_density(tiles: Tiles, dml, xctype: str, st: Settings):
    dt = dml.reshape(len(tiles.kept), D, len(tiles.kept), D)
    dmax = np.abs(dt).max(axis=(1, 3))
    nb, ng = tiles.kept.shape
    r = np.zeros_like(tiles.t)
    oks = []
    for p in range(nb):
        for q in range(nb):
            bound = dmax[p, q] * np.maximum(tiles.phimax[p], tiles.phimax[q])
            ok = tiles.kept[p] & tiles.kept[q] & (dmax[p, q] >= st.t_b) & (bound >= st.t_d)
            oks.append(ok)
            r[p] += np.einsum("ij,jcgk->icgk", dt[p, :, q], tiles.t[q]) * ok[None, None, :, None]
    phi = tiles.t
    rho = [np.einsum("pigk,pigk->gk", phi[:, :, 0], r[:, :, 0])]
    if xctype != "LDA":
        rho += list(2 * np.einsum("picgk,pigk->cgk", phi[:, :, 1:4], r[:, :, 0]))
    if xctype == "MGGA":
        rho.append(0.5 * np.einsum("picgk,picgk->gk", phi[:, :, 1:4], r[:, :, 1:4]))
    return np.stack(rho).reshape(len(rho), -1), np.array(oks)


def orbital_density(tiles: Tiles, ct, cmax, xctype: str, st: Settings):
    r = 0
    oks = []
    for q in range(len(tiles.kept)):
        ok = tiles.kept[q][None] & (cmax[:, q, None] * tiles.phimax[q][None] >= st.t_d)
        oks.extend(ok)
        r = r + np.einsum("oij,jcgk->oicgk", ct[:, q], tiles.t[q]) * ok[:, None, None, :, None]
    rho = [np.einsum("oigk,oigk->gk", r[:, :, 0], r[:, :, 0])]
    if xctype != "LDA":
        rho += list(2 * np.einsum("oigk,oicgk->cgk", r[:, :, 0], r[:, :, 1:4]))
    if xctype == "MGGA":
        rho.append(0.5 * np.einsum("oicgk,oicgk->gk", r[:, :, 1:4], r[:, :, 1:4]))
    return np.stack(rho).reshape(len(rho), -1), np.array(oks)


def potential(tiles: Tiles, wv, xctype: str, st: Settings):
    """F = sum over the kept pairs of Phi_0 W_0 Phi_0^T (LDA), Phi_0 A^T + A Phi_0^T (GGA), and
    sum_k grad_k Phi W_tau grad_k Phi^T besides (meta-GGA), wv as ``integrate`` weights it."""
    nb, ng = tiles.kept.shape
    w = np.zeros((len(wv), ng * D))
    w[:, : wv.shape[1]] = wv
    w = w.reshape(len(w), ng, D)
    wmax = np.abs(w).max(axis=2)
    phi = tiles.t
    a = np.einsum("picgk,cgk->pigk", phi[:, :, :4], w[:4]) if xctype != "LDA" else None
    amax = None if a is None else np.abs(a).max(axis=(1, 3))
    f = np.zeros((nb, D, nb, D))
    oks = []
    for p in range(nb):
        for r in range(nb):
            both = tiles.phimax[p] * tiles.phimax[r]
            if xctype == "LDA":
                bound = both * wmax[0]
            else:
                bound = tiles.phimax[p] * amax[r] + amax[p] * tiles.phimax[r]
                if xctype == "MGGA":
                    bound += both * wmax[4]
            ok = tiles.kept[p] & tiles.kept[r] & (bound >= st.t_d)
            oks.append(ok)
            ok = ok.astype(float)
            if xctype == "LDA":
                f[p, :, r] += np.einsum("igk,gk,jgk->ij", phi[p, :, 0], w[0] * ok[:, None],
                                        phi[r, :, 0])  # fmt: skip
                continue
            f[p, :, r] += np.einsum("igk,jgk,g->ij", phi[p, :, 0], a[r], ok)
            f[p, :, r] += np.einsum("igk,jgk,g->ij", a[p], phi[r, :, 0], ok)
            if xctype == "MGGA":
                f[p, :, r] += np.einsum("icgk,gk,jcgk->ij", phi[p, :, 1:4], w[4] * ok[:, None],
                                        phi[r, :, 1:4])  # fmt: skip
    return f.reshape(nb * D, nb * D), np.array(oks)


def mixed_chunks(kept_pairs: np.ndarray) -> bool:
    """Whether some pair passes at some grid blocks of a chunk and fails at others."""
    ng = kept_pairs.shape[-1]
    for g0 in range(0, ng, cpu.CHUNK_BLOCKS):
        part = kept_pairs[..., g0 : g0 + cpu.CHUNK_BLOCKS]
        if (part.any(axis=-1) & ~part.all(axis=-1)).any():
            return True
    return False


@pytest.fixture(scope="module")
def case():
    mol, grids, dm = orbital_system("water_clusters/003", "6-31g", 0)
    return mol, subgrid(grids, 3000), dm


@pytest.mark.parametrize("form", ["matrix", "orbitals"])
@pytest.mark.parametrize("t_d", [1e-7, 1e-4])
@pytest.mark.parametrize(
    ("xc", "deriv"), [("lda,vwn", 0), ("lda,vwn", 1), ("pbe", 1), ("m062x", 1)]
)
def test_block_engine_sums_exactly_the_kept_pairs(case, xc, deriv, t_d, form):
    mol, grids, dm = case
    st = Settings(block_size=D, t_b=1e-9, t_d=t_d, density_form=form, orbital_rotation="none")
    ni = CPUNumInt(settings=st)
    xctype = ni._xc_type(xc)
    lay = make_layout(mol, grids.coords, grids.weights, grids.atm_idx, st)
    eng = cpu.CPUBlockEngine(mol, lay, st, max(deriv, AO_DERIV[xctype]))
    tiles = Tiles(mol, lay, st, eng.deriv)
    assert np.array_equal(tiles.kept.T.nonzero()[1], eng.pattern.row_idx)

    orbitals = forms.occupied_orbitals(dm, np)[0]
    rho = eng.density(np.asarray(dm), xctype, orbitals)
    if form == "matrix":
        ref, kept_pairs = matrix_density(tiles, eng._layout_matrix(dm), xctype, st)
    else:
        ct, cmax = forms.orbital_operands(orbitals, eng.rotation, st, lay, np)
        ref, kept_pairs = orbital_density(tiles, ct, cmax, xctype, st)
    assert eng.counts["density_form"] == form
    assert eng.counts["density_pairs"] == kept_pairs.sum()
    ref = ref[:, : lay.npts]
    assert np.abs(rho - ref).max() <= 1e-13 * np.abs(ref).max()

    exc, vxc = ni.eval_xc_eff(xc, rho[0] if xctype == "LDA" else rho, deriv=1, xctype=xctype)[:2]
    wv = np.asarray(vxc).reshape(NVAR[xctype], -1) * lay.weights
    if xctype != "LDA":
        wv[0] *= 0.5  # as integrate weights them for F + F^T
    if xctype == "MGGA":
        wv[4] *= 0.5
    vmat = eng.potential(wv, xctype)
    fl, kept_pairs = potential(tiles, wv, xctype, st)
    assert eng.counts["potential_pairs"] == kept_pairs.sum()
    # pairs were dropped, and some chunk's grid blocks disagree about one
    both_kept = int((tiles.kept.sum(axis=0) ** 2).sum())
    assert kept_pairs.sum() < 0.95 * both_kept and mixed_chunks(kept_pairs)
    ref = np.empty_like(vmat)
    ref[np.ix_(lay.basis_perm, lay.basis_perm)] = fl[: lay.nao, : lay.nao]
    assert np.abs(vmat - ref).max() <= 1e-13 * np.abs(ref).max()


@pytest.mark.parametrize("xctype", ["LDA", "GGA", "MGGA"])
def test_per_chunk_pairs_run_a_superset_of_the_per_block_pairs(xctype):
    """``gradient_chunk(per_chunk=True)`` (the device's large chunks): a pair passing at any
    grid block of the chunk runs over all of it, so it executes at least the per-block pairs,
    and its V differs from the per-block V by exactly the pairs it adds, computed here
    directly (agreement to 1e-12)."""
    from kerneldi.integrate import NCOMP, gradient_operands

    rng = np.random.default_rng(3)
    nb, ng, m = 3, 4, {"LDA": 1, "GGA": 2, "MGGA": 5}[xctype]
    comp = NCOMP[AO_DERIV[xctype] + 1]
    ao = rng.standard_normal((nb * D, comp, ng * D))
    kept = rng.random((ng, nb)) < 0.8
    ao *= np.repeat(np.repeat(kept.T, D, axis=0), D, axis=1)[:, None, :]
    w = rng.standard_normal((NVAR[xctype], ng * D)) * np.repeat(rng.random(ng) ** 6, D)
    left, right = gradient_operands(ao, w, xctype, np)
    lt = left.reshape(3, nb, D, m, ng, D)
    rt = right.reshape(nb, D, m, ng, D)
    lmax = np.abs(lt).max(axis=(0, 2, 3, 5)).T  # (grid block, block)
    rmax = np.abs(rt).max(axis=(1, 2, 4)).T
    candidate = kept[:, :, None] & kept[:, None, :]
    bound = lmax[:, :, None] * rmax[:, None, :]
    # the median bound: the grid blocks of the chunk disagree about many pairs
    t_d = float(np.median(bound[candidate]))
    block, n_block = cpu.gradient_chunk(ao, w, kept, xctype, t_d, np)
    chunk, n_chunk = cpu.gradient_chunk(ao, w, kept, xctype, t_d, np, per_chunk=True)
    assert n_chunk >= n_block
    # the pairs a grid block drops but the chunk runs, summed directly
    passing = candidate & (bound >= t_d)
    added = candidate & passing.any(axis=0)[None] & ~passing
    assert added.any()
    extra = np.zeros((3, nb, D, nb, D))
    for g, o, i in zip(*np.nonzero(added)):
        extra[:, o, :, i, :] += np.einsum("kacp,bcp->kab", lt[:, o, :, :, g], rt[i, :, :, g])
    assert np.abs(chunk - block - extra.reshape(3, nb * D, nb * D)).max() <= 1e-12
