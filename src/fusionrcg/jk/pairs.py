"""Shell pairs of a J/K engine: oriented segment pairs with their primitive-pair rows and
Schwarz bounds, made once per molecule and basis.

A pair (a, b) is oriented as the kernels take it: the higher l first and, for equal l, the
shell with the larger largest exponent first (the HRR then builds on the tighter centre, which
rounds better). Pairs are grouped by pair class (la, lb) and, within a class, sorted by
descending Schwarz bound Q_ab = max |(ab|ab)|^(1/2), so that the kets a bra pair needs at a
given threshold are a prefix of its ket class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..angmom import LMAX
from ..runtime.basis import SegmentedBasis
from .arrays import expand

PAIR_ESTIMATE_CUTOFF = 1e-22
"""Segment pairs whose overlap estimate sum|c_a| sum|c_b| exp(-mu_min R^2) is below this are
left out before their Schwarz bound is computed (mu_min: reduced exponent of the most diffuse
primitives; every primitive pair decays at least as fast)."""

PRIMITIVE_CUTOFF = 1e-22
"""Primitive pairs whose factor |c1 c2| exp(-mu R^2) / zeta is below this are left out of a
pair's rows: a primitive quartet carries the product of a bra and a ket factor."""


@dataclass(frozen=True)
class PairGroup:
    """Pairs [start, stop) of a ``PairTable``: angular momenta (la, lb), la >= lb, and
    ``rows`` primitive pairs (n_a * n_b before the primitive cutoff), by descending bound.
    Quartets of two groups run the same number of primitive-loop trips, so a launch over them
    keeps the threads of a warp in step."""

    la: int
    lb: int
    rows: int
    start: int
    stop: int

    @property
    def key(self) -> tuple[int, int]:
        """The order of pair classes in a canonical quartet class: the bra has the larger."""
        return (self.la + self.lb, self.la)

    @property
    def size(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True)
class PairTable:
    first: Any  # (n,) int32 segment a of each pair
    second: Any  # (n,) int32 segment b
    bound: Any  # (n,) float64 Schwarz bound
    ranges: Any  # (n, 2) int32 first row in ``data``, row count
    data: Any  # (rows, 6) float64 primitive-pair fields (``lowering.kernel.PAIR_FIELDS``)
    exponents: Any  # (rows, 2) float64 the two primitive exponents of each row of ``data``
    groups: tuple[PairGroup, ...]  # by pair class, then rows

    @property
    def size(self) -> int:
        return int(self.first.shape[0])

    def deriv_data(self, xp):
        """The rows with their exponents appended (``lowering.kernel.DERIV_PAIR_FIELDS``), as
        the derivative kernels read them; same rows, so ``ranges`` index both."""
        return xp.ascontiguousarray(xp.concatenate([self.data, self.exponents], axis=1))

    def classes(self) -> dict[tuple[int, int], list[PairGroup]]:
        """The groups of each pair class (la, lb)."""
        found: dict[tuple[int, int], list[PairGroup]] = {}
        for g in self.groups:
            found.setdefault((g.la, g.lb), []).append(g)
        return found


def _segment_extremes(basis: SegmentedBasis) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    starts = basis.prim[:, 0].astype(np.intp)
    tight = np.maximum.reduceat(basis.exponents, starts)
    diffuse = np.minimum.reduceat(basis.exponents, starts)
    weight = np.add.reduceat(np.abs(basis.coefficients), starts)
    return tight, diffuse, weight


def candidate_pairs(basis: SegmentedBasis, xp) -> tuple[Any, Any]:
    """Oriented segment pairs (a, b) whose overlap estimate reaches ``PAIR_ESTIMATE_CUTOFF``."""
    tight, diffuse, weight = (xp.asarray(x) for x in _segment_extremes(basis))
    l = xp.asarray(basis.l)
    xyz = xp.asarray(basis.xyz)
    i, j = xp.tril_indices(len(basis.l))
    r2 = ((xyz[i] - xyz[j]) ** 2).sum(axis=1)
    mu = diffuse[i] * diffuse[j] / (diffuse[i] + diffuse[j])
    keep = weight[i] * weight[j] * xp.exp(-mu * r2) >= PAIR_ESTIMATE_CUTOFF
    i, j = i[keep], j[keep]
    swap = (l[j] > l[i]) | ((l[j] == l[i]) & (tight[j] > tight[i]))
    a = xp.where(swap, j, i).astype(xp.int32)
    b = xp.where(swap, i, j).astype(xp.int32)
    return a, b


