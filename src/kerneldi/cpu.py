"""CPU backend: PySCF's AO evaluator, NumPy/SciPy block-pair products, and the dense
EXC-OpenBLAS baseline on the same AO values and the same XC step.

The block engine executes exactly the block pairs the GPU kernels execute; only the loop
order differs. Here each pair of basis blocks (p, q) gathers the grid blocks both keep
(intersection of two BCS(R) rows), screens them (Eq. 17) and multiplies them in one GEMM
whose inner dimension runs over those grid blocks, which suits a CPU BLAS.
"""

from __future__ import annotations

import time

import numpy as np
from pyscf.dft import numint as pyscf_numint

from . import forms
from .blocks import BlockPattern, block_maxnorm, pair_fractions, tiles
from .integrate import AO_DERIV, NVAR
from .layout import Layout
from .settings import Settings

CHUNK_BLOCKS = 2048  # grid blocks per chunk: bounds the gathered temporaries
SETUP_BLOCKS = 256  # grid blocks per AO evaluation batch
ORBITAL_CHUNK_BYTES = 2e8  # bounds R = C^T Phi of one chunk of grid blocks


def eval_ao_rows(mol, coords: np.ndarray, deriv: int) -> np.ndarray:
    """PySCF AO values as (comp, npoints, nao)."""
    ao = pyscf_numint.eval_ao(mol, coords, deriv=deriv)
    return ao[None] if deriv == 0 else ao


def eval_ao_cols(mol, coords: np.ndarray, deriv: int) -> np.ndarray:
    """PySCF AO values as (comp, nao, npoints): Phi of Eq. 2 (PySCF computes this layout and
    returns its transpose, so this costs no copy)."""
    return eval_ao_rows(mol, coords, deriv).transpose(0, 2, 1)


