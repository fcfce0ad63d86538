"""Primitive-pair data of the segment pairs a launch's quartets use (``lowering.kernel``'s
``PAIR_FIELDS``).

Each distinct (first, second) segment pair of the quartets, bra or ket, gets one row block of
``n1 * n2`` primitive pairs in the loops' order (first's primitive outer). A kernel then reads
its quartet's bra and ket pair (``index``) and loops over their rows instead of recomputing the
exponential and reciprocal of every primitive pair in every primitive quartet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .basis import SegmentedBasis


@dataclass(frozen=True)
class PrimitivePairs:
    index: np.ndarray  # (n, 2) int32: bra pair and ket pair of each quartet
    prim: np.ndarray  # (npair, 2) int32: first row in ``data``, row count
    data: np.ndarray  # (nrows, 6) float64: the fields of PAIR_FIELDS


def primitive_pairs(basis: SegmentedBasis, quartets: np.ndarray) -> PrimitivePairs:
    """The pair data of ``quartets`` (n, 4) segment indices."""
    quartets = np.asarray(quartets, dtype=np.int64).reshape(-1, 4)
    n, nseg = len(quartets), len(basis.l)
    keys = np.concatenate(
        [quartets[:, 0] * nseg + quartets[:, 1], quartets[:, 2] * nseg + quartets[:, 3]]
    )
    pairs, inverse = np.unique(keys, return_inverse=True)
    first, second = np.divmod(pairs, nseg)
    n2 = basis.prim[second, 1].astype(np.int64)
    counts = basis.prim[first, 1].astype(np.int64) * n2
    starts = np.cumsum(counts) - counts
    owner = np.repeat(np.arange(len(pairs)), counts)  # the pair of each row
    local = np.arange(int(counts.sum())) - starts[owner]
    p1 = basis.prim[first, 0][owner] + local // n2[owner]
    p2 = basis.prim[second, 0][owner] + local % n2[owner]
    e1, e2 = basis.exponents[p1], basis.exponents[p2]
    zeta = e1 + e2
    ooz = 1.0 / zeta
    r12 = basis.xyz[second][owner] - basis.xyz[first][owner]
    kz = (
        basis.coefficients[p1]
        * basis.coefficients[p2]
        * np.exp(-e1 * e2 * ooz * np.einsum("ij,ij->i", r12, r12))
        * ooz
    )
    data = np.column_stack([zeta, ooz, kz, (e2 * ooz)[:, None] * r12])
    return PrimitivePairs(
        index=np.ascontiguousarray(inverse.reshape(2, n).T, dtype=np.int32),
        prim=np.ascontiguousarray(np.column_stack([starts, counts]), dtype=np.int32),
        data=np.ascontiguousarray(data),
    )
