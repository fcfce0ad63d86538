"""CPU backend: PySCF's AO evaluator, BLAS-3 products on dense sub-blocks of the kept AO
blocks, and the dense EXC-OpenBLAS baseline on the same AO values and the same XC step.

The block engine gives the result of exactly the block pairs the GPU kernels execute (its pair
counts are theirs); only the way to that result differs. The grid is cut into chunks of
consecutive grid blocks (Morton order keeps a chunk compact). A chunk keeps the basis blocks
that any of its grid blocks keeps, as one dense operand (basis functions x components x
points) whose tiles that a grid block does not keep are zero; a density or potential of a
chunk is one matrix product on it. Eq. 17 decides per (grid block, block pair): the operand's
tile of a block pair (D, C^T, or the potential's output) takes part in the chunk's product when
the pair passes at most of the grid blocks where both blocks are kept, and the grid blocks that
decide otherwise get their tile products added or taken away one by one: each correction is
a small product, and where the thresholds keep most pairs (the default t_d) few are needed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from pyscf.dft import numint as pyscf_numint
from pyscf.dft.gen_grid import BLKSIZE

from . import forms, integrate
from .blocks import BlockPattern, block_maxnorm, pair_fractions
from .integrate import AO_DERIV, NCOMP, NVAR, gradient_operands
from .layout import Layout
from .settings import Settings
from .tasks import XcTask, checked_selection, grid_tasks, runs

CHUNK_BLOCKS = 16  # grid blocks per chunk: one product per chunk, over the blocks it keeps
BATCH_BYTES = 1e8  # AO values evaluated at once when they are not cached
SYMMETRIC_GROUPS = 4  # block-row groups of the potential's symmetric term
# the potential's symmetric term sum_k X_k W X_k^T: X's AO components and W's row of wv
_SYMMETRIC = {"LDA": (slice(0, 1), 0), "MGGA": (slice(1, 4), 4)}


def eval_ao_rows(mol, coords: np.ndarray, deriv: int, non0tab=None) -> np.ndarray:
    """PySCF AO values as (comp, npoints, nao); ``non0tab`` as PySCF's (shells left out are
    zero, the others exactly as without it)."""
    ao = pyscf_numint.eval_ao(mol, coords, deriv=deriv, non0tab=non0tab)
    return ao[None] if deriv == 0 else ao


def eval_ao_cols(mol, coords: np.ndarray, deriv: int, non0tab=None) -> np.ndarray:
    """PySCF AO values as (comp, nao, npoints): Phi of Eq. 2 (PySCF computes this layout and
    returns its transpose, so this costs no copy)."""
    return eval_ao_rows(mol, coords, deriv, non0tab).transpose(0, 2, 1)


def shells_holding(ao_loc: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Bool mask over the shells of ``ao_loc`` that hold the AO rows ``rows``."""
    shell_of_row = np.repeat(np.arange(len(ao_loc) - 1), np.diff(ao_loc))
    mask = np.zeros(len(ao_loc) - 1, dtype=bool)
    mask[shell_of_row[np.asarray(rows, dtype=np.int64)]] = True
    return mask


def _ranges(n: int, size: int):
    for a in range(0, n, size):
        yield a, min(a + size, n)


@dataclass
class Chunk:
    """Grid blocks [g0, g1) and the basis blocks any of them keeps (``basis``, ascending):
    ``kept`` and ``phimax`` (grid block, basis block) say which blocks each grid block keeps
    and their max-norms (0 where not kept); ``ao`` holds the chunk's operand when cached."""

    g0: int
    g1: int
    basis: np.ndarray
    kept: np.ndarray
    phimax: np.ndarray
    shells: np.ndarray  # the molecule's shells holding the chunk's basis functions
    ao: np.ndarray | None = None


