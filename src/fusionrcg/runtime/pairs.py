"""Primitive-pair data of the segment pairs a launch's quartets use (``lowering.kernel``'s
``PAIR_FIELDS``), and the launch's work items.

Each distinct (first, second) segment pair of the quartets, bra or ket, gets one block of
``n1 * n2`` rows in the loops' order (first's primitive outer). A kernel thread reads its
item's bra and ket row ranges (``index`` into ``prim``) and loops over them instead of
recomputing the exponential and reciprocal of every primitive pair per primitive quartet.

A quartet whose primitive quartets exceed ``max_work`` is split into items over chunks of its
bra and ket rows: the contracted integrals are sums over primitive quartets and the HRR is
linear, so the quartet's integrals (and J/K contributions) are the sums of its items'. A
launch then no longer waits on a few threads that run hundreds of primitive quartets while
most of the GPU idles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .basis import SegmentedBasis


@dataclass(frozen=True)
class PrimitivePairs:
    index: np.ndarray  # (n_items, 2) int32: bra and ket row range (into ``prim``) of each item
    prim: np.ndarray  # (n_ranges, 2) int32: first row in ``data``, row count
    data: np.ndarray  # (n_rows, 6 or 8) float64: PAIR_FIELDS or DERIV_PAIR_FIELDS
    quartet: np.ndarray  # (n_items,) intp: the quartet each item belongs to

    @property
    def split(self) -> bool:
        """Whether some quartet has more than one item."""
        return len(self.quartet) > 0 and len(self.quartet) != int(self.quartet.max()) + 1

    def launch_order(self) -> np.ndarray:
        """A stable ordering of the items that groups equal (bra rows, ket rows) patterns, so
        that the threads of a warp run the same loop trips (a warp runs as long as its longest
        thread), most primitive quartets first: a launch then ends on its shortest warps."""
        rows = self.prim[self.index, 1].astype(np.int64)
        return np.lexsort((rows[:, 1], rows[:, 0], -rows[:, 0] * rows[:, 1])).astype(np.intp)

    def item_sums(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the items launched in ``order``: the launch position of each quartet's first
        item, which holds the quartet's integrals once the others are added to it, and the
        positions of those other items (sources) with the first item each adds to."""
        items = self.quartet[order]
        _, first = np.unique(items, return_index=True)
        rest = np.ones(len(items), dtype=bool)
        rest[first] = False
        sources = np.flatnonzero(rest)
        return first.astype(np.intp), sources, first[items[sources]].astype(np.intp)


def _chunks(count: np.ndarray, size: np.ndarray) -> np.ndarray:
    return -(-count // size)


def _chunk_sizes(n_bra: np.ndarray, n_ket: np.ndarray, max_work: int):
    """Rows per item on each side: ket rows in as few equal chunks as keep a chunk within
    max_work, then bra rows likewise."""
    ket_size = _chunks(n_ket, _chunks(n_ket, max_work))
    bra_size = np.maximum(1, max_work // ket_size)
    return _chunks(n_bra, _chunks(n_bra, bra_size)), ket_size


def items_per_quartet(
    basis: SegmentedBasis, quartets: np.ndarray, max_work: int | None
) -> np.ndarray:
    """How many items ``primitive_pairs`` makes of each quartet (without building them), so
    that launches can size their buffers by items."""
    quartets = np.asarray(quartets, dtype=np.int64).reshape(-1, 4)
    if max_work is None:
        return np.ones(len(quartets), dtype=np.int64)
    rows = basis.prim[quartets, 1].astype(np.int64)
    n_bra, n_ket = rows[:, 0] * rows[:, 1], rows[:, 2] * rows[:, 3]
    bra_size, ket_size = _chunk_sizes(n_bra, n_ket, max_work)
    return _chunks(n_bra, bra_size) * _chunks(n_ket, ket_size)


def primitive_pairs(
    basis: SegmentedBasis,
    quartets: np.ndarray,
    max_work: int | None = None,
    exponents: bool = False,
) -> PrimitivePairs:
    """The pair data and work items of ``quartets`` (n, 4) segment indices; with ``max_work``
    no item has more primitive quartets than that unless one bra and one ket row range of a
    single row each would (it never splits a primitive pair). ``exponents`` appends the two
    primitive exponents to each row (``DERIV_PAIR_FIELDS``: derivative kernels)."""
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
    kab = (
        basis.coefficients[p1]
        * basis.coefficients[p2]
        * np.exp(-e1 * e2 * ooz * np.einsum("ij,ij->i", r12, r12))
        * ooz
    )
    columns = [zeta, ooz, kab, (e2 * ooz)[:, None] * r12]
    if exponents:
        columns += [e1, e2]
    data = np.ascontiguousarray(np.column_stack(columns))
    bra, ket = inverse.reshape(2, n)
    if max_work is None:
        return PrimitivePairs(
            index=np.ascontiguousarray(np.column_stack([bra, ket]), dtype=np.int32),
            prim=np.ascontiguousarray(np.column_stack([starts, counts]), dtype=np.int32),
            data=data,
            quartet=np.arange(n, dtype=np.intp),
        )
    n_bra, n_ket = counts[bra], counts[ket]
    bra_size, ket_size = _chunk_sizes(n_bra, n_ket, max_work)
    n_bra_chunks, n_ket_chunks = _chunks(n_bra, bra_size), _chunks(n_ket, ket_size)
    per_quartet = n_bra_chunks * n_ket_chunks
    quartet = np.repeat(np.arange(n), per_quartet)
    k = np.arange(int(per_quartet.sum())) - np.repeat(
        np.cumsum(per_quartet) - per_quartet, per_quartet
    )
    a, c = np.divmod(k, n_ket_chunks[quartet])
    ranges = []
    for pair, size, j in ((bra, bra_size, a), (ket, ket_size, c)):
        begin = j * size[quartet]
        total = counts[pair][quartet]
        ranges.append((starts[pair][quartet] + begin, np.minimum(size[quartet], total - begin)))
    first_row = np.concatenate([r[0] for r in ranges])
    n_rows = np.concatenate([r[1] for r in ranges])
    width = int(counts.max()) + 1
    spans, span_index = np.unique(first_row * width + n_rows, return_inverse=True)
    return PrimitivePairs(
        index=np.ascontiguousarray(span_index.reshape(2, -1).T, dtype=np.int32),
        prim=np.ascontiguousarray(np.column_stack(np.divmod(spans, width)), dtype=np.int32),
        data=data,
        quartet=quartet.astype(np.intp),
    )
