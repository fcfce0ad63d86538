"""Screened work of one J/K build: the quartets of each canonical class that can contribute at
the threshold, as launch items, made where the kernels run and with no loop over quartets.

A quartet (ab|cd) is kept when Q_ab Q_cd d >= tol, where Q are the Schwarz bounds and d the
largest density block it is contracted with: |D_cd| and |D_ab| for J, |D_bd|, |D_ad|, |D_bc|,
|D_ac| for K (``Screen``). Work comes in blocks: a bra group against a ket group of pairs
(``pairs.PairGroup``: one pair class, one primitive-pair count), so every item of a block runs
the same loop trips. Within a group the pairs are sorted by bound, so the kets a bra pair can
reach with the largest density block at all are a prefix, found by binary search; only those
candidates are tested. On the GPU one kernel tests them and writes the survivors' items
(``DeviceScreener``); on the CPU array operations do the same (``HostScreener``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..runtime.items import ItemBatch
from .arrays import expand
from .pairs import PairGroup, PairTable

MAX_CANDIDATES = 1 << 24
"""Candidate quartets tested at once (the arrays of one screening step)."""


@dataclass(frozen=True)
class Screen:
    """What a build's screening needs: the threshold, the densities' segment-block maxima
    (nseg x nseg, symmetric, float32) and their largest value, and which matrices are built."""

    tol: float
    blocks: Any
    largest: float
    with_j: bool
    with_k: bool


@dataclass(frozen=True)
class Block:
    """Quartets of a bra group and a ket group. ``triangle``: the two are the same group, so
    each unordered pair of pairs counts once (ket at or before bra). An item covers up to
    ``bra_size`` bra and ``ket_size`` ket rows; a quartet makes ``bra_chunks * ket_chunks``."""

    bra: PairGroup
    ket: PairGroup
    triangle: bool
    bra_chunks: int = 1
    bra_size: int = 0
    ket_chunks: int = 1
    ket_size: int = 0

    @property
    def items_per_quartet(self) -> int:
        return self.bra_chunks * self.ket_chunks


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def blocks(bra: list[PairGroup], ket: list[PairGroup], max_work: int | None) -> list[Block]:
    """The blocks of the canonical class (bra class | ket class), groups given by class. With
    ``max_work`` a quartet of more primitive quartets is split into items (ket rows in as few
    equal chunks as keep a chunk within max_work, then bra rows likewise; the HRR is linear,
    so the items' contributions add up)."""
    same = bra is ket
    found = []
    for i, gb in enumerate(bra):
        for j, gk in enumerate(ket):
            if same and j > i:
                continue
            block = Block(gb, gk, same and i == j)
            if max_work is not None and gb.rows * gk.rows > max_work:
                ket_chunks = _ceil_div(gk.rows, max_work)
                ket_size = _ceil_div(gk.rows, ket_chunks)
                bra_size = max(1, max_work // ket_size)
                bra_chunks = _ceil_div(gb.rows, bra_size)
                bra_size = _ceil_div(gb.rows, bra_chunks)
                block = Block(gb, gk, block.triangle, bra_chunks, bra_size, ket_chunks, ket_size)
            found.append(block)
    return found


def _ket_counts(xp, table: PairTable, block: Block, screen: Screen):
    """Per bra pair, how many kets (a prefix of the ket group) pass with the largest density
    block; in a triangle block only kets at or before the bra."""
    qb = table.bound[block.bra.start : block.bra.stop]
    qk = table.bound[block.ket.start : block.ket.stop]
    with np.errstate(divide="ignore"):
        need = screen.tol / (qb * screen.largest)
    counts = xp.searchsorted(-qk, -need, side="right")
    if block.triangle:
        counts = xp.minimum(counts, xp.arange(1, block.bra.size + 1))
    return counts.astype(xp.int64)


def _bra_ranges(counts: np.ndarray, limit: int) -> Iterator[tuple[int, int]]:
    """Consecutive bra ranges whose candidates stay within ``limit`` (at least one bra)."""
    ends = np.cumsum(counts)
    start = 0
    while start < len(counts):
        before = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + limit, side="right")))
        if ends[stop - 1] > before:
            yield start, stop
        start = stop