def primitive_rows(basis: SegmentedBasis, a, b, xp) -> tuple[Any, Any, Any]:
    """The primitive-pair rows of pairs (a, b), first segment's primitives outer, without those
    under ``PRIMITIVE_CUTOFF``: per pair (first row, row count), the rows, and the two
    primitive exponents of each row."""
    prim = xp.asarray(basis.prim).astype(xp.int64)
    n2 = prim[b, 1]
    owner, local = expand(xp, prim[a, 1] * n2)
    p1 = prim[a, 0][owner] + local // n2[owner]
    p2 = prim[b, 0][owner] + local % n2[owner]
    e = xp.asarray(basis.exponents)
    c = xp.asarray(basis.coefficients)
    xyz = xp.asarray(basis.xyz)
    e1, e2 = e[p1], e[p2]
    zeta = e1 + e2
    ooz = 1.0 / zeta
    r12 = xyz[b][owner] - xyz[a][owner]
    kab = c[p1] * c[p2] * xp.exp(-e1 * e2 * ooz * (r12 * r12).sum(axis=1)) * ooz
    keep = xp.abs(kab) >= PRIMITIVE_CUTOFF
    pa = (e2 * ooz)[:, None] * r12
    data = xp.concatenate([zeta[:, None], ooz[:, None], kab[:, None], pa], axis=1)[keep]
    counts = xp.bincount(owner[keep], minlength=int(a.shape[0]))
    first = xp.cumsum(counts) - counts
    ranges = xp.stack([first, counts], axis=1).astype(xp.int32)
    exponents = xp.stack([e1, e2], axis=1)[keep]
    return ranges, xp.ascontiguousarray(data), xp.ascontiguousarray(exponents)


SchwarzFn = Callable[[int, int, Any, Any, Any, Any], Any]
"""(la, lb, a, b, ranges, data) -> Schwarz bound of each pair."""


def build_pair_table(basis: SegmentedBasis, arrays, schwarz: SchwarzFn) -> PairTable:
    """The pairs of ``basis`` that can contribute, with their rows and bounds (``arrays``:
    ``HostArrays`` or ``DeviceArrays``, where the table lives), grouped by class and rows."""
    xp = arrays.xp
    a, b = candidate_pairs(basis, xp)
    l = xp.asarray(basis.l)
    key = l[a].astype(xp.int64) * (LMAX + 1) + l[b]
    order = xp.argsort(key * a.shape[0] + xp.arange(a.shape[0]))  # by class, stable
    a, b, key = a[order], b[order], key[order]
    ranges, data, exponents = primitive_rows(basis, a, b, xp)
    alive = ranges[:, 1] > 0
    a, b, key, ranges = a[alive], b[alive], key[alive], ranges[alive]
    keys = arrays.to_host(key)
    nprim = basis.prim[:, 1].astype(np.int64)
    nominal = nprim[arrays.to_host(a)] * nprim[arrays.to_host(b)]
    present, starts = np.unique(keys, return_index=True)
    stops = np.append(starts[1:], len(keys))
    bound = xp.zeros(len(keys))
    parts, groups = [], []
    offset = 0
    for k, lo, hi in zip(present, starts, stops):
        la, lb = int(k) // (LMAX + 1), int(k) % (LMAX + 1)
        bound[lo:hi] = xp.asarray(schwarz(la, lb, a[lo:hi], b[lo:hi], ranges[lo:hi], data))
        rows = nominal[lo:hi]
        for r in np.unique(rows):
            members = xp.asarray(np.flatnonzero(rows == r) + lo)
            members = members[xp.argsort(-bound[members])]
            parts.append(members)
            groups.append(PairGroup(la, lb, int(r), offset, offset + int(members.shape[0])))
            offset = groups[-1].stop
    order = xp.concatenate(parts) if parts else xp.zeros(0, dtype=xp.int64)
    return PairTable(
        a[order], b[order], bound[order], ranges[order], data, exponents, tuple(groups)
    )
