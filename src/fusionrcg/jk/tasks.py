"""Screened work of one J/K build: the quartets of each canonical class that can contribute at
the threshold, as launch items, made where the kernels run and with no loop over quartets.

A quartet (ab|cd) is kept when Q_ab Q_cd d >= tol, where Q are the Schwarz bounds and d the
largest density block it is contracted with: |D_cd| and |D_ab| for J, |D_bd|, |D_ad|, |D_bc|,
|D_ac| for K (``Screen``). An energy (or energy gradient) contracts each integral with two
density elements: there d is the largest product, |D_ab| |D_cd| for J and |D_ac| |D_bd|,
|D_ad| |D_bc| for K (``Screen.products``). Work comes in blocks: a bra group against a ket group
of pairs (``pairs.PairGroup``: one pair class, one primitive-pair count), so every item of a
block runs the same loop trips. Within a group the pairs are sorted by bound, so the kets a bra
pair can reach with the largest density factor at all are a prefix, found by binary search; only
those candidates are tested. On the GPU one kernel tests them and writes the survivors' items
(``DeviceScreener``); on the CPU array operations do the same (``HostScreener``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any

import numpy as np

from ..runtime.items import ItemBatch
from .arrays import expand
from .pairs import PairGroup, PairTable

MAX_CANDIDATES = 1 << 24
"""Candidate quartets tested at once (the arrays of one screening step)."""

SPREAD_STRIDES = (1_000_003, 999_983)  # primes: one of them does not divide a block's size


@dataclass(frozen=True)
class Screen:
    """What a build's screening needs: the threshold, the densities' segment-block maxima
    (nseg x nseg, symmetric, float32) and the largest density factor a quartet can meet (the
    largest block, or with ``products`` its square), which terms are built, and whether the
    factor is one block (Fock matrices) or a product of two (energies and their gradients)."""

    tol: float
    blocks: Any
    largest: float
    with_j: bool
    with_k: bool
    products: bool = False


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
    lo: int = 0  # the block's bra pairs [lo, hi) of its bra group (hi None: to its end)
    hi: int | None = None

    @property
    def items_per_quartet(self) -> int:
        return self.bra_chunks * self.ket_chunks

    @property
    def bra_stop(self) -> int:
        """The end of the block's bra pairs, local to the bra group."""
        return self.bra.size if self.hi is None else self.hi

    @property
    def bra_pairs(self) -> int:
        return self.bra_stop - self.lo

    @property
    def quartets(self) -> int:
        """Quartets before screening (in a triangle block, kets at or before the bra)."""
        if self.triangle:
            return (self.bra_stop * (self.bra_stop + 1) - self.lo * (self.lo + 1)) // 2
        return self.bra_pairs * self.ket.size

    def pieces(self, pairs: int | None) -> list[Block]:
        """The block cut into blocks of ``pairs`` bra pairs at most (itself for None)."""
        if pairs is None or self.bra_pairs <= pairs:
            return [self]
        edges = list(range(self.lo, self.bra_stop, pairs)) + [self.bra_stop]
        return [replace(self, lo=a, hi=b) for a, b in zip(edges[:-1], edges[1:])]


@dataclass(frozen=True)
class Piece:
    """The items of block ``index`` of the blocks screened in one round: [lo, hi) of the
    round's items."""

    index: int
    block: Block
    lo: int
    hi: int