class HostScreener:
    """The screening and items with array operations (NumPy: the CPU backend)."""

    def __init__(self, arrays, limit: int = MAX_CANDIDATES) -> None:
        self.arrays = arrays
        self.limit = limit

    def items(self, table: PairTable, block: Block, screen: Screen) -> Iterator[ItemBatch]:
        xp = self.arrays.xp
        if screen.largest <= 0.0 or block.bra.size == 0 or block.ket.size == 0:
            return
        counts = _ket_counts(xp, table, block, screen)
        for lo, hi in _bra_ranges(self.arrays.to_host(counts), self.limit):
            owner, local = expand(xp, counts[lo:hi])
            ib = block.bra.start + lo + owner
            ik = block.ket.start + local
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
            if bool(keep.any()):
                yield self._items(table, block, ib[keep], ik[keep])

    def _items(self, table: PairTable, block: Block, ib, ik) -> ItemBatch:
        """Each quartet with its symmetry weight (J = Jh + Jh^T, K = Kh + Kh^T from the half
        matrices the kernels accumulate) as the block's chunks of its rows."""
        xp = self.arrays.xp
        a, b = table.first[ib], table.second[ib]
        c, d = table.first[ik], table.second[ik]
        weight = 1.0 / ((1.0 + (a == b)) * (1.0 + (c == d)) * (1.0 + (ib == ik)))
        quartets = xp.stack([a, b, c, d], axis=1)
        bra, ket = table.ranges[ib], table.ranges[ik]
        per = block.items_per_quartet
        if per > 1:
            x = xp.repeat(xp.arange(block.bra_chunks), block.ket_chunks)
            y = xp.tile(xp.arange(block.ket_chunks), block.bra_chunks)
            bra = _chunk(xp, xp.repeat(bra, per, axis=0), xp.tile(x, len(ib)), block.bra_size)
            ket = _chunk(xp, xp.repeat(ket, per, axis=0), xp.tile(y, len(ib)), block.ket_size)
            quartets = xp.repeat(quartets, per, axis=0)
            weight = xp.repeat(weight, per)
        return ItemBatch(
            quartets=xp.ascontiguousarray(quartets, dtype=xp.int32),
            scales=xp.ascontiguousarray(weight, dtype=xp.float64),
            ranges=xp.ascontiguousarray(xp.stack([bra, ket], axis=1).reshape(-1, 2), xp.int32),
        )


def _chunk(xp, rows, index, size: int):
    """Chunk ``index`` of ``size`` rows of each (first row, row count)."""
    begin = index * size
    return xp.stack([rows[:, 0] + begin, xp.clip(rows[:, 1] - begin, 0, size)], axis=1)