def sum_nt(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_n a[n] @ b[n].T over stacks of d x d blocks. Batched small products: one thin GEMM
    with a long inner dimension runs far slower in a multithreaded OpenBLAS."""
    return np.matmul(a, b.transpose(0, 2, 1)).sum(axis=0)


def _chunks(ngb: int, size: int = CHUNK_BLOCKS):
    for g0 in range(0, ngb, size):
        yield g0, min(g0 + size, ngb)


class CPUBlockEngine:
    """KerneLDI on the CPU for one geometry, grid and AO derivative order."""

    name = "kerneldi-cpu"
    xp = np

    def __init__(self, mol, layout: Layout, settings: Settings, deriv: int):
        t0 = time.perf_counter()
        self.mol, self.layout, self.settings, self.deriv = mol, layout, settings, deriv
        self.ncomp = 1 if deriv == 0 else 4
        self.weights = layout.weights
        lay = layout
        rows, cols, norms, data = [], [], [], []
        for g0, g1 in _chunks(lay.ngb, SETUP_BLOCKS):
            blk = self._ao_tiles(g0, g1)
            norm = np.abs(blk).max(axis=(2, 3, 4))
            g, p = np.nonzero(norm >= settings.t_b)  # grid-block major: BCS(C) order
            rows.append(p)
            cols.append(g + g0)
            norms.append(norm[g, p])
            data.append(blk[g, p])
        self.pattern = BlockPattern.from_blocks(
            lay.nbb, lay.ngb, np.concatenate(rows), np.concatenate(cols)
        )
        self.phimax = np.concatenate(norms)
        nbytes = sum(x.nbytes for x in data)
        cached = settings.ao_cache == "always" or (
            settings.ao_cache == "auto" and nbytes <= settings.cpu_cache_mb * 1e6
        )
        self.data = np.concatenate(data) if cached else None
        p = self.pattern
        # key of every BCS(R) entry, ascending: finds a row's grid-block range by bisection
        self._row_key = np.repeat(np.arange(p.nbr, dtype=np.int64), np.diff(p.row_ptr)) * p.nbc
        self._row_key += p.col_idx
        self.rotation = forms.CholeskyRotation(np.argsort(lay.basis_perm))
        self.setup_seconds = time.perf_counter() - t0
        self.counts: dict[str, int] = {}

    # -- operands ---------------------------------------------------------------------------
    def _ao_tiles(self, g0: int, g1: int) -> np.ndarray:
        """AO values of grid blocks [g0, g1) as contiguous (grid block, basis block, comp, d, d)."""
        lay, d = self.layout, self.layout.d
        pts = slice(g0 * d, min(g1 * d, lay.npts))
        ao = eval_ao_cols(self.mol, lay.coords[pts], self.deriv)
        full = np.zeros((self.ncomp, lay.nao_pad, (g1 - g0) * d))
        full[:, : lay.nao, : ao.shape[2]] = ao[:, lay.basis_perm]
        t = full.reshape(self.ncomp, lay.nbb, d, g1 - g0, d).transpose(3, 1, 0, 2, 4)
        return np.ascontiguousarray(t)

    def _chunk_data(self, g0: int, g1: int) -> np.ndarray:
        b0, b1 = self.pattern.col_ptr[g0], self.pattern.col_ptr[g1]
        if self.data is not None:
            return self.data[b0:b1]
        blk = self._ao_tiles(g0, g1)
        cols = self.pattern.block_cols()[b0:b1] - g0
        return blk[cols, self.pattern.row_idx[b0:b1]]

    def _rows_in(self, g0: int, g1: int):
        """For every basis block p: (grid blocks, block numbers) of its BCS(R) row in [g0, g1)."""
        p = self.pattern
        base = np.arange(p.nbr, dtype=np.int64) * p.nbc
        lo = np.searchsorted(self._row_key, base + g0)
        hi = np.searchsorted(self._row_key, base + g1)
        return [(p.col_idx[a:b], p.row_blk[a:b]) for a, b in zip(lo, hi)]

    def _dm_tiles(self, dm: np.ndarray):
        lay = self.layout
        dmp = np.asarray(dm, dtype=np.float64)[np.ix_(lay.basis_perm, lay.basis_perm)]
        return tiles(dmp, lay.d), block_maxnorm(dmp, lay.d)

    # -- Eq. 4: rho, grad rho, tau from R = D Phi (or C^T Phi) on kept blocks ----------------
    def density(self, dm: np.ndarray, xctype: str, orbitals=None) -> np.ndarray:
        """rho (and grad rho, tau) from R = D Phi, or from R = C^T Phi when ``orbitals``
        (C sqrt(n) of D) are given and the form setting picks them (``forms.py``)."""
        lay, st, d = self.layout, self.settings, self.layout.d
        dt, dmax = self._dm_tiles(dm)
        orb = forms.orbital_operands(orbitals, self.rotation, st, lay, np)
        form = forms.choose(
            st.density_form, orbitals, np.diff(self.pattern.col_ptr), xctype, d,
            lambda: float((dmax >= st.t_b).mean()),
            lambda: forms.orbital_fill(orb[1], self.pattern.row_idx, st.t_b, np),
        )  # fmt: skip
        self.counts["density_form"] = form
        if form == "orbitals":
            return self._density_orbitals(*orb, xctype)
        rho = np.zeros((NVAR[xctype], lay.ngb, d))
        # LDA and tau are symmetric in (p, q): half the pairs, off-diagonal ones twice.
        # The GGA gradient needs R = D Phi for every (p, q) and no derivative products.
        symmetric = xctype != "GGA"
        nright = 4 if xctype == "MGGA" else 1
        executed = 0
        for g0, g1 in _chunks(lay.ngb):
            data = self._chunk_data(g0, g1)
            b0 = self.pattern.col_ptr[g0]
            rows = self._rows_in(g0, g1)
            for p, (gp, bp) in enumerate(rows):
                if len(gp) == 0:
                    continue
                # R = D Phi for the kept blocks of row p, summed over q, contracted once
                r = np.zeros((len(gp), nright, d, d))
                for q in range(p if symmetric else 0, lay.nbb):
                    if dmax[p, q] < st.t_b or len(rows[q][0]) == 0:
                        continue
                    gq, bq = rows[q]
                    _, ip, iq = np.intersect1d(gp, gq, assume_unique=True, return_indices=True)
                    keep = dmax[p, q] * np.maximum(self.phimax[bp[ip]], self.phimax[bq[iq]])
                    keep = np.flatnonzero(keep >= st.t_d)
                    if keep.size == 0:
                        continue
                    twice = symmetric and q != p
                    executed += keep.size * (2 if twice else 1)
                    dpq = 2 * dt[p, q] if twice else dt[p, q]
                    r[ip[keep]] += np.matmul(dpq, data[bq[iq[keep]] - b0, :nright])
                self._contract(rho, gp, data[bp - b0], r, xctype)
        self.counts["density_pairs"] = executed
        self.counts["density_candidates"] = lay.nbb**2 * lay.ngb
        return rho.reshape(len(rho), -1)[:, : lay.npts]

    def _density_orbitals(self, ct: np.ndarray, cmax: np.ndarray, xctype: str) -> np.ndarray:
        """rho = sum_i |R_i|^2 with R = C^T Phi over the kept blocks (``ct``, ``cmax``: the
        C^T tiles and their max-norms); the products the GPU's kd_density_orb executes (tile
        [o, q] at grid block g when max|C_oq| max|Phi_qg| >= t_d)."""
        lay, st, d = self.layout, self.settings, self.layout.d
        nob = len(ct)
        nr = 1 if xctype == "LDA" else 4  # the gradient needs C^T grad Phi
        rho = np.zeros((NVAR[xctype], lay.ngb, d))
        executed = 0
        chunk = max(1, int(ORBITAL_CHUNK_BYTES // (nr * nob * d * d * 8)))
        for g0, g1 in _chunks(lay.ngb, chunk):
            data = self._chunk_data(g0, g1)
            b0 = self.pattern.col_ptr[g0]
            r = np.zeros((g1 - g0, nr, nob, d, d))  # (grid block, comp, orbital block, orb, point)
            for p, (gp, bp) in enumerate(self._rows_in(g0, g1)):
                if len(gp) == 0:
                    continue
                keep = cmax[:, p, None] * self.phimax[bp][None, :] >= st.t_d  # (nob, blocks)
                executed += int(keep.sum())
                prod = np.matmul(ct[:, p, None, None], data[None, bp - b0, :nr])
                r[gp - g0] += (prod * keep[:, :, None, None, None]).transpose(1, 2, 0, 3, 4)
            r = r.reshape(g1 - g0, nr, nob * d, d)
            rho[0, g0:g1] = np.einsum("gui,gui->gi", r[:, 0], r[:, 0])
            if xctype != "LDA":
                rho[1:4, g0:g1] = 2 * np.einsum("gui,gkui->kgi", r[:, 0], r[:, 1:4])
            if xctype == "MGGA":
                rho[4, g0:g1] = 0.5 * np.einsum("gkui,gkui->gi", r[:, 1:4], r[:, 1:4])
        self.counts["density_pairs"] = executed
        self.counts["density_candidates"] = nob * lay.nbb * lay.ngb
        return rho.reshape(len(rho), -1)[:, : lay.npts]

    @staticmethod
    def _contract(rho, g, left, r, xctype: str):
        """rho components at the grid blocks ``g`` from basis block p's AO values and R."""
        rho[0, g] += np.einsum("nui,nui->ni", left[:, 0], r[:, 0])
        if xctype == "GGA":
            rho[1:4, g] += 2 * np.einsum("nkui,nui->kni", left[:, 1:4], r[:, 0])
        elif xctype == "MGGA":
            grad = np.einsum("nkui,nui->kni", left[:, 1:4], r[:, 0])
            grad += np.einsum("nui,nkui->kni", left[:, 0], r[:, 1:4])
            rho[1:4, g] += grad
            rho[4, g] += 0.5 * np.einsum("nkui,nkui->ni", left[:, 1:4], r[:, 1:4])

    # -- Eq. 5: F = Phi W Phi^T (+ GGA, meta-GGA terms) on kept block pairs, p <= r ----------
    def potential(self, wv: np.ndarray, xctype: str) -> np.ndarray:
        lay, st, d = self.layout, self.settings, self.layout.d
        w = np.zeros((wv.shape[0], lay.npts_pad))
        w[:, : lay.npts] = wv
        w = w.reshape(len(w), lay.ngb, d)
        wmax = np.abs(w).max(axis=2)  # per grid block, per component
        f = np.zeros((lay.nbb, lay.nbb, d, d))
        executed = 0
        for g0, g1 in _chunks(lay.ngb):
            data = self._chunk_data(g0, g1)
            b0 = self.pattern.col_ptr[g0]
            cols = self.pattern.block_cols()[b0 : self.pattern.col_ptr[g1]]
            wb = w[:, cols].transpose(1, 0, 2)[:, :, None, :]  # (block, comp, 1, d)
            if xctype != "LDA":
                aow = (data[:, :4] * wb[:, :4]).sum(axis=1)  # A = sum_c wv_c Phi_c
                amax = np.abs(aow).max(axis=(1, 2))
            rows = self._rows_in(g0, g1)
            for p, (gp, bp) in enumerate(rows):
                if len(gp) == 0:
                    continue
                for r in range(p, lay.nbb):
                    gr, br = rows[r]
                    if len(gr) == 0:
                        continue
                    g, ip, ir = np.intersect1d(gp, gr, assume_unique=True, return_indices=True)
                    if g.size == 0:
                        continue
                    lp, lr = bp[ip] - b0, br[ir] - b0
                    if xctype == "LDA":
                        bound = self.phimax[lp + b0] * self.phimax[lr + b0] * wmax[0, g]
                    else:
                        bound = self.phimax[lp + b0] * amax[lr] + amax[lp] * self.phimax[lr + b0]
                        if xctype == "MGGA":
                            bound += self.phimax[lp + b0] * self.phimax[lr + b0] * wmax[4, g]
                    keep = np.flatnonzero(bound >= st.t_d)
                    if keep.size == 0:
                        continue
                    executed += keep.size * (2 if r != p else 1)
                    lp, lr = lp[keep], lr[keep]
                    if xctype == "LDA":
                        left = [data[lp, 0]]
                        right = [data[lr, 0] * wb[lr, 0]]
                    else:
                        left = [data[lp, 0], aow[lp]]
                        right = [aow[lr], data[lr, 0]]
                        if xctype == "MGGA":
                            left += [data[lp, k] for k in (1, 2, 3)]
                            right += [data[lr, k] * wb[lr, 4] for k in (1, 2, 3)]
                    f[p, r] += sum(sum_nt(a, b) for a, b in zip(left, right))
        self.counts["potential_pairs"] = executed
        self.counts["potential_candidates"] = lay.nbb**2 * lay.ngb
        iu = np.triu_indices(lay.nbb, 1)
        f[iu[1], iu[0]] = f[iu].transpose(0, 2, 1)
        full = f.transpose(0, 2, 1, 3).reshape(lay.nao_pad, lay.nao_pad)[: lay.nao, : lay.nao]
        out = np.empty_like(full)
        out[np.ix_(lay.basis_perm, lay.basis_perm)] = full
        return out

    def stats(self) -> dict:
        p = self.pattern
        out = {
            "nao": self.layout.nao,
            "npoints": self.layout.npts,
            "basis_blocks": p.nbr,
            "grid_blocks": p.nbc,
            "retained_blocks": p.nblk,
            "retained_fraction": p.retained_fraction(),
            "ao_cached": self.data is not None,
            "setup_seconds": self.setup_seconds,
        }
        return out | pair_fractions(self.counts)