@dataclass(frozen=True)
class Round:
    """The surviving items of one screening round, packed: the pieces of the blocks follow one
    another in the order the blocks were given (``pieces[i].hi == pieces[i + 1].lo``)."""

    items: ItemBatch
    pieces: list[Piece]

    def of(self, piece: Piece) -> ItemBatch:
        """The items of ``piece``."""
        return self.items.slice(piece.lo, piece.hi)

    def spans(self, key: Callable[[Piece], Any]) -> Iterator[tuple[list[Piece], ItemBatch]]:
        """Each run of consecutive pieces with one ``key`` (e.g. their class) and the run's
        items as one batch: a launch per run rather than per block."""
        for _, run in groupby(self.pieces, key=key):
            run = list(run)
            yield run, self.items.slice(run[0].lo, run[-1].hi)


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
    block (its pairs [lo, hi) of the bra group); in a triangle block only kets at or before the
    bra."""
    qb = table.bound[block.bra.start + block.lo : block.bra.start + block.bra_stop]
    qk = table.bound[block.ket.start : block.ket.stop]
    with np.errstate(divide="ignore"):
        need = screen.tol / (qb * screen.largest)
    counts = xp.searchsorted(-qk, -need, side="right")
    if block.triangle:
        counts = xp.minimum(counts, xp.arange(block.lo + 1, block.bra_stop + 1))
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


class _Screener:
    """Each block's items from a screener's ``rounds`` (which each screener defines)."""

    def class_items(self, table, class_blocks, screen) -> Iterator[tuple[Block, ItemBatch]]:
        """The items of each block of ``class_blocks`` that pass the screening."""
        for found in self.rounds(table, class_blocks, screen):
            for piece in found.pieces:
                yield piece.block, found.of(piece)


class HostScreener(_Screener):
    """The screening and items with array operations (NumPy: the CPU backend)."""

    def __init__(self, arrays, limit: int = MAX_CANDIDATES) -> None:
        self.arrays = arrays
        self.limit = limit

    def rounds(self, table, blocks: list[Block], screen: Screen) -> Iterator[Round]:
        """The surviving items of ``blocks`` (of any classes), a round per screening step."""
        for i, block in enumerate(blocks):
            for items in self.items(table, block, screen):
                yield Round(items, [Piece(i, block, 0, items.size)])

    def items(self, table: PairTable, block: Block, screen: Screen) -> Iterator[ItemBatch]:
        xp = self.arrays.xp
        if screen.largest <= 0.0 or block.bra_pairs <= 0 or block.ket.size == 0:
            return
        counts = _ket_counts(xp, table, block, screen)
        for lo, hi in _bra_ranges(self.arrays.to_host(counts), self.limit):
            owner, local = expand(xp, counts[lo:hi])
            ib = block.bra.start + block.lo + lo + owner
            ik = block.ket.start + local
            a, b = table.first[ib], table.second[ib]
            c, d = table.first[ik], table.second[ik]
            blk = screen.blocks
            dens = xp.zeros(ib.shape[0], dtype=blk.dtype)
            # one factor: the larger of the two blocks; products: their product
            pair = xp.multiply if screen.products else xp.maximum
            if screen.with_j:
                dens = xp.maximum(dens, pair(blk[a, b], blk[c, d]))
            if screen.with_k:
                dens = xp.maximum(dens, pair(blk[b, d], blk[a, c]))
                dens = xp.maximum(dens, pair(blk[a, d], blk[b, c]))
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
// Warps over the bra pairs of a table of segments (a segment: bra pairs [bra0, bra0 + n) of a
// block, local bra index from local0, its ket group [ket0, ket0 + n_ket)); warp w takes bra
// pair w - warp_start[s] of its segment s, for the warps [w_lo, w_hi) of this launch. Each warp
// finds by binary search the kets that can pass with the largest density block (a prefix of
// the ket group; in a triangle block those at or before the bra) and tests each of them
// against its own density blocks, Q_ab Q_cd d >= tol. With `counts` it writes the number of
// items its survivors make, counts[w]; otherwise it writes their items (quartet, weight, and
// the bra and ket row ranges of each chunk) from position ends[w - 1] - base on, ends being
// the inclusive sum of the counts: the same tests in the same order, so exactly the counted
// items, each warp's in ket order (no atomics: the order is the same in every build).
#define BLK(i, j) blocks[(size_t)(i) * nseg + (j)]
// the density factor of two blocks: the larger (Fock matrices) or the product (energies)
#define PAIR(x, y) (products ? (x) * (y) : fmaxf((x), (y)))
extern "C" __global__ void frcg_screen_items(
    const int n_seg, const long long* __restrict__ warp_start, const int* __restrict__ seg,
    const long long w_lo, const long long w_hi, const int* __restrict__ first,
    const int* __restrict__ second, const double* __restrict__ bound,
    const int* __restrict__ ranges, const float* __restrict__ blocks, const int nseg,
    const double tol, const double largest, const int with_j, const int with_k,
    const int products, long long* __restrict__ counts, const long long* __restrict__ ends,
    const long long base,
    int* __restrict__ quartets, double* __restrict__ scales, int* __restrict__ item_ranges)
{
    const long long w = w_lo + ((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (w >= w_hi) return;
    int s = 0, top = n_seg;  // the segment of warp w: warp_start[s] <= w < warp_start[s + 1]
    while (top - s > 1) {
        const int mid = (s + top) >> 1;
        if (warp_start[mid] <= w) s = mid; else top = mid;
    }
    const int* const t = seg + 10 * s;  // bra0, local0, ket0, n_ket, triangle, chunks
    const int local = t[1] + (int)(w - warp_start[s]);
    const int ib = t[0] + (int)(w - warp_start[s]), ket0 = t[2], n_ket = t[3];
    const int bra_chunks = t[5], bra_size = t[6], ket_chunks = t[7], ket_size = t[8];
    const int per = bra_chunks * ket_chunks;
    const double qb = bound[ib];
    const double need = tol / (qb * largest);
    int lo = 0, hi = t[4] ? min(n_ket, local + 1) : n_ket;  // kets [0, lo) can pass
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (bound[ket0 + mid] >= need) lo = mid + 1; else hi = mid;
    }
    const int candidates = lo;
    const int a = first[ib], b = second[ib];
    const float dab = BLK(a, b);
    const int bf = ranges[2 * ib], bn = ranges[2 * ib + 1];
    long long q = counts ? 0 : (w ? ends[w - 1] : 0) - base;  // the warp's next item
    for (int k0 = 0; k0 < candidates; k0 += 32) {
        const int k = k0 + lane;
        const int ik = ket0 + k;
        bool keep = false;
        int c = 0, d = 0;
        if (k < candidates) {
            c = first[ik];
            d = second[ik];
            float dens = 0.0f;
            if (with_j) dens = PAIR(dab, BLK(c, d));
            if (with_k) {
                dens = fmaxf(dens, PAIR(BLK(b, d), BLK(a, c)));
                dens = fmaxf(dens, PAIR(BLK(a, d), BLK(b, c)));
            }
            keep = qb * bound[ik] * (double)dens >= tol;
        }
        const unsigned mask = __ballot_sync(0xffffffffu, keep);
        const long long q0 = q + (long long)__popc(mask & ((1u << lane) - 1u)) * per;
        q += (long long)__popc(mask) * per;
        if (counts || !keep) continue;
        const double weight = 1.0 / ((1.0 + (a == b)) * (1.0 + (c == d)) * (1.0 + (ib == ik)));
        const int kf = ranges[2 * ik], kn = ranges[2 * ik + 1];
        for (int x = 0; x < bra_chunks; ++x)
            for (int y = 0; y < ket_chunks; ++y) {
                const long long r = q0 + x * ket_chunks + y;
                quartets[4 * r] = a;
                quartets[4 * r + 1] = b;
                quartets[4 * r + 2] = c;
                quartets[4 * r + 3] = d;
                scales[r] = weight;
                const int bb = x * bra_size, kb = y * ket_size;
                item_ranges[4 * r] = bf + bb;
                item_ranges[4 * r + 1] = bra_chunks > 1 ? max(0, min(bra_size, bn - bb)) : bn;
                item_ranges[4 * r + 2] = kf + kb;
                item_ranges[4 * r + 3] = ket_chunks > 1 ? max(0, min(ket_size, kn - kb)) : kn;
            }
    }
    if (counts && lane == 0) counts[w] = q;
}
"""