SCREEN_KERNEL = r"""
// One warp per bra pair of a block: the kets that pass Q_ab Q_cd d >= tol, appended (warp by
// warp) as items: quartet, weight and the bra and ket row ranges of each chunk.
#define BLK(i, j) blocks[(size_t)(i) * nseg + (j)]
extern "C" __global__ void frcg_screen_items(
    const int n_bra, const int bra0, const int ket0, const int n_ket, const int triangle,
    const int* __restrict__ first, const int* __restrict__ second,
    const double* __restrict__ bound, const int* __restrict__ ranges,
    const float* __restrict__ blocks, const int nseg, const double tol, const double largest,
    const int with_j, const int with_k, const int bra_chunks, const int bra_size,
    const int ket_chunks, const int ket_size, int* __restrict__ quartets,
    double* __restrict__ scales, int* __restrict__ item_ranges,
    unsigned long long* __restrict__ counter)
{
    const int w = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (w >= n_bra) return;
    const int ib = bra0 + w;
    const double qb = bound[ib];
    const double need = tol / (qb * largest);
    int lo = 0, hi = triangle ? min(n_ket, w + 1) : n_ket;  // kets [0, lo) pass
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (bound[ket0 + mid] >= need) lo = mid + 1; else hi = mid;
    }
    const int count = lo;
    const int a = first[ib], b = second[ib];
    const float dab = BLK(a, b);
    const int per = bra_chunks * ket_chunks;
    const int bf = ranges[2 * ib], bn = ranges[2 * ib + 1];
    for (int base = 0; base < count; base += 32) {
        const int k = base + lane;
        const int ik = ket0 + k;
        bool keep = false;
        int c = 0, d = 0;
        if (k < count) {
            c = first[ik];
            d = second[ik];
            float dens = 0.0f;
            if (with_j) dens = fmaxf(dab, BLK(c, d));
            if (with_k) {
                dens = fmaxf(dens, fmaxf(BLK(b, d), BLK(a, d)));
                dens = fmaxf(dens, fmaxf(BLK(b, c), BLK(a, c)));
            }
            keep = qb * bound[ik] * (double)dens >= tol;
        }
        const unsigned mask = __ballot_sync(0xffffffffu, keep);
        if (!mask) continue;
        unsigned long long start = 0;
        if (lane == 0) start = atomicAdd(counter, (unsigned long long)__popc(mask) * per);
        start = __shfl_sync(0xffffffffu, start, 0);
        if (!keep) continue;
        const long long q0 = (long long)start + (long long)__popc(mask & ((1u << lane) - 1u)) * per;
        const double weight = 1.0 / ((1.0 + (a == b)) * (1.0 + (c == d)) * (1.0 + (ib == ik)));
        const int kf = ranges[2 * ik], kn = ranges[2 * ik + 1];
        for (int x = 0; x < bra_chunks; ++x)
            for (int y = 0; y < ket_chunks; ++y) {
                const long long q = q0 + x * ket_chunks + y;
                quartets[4 * q] = a;
                quartets[4 * q + 1] = b;
                quartets[4 * q + 2] = c;
                quartets[4 * q + 3] = d;
                scales[q] = weight;
                const int bb = x * bra_size, kb = y * ket_size;
                item_ranges[4 * q] = bf + bb;
                item_ranges[4 * q + 1] = bra_chunks > 1 ? max(0, min(bra_size, bn - bb)) : bn;
                item_ranges[4 * q + 2] = kf + kb;
                item_ranges[4 * q + 3] = ket_chunks > 1 ? max(0, min(ket_size, kn - kb)) : kn;
            }
    }
}
"""


class DeviceScreener:
    """The screening and items in one kernel per block and bra range (CuPy: the GPU)."""

    THREADS = 256

    def __init__(self, arrays, limit: int = MAX_CANDIDATES) -> None:
        self.arrays = arrays
        self.limit = limit
        self._kernel = arrays.xp.RawKernel(SCREEN_KERNEL, "frcg_screen_items")
        self._counter = arrays.xp.zeros(1, dtype=arrays.xp.uint64)

    def items(self, table: PairTable, block: Block, screen: Screen) -> Iterator[ItemBatch]:
        cp = self.arrays.xp
        if screen.largest <= 0.0 or block.bra.size == 0 or block.ket.size == 0:
            return
        counts = self.arrays.to_host(_ket_counts(cp, table, block, screen))
        per = block.items_per_quartet
        for lo, hi in _bra_ranges(counts, self.limit):
            capacity = int(counts[lo:hi].sum()) * per
            quartets = cp.empty((capacity, 4), dtype=cp.int32)
            scales = cp.empty(capacity)
            ranges = cp.empty((2 * capacity, 2), dtype=cp.int32)
            self._counter.fill(0)
            n_bra = hi - lo
            grid = (_ceil_div(32 * n_bra, self.THREADS),)
            args = (
                np.int32(n_bra), np.int32(block.bra.start + lo), np.int32(block.ket.start),
                np.int32(block.ket.size), np.int32(block.triangle), table.first, table.second,
                table.bound, table.ranges, screen.blocks, np.int32(screen.blocks.shape[0]),
                np.float64(screen.tol), np.float64(screen.largest), np.int32(screen.with_j),
                np.int32(screen.with_k), np.int32(block.bra_chunks), np.int32(block.bra_size),
                np.int32(block.ket_chunks), np.int32(block.ket_size), quartets, scales, ranges,
                self._counter,
            )  # fmt: skip
            self._kernel(grid, (self.THREADS,), args)
            n = int(self._counter.get()[0])
            if n:
                yield ItemBatch(quartets[:n], scales[:n], ranges[: 2 * n])