class _Pairs:
    """Eq. 17 on one chunk: which block pairs pass at which grid blocks, which of the operand's
    tiles take part in the chunk product, and the (grid block, pair) triples to correct."""

    def __init__(self, candidate: np.ndarray, passing: np.ndarray, xp=np, per_chunk=False):
        # candidate, passing: (grid block, output tile, input tile); a candidate has both
        # blocks kept at the grid block (elsewhere the product is zero in the operand).
        # per_chunk: a pair runs over the whole chunk where it passes at any of its grid
        # blocks (a superset of the per-block decisions, so no corrections)
        if per_chunk:
            self.tiles = passing.any(axis=0)
            self.executed = int((candidate & self.tiles[None]).sum())
            self.g = self.out = self.inp = xp.zeros(0, dtype=np.int64)
            self.sign = xp.zeros(0)
            return
        self.executed = int(passing.sum())
        npass, ncand = passing.sum(axis=0), candidate.sum(axis=0)
        self.tiles = 2 * npass >= ncand  # in the chunk product: passes at most candidates
        wrong = candidate & (passing != self.tiles[None])
        self.g, self.out, self.inp = xp.nonzero(wrong)
        self.sign = xp.where(passing[self.g, self.out, self.inp], 1.0, -1.0)


def _scaled_tiles(a: np.ndarray, keep: np.ndarray, d: int) -> np.ndarray:
    """``a`` (m d, n d) with its (m, n) tiles outside ``keep`` set to zero."""
    m, n = keep.shape
    return (a.reshape(m, d, n, d) * keep[:, None, :, None]).reshape(m * d, n * d)


def _add_tiles(target: np.ndarray, a: np.ndarray, b: np.ndarray, values: np.ndarray) -> None:
    """target[a[t], :, b[t]] += values[t] for every t, repeated (a, b) included: np.add.at's
    result, with the repeats summed first and one fancy-index update per distinct (a, b)."""
    key = a * target.shape[2] + b
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    target[a[order[first]], :, b[order[first]]] += np.add.reduceat(values[order], first, axis=0)


def _correct_product(r, left, ao, pairs: _Pairs, d: int) -> None:
    """r = left @ ao (chunk product): adds sign * left[o, i] ao[i, g] at the corrected triples
    (g, o, i). ``r``, ``ao``: (rows, comp, points); ``left``: (rows of r, rows of ao)."""
    if not len(pairs.g):
        return
    nout, nin = pairs.tiles.shape
    ngb = ao.shape[2] // d
    lt = left.reshape(nout, d, nin, d)[pairs.out, :, pairs.inp, :]  # (T, d, d)
    a5 = ao.reshape(nin, d, ao.shape[1], ngb, d)
    at = a5[pairs.inp, :, :, pairs.g, :].reshape(len(pairs.g), d, -1)  # (T, d, comp d)
    prod = np.matmul(lt * pairs.sign[:, None, None], at)
    r4 = r.reshape(nout, d * r.shape[1], ngb, d)
    _add_tiles(r4, pairs.out, pairs.g, prod.reshape(len(prod), -1, d))