GATHER_KERNEL = r"""
// Each piece p of a round (items [start[p], start[p + 1])) in a strided order: item q of the
// piece is taken from position (q * stride[p]) mod n of the piece, n its size.
extern "C" __global__ void frcg_gather_items(
    const int n_piece, const long long* __restrict__ start,
    const long long* __restrict__ stride, const int* __restrict__ quartets,
    const double* __restrict__ scales, const int* __restrict__ ranges,
    int* __restrict__ quartets_out, double* __restrict__ scales_out,
    int* __restrict__ ranges_out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t >= start[n_piece]) return;
    int p = 0, top = n_piece;
    while (top - p > 1) {
        const int mid = (p + top) >> 1;
        if (start[mid] <= t) p = mid; else top = mid;
    }
    const long long n = start[p + 1] - start[p], q = t - start[p];
    const long long src = start[p] + (q * stride[p]) % n;
    for (int i = 0; i < 4; ++i) {
        quartets_out[4 * t + i] = quartets[4 * src + i];
        ranges_out[4 * t + i] = ranges[4 * src + i];
    }
    scales_out[t] = scales[src];
}
"""


@dataclass(frozen=True)
class _Segment:
    """Bra pairs [lo, hi) (local to the bra group) of block ``index`` of a build's blocks."""

    index: int
    block: Block
    lo: int
    hi: int

    def row(self) -> list[int]:
        b = self.block
        return [b.bra.start + self.lo, self.lo, b.ket.start, b.ket.size, int(b.triangle),
                b.bra_chunks, b.bra_size, b.ket_chunks, b.ket_size, 0]  # fmt: skip