class CPUDenseEngine:
    """EXC-OpenBLAS: the same AO values and XC step, dense products through NumPy's BLAS."""

    name = "exc-openblas"
    xp = np

    def __init__(self, mol, layout: Layout, settings: Settings, deriv: int, batch: int = 8192):
        t0 = time.perf_counter()
        self.mol, self.layout, self.deriv, self.batch = mol, layout, deriv, batch
        self.weights = layout.weights
        nbytes = (1 if deriv == 0 else 4) * layout.npts * layout.nao * 8
        cache = settings.ao_cache == "always" or (
            settings.ao_cache == "auto" and nbytes <= settings.cpu_cache_mb * 1e6
        )
        self.ao = eval_ao_rows(mol, layout.coords, deriv) if cache else None
        self.setup_seconds = time.perf_counter() - t0

    def _batches(self):
        for i0 in range(0, self.layout.npts, self.batch):
            i1 = min(i0 + self.batch, self.layout.npts)
            if self.ao is not None:
                yield i0, i1, self.ao[:, i0:i1]
            else:
                yield i0, i1, eval_ao_rows(self.mol, self.layout.coords[i0:i1], self.deriv)

    def density(self, dm: np.ndarray, xctype: str, orbitals=None) -> np.ndarray:
        """R = D Phi on every AO (the paper's dense baseline; ``orbitals`` are not used)."""
        dm = np.asarray(dm, dtype=np.float64)
        rho = np.empty((NVAR[xctype], self.layout.npts))
        for i0, i1, ao in self._batches():
            c0 = ao[0] @ dm  # (points, nao): R^T = Phi^T D
            rho[0, i0:i1] = np.einsum("gi,gi->g", ao[0], c0)
            if xctype != "LDA":
                rho[1:4, i0:i1] = 2 * np.einsum("kgi,gi->kg", ao[1:4], c0)
            if xctype == "MGGA":
                rho[4, i0:i1] = 0.5 * sum(
                    np.einsum("gi,gi->g", ao[k], ao[k] @ dm) for k in (1, 2, 3)
                )
        return rho

    def potential(self, wv: np.ndarray, xctype: str) -> np.ndarray:
        nao = self.layout.nao
        f = np.zeros((nao, nao))
        for i0, i1, ao in self._batches():
            if xctype == "LDA":
                f += ao[0].T @ (wv[0, i0:i1, None] * ao[0])
                continue
            aow = np.einsum("kgi,kg->gi", ao[:4], wv[:4, i0:i1])
            f += ao[0].T @ aow
            if xctype == "MGGA":
                for k in (1, 2, 3):
                    # the tau term is symmetric: half of it before F + F^T
                    f += 0.5 * ao[k].T @ (wv[4, i0:i1, None] * ao[k])
        return f if xctype == "LDA" else f + f.T

    def stats(self) -> dict:
        return {"ao_cached": self.ao is not None, "setup_seconds": self.setup_seconds}


def make_engine(kind: str, mol, layout: Layout, settings: Settings, xctype: str):
    cls = {"block": CPUBlockEngine, "dense": CPUDenseEngine}[kind]
    return cls(mol, layout, settings, AO_DERIV[xctype])