class CPUBlockEngine:
    """KerneLDI on the CPU for one geometry, grid and AO derivative order."""

    name = "kerneldi-cpu"
    xp = np
    batched_gradient = True  # xc_pass runs the gradient products batch by batch too

    def __init__(self, mol, layout: Layout, settings: Settings, deriv: int):
        t0 = time.perf_counter()
        self.mol, self.layout, self.settings, self.deriv = mol, layout, settings, deriv
        self.ncomp = NCOMP[deriv]
        self.weights = layout.weights
        lay, d = layout, layout.d
        self.ao_loc = mol.ao_loc_nr()
        rows, cols = [], []
        self.chunks: list[Chunk] = []
        cache = settings.ao_cache != "never"
        cached_bytes = 0.0
        everything = np.arange(lay.nbb)
        for g0, g1 in _ranges(lay.ngb, CHUNK_BLOCKS):
            ao = self._evaluate(g0, g1, everything)
            norm = np.abs(ao.reshape(lay.nbb, d, self.ncomp, g1 - g0, d)).max(axis=(1, 2, 4)).T
            kept = norm >= settings.t_b  # (grid block, basis block)
            g, p = np.nonzero(kept)  # grid-block major: BCS(C) order
            rows.append(p)
            cols.append(g + g0)
            basis = np.flatnonzero(kept.any(axis=0))
            kept = kept[:, basis]
            positions = self._positions(basis)
            shells = shells_holding(self.ao_loc, lay.basis_perm[positions[positions < lay.nao]])
            chunk = Chunk(g0, g1, basis, kept, np.where(kept, norm[:, basis], 0.0), shells)
            if cache:
                chunk.ao = self._masked(ao[positions], chunk)
                cached_bytes += chunk.ao.nbytes
                if settings.ao_cache == "auto" and cached_bytes > settings.cpu_cache_mb * 1e6:
                    cache = False
                    for c in self.chunks:
                        c.ao = None
                    chunk.ao = None
            self.chunks.append(chunk)
        self.cached = cache
        self.pattern = BlockPattern.from_blocks(
            lay.nbb, lay.ngb, np.concatenate(rows), np.concatenate(cols)
        )
        self.rotation = forms.CholeskyRotation(np.argsort(lay.basis_perm))
        self.setup_seconds = time.perf_counter() - t0
        self.counts: dict[str, int] = {}
        self.selected: tuple[int, ...] | None = None

    # -- tasks: one per chunk ---------------------------------------------------------------
    def tasks(self) -> list[XcTask]:
        """The engine's grid tasks, one per chunk (``tasks.py``)."""
        ranges = [(c.g0, c.g1) for c in self.chunks]
        return grid_tasks(self.pattern.col_ptr, self.layout.d, ranges)

    def select(self, tasks) -> None:
        """Integrate only the chunks of ``tasks`` (indices into ``tasks()``; a collection, or an
        iterator the next call draws from) from now on; None for all of them."""
        self.selected = checked_selection(tasks, len(self.chunks))

    def _active(self):
        if self.selected is None:
            return self.chunks
        return (self.chunks[i] for i in self.selected)

    # -- operands ---------------------------------------------------------------------------
    def _positions(self, basis: np.ndarray) -> np.ndarray:
        """Layout positions of the basis functions of the basis blocks ``basis``."""
        d = self.layout.d
        return (basis[:, None] * d + np.arange(d)).ravel()

    def _evaluate(self, g0: int, g1: int, basis: np.ndarray, shells=None) -> np.ndarray:
        """AO values of the basis blocks ``basis`` at grid blocks [g0, g1) as (basis function,
        comp, point), zero on padding; ``shells`` (a mask over the molecule's shells) limits
        the evaluation to the shells holding them."""
        lay, d = self.layout, self.layout.d
        pts = slice(g0 * d, min(g1 * d, lay.npts))
        coords = lay.coords[pts]
        non0tab = None
        if shells is not None:
            non0tab = np.tile(shells.astype(np.uint8), (-(-len(coords) // BLKSIZE), 1))
        ao = eval_ao_cols(self.mol, coords, self.deriv, non0tab)  # (comp, nao, points)
        positions = self._positions(basis)
        real = positions < lay.nao
        out = np.zeros((len(positions), self.ncomp, (g1 - g0) * d))
        out[real, :, : len(coords)] = ao[:, lay.basis_perm[positions[real]]].transpose(1, 0, 2)
        return out

    def _masked(self, ao: np.ndarray, chunk: Chunk) -> np.ndarray:
        """``ao`` (the chunk's basis functions, comp, points) with the tiles of blocks a grid
        block does not keep set to zero."""
        d, nb, ng = self.layout.d, len(chunk.basis), chunk.g1 - chunk.g0
        a5 = ao.reshape(nb, d, self.ncomp, ng, d)
        a5 *= chunk.kept.T[:, None, None, :, None]
        return ao

    def _ao(self, chunk: Chunk) -> np.ndarray:
        if chunk.ao is not None:
            return chunk.ao
        ao = self._evaluate(chunk.g0, chunk.g1, chunk.basis, chunk.shells)
        return self._masked(ao, chunk)

    def _layout_matrix(self, dm: np.ndarray) -> np.ndarray:
        lay = self.layout
        out = np.zeros((lay.nao_pad, lay.nao_pad))
        out[: lay.nao, : lay.nao] = np.asarray(dm, dtype=np.float64)[
            np.ix_(lay.basis_perm, lay.basis_perm)
        ]
        return out

    def _points(self, chunk: Chunk) -> slice:
        d = self.layout.d
        return slice(chunk.g0 * d, chunk.g1 * d)

    # -- Eq. 4: rho, grad rho, tau from R = D Phi (or C^T Phi) on kept blocks ----------------
    def density(self, dm: np.ndarray, xctype: str, orbitals=None) -> np.ndarray:
        """rho (and grad rho, tau) from R = D Phi, or from R = C^T Phi when ``orbitals``
        (C sqrt(n) of D) are given and the form setting picks them (``forms.py``)."""
        op = self._density_operand(dm, xctype, orbitals)
        rho = np.zeros((NVAR[xctype], self.layout.npts_pad))
        for chunk in self._active():
            if len(chunk.basis):  # a chunk that keeps no block has zero density
                rho[:, self._points(chunk)] = op.chunk(chunk, self._ao(chunk))
        op.finish()
        return rho[:, : self.layout.npts]

    def _density_operand(self, dm, xctype: str, orbitals):
        lay, st = self.layout, self.settings
        dml = self._layout_matrix(dm)
        dmax = block_maxnorm(dml, lay.d)
        orb = forms.orbital_operands(orbitals, self.rotation, st, lay, np)
        form = forms.choose(
            st.density_form, orbitals, np.diff(self.pattern.col_ptr), xctype, lay.d,
            lambda: float((dmax >= st.t_b).mean()),
            lambda: forms.orbital_fill(orb[1], self.pattern.row_idx, st.t_b, np),
        )  # fmt: skip
        self.counts["density_form"] = form
        if form == "orbitals":
            return _OrbitalDensity(self, orb[0], orb[1], xctype)
        return _MatrixDensity(self, dml, dmax, xctype)

    # -- Eq. 5: F = Phi W Phi^T (+ GGA, meta-GGA terms) on kept block pairs ------------------
    def potential(self, wv: np.ndarray, xctype: str) -> np.ndarray:
        return self._products("potential", wv, xctype)

    # -- the XC nuclear gradient: V_k = sum_c L_kc R_c^T on kept block pairs ----------------
    def gradient(self, wv: np.ndarray, xctype: str) -> np.ndarray:
        """(3, nao, nao): V_k of ``integrate.gradient_operands`` (PySCF's gradient ``vmat``
        is -V); the engine must hold AO derivatives one order above the energy's."""
        return self._products("gradient", wv, xctype)

    def _products(self, product: str, wv: np.ndarray, xctype: str) -> np.ndarray:
        acc = _PRODUCTS[product](self, xctype)
        w = np.zeros((wv.shape[0], self.layout.npts_pad))
        w[:, : self.layout.npts] = wv
        for chunk in self._active():
            if len(chunk.basis):
                acc.chunk(chunk, self._ao(chunk), w[:, self._points(chunk)])
        return acc.result()

    # -- both, batch by batch ---------------------------------------------------------------
    def xc_pass(self, densities: list, xctype: str, xc, product: str = "potential") -> list:
        """``integrate.xc_pass``: with the AO values cached, the whole grid at once; otherwise
        densities, ``xc`` and potentials (or gradient matrices) batch by batch, so that a
        batch's AO values are made once per call instead of once for the densities and again
        for the products. With a task selection, only the selected chunks' points."""
        if self.cached and self.selected is None:
            return integrate.whole_grid_pass(self, densities, xctype, xc, product)
        lay = self.layout
        ops = [self._density_operand(dm, xctype, orbitals) for dm, orbitals in densities]
        pots = []
        per_chunk = CHUNK_BLOCKS * lay.d * lay.nao * self.ncomp * 8
        size = max(1, int(BATCH_BYTES // per_chunk))
        for batch in self._batches(size):
            aos = [self._ao(chunk) for chunk in batch]
            p0, p1 = batch[0].g0 * lay.d, min(batch[-1].g1 * lay.d, lay.npts)
            rhos = [
                np.concatenate([self._chunk_density(op, c, a) for c, a in zip(batch, aos)], axis=1)
                for op in ops
            ]
            wvs = xc(slice(p0, p1), [rho[:, : p1 - p0] for rho in rhos])
            pots = pots or [_PRODUCTS[product](self, xctype) for _ in wvs]
            for pot, wv in zip(pots, wvs):
                w = np.zeros((wv.shape[0], batch[-1].g1 * lay.d - p0))
                w[:, : p1 - p0] = wv
                for chunk, ao in zip(batch, aos):
                    if not len(chunk.basis):
                        continue
                    a = (chunk.g0 * lay.d) - p0
                    pot.chunk(chunk, ao, w[:, a : a + (chunk.g1 - chunk.g0) * lay.d])
        for op in ops:
            op.finish()
        pots = pots or [_PRODUCTS[product](self, xctype) for _ in densities]  # none selected
        return [pot.result() for pot in pots]

    def _chunk_density(self, op, chunk: Chunk, ao: np.ndarray) -> np.ndarray:
        """The density rows of one chunk; zero where the chunk keeps no block."""
        if len(chunk.basis):
            return op.chunk(chunk, ao)
        return np.zeros((NVAR[op.xctype], (chunk.g1 - chunk.g0) * self.layout.d))

    def _batches(self, size: int):
        """Runs of consecutive selected chunks, ``size`` chunks at most each; one chunk at a
        time from a selection drawn lazily."""
        chosen = range(len(self.chunks)) if self.selected is None else self.selected
        if isinstance(chosen, Iterator):
            for i in chosen:
                yield [self.chunks[i]]
            return
        for a, b in runs(chosen):
            for c0, c1 in _ranges(b - a, size):
                yield self.chunks[a + c0 : a + c1]

    def stats(self) -> dict:
        p = self.pattern
        out = {
            "nao": self.layout.nao,
            "npoints": self.layout.npts,
            "basis_blocks": p.nbr,
            "grid_blocks": p.nbc,
            "retained_blocks": p.nblk,
            "retained_fraction": p.retained_fraction(),
            "ao_cached": self.cached,
            "setup_seconds": self.setup_seconds,
        }
        return out | pair_fractions(self.counts)


class _MatrixDensity:
    """R_k = D grad_k(Phi) per chunk (k = 0: Phi): rho = sum Phi R_0, grad rho = 2 sum
    grad(Phi) R_0, tau = 1/2 sum_k grad_k(Phi) R_k; the D tile of a pair passes where
    max|D_pq| >= t_b and Eq. 17 holds."""

    def __init__(self, eng: CPUBlockEngine, dml: np.ndarray, dmax: np.ndarray, xctype: str):
        self.eng, self.dml, self.dmax, self.xctype = eng, dml, dmax, xctype
        self.nright = 4 if xctype == "MGGA" else 1
        self.executed = 0

    def chunk(self, chunk: Chunk, ao: np.ndarray) -> np.ndarray:
        eng, d, st = self.eng, self.eng.layout.d, self.eng.settings
        b = chunk.basis
        dmax = self.dmax[np.ix_(b, b)]
        ph = chunk.phimax
        candidate = chunk.kept[:, :, None] & chunk.kept[:, None, :]
        bound = dmax[None] * np.maximum(ph[:, :, None], ph[:, None, :])
        pairs = _Pairs(candidate, candidate & (dmax >= st.t_b)[None] & (bound >= st.t_d))
        self.executed += pairs.executed
        pos = eng._positions(b)
        sub = self.dml[np.ix_(pos, pos)]
        right = ao[:, : self.nright]
        r = (_scaled_tiles(sub, pairs.tiles, d) @ right.reshape(len(pos), -1)).reshape(right.shape)
        _correct_product(r, sub, right, pairs, d)
        return _contract(ao, r, self.xctype)

    def finish(self) -> None:
        lay = self.eng.layout
        self.eng.counts["density_pairs"] = self.executed
        self.eng.counts["density_candidates"] = lay.nbb**2 * lay.ngb


class _OrbitalDensity:
    """R = C^T Phi per chunk (C sqrt(n) of D): rho = sum_i R_i^2 and its derivatives; the
    C^T tile [o, q] passes at a grid block keeping q when max|C_oq| max|Phi_qg| >= t_d (the
    products the GPU's kd_density_orb executes)."""

    def __init__(self, eng: CPUBlockEngine, ct: np.ndarray, cmax: np.ndarray, xctype: str):
        d = eng.layout.d
        self.eng, self.cmax, self.xctype = eng, cmax, xctype
        self.nob = len(ct)
        self.ctl = ct.transpose(0, 2, 1, 3).reshape(self.nob * d, -1)  # C^T in layout order
        self.nright = 1 if xctype == "LDA" else 4  # the gradient needs C^T grad Phi
        self.executed = 0

    def chunk(self, chunk: Chunk, ao: np.ndarray) -> np.ndarray:
        eng, d, st = self.eng, self.eng.layout.d, self.eng.settings
        b = chunk.basis
        shape = (chunk.g1 - chunk.g0, self.nob, len(b))
        candidate = np.broadcast_to(chunk.kept[:, None, :], shape)
        passing = candidate & (self.cmax[None, :, b] * chunk.phimax[:, None, :] >= st.t_d)
        pairs = _Pairs(candidate, passing)
        self.executed += pairs.executed
        sub = self.ctl[:, eng._positions(b)]
        right = ao[:, : self.nright]
        r = _scaled_tiles(sub, pairs.tiles, d) @ right.reshape(len(sub.T), -1)
        r = r.reshape(len(sub), self.nright, -1)
        _correct_product(r, sub, right, pairs, d)
        rho = np.empty((NVAR[self.xctype], r.shape[2]))
        rho[0] = np.einsum("ip,ip->p", r[:, 0], r[:, 0])
        if self.xctype != "LDA":
            rho[1:4] = 2 * np.einsum("ip,ikp->kp", r[:, 0], r[:, 1:4])
        if self.xctype == "MGGA":
            rho[4] = 0.5 * np.einsum("ikp,ikp->p", r[:, 1:4], r[:, 1:4])
        return rho

    def finish(self) -> None:
        lay = self.eng.layout
        self.eng.counts["density_pairs"] = self.executed
        self.eng.counts["density_candidates"] = self.nob * lay.nbb * lay.ngb


def _contract(ao: np.ndarray, r: np.ndarray, xctype: str) -> np.ndarray:
    """rho (and grad rho, tau) at the chunk's points from its AO values and R = D Phi."""
    rho = np.empty((NVAR[xctype], ao.shape[2]))
    rho[0] = np.einsum("ip,ip->p", ao[:, 0], r[:, 0])
    if xctype != "LDA":
        rho[1:4] = 2 * np.einsum("ikp,ip->kp", ao[:, 1:4], r[:, 0])
    if xctype == "MGGA":
        rho[4] = 0.5 * np.einsum("ikp,ikp->p", ao[:, 1:4], r[:, 1:4])
    return rho


class _Potential:
    """F accumulated chunk by chunk as G + G^T (the GGA density term was halved for it):
    G = Phi_0 A^T (GGA, meta-GGA; A = sum_c wv_c Phi_c) plus the symmetric term
    S = sum_k X_k W X_k^T (LDA: X = Phi, W = wv_0; meta-GGA: X = grad Phi, W = wv_tau) as its
    upper block triangle with halved diagonal tiles, which takes about 5/8 of S's products in
    four block-row groups. The output tiles follow Eq. 17's pair decisions; at the end, the
    basis order goes back to PySCF's."""

    def __init__(self, eng: CPUBlockEngine, xctype: str):
        self.eng, self.xctype = eng, xctype
        self.f = np.zeros((eng.layout.nao_pad, eng.layout.nao_pad))
        self.executed = 0

    def chunk(self, chunk: Chunk, ao: np.ndarray, w: np.ndarray) -> None:
        """``w``: the weighted potentials (rows of ``integrate``) at the chunk's points."""
        eng, d, st = self.eng, self.eng.layout.d, self.eng.settings
        ng, nb = chunk.g1 - chunk.g0, len(chunk.basis)
        n = nb * d
        wmax = np.abs(w).reshape(len(w), ng, d).max(axis=2)  # (component, grid block)
        ph = chunk.phimax
        both = ph[:, :, None] * ph[:, None, :]
        aow = None
        if self.xctype == "LDA":
            bound = both * wmax[0][:, None, None]
        else:
            aow = np.einsum("ikp,kp->ip", ao[:, :4], w[:4])  # A = sum_c wv_c Phi_c
            amax = np.abs(aow).reshape(nb, d, ng, d).max(axis=(1, 3)).T
            bound = ph[:, :, None] * amax[:, None, :] + amax[:, :, None] * ph[:, None, :]
            if self.xctype == "MGGA":
                bound += both * wmax[4][:, None, None]
        candidate = chunk.kept[:, :, None] & chunk.kept[:, None, :]
        passing = candidate & (bound >= st.t_d)
        alive = passing.any(axis=2)  # (grid block, basis block): one of its pairs passes
        if (chunk.kept & ~alive).any():
            # a block whose pairs all fail at a grid block leaves the products there: no
            # corrections for them
            keep = alive.T[:, None, :, None]  # (basis block, 1, grid block, 1)
            ao = (ao.reshape(nb, d, -1, ng, d) * keep[:, :, None]).reshape(ao.shape)
            if aow is not None:
                aow = (aow.reshape(nb, d, ng, d) * keep).reshape(aow.shape)
            candidate = alive[:, :, None] & alive[:, None, :]
        pairs = _Pairs(candidate, passing)
        self.executed += pairs.executed
        f = ao[:, 0] @ aow.T if aow is not None else np.zeros((n, n))
        sym = _SYMMETRIC.get(self.xctype)
        if sym is not None:
            comps, row = sym
            x = ao[:, comps].reshape(n, -1)
            y = (ao[:, comps] * w[row]).reshape(n, -1)
            u = np.zeros((n, n))
            edges = np.linspace(0, nb, min(SYMMETRIC_GROUPS, nb) + 1).astype(int) * d
            for a, b in zip(edges[:-1], edges[1:]):
                u[a:b, a:] = x[a:b] @ y[a:].T
            # the groups' squares on the diagonal gave lower tiles too: keep p < r whole and
            # half of each diagonal tile, so that S = U + U^T
            f += _scaled_tiles(u, np.triu(np.ones((nb, nb)), 1) + 0.5 * np.eye(nb), d)
        f = _scaled_tiles(f, pairs.tiles, d)
        if len(pairs.g):
            self._correct(f, pairs, ao, aow, w, nb, ng)
        pos = eng._positions(chunk.basis)
        self.f[np.ix_(pos, pos)] += f

    def _correct(self, f, pairs: _Pairs, ao, aow, w, nb: int, ng: int) -> None:
        """Adds or takes away G's tile product of each corrected (grid block, pair): Phi_0,p
        A_r^T and half of X_p W X_r^T, so that G + G^T gains the pair's whole term."""
        d = self.eng.layout.d
        g, o, i = pairs.g, pairs.out, pairs.inp
        ao5 = ao.reshape(nb, d, ao.shape[1], ng, d)
        used = slice(0, 4) if self.xctype == "MGGA" else slice(0, 1)
        left, right = ao5[o, :, used, g], ao5[i, :, used, g]  # (triple, function, comp, point)
        sym = _SYMMETRIC.get(self.xctype)
        if sym is not None:
            comps, row = sym
            left[:, :, comps] *= 0.5 * w[row].reshape(ng, d)[g][:, None, None, :]
        if aow is not None:
            right[:, :, 0] = aow.reshape(nb, d, ng, d)[i, :, g]
        left *= pairs.sign[:, None, None, None]
        prod = np.matmul(left.reshape(len(g), d, -1), right.reshape(len(g), d, -1).swapaxes(1, 2))
        _add_tiles(f.reshape(nb, d, nb, d), o, i, prod)

    def result(self) -> np.ndarray:
        lay = self.eng.layout
        self.eng.counts["potential_pairs"] = self.executed
        self.eng.counts["potential_candidates"] = lay.nbb**2 * lay.ngb
        f = self.f + self.f.T
        out = np.empty((lay.nao, lay.nao))
        out[np.ix_(lay.basis_perm, lay.basis_perm)] = f[: lay.nao, : lay.nao]
        return out


def gradient_chunk(ao, w, kept, xctype: str, t_d: float, xp, per_chunk: bool = False) -> tuple:
    """V_k (3, n, n) of one chunk and the (grid block, pair) products executed (times 3).

    ``ao``: (n = nb d functions, comp, ng d points), zero on tiles not kept; ``w``: the
    weighted potentials at the points; ``kept``: (ng, nb). Eq. 17 with the gradient's
    operands: the pair (p, r) passes at a grid block where both are kept and
    max|L_p| max|R_r| >= t_d (maxima over k, c and the block's points), for the three k
    together. The left operand's rows are grouped (basis block, k, function): one product per
    chunk gives all three, one small product per corrected (grid block, pair) (``_Pairs``).
    ``per_chunk``: Eq. 17 decided per chunk instead (a pair passing at any grid block of the
    chunk runs over all of it; no corrections: the device's large chunks, where correcting
    tile by tile would gather more than the product). ``xp``: NumPy or CuPy."""
    ng, nb = kept.shape
    n = ao.shape[0]
    d = n // nb
    left, right = gradient_operands(ao, w, xctype, xp)  # (3, n, m, P), (n, m, P)
    m = right.shape[1]
    left = left.reshape(3, nb, d, m, ng * d).transpose(1, 0, 2, 3, 4)  # (nb, 3, d, m, P)
    lmax = xp.abs(left).reshape(nb, 3 * d * m, ng, d).max(axis=(1, 3)).T  # (g, block)
    rmax = xp.abs(right).reshape(nb, d * m, ng, d).max(axis=(1, 3)).T
    candidate = kept[:, :, None] & kept[:, None, :]
    passing = candidate & (lmax[:, :, None] * rmax[:, None, :] >= t_d)
    pairs = _Pairs(candidate, passing, xp, per_chunk)
    lrows = xp.ascontiguousarray(left).reshape(3 * n, -1)
    f = (lrows @ right.reshape(n, -1).T).reshape(nb, 3 * d, nb, d)
    f *= pairs.tiles[:, None, :, None]
    if len(pairs.g):
        g, o, i = pairs.g, pairs.out, pairs.inp
        lt = left.reshape(nb, 3, d, m, ng, d)[o, :, :, :, g, :]  # (T, 3, d, m, d)
        rt = right.reshape(nb, d, m, ng, d)[i, :, :, g, :]  # (T, d, m, d)
        lt = lt.reshape(len(g), 3 * d, m * d) * pairs.sign[:, None, None]
        prod = xp.matmul(lt, rt.reshape(len(g), d, m * d).swapaxes(1, 2))
        _add_tiles_any(f, o, i, prod, xp)
    f = f.reshape(nb, 3, d, n).transpose(1, 0, 2, 3).reshape(3, n, n)
    return f, 3 * pairs.executed


def _add_tiles_any(target, a, b, values, xp) -> None:
    """``_add_tiles`` for NumPy, CuPy's scatter-add for device arrays."""
    if xp is np:
        _add_tiles(target, a, b, values)
        return
    import cupyx

    cupyx.scatter_add(target, (a, slice(None), b), values)


class _Gradient:
    """V_k = sum_c L_kc R_c^T (``integrate.gradient_operands``) accumulated chunk by chunk
    (``gradient_chunk``); at the end, the basis order goes back to PySCF's."""

    def __init__(self, eng: CPUBlockEngine, xctype: str):
        self.eng, self.xctype = eng, xctype
        self.f = np.zeros((3, eng.layout.nao_pad, eng.layout.nao_pad))
        self.executed = 0

    def chunk(self, chunk: Chunk, ao: np.ndarray, w: np.ndarray) -> None:
        eng = self.eng
        f, executed = gradient_chunk(ao, w, chunk.kept, self.xctype, eng.settings.t_d, np)
        self.executed += executed
        pos = eng._positions(chunk.basis)
        self.f[:, pos[:, None], pos[None, :]] += f

    def result(self) -> np.ndarray:
        lay = self.eng.layout
        self.eng.counts["gradient_pairs"] = self.executed
        self.eng.counts["gradient_candidates"] = 3 * lay.nbb**2 * lay.ngb
        out = np.empty((3, lay.nao, lay.nao))
        perm = lay.basis_perm
        out[:, perm[:, None], perm[None, :]] = self.f[:, : lay.nao, : lay.nao]
        return out


_PRODUCTS = {"potential": _Potential, "gradient": _Gradient}


class CPUDenseEngine:
    """EXC-OpenBLAS: the same AO values and XC step, dense products through NumPy's BLAS."""

    name = "exc-openblas"
    xp = np

    def __init__(self, mol, layout: Layout, settings: Settings, deriv: int, batch: int = 8192):
        t0 = time.perf_counter()
        self.mol, self.layout, self.deriv, self.batch = mol, layout, deriv, batch
        self.weights = layout.weights
        nbytes = NCOMP[deriv] * layout.npts * layout.nao * 8
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

    def gradient(self, wv: np.ndarray, xctype: str) -> np.ndarray:
        """(3, nao, nao): V_k = sum_c L_kc R_c^T on every AO (``integrate.gradient_operands``)."""
        nao = self.layout.nao
        f = np.zeros((3, nao, nao))
        for i0, i1, ao in self._batches():
            left, right = gradient_operands(ao.transpose(2, 0, 1), wv[:, i0:i1], xctype, np)
            r = right.reshape(nao, -1)
            for k in range(3):
                f[k] += left[k].reshape(nao, -1) @ r.T
        return f

    def stats(self) -> dict:
        return {"ao_cached": self.ao is not None, "setup_seconds": self.setup_seconds}


def make_engine(kind: str, mol, layout: Layout, settings: Settings, xctype: str, deriv=None):
    """``deriv``: the AO derivative order to hold, by default the energy's (``AO_DERIV``)."""
    cls = {"block": CPUBlockEngine, "dense": CPUDenseEngine}[kind]
    return cls(mol, layout, settings, AO_DERIV[xctype] if deriv is None else deriv)