@dataclass(frozen=True)
class _Plan:
    """The segments of a list of blocks (those with bra pairs and kets) and their warps, one
    per bra pair: segment s has warps [warp_start[s], warp_start[s + 1]). ``rows``,
    ``device_warp_start`` and ``last_warp`` (each segment's last warp) are on the device."""

    segments: list[_Segment]
    warp_start: np.ndarray
    rows: Any
    device_warp_start: Any
    last_warp: Any

    @property
    def warps(self) -> int:
        return int(self.warp_start[-1])


PLANS_KEPT = 64
"""Plans (``_Plan``) a device screener keeps for block lists it meets again (a build's blocks,
each class's)."""


class DeviceScreener(_Screener):
    """The screening and items of a build's blocks on the device: one launch counts the items
    of every bra pair exactly, and per round of at most ``limit`` items (and one bra pair's
    more) one launch writes them, packed block after block in the blocks' order, so that the
    blocks of one class in a round are launched together (``Round.spans``). The host reads back
    one small array per build (each block's item count; two with more than one round) and
    sends nothing: the blocks' table is made on the device once per list of blocks."""

    THREADS = 256

    def __init__(
        self, arrays, limit: int = MAX_CANDIDATES, kernel=None, gather=None, spread: bool = True
    ) -> None:
        """``kernel``, ``gather``: the compiled ``SCREEN_KERNEL`` and ``GATHER_KERNEL``
        (default: CuPy's builds); called as ``kernel(grid, block, args)``. ``spread``: hand
        out each block's items in a strided order instead of as written (each warp's
        survivors share one bra pair), so that the threads of a warp of the integral kernel
        add into different J and K elements rather than all into the same J_ab."""
        self.arrays = arrays
        self.limit = limit
        self.spread = spread
        self._kernel = kernel or arrays.xp.RawKernel(SCREEN_KERNEL, "frcg_screen_items")
        self._gather_kernel = gather or arrays.xp.RawKernel(GATHER_KERNEL, "frcg_gather_items")
        self._plans: dict[tuple[int, ...], _Plan | None] = {}

    def _plan(self, blocks: list[Block]) -> _Plan | None:
        """The plan of ``blocks`` (None if none has work), made once per list of blocks (the
        plan keeps its blocks, so their ids name them while it is kept)."""
        key = tuple(map(id, blocks))
        if key in self._plans:
            return self._plans[key]
        xp = self.arrays.xp
        segments = [_Segment(i, b, b.lo, b.bra_stop) for i, b in enumerate(blocks)
                    if b.bra_pairs > 0 and b.ket.size]  # fmt: skip
        plan = None
        if segments:
            warp_start = np.cumsum([0] + [s.hi - s.lo for s in segments]).astype(np.int64)
            plan = _Plan(
                segments, warp_start,
                xp.asarray(np.array([s.row() for s in segments], dtype=np.int32)),
                xp.asarray(warp_start), xp.asarray(warp_start[1:] - 1),
            )  # fmt: skip
        if len(self._plans) >= PLANS_KEPT:
            if self.arrays.device:  # no launch may still read a plan let go
                xp.cuda.Device().synchronize()
            self._plans.clear()
        self._plans[key] = plan
        return plan

    def _launch(self, table, screen, plan: _Plan, warps: tuple[int, int], counts=None,
                ends=None, base: int = 0, out=(None, None, None)) -> None:  # fmt: skip
        """The screening kernel over ``warps`` [lo, hi): counting into ``counts``, or writing
        the items into ``out`` (positions from ``ends``, less ``base``)."""
        null = np.uint64(0)
        args = (
            np.int32(len(plan.segments)), plan.device_warp_start, plan.rows,
            np.int64(warps[0]), np.int64(warps[1]),
            table.first, table.second, table.bound, table.ranges, screen.blocks,
            np.int32(screen.blocks.shape[0]), np.float64(screen.tol),
            np.float64(screen.largest), np.int32(screen.with_j), np.int32(screen.with_k),
            np.int32(screen.products), null if counts is None else counts,
            null if ends is None else ends, np.int64(base),
            *(null if a is None else a for a in out),
        )  # fmt: skip
        grid = (_ceil_div(32 * (warps[1] - warps[0]), self.THREADS),)
        self._kernel(grid, (self.THREADS,), args)

    def rounds(self, table, blocks: list[Block], screen: Screen) -> Iterator[Round]:
        """The surviving items of ``blocks`` (of any classes), in rounds. Contract: a round's
        arrays are made on the current stream when the round is drawn, and freed when the
        caller lets go of it; work of other streams that reads them must be ordered before
        that stream's next allocation (``streams.ClassStreams.wait``)."""
        if screen.largest <= 0.0:
            return
        plan = self._plan(blocks)
        if plan is None:
            return
        xp = self.arrays.xp
        counts = xp.empty(plan.warps, dtype=xp.int64)
        self._launch(table, screen, plan, (0, plan.warps), counts=counts)
        ends = xp.cumsum(counts)
        block_ends = self.arrays.to_host(ends[plan.last_warp]).astype(np.int64)
        total = int(block_ends[-1])
        if total == 0:
            return
        for warps, items in self._cuts(plan, ends, total):
            yield self._round(table, screen, plan, ends, block_ends, warps, items)

    def _cuts(self, plan: _Plan, ends, total: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """(warps [lo, hi), items [lo, hi)) of each round: a round ends at the last warp whose
        items end within the next multiple of ``limit``, so it holds fewer than ``limit``
        items and one warp's."""
        if total <= self.limit:
            return [((0, plan.warps), (0, total))]
        xp = self.arrays.xp
        targets = xp.arange(1, _ceil_div(total, self.limit), dtype=xp.int64) * self.limit
        cut = xp.searchsorted(ends, targets, side="right")
        at = xp.where(cut > 0, ends[xp.maximum(cut - 1, 0)], 0)
        cut, at = self.arrays.to_host(xp.stack([cut.astype(xp.int64), at])).tolist()
        warps = [0, *cut, plan.warps]
        items = [0, *at, total]
        return [((w0, w1), (i0, i1)) for w0, w1, i0, i1
                in zip(warps, warps[1:], items, items[1:]) if i1 > i0]  # fmt: skip

    def _round(self, table, screen, plan: _Plan, ends, block_ends: np.ndarray,
               warps: tuple[int, int], items: tuple[int, int]) -> Round:  # fmt: skip
        cp = self.arrays.xp
        lo, hi = items
        n = hi - lo
        out = (cp.empty((n, 4), dtype=cp.int32), cp.empty(n), cp.empty((2 * n, 2), cp.int32))
        self._launch(table, screen, plan, warps, ends=ends, base=lo, out=out)
        # the segments whose items meet [lo, hi): one past those ending at or before lo, up
        # to the first ending at or after hi (a search, not a pass over every segment)
        first = int(np.searchsorted(block_ends, lo, side="right"))
        last = min(int(np.searchsorted(block_ends, hi, side="left")), len(block_ends) - 1)
        ends = block_ends[first : last + 1]
        before = block_ends[first - 1] if first else 0
        starts = np.maximum(np.concatenate([[before], ends[:-1]]), lo) - lo
        stops = np.minimum(ends, hi) - lo
        pieces = [
            Piece(segment.index, segment.block, a, b)
            for segment, a, b in zip(plan.segments[first:], starts.tolist(), stops.tolist())
            if b > a
        ]
        if self.spread:
            out = self._gather(pieces, out)
        return Round(ItemBatch(*out), pieces)

    def _gather(self, pieces: list[Piece], items):
        """The round's items with each piece's in the order q -> (q * stride) mod n for a
        stride coprime to its n, so that neighbours come from far apart in the written order
        (different bras and kets)."""
        cp = self.arrays.xp
        sizes = [p.hi - p.lo for p in pieces]
        start = np.array([0] + [p.hi for p in pieces], dtype=np.int64)
        strides = np.array([next(s for s in SPREAD_STRIDES if n % s) for n in sizes], np.int64)
        total = int(start[-1])
        out = (cp.empty((total, 4), dtype=cp.int32), cp.empty(total),
               cp.empty((2 * total, 2), cp.int32))  # fmt: skip
        args = (np.int32(len(pieces)), cp.asarray(start), cp.asarray(strides), *items, *out)
        self._gather_kernel((_ceil_div(total, self.THREADS),), (self.THREADS,), args)
        return out
