"""Screened work of one J/K build: the quartets of each canonical class that can contribute at
the threshold, and the launch items made of them, built with array operations (on the device
for the GPU backend) and no loop over quartets.

A quartet (ab|cd) is kept when Q_ab Q_cd d >= tol, where Q are the Schwarz bounds and d the
largest density block it is contracted with: |D_cd| and |D_ab| for J, |D_bd|, |D_ad|, |D_bc|,
|D_ac| for K (``Screen``). Within a class the ket pairs are sorted by bound, so the kets a bra
pair can reach with the largest density block at all are a prefix, found by a binary search;
only those candidates are formed and tested.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..runtime.items import ItemBatch
from .arrays import expand
from .pairs import PairClass, PairTable

MAX_CANDIDATES = 1 << 24
"""Candidate quartets formed and tested at once (the arrays of one screening step)."""


@dataclass(frozen=True)
class Screen:
    """What a build's screening needs: the threshold, the densities' segment-block maxima
    (nseg x nseg, symmetric) and their largest value, and which matrices are built."""

    tol: float
    blocks: Any
    largest: float
    with_j: bool
    with_k: bool


def class_pairs(table: PairTable, bra: PairClass, ket: PairClass) -> bool:
    """Whether (bra|ket) is a canonical class: the bra pair class has the larger key."""
    return bra.key >= ket.key


def _ket_counts(xp, table: PairTable, bra: PairClass, ket: PairClass, screen: Screen):
    """Per bra pair, how many kets (a prefix of ``ket``) pass with the largest density block;
    within one class only kets at or before the bra (each unique quartet once)."""
    qb = table.bound[bra.start : bra.stop]
    qk = table.bound[ket.start : ket.stop]
    with np.errstate(divide="ignore"):
        need = screen.tol / (qb * screen.largest)
    counts = xp.searchsorted(-qk, -need, side="right")
    if bra.start == ket.start:
        counts = xp.minimum(counts, xp.arange(1, bra.size + 1))
    return counts.astype(xp.int64)


def _batches(counts: np.ndarray, limit: int) -> Iterator[tuple[int, int]]:
    """Consecutive bra ranges whose candidates stay within ``limit`` (at least one bra)."""
    ends = np.cumsum(counts)
    start = 0
    while start < len(counts):
        before = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + limit, side="right")))
        if ends[stop - 1] > before:
            yield start, stop
        start = stop


def surviving_quartets(
    arrays, table: PairTable, bra: PairClass, ket: PairClass, screen: Screen,
    limit: int = MAX_CANDIDATES,
) -> Iterator[tuple[Any, Any]]:  # fmt: skip
    """Batches of (bra pair, ket pair) indices into ``table`` of the quartets of class
    (bra|ket) that pass the screening."""
    xp = arrays.xp
    if screen.largest <= 0.0 or bra.size == 0 or ket.size == 0:
        return
    counts = _ket_counts(xp, table, bra, ket, screen)
    for lo, hi in _batches(arrays.to_host(counts), limit):
        owner, local = expand(xp, counts[lo:hi])
        ib = bra.start + lo + owner
        ik = ket.start + local
        a, b = table.first[ib], table.second[ib]
        c, d = table.first[ik], table.second[ik]
        blk = screen.blocks
        dens = xp.zeros(ib.shape[0], dtype=blk.dtype)
        if screen.with_j:
            dens = xp.maximum(dens, xp.maximum(blk[a, b], blk[c, d]))
        if screen.with_k:
            dens = xp.maximum(dens, xp.maximum(blk[b, d], blk[a, d]))
            dens = xp.maximum(dens, xp.maximum(blk[b, c], blk[a, c]))
        keep = table.bound[ib] * table.bound[ik] * dens >= screen.tol
        yield ib[keep], ik[keep]


def _ceil_div(a, b):
    return -(-a // b)


def make_items(xp, table: PairTable, ib, ik, max_work: int | None) -> ItemBatch:
    """Launch items of the quartets (ib|ik): each quartet with its symmetry weight (J = Jh +
    Jh^T, K = Kh + Kh^T from the half matrices the kernels accumulate), split into items of
    at most ``max_work`` primitive quartets where it has more (ket rows in as few equal chunks
    as keep a chunk within max_work, then bra rows likewise; the HRR is linear, so the items'
    contributions add up), ordered by primitive-pair counts, most work first: the threads of a
    warp then run the same number of loop trips."""
    a, b = table.first[ib], table.second[ib]
    c, d = table.first[ik], table.second[ik]
    weight = 1.0 / ((1.0 + (a == b)) * (1.0 + (c == d)) * (1.0 + (ib == ik)))
    quartets = xp.stack([a, b, c, d], axis=1)
    bra_rows, ket_rows = table.ranges[ib].astype(xp.int64), table.ranges[ik].astype(xp.int64)
    work = bra_rows[:, 1] * ket_rows[:, 1]
    if max_work is not None and work.shape[0] and int(work.max()) > max_work:
        n_bra, n_ket = bra_rows[:, 1], ket_rows[:, 1]
        ket_chunks = _ceil_div(n_ket, max_work)
        ket_size = _ceil_div(n_ket, ket_chunks)
        bra_size = xp.maximum(1, max_work // ket_size)
        bra_chunks = _ceil_div(n_bra, bra_size)
        bra_size = _ceil_div(n_bra, bra_chunks)
        owner, k = expand(xp, bra_chunks * ket_chunks)
        i, j = k // ket_chunks[owner], k % ket_chunks[owner]
        bra_first = bra_rows[owner, 0] + i * bra_size[owner]
        ket_first = ket_rows[owner, 0] + j * ket_size[owner]
        bra_count = xp.minimum(bra_size[owner], n_bra[owner] - i * bra_size[owner])
        ket_count = xp.minimum(ket_size[owner], n_ket[owner] - j * ket_size[owner])
        bra_rows = xp.stack([bra_first, bra_count], axis=1)
        ket_rows = xp.stack([ket_first, ket_count], axis=1)
        quartets, weight = quartets[owner], weight[owner]
    nb, nk = bra_rows[:, 1], ket_rows[:, 1]
    key = (((1 << 20) - nb * nk) << 20) + (nb << 10) + nk
    order = xp.argsort(key)
    ranges = xp.stack([bra_rows[order], ket_rows[order]], axis=1).reshape(-1, 2)
    return ItemBatch(
        quartets=xp.ascontiguousarray(quartets[order], dtype=xp.int32),
        scales=xp.ascontiguousarray(weight[order], dtype=xp.float64),
        ranges=xp.ascontiguousarray(ranges, dtype=xp.int32),
    )


def split(batch: ItemBatch, per_item_bytes: int, budget: int) -> Iterator[ItemBatch]:
    """``batch`` in consecutive parts whose buffers (``per_item_bytes`` each) fit ``budget``."""
    n = batch.size
    step = n if per_item_bytes == 0 else max(1, budget // per_item_bytes)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        yield ItemBatch(batch.quartets[lo:hi], batch.scales[lo:hi], batch.ranges[2 * lo : 2 * hi])
