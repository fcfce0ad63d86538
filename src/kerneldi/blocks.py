"""Fixed d x d blocks, block summaries, BCS(R)/BCS(C) layouts and block-pair screening.

Paper Sec. III-B/C and Appendix A-C/D: a block is kept when its max-norm reaches ``t_b``
(Eqs. 11-14); a pair of kept blocks is executed when the product of their max-norms reaches
``t_d`` (Eqs. 17-19); executed pairs are enumerated with an exclusive prefix sum (Algorithm 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def nblocks(n: int, d: int) -> int:
    return -(-n // d)


def padded(a: np.ndarray, d: int) -> np.ndarray:
    """``a`` with zero rows/columns appended so both sizes are multiples of ``d``."""
    m, n = a.shape
    out = np.zeros((nblocks(m, d) * d, nblocks(n, d) * d), dtype=a.dtype)
    out[:m, :n] = a
    return out


def tiles(a: np.ndarray, d: int) -> np.ndarray:
    """A padded matrix as its (block-row, block-column, d, d) tiles."""
    p = padded(a, d)
    return p.reshape(p.shape[0] // d, d, p.shape[1] // d, d).transpose(0, 2, 1, 3)


def block_maxnorm(a: np.ndarray, d: int) -> np.ndarray:
    """Eq. 11: max |entry| of every d x d block (the last blocks are zero-padded)."""
    return np.abs(tiles(a, d)).max(axis=(2, 3))


def exclusive_scan(mask: np.ndarray) -> np.ndarray:
    """P[i] = number of set entries before position i; P has len(mask) + 1 entries."""
    out = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(np.asarray(mask, dtype=np.int64), out=out[1:])
    return out


def compact(mask: np.ndarray) -> tuple[int, np.ndarray]:
    """Algorithm 1: the count S and the gap-free index array I of the set entries."""
    p = exclusive_scan(mask)
    idx = np.empty(p[-1], dtype=np.int64)
    hit = p[1:] != p[:-1]
    idx[p[1:][hit] - 1] = np.flatnonzero(hit)
    return int(p[-1]), idx


@dataclass
class BCSR:
    """Block Compressed Sparse Row: kept blocks grouped by block row, row-major d x d data."""

    shape: tuple[int, int]
    d: int
    row_ptr: np.ndarray
    col_idx: np.ndarray
    data: np.ndarray
    maxnorm: np.ndarray

    @classmethod
    def from_dense(cls, a: np.ndarray, d: int, t_b: float = 0.0) -> BCSR:
        t = tiles(a, d)
        norms = np.abs(t).max(axis=(2, 3))
        keep = norms >= t_b
        rows, cols = np.nonzero(keep)  # row-major scan: grouped by row, columns ascending
        row_ptr = np.zeros(t.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=t.shape[0]), out=row_ptr[1:])
        return cls(a.shape, d, row_ptr, cols, t[rows, cols].copy(), norms[rows, cols])

    def to_dense(self) -> np.ndarray:
        nbr = len(self.row_ptr) - 1
        rows = np.repeat(np.arange(nbr), np.diff(self.row_ptr))
        return _assemble(self.shape, self.d, rows, self.col_idx, self.data)


@dataclass
class BCSC:
    """Block Compressed Sparse Column: the column mirror of BCS(R)."""

    shape: tuple[int, int]
    d: int
    col_ptr: np.ndarray
    row_idx: np.ndarray
    data: np.ndarray
    maxnorm: np.ndarray

    @classmethod
    def from_dense(cls, a: np.ndarray, d: int, t_b: float = 0.0) -> BCSC:
        t = tiles(a, d)
        norms = np.abs(t).max(axis=(2, 3))
        keep = norms >= t_b
        cols, rows = np.nonzero(keep.T)  # column-major scan: grouped by column
        col_ptr = np.zeros(t.shape[1] + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=t.shape[1]), out=col_ptr[1:])
        return cls(a.shape, d, col_ptr, rows, t[rows, cols].copy(), norms[rows, cols])

    def to_dense(self) -> np.ndarray:
        nbc = len(self.col_ptr) - 1
        cols = np.repeat(np.arange(nbc), np.diff(self.col_ptr))
        return _assemble(self.shape, self.d, self.row_idx, cols, self.data)


def _assemble(shape, d, rows, cols, data) -> np.ndarray:
    m, n = shape
    out = np.zeros((nblocks(m, d), nblocks(n, d), d, d), dtype=data.dtype)
    out[rows, cols] = data
    return out.transpose(0, 2, 1, 3).reshape(out.shape[0] * d, out.shape[1] * d)[:m, :n]


def executable_pairs(a: BCSR, b: BCSC, t_d: float) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """Eq. 19 for every output block C_pr: the kept pairs (A_pq, B_qr) with a_pq b_qr >= t_d,
    as (p, r, positions in A's blocks, positions in B's blocks)."""
    out = []
    for p in range(len(a.row_ptr) - 1):
        a0, a1 = a.row_ptr[p], a.row_ptr[p + 1]
        for r in range(len(b.col_ptr) - 1):
            b0, b1 = b.col_ptr[r], b.col_ptr[r + 1]
            # Eq. 15: intersection of A's block row p and B's block column r
            _, ia, ib = np.intersect1d(
                a.col_idx[a0:a1], b.row_idx[b0:b1], assume_unique=True, return_indices=True
            )
            ia, ib = ia + a0, ib + b0
            count, keep = compact(a.maxnorm[ia] * b.maxnorm[ib] >= t_d)
            if count:
                out.append((p, r, ia[keep], ib[keep]))
    return out


def block_sparse_matmul(a: BCSR, b: BCSC, t_d: float) -> tuple[np.ndarray, int]:
    """C = A B over executable block pairs only (Eq. 18); returns C and the number of pairs."""
    m, n = a.shape[0], b.shape[1]
    d = a.d
    c = np.zeros((nblocks(m, d), nblocks(n, d), d, d))
    npairs = 0
    for p, r, ia, ib in executable_pairs(a, b, t_d):
        c[p, r] = np.einsum("kuv,kvw->uw", a.data[ia], b.data[ib])
        npairs += len(ia)
    dense = c.transpose(0, 2, 1, 3).reshape(c.shape[0] * d, c.shape[1] * d)
    return dense[:m, :n], npairs


@dataclass
class BlockPattern:
    """The kept blocks of the AO operand (basis blocks x grid blocks) in both layouts.

    Blocks are numbered in BCS(C) order: grid block g owns blocks ``col_ptr[g]:col_ptr[g+1]``,
    whose basis blocks are ``row_idx`` (ascending). The BCS(R) mirror lists, for basis block p,
    its grid blocks ``col_idx[row_ptr[p]:row_ptr[p+1]]`` (ascending) and their block numbers
    ``row_blk``, so both orientations share one copy of the block data.
    """

    nbr: int
    nbc: int
    col_ptr: np.ndarray
    row_idx: np.ndarray
    row_ptr: np.ndarray
    col_idx: np.ndarray
    row_blk: np.ndarray

    @classmethod
    def from_blocks(cls, nbr: int, nbc: int, rows: np.ndarray, cols: np.ndarray) -> BlockPattern:
        """From the kept blocks' (row, column), given in BCS(C) order."""
        rows = np.asarray(rows, dtype=np.int32)
        cols = np.asarray(cols, dtype=np.int32)
        col_ptr = np.zeros(nbc + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=nbc), out=col_ptr[1:])
        order = np.lexsort((cols, rows)).astype(np.int32)
        row_ptr = np.zeros(nbr + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=nbr), out=row_ptr[1:])
        return cls(nbr, nbc, col_ptr, rows, row_ptr, cols[order], order)

    @property
    def nblk(self) -> int:
        return len(self.row_idx)

    def block_cols(self) -> np.ndarray:
        """Grid block of every block (BCS(C) order)."""
        return np.repeat(np.arange(self.nbc, dtype=np.int32), np.diff(self.col_ptr))

    def retained_fraction(self) -> float:
        return self.nblk / max(1, self.nbr * self.nbc)

    def tile_pairs(self, chunk: int = 1 << 16) -> np.ndarray:
        """Output tiles (p, r), p <= r, whose block rows share at least one grid block."""
        shared = np.zeros((self.nbr, self.nbr), dtype=np.float32)
        cols = self.block_cols()
        for g0 in range(0, self.nbc, chunk):
            b0, b1 = self.col_ptr[g0], self.col_ptr[min(g0 + chunk, self.nbc)]
            m = np.zeros((self.nbr, min(chunk, self.nbc - g0)), dtype=np.float32)
            m[self.row_idx[b0:b1], cols[b0:b1] - g0] = 1.0
            shared += m @ m.T
        p, r = np.nonzero(np.triu(shared))
        return np.stack([p, r], axis=1).astype(np.int32)


def pair_fractions(counts: dict) -> dict:
    """Executed over candidate block products of the last density, potential and gradient,
    and the density form that ran (engines' ``counts``)."""
    out = {}
    for kind in ("density", "potential", "gradient"):
        if f"{kind}_pairs" in counts:
            out[f"{kind}_pair_fraction"] = counts[f"{kind}_pairs"] / counts[f"{kind}_candidates"]
    if "density_form" in counts:
        out["density_form"] = counts["density_form"]
    return out
