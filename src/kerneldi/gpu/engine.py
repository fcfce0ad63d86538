"""GPU backend: KerneLDI's block-pair kernels and the dense EXC-cuBLAS baseline.

Host code works on any device of ``device.py`` (CuPy on a GPU; NumPy with the host emulation
of the kernels in the tests). The block structure is built once per geometry and grid; the AO
blocks stay on the device when ``gpu_memory_fraction`` of its free memory holds them; otherwise
those of the first grid batches that fit stay, the others are recomputed per batch, and a call
runs densities, functional and potentials batch by batch so that each batch's AO values are
made once per call. Once the kept blocks are known, a batch evaluates only
the shells of the basis blocks it keeps (in large, sparse systems a small part of the basis).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator

import numpy as np

from .. import forms, integrate
from ..blocks import BlockPattern, pair_fractions
from ..errors import InputError
from ..integrate import AO_DERIV, NVAR
from ..layout import Layout
from ..settings import Settings
from ..tasks import XcTask, checked_selection, grid_tasks, runs
from . import kernels as kd

BATCH_BYTES = 4 * 1024**3  # AO values of one grid batch
# grid blocks per task (``tasks.py``) when every AO block stays on the device: enough work per
# task to fill a device's launches, small enough for a schedule over many devices to even out
TASK_BLOCKS = 256
# grid blocks per thread block of the potential kernels, which run segment after segment: the
# AO tiles of the blocks that run at one time then fit in L2 and come from there; far longer
# segments overflow it, far shorter ones add per-block overhead
SEGMENT_BLOCKS = 32
# thread blocks per grid block of the density kernels, each taking every DENSITY_ROW_GROUPS-th
# output row (orbital block, or kept basis block): run side by side, they read the grid block's
# AO tiles from device memory once and from L2 after, where one thread block per grid block
# re-read them from device memory for every row
DENSITY_ROW_GROUPS = 8


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _leading_that_fit(sizes, room: float) -> int:
    """How many of the leading ``sizes`` (bytes) fit together in ``room`` bytes."""
    return int(np.searchsorted(np.cumsum(np.asarray(sizes, dtype=np.float64)), room, "right"))


class _Timer:
    """Wall time of the engine's phases, synchronized with the device when profiling."""

    def __init__(self, device, enabled: bool):
        self.device, self.enabled, self.seconds = device, enabled, {}

    def start(self):
        if self.enabled:
            self.device.synchronize()
        return time.perf_counter()

    def stop(self, key: str, t0: float) -> None:
        if self.enabled:
            self.device.synchronize()
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - t0


class _DensityPass:
    """One density over the grid batches: ``run`` launches the density kernel on a batch's AO
    blocks, writing rho of its grid blocks; ``finish`` records the products executed."""

    def __init__(
        self, eng, xctype: str, kernel, operands: tuple, thresholds: tuple, candidates, rows: int
    ):
        self.eng, self.kernel, self.operands, self.thresholds = eng, kernel, operands, thresholds
        self.candidates = candidates
        self.row_groups = max(1, min(eng.density_row_groups, rows))
        self.rho = eng.xp.zeros((NVAR[xctype], eng.layout.npts_pad))
        self.counter = eng.xp.zeros(1, dtype=np.uint64)

    def run(self, g0: int, g1: int, data) -> None:
        eng = self.eng
        t0 = eng.timer.start()
        self.kernel(
            (g1 - g0) * self.row_groups,
            (data, np.int32(eng.ncomp), eng.col_ptr, eng.row_idx, eng.phimax, *self.operands,
             np.int32(g0), np.int32(self.row_groups), np.int32(eng.col_ptr_host[g0]),
             *self.thresholds, self.rho,
             np.int32(eng.layout.npts_pad), self.counter),
        )  # fmt: skip
        eng.timer.stop("density", t0)

    def finish(self) -> None:
        self.eng.counts["density_pairs"] = int(_host(self.counter)[0])
        self.eng.counts["density_candidates"] = self.candidates


class _PotentialPass:
    """One potential matrix over the grid batches: ``set_weights`` takes the weighted
    potentials of a range of grid blocks, ``run`` adds a batch's block-pair products to F,
    ``result`` returns F in the caller's basis order."""

    def __init__(self, eng, xctype: str):
        xp, lay, st, d = eng.xp, eng.layout, eng.settings, eng.layout.d
        self.eng, self.xctype = eng, xctype
        self.nvar = NVAR[xctype]
        self.w = xp.zeros((self.nvar, lay.npts_pad))
        self.wmax = xp.zeros((self.nvar, lay.ngb))
        self.dummy = xp.zeros(1)
        self.f = xp.zeros((lay.nao_pad, lay.nao_pad))
        self.counter = xp.zeros(1, dtype=np.uint64)
        xc = kd.XC_CODES[xctype]
        self.group = kd.GROUPS.get(eng.potential_tiles)
        if self.group:
            self.kpot = eng.kernels[f"kd_potential_group<{xc},{self.group}>"]
        elif st.tiling == "warp":
            self.kpot = eng.kernels[f"kd_potential_warp<{xc}>"]
        else:
            self.kpot = eng.kernels[f"kd_potential<{xc},{d},{eng.mma}>"]
        self.kaow = eng.kernels[f"kd_aow<{d}>"]

    def set_weights(self, g0: int, g1: int, wv) -> None:
        d = self.eng.layout.d
        self.w[:, g0 * d : g0 * d + wv.shape[-1]] = wv
        w = self.w[:, g0 * d : g1 * d].reshape(self.nvar, g1 - g0, d)
        self.wmax[:, g0:g1] = self.eng.xp.abs(w).max(axis=2)

    def run(self, g0: int, g1: int, data) -> None:
        eng, st = self.eng, self.eng.settings
        dummy, w, wmax = self.dummy, self.w, self.wmax
        w0, wmax0 = (w[0], wmax[0]) if self.xctype == "LDA" else (dummy, dummy)
        wt, wmaxt = (w[4], wmax[4]) if self.xctype == "MGGA" else (dummy, dummy)
        t0 = eng.timer.start()
        b0 = int(eng.col_ptr_host[g0])
        nb = int(eng.col_ptr_host[g1]) - b0
        aow = amax = dummy
        if self.xctype != "LDA":
            aow, amax = eng.operand(nb)
            self.kaow(nb, (data, np.int32(eng.ncomp), w, np.int32(eng.layout.npts_pad),
                           eng.blk_col, np.int32(b0), aow, amax))  # fmt: skip
        nseg = -(-(g1 - g0) // eng.segment_blocks)
        segments = (np.int32(nseg), np.int32(eng.segment_blocks), np.int32(g0), np.int32(g1),
                    np.int32(b0), np.float64(st.t_d), self.f, np.int32(eng.layout.nao_pad),
                    self.counter)  # fmt: skip
        if self.group:
            groups, count = eng.tile_groups(self.group)
            self.kpot(
                count * nseg,
                (data, np.int32(eng.ncomp), aow, amax, eng.blkpos, np.int32(eng.layout.ngb),
                 np.int32(eng.layout.nbb), eng.row_ptr, eng.col_idx, eng.phimax, w0, wt,
                 wmax0, wmaxt, groups, *segments),
            )  # fmt: skip
        else:
            self.kpot(
                eng.ntiles * nseg,
                (data, np.int32(eng.ncomp), aow, amax, eng.row_ptr, eng.col_idx, eng.row_blk,
                 eng.phimax, w0, wt, wmax0, wmaxt, eng.tiles, *segments),
            )  # fmt: skip
        eng.timer.stop("potential", t0)

    def full_matrix(self):
        """F from the tiles the kernels wrote: a tile off the diagonal is written in one
        orientation only (p < r), the tiles of a diagonal unit (a tile, or a group of G x G
        tiles that its thread block computes whole) in both."""
        xp, f = self.eng.xp, self.f
        unit = self.eng.layout.d * (self.group or 1)
        which = xp.arange(f.shape[0]) // unit
        return xp.where(which[:, None] == which[None, :], f, f + f.T)

    def result(self):
        eng, lay = self.eng, self.eng.layout
        eng.counts["potential_pairs"] = int(_host(self.counter)[0])
        eng.counts["potential_candidates"] = lay.nbb**2 * lay.ngb
        f = self.full_matrix()[: lay.nao, : lay.nao]
        out = eng.xp.empty_like(f)
        out[eng.perm[:, None], eng.perm[None, :]] = f
        return out


class GPUBlockEngine:
    """KerneLDI on a device: BCS blocks of the AO operand, block-pair kernels."""

    name = "kerneldi-gpu"

    def __init__(
        self,
        mol,
        layout: Layout,
        settings: Settings,
        deriv: int,
        device,
        batch_bytes: int = BATCH_BYTES,
        segment_blocks: int = SEGMENT_BLOCKS,
        density_row_groups: int = DENSITY_ROW_GROUPS,
        profile: bool = False,
        task_blocks: int = TASK_BLOCKS,
    ):
        t_setup = time.perf_counter()
        self.task_blocks = max(1, int(task_blocks))
        settings = kd.resolve(settings, device)
        self.segment_blocks = segment_blocks
        self.density_row_groups = density_row_groups
        xp = self.xp = device.xp
        self.device, self.mol, self.layout, self.settings = device, mol, layout, settings
        self.deriv, self.ncomp = deriv, (1 if deriv == 0 else 4)
        self.mma = kd.MMA_CODES[settings.mma]
        self.kernels = device.kernels(settings.block_size, settings.mma)
        self.timer = _Timer(device, profile)
        lay, d = layout, layout.d
        self.ao = device.ao_evaluator(mol)
        # evaluator row of every layout position, -1 for the padding
        rows = np.full(lay.nao_pad, -1, dtype=np.int32)
        rows[: lay.nao] = self.ao.rows(lay.basis_perm)
        self.rows_host = rows
        self.rows = self._i32(rows)
        self.perm = xp.asarray(lay.basis_perm)
        self.rotation = forms.CholeskyRotation(np.argsort(lay.basis_perm))
        self.coords = xp.asarray(lay.coords)
        self.weights = xp.asarray(lay.weights)
        per_block = self.ncomp * lay.nao * d * 8  # the AO values of one grid block
        self.batch_blocks = max(1, min(lay.ngb, batch_bytes // per_block))

        # pass 1: block summaries (Eq. 11) and the kept blocks (Eq. 13) in BCS(C) order
        rows, cols, norms = [], [], []
        knorm = self.kernels[f"kd_ao_norms<{d}>"]
        for g0, g1 in self._ranges():
            ao = self._ao(g0, g1)
            norm = xp.empty((g1 - g0) * lay.nbb)
            knorm(
                len(norm),
                (ao, np.int32(self.ncomp), np.int32(lay.nao), np.int32(ao.shape[2]), self.rows,
                 np.int32(lay.nbb), norm),
            )  # fmt: skip
            norm = norm.reshape(g1 - g0, lay.nbb)
            g, p = xp.nonzero(norm >= settings.t_b)
            rows.append(_host(p))
            cols.append(_host(g) + g0)
            norms.append(norm[g, p])
            del ao
        pat = self.pattern = BlockPattern.from_blocks(
            lay.nbb, lay.ngb, np.concatenate(rows), np.concatenate(cols)
        )
        if pat.nblk >= 2**31:
            raise InputError(f"{pat.nblk} kept blocks exceed the kernels' 32-bit indices")
        self.phimax = xp.concatenate(norms)
        self.col_ptr_host = pat.col_ptr
        self.col_ptr = self._i32(pat.col_ptr)
        self.row_idx = self._i32(pat.row_idx)
        self.row_ptr = self._i32(pat.row_ptr)
        self.col_idx = self._i32(pat.col_idx)
        self.row_blk = self._i32(pat.row_blk)
        self.blk_col = self._i32(pat.block_cols())
        tile_pairs = self.tile_pairs = pat.tile_pairs()
        self.ntiles = len(tile_pairs)
        self._groups: dict[int, tuple] = {}
        self.tiles = self._i32(tile_pairs.ravel())

        # pass 2: keep the AO blocks on the device when they fit, else those of the first
        # batches that fit (the others are evaluated again in every call)
        block_bytes = (self.ncomp + (1 if deriv else 0)) * d * d * 8  # with the GGA operand
        budget = settings.gpu_memory_fraction * device.free_bytes()
        self.cached = settings.ao_cache == "always" or (
            settings.ao_cache == "auto" and pat.nblk * block_bytes <= budget
        )
        self.data = None
        self.batch_cache: dict[tuple[int, int], object] = {}
        if self.cached:
            self.data = xp.empty((pat.nblk, self.ncomp, d, d))
            for g0, g1 in self._ranges():
                b0, b1 = pat.col_ptr[g0], pat.col_ptr[g1]
                if b1 == b0:
                    continue
                sub, rows = self._subset(g0, g1)
                self._gather(self._ao(g0, g1, sub), g0, b0, self.data[b0:b1], rows)
            self.batches = [(0, lay.ngb)]
        else:
            self.batches = list(self._ranges())
            self.subsets = {(g0, g1): self._subset(g0, g1) for g0, g1 in self.batches}
            room = budget if settings.ao_cache == "auto" else 0.0
            sizes = [(pat.col_ptr[g1] - pat.col_ptr[g0]) * block_bytes for g0, g1 in self.batches]
            for g0, g1 in self.batches[: _leading_that_fit(sizes, room)]:
                self.batch_cache[(g0, g1)] = self._evaluate(g0, g1)
        # the GGA operand of the potential pass (Phi^T w, d x d per kept block, and its
        # maxima), made once for the largest pass: counted in the budget above, and held from
        # the layout on, so that memory another engine takes between calls cannot leave a
        # call without it
        self._operand = None
        if deriv:
            most = max((int(pat.col_ptr[g1] - pat.col_ptr[g0]) for g0, g1 in self.batches),
                       default=0)  # fmt: skip
            self._operand = (xp.empty((max(most, 1), d, d)), xp.empty(max(most, 1)))
        self.counts: dict[str, int] = {}
        self.selected: tuple[int, ...] | None = None
        device.synchronize()
        self.setup_seconds = time.perf_counter() - t_setup

    def operand(self, nb: int):
        """The GGA operand of a potential pass over ``nb`` kept blocks and its block maxima:
        views of the engine's buffer (made at setup for the largest pass)."""
        if self._operand is None:
            raise InputError("a GGA or meta-GGA potential on blocks made without AO derivatives")
        aow, amax = self._operand
        if nb > amax.shape[0]:
            raise InputError(f"a pass over {nb} kept blocks exceeds the largest ({amax.shape[0]})")
        n = max(nb, 1)
        return aow[:n], amax[:n]

    # -- tasks: ranges of TASK_BLOCKS grid blocks when cached, else the grid batches ----------
    def _task_ranges(self) -> list[tuple[int, int]]:
        if self.data is None:
            return list(self.batches)
        n, step = self.layout.ngb, self.task_blocks
        return [(g0, min(g0 + step, n)) for g0 in range(0, n, step)]

    def tasks(self) -> list[XcTask]:
        """The engine's grid tasks (``tasks.py``)."""
        return grid_tasks(self.col_ptr_host, self.layout.d, self._task_ranges())

    def select(self, tasks) -> None:
        """Integrate only the grid blocks of ``tasks`` (indices into ``tasks()``; a collection,
        or an iterator the next call draws from) from now on; None for all of them."""
        self.selected = checked_selection(tasks, len(self._task_ranges()))

    def _pass_ranges(self):
        """The grid-block ranges a call runs over: the batches, or the selected tasks' (joined
        where consecutive when the AO blocks are cached, which any range can read; one at a
        time from a selection drawn lazily)."""
        if self.selected is None:
            return self.batches
        ranges = self._task_ranges()
        if isinstance(self.selected, Iterator):
            return (ranges[i] for i in self.selected)
        if self.data is None:
            return [ranges[i] for i in self.selected]
        return [(ranges[a][0], ranges[b - 1][1]) for a, b in runs(self.selected)]

    def apply_settings(self, settings: Settings) -> None:
        """Another product mode, tiling, pair threshold or density form on the same blocks (the
        block structure does not depend on them)."""
        settings = kd.resolve(settings, self.device)
        self.kernels = self.device.kernels(self.layout.d, settings.mma)
        self.mma = kd.MMA_CODES[settings.mma]
        self.settings = settings

    @property
    def potential_tiles(self) -> str:
        """The potential's output tiles per thread block ("auto" resolved on the kept blocks)."""
        return kd.potential_tiles(self.settings, self.pattern.retained_fraction())

    # -- operands ---------------------------------------------------------------------------
    @functools.cached_property
    def blkpos(self):
        """The kept block of every (basis block, grid block) in BCS(C) order, or -1 (the
        grouped potential kernel's lookup)."""
        xp, lay = self.xp, self.layout
        out = xp.full(lay.nbb * lay.ngb, -1, dtype=np.int32)
        out[self.row_idx.astype(np.int64) * lay.ngb + self.blk_col] = xp.arange(
            self.pattern.nblk, dtype=np.int32
        )
        return out

    def tile_groups(self, g: int):
        """The g x g groups (P, R), P <= R, of output tiles that hold one, and their count."""
        if g not in self._groups:  # per engine: a cache on the method would keep it alive
            groups = np.unique(self.tile_pairs // g, axis=0)
            self._groups[g] = (self._i32(groups.ravel()), len(groups))
        return self._groups[g]

    def _i32(self, a):
        return self.xp.asarray(np.ascontiguousarray(a, dtype=np.int32))

    def _ranges(self):
        n = self.layout.ngb
        for g0 in range(0, n, self.batch_blocks):
            yield g0, min(g0 + self.batch_blocks, n)

    def _ao(self, g0: int, g1: int, subset=None):
        """AO values of grid blocks [g0, g1): (comp, rows, npoints), every evaluator row or
        those of ``subset``."""
        d, npts = self.layout.d, self.layout.npts
        ao = self.ao(self.coords[g0 * d : min(g1 * d, npts)], self.deriv, subset)
        return self.xp.ascontiguousarray(ao)

    def _subset(self, g0: int, g1: int):
        """The evaluator's subset for the basis blocks kept in grid blocks [g0, g1), and the
        row of every layout position in its output (-1 where not evaluated)."""
        d = self.layout.d
        pat = self.pattern
        blocks = np.unique(pat.row_idx[pat.col_ptr[g0] : pat.col_ptr[g1]])
        positions = (blocks[:, None] * d + np.arange(d)).ravel()
        wanted = self.rows_host[positions]
        sub = self.ao.subset(wanted[wanted >= 0])
        return sub, self._i32(sub.output_rows(self.rows_host))

    def _gather(self, ao, g0: int, b0: int, out, rows):
        """The kept blocks b0 .. b0 + len(out) - 1 (grid blocks from g0) into ``out``; ``rows``
        maps layout positions to rows of ``ao``."""
        lay = self.layout
        self.kernels[f"kd_ao_gather<{lay.d}>"](
            len(out),
            (ao, np.int32(self.ncomp), np.int32(ao.shape[1]), np.int32(ao.shape[2]), rows,
             self.row_idx, self.blk_col, np.int32(b0), np.int32(g0), out),
        )  # fmt: skip
        return out

    def _batch_data(self, g0: int, g1: int):
        if self.data is not None:
            b0, b1 = self.col_ptr_host[g0], self.col_ptr_host[g1]
            return self.data[b0:b1]
        if (g0, g1) in self.batch_cache:
            return self.batch_cache[(g0, g1)]
        t0 = self.timer.start()
        out = self._evaluate(g0, g1)
        self.timer.stop("ao", t0)
        return out

    def _evaluate(self, g0: int, g1: int):
        """The kept AO blocks of grid blocks [g0, g1), evaluated."""
        b0, b1 = self.col_ptr_host[g0], self.col_ptr_host[g1]
        out = self.xp.empty((b1 - b0, self.ncomp, self.layout.d, self.layout.d))
        if b1 > b0:  # a batch without kept blocks evaluates nothing
            sub, rows = self.subsets[(g0, g1)]
            self._gather(self._ao(g0, g1, sub), g0, b0, out, rows)
        return out

    # -- Eq. 4: rho, grad rho, tau -----------------------------------------------------------
    def density(self, dm, xctype: str, orbitals=None):
        """rho (and grad rho, tau) from R = D Phi, or from R = C^T Phi when ``orbitals``
        (C sqrt(n) of D) are given and the form setting picks them (``forms.py``)."""
        dens = self._density_pass(dm, xctype, orbitals)
        for g0, g1 in self._pass_ranges():
            dens.run(g0, g1, self._batch_data(g0, g1))
        dens.finish()
        return dens.rho[:, : self.layout.npts]

    def _density_pass(self, dm, xctype: str, orbitals) -> _DensityPass:
        xp, lay, d, st = self.xp, self.layout, self.layout.d, self.settings
        dm = xp.asarray(dm, dtype=np.float64)
        dpad = xp.zeros((lay.nao_pad, lay.nao_pad))
        dpad[: lay.nao, : lay.nao] = dm[self.perm[:, None], self.perm[None, :]]
        dmax = xp.ascontiguousarray(xp.abs(dpad).reshape(lay.nbb, d, lay.nbb, d).max(axis=(1, 3)))
        orb = forms.orbital_operands(orbitals, self.rotation, st, lay, xp)
        form = forms.choose(
            st.density_form, orbitals, np.diff(self.col_ptr_host), xctype, d,
            lambda: float((dmax >= st.t_b).mean()),
            lambda: forms.orbital_fill(orb[1], self.row_idx, st.t_b, xp),
        )  # fmt: skip
        self.counts["density_form"] = form
        xc = kd.XC_CODES[xctype]
        staged = int(st.staging == "async")
        if form == "orbitals":
            ct, cmax = orb
            warp = st.tiling == "warp"
            kernel = self.kernels[
                f"kd_density_orb_warp<{xc}>"
                if warp
                else f"kd_density_orb<{xc},{d},{self.mma},{staged}>"
            ]
            operands = (ct, cmax, np.int32(lay.nbb), np.int32(len(ct)))
            thresholds = (np.float64(st.t_d),)
            candidates = len(ct) * lay.nbb * lay.ngb
            # the warp kernel's rows go to its eight warps first: split only what is left
            rows = -(-len(ct) // kd.NWARP) if warp else len(ct)
        else:
            dt = xp.ascontiguousarray(dpad.reshape(lay.nbb, d, lay.nbb, d).transpose(0, 2, 1, 3))
            kernel = self.kernels[f"kd_density<{xc},{d},{self.mma},{staged}>"]
            operands = (dt, dmax, np.int32(lay.nbb))
            thresholds = (np.float64(st.t_b), np.float64(st.t_d))
            candidates = lay.nbb**2 * lay.ngb
            rows = lay.nbb
        return _DensityPass(self, xctype, kernel, operands, thresholds, candidates, rows)

    # -- Eq. 5: F = Phi W Phi^T (+ GGA, meta-GGA terms), symmetric ----------------------------
    def potential(self, wv, xctype: str):
        pot = _PotentialPass(self, xctype)
        pot.set_weights(0, self.layout.ngb, wv)
        for g0, g1 in self._pass_ranges():
            pot.run(g0, g1, self._batch_data(g0, g1))
        return pot.result()

    # -- both, batch by batch -----------------------------------------------------------------
    def xc_pass(self, densities: list, xctype: str, xc) -> list:
        """``integrate.xc_pass``: with every AO block cached, the whole grid at once; otherwise
        densities, ``xc`` and potentials batch by batch, so that a batch's AO values are made
        once per call instead of once for the densities and again for the potentials. With a
        task selection, only the selected ranges, one after another."""
        if self.data is not None and self.selected is None:
            return integrate.whole_grid_pass(self, densities, xctype, xc)
        xp, d, npts = self.xp, self.layout.d, self.layout.npts
        dens = [self._density_pass(dm, xctype, orbitals) for dm, orbitals in densities]
        pots = []
        for g0, g1 in self._pass_ranges():
            data = self._batch_data(g0, g1)
            for p in dens:
                p.run(g0, g1, data)
            points = slice(g0 * d, min(g1 * d, npts))
            wvs = xc(points, [xp.ascontiguousarray(p.rho[:, points]) for p in dens])
            pots = pots or [_PotentialPass(self, xctype) for _ in wvs]
            for pot, wv in zip(pots, wvs):
                pot.set_weights(g0, g1, wv)
                pot.run(g0, g1, data)
        for p in dens:
            p.finish()
        pots = pots or [_PotentialPass(self, xctype) for _ in densities]  # no point selected
        return [pot.result() for pot in pots]

    def _cached_fraction(self) -> float:
        """The share of the kept AO blocks held on the device between calls."""
        if self.cached:
            return 1.0
        held = sum(int(self.col_ptr_host[b] - self.col_ptr_host[a]) for a, b in self.batch_cache)
        return held / max(1, self.pattern.nblk)

    def stats(self) -> dict:
        p = self.pattern
        out = {
            "nao": self.layout.nao,
            "npoints": self.layout.npts,
            "basis_blocks": p.nbr,
            "grid_blocks": p.nbc,
            "retained_blocks": p.nblk,
            "retained_fraction": p.retained_fraction(),
            "output_tiles": self.ntiles,
            "ao_cached": self.cached,
            "ao_cached_fraction": self._cached_fraction(),
            "grid_batches": len(self.batches),
            "setup_seconds": self.setup_seconds,
            "mma": self.settings.mma,
            "staging": self.settings.staging,
            "potential_tiles": self.potential_tiles,
        }
        return out | pair_fractions(self.counts)


class GPUDenseEngine:
    """EXC-cuBLAS: the same AO values and XC step, dense products (cuBLAS through CuPy)."""

    name = "exc-cublas"

    def __init__(
        self,
        mol,
        layout: Layout,
        settings: Settings,
        deriv: int,
        device,
        batch_bytes: int = BATCH_BYTES,
        profile: bool = False,
    ):
        t_setup = time.perf_counter()
        xp = self.xp = device.xp
        self.device, self.layout, self.deriv = device, layout, deriv
        self.ncomp = 1 if deriv == 0 else 4
        self.timer = _Timer(device, profile)
        self.ao = device.ao_evaluator(mol)
        # work in the evaluator's AO order; orig[k] is the PySCF AO of row k
        self.orig = xp.asarray(np.argsort(self.ao.rows(np.arange(layout.nao))))
        self.coords = xp.asarray(layout.coords)
        self.weights = xp.asarray(layout.weights)
        per_point = 2 * self.ncomp * layout.nao * 8
        self.batch = max(1, min(layout.npts, batch_bytes // per_point))
        # the AO values of every batch when they fit, else of the first batches that fit
        point_bytes = self.ncomp * layout.nao * 8
        budget = settings.gpu_memory_fraction * device.free_bytes()
        self.cached = settings.ao_cache == "always" or (
            settings.ao_cache == "auto" and layout.npts * point_bytes <= budget
        )
        room = np.inf if self.cached else (budget if settings.ao_cache == "auto" else 0.0)
        ranges = list(self._ranges())
        held = _leading_that_fit([(i1 - i0) * point_bytes for i0, i1 in ranges], room)
        self.ao_values = [self.ao(self.coords[i0:i1], deriv) for i0, i1 in ranges[:held]]
        device.synchronize()
        self.setup_seconds = time.perf_counter() - t_setup

    def _ranges(self):
        for i0 in range(0, self.layout.npts, self.batch):
            yield i0, min(i0 + self.batch, self.layout.npts)

    def _batches(self):
        for n, (i0, i1) in enumerate(self._ranges()):
            if n < len(self.ao_values):
                yield i0, i1, self.ao_values[n]
            else:
                t0 = self.timer.start()
                ao = self.ao(self.coords[i0:i1], self.deriv)
                self.timer.stop("ao", t0)
                yield i0, i1, ao

    def _dm(self, dm):
        return self.xp.asarray(dm, dtype=np.float64)[self.orig[:, None], self.orig[None, :]]

    def _density_batch(self, dm, xctype: str, ao, rho) -> None:
        """rho (nvar, points of the batch) from R = D Phi on the batch's AO values ``ao``."""
        t0 = self.timer.start()
        c0 = dm @ ao[0]  # R = D Phi
        rho[0] = (ao[0] * c0).sum(axis=0)
        if xctype != "LDA":
            rho[1:4] = 2 * (ao[1:4] * c0).sum(axis=1)
        if xctype == "MGGA":
            rho[4] = 0.5 * sum((ao[k] * (dm @ ao[k])).sum(axis=0) for k in (1, 2, 3))
        self.timer.stop("density", t0)

    def _potential_batch(self, f, wv, xctype: str, ao) -> None:
        """F += the batch's terms, ``wv`` the weighted potentials of its points."""
        t0 = self.timer.start()
        if xctype == "LDA":
            f += ao[0] @ (wv[0] * ao[0]).T
        else:
            aow = (ao[:4] * wv[:4, None]).sum(axis=0)
            f += ao[0] @ aow.T
            if xctype == "MGGA":
                for k in (1, 2, 3):
                    # the tau term is symmetric: half of it before F + F^T
                    f += 0.5 * (ao[k] @ (wv[4] * ao[k]).T)
        self.timer.stop("potential", t0)

    def _result(self, f, xctype: str):
        if xctype != "LDA":
            f = f + f.T
        out = self.xp.empty_like(f)
        out[self.orig[:, None], self.orig[None, :]] = f
        return out

    def density(self, dm, xctype: str, orbitals=None):
        """R = D Phi on every AO (the paper's dense baseline; ``orbitals`` are not used)."""
        dm = self._dm(dm)
        rho = self.xp.empty((NVAR[xctype], self.layout.npts))
        for i0, i1, ao in self._batches():
            self._density_batch(dm, xctype, ao, rho[:, i0:i1])
        return rho

    def potential(self, wv, xctype: str):
        nao = self.layout.nao
        f = self.xp.zeros((nao, nao))
        for i0, i1, ao in self._batches():
            self._potential_batch(f, wv[:, i0:i1], xctype, ao)
        return self._result(f, xctype)

    def xc_pass(self, densities: list, xctype: str, xc) -> list:
        """As the block engine's: batch by batch when the AO values are not all cached, so that
        the baseline makes each batch's AO values once per call as well."""
        if self.cached:
            return integrate.whole_grid_pass(self, densities, xctype, xc)
        xp, nao = self.xp, self.layout.nao
        dms = [self._dm(dm) for dm, _ in densities]
        fs = []
        for i0, i1, ao in self._batches():
            rhos = [xp.empty((NVAR[xctype], i1 - i0)) for _ in dms]
            for dm, rho in zip(dms, rhos):
                self._density_batch(dm, xctype, ao, rho)
            wvs = xc(slice(i0, i1), rhos)
            fs = fs or [xp.zeros((nao, nao)) for _ in wvs]
            for f, wv in zip(fs, wvs):
                self._potential_batch(f, wv, xctype, ao)
        return [self._result(f, xctype) for f in fs]

    def stats(self) -> dict:
        return {"ao_cached": self.cached, "setup_seconds": self.setup_seconds}


def make_engine(kind: str, mol, layout: Layout, settings: Settings, xctype: str, device, **kw):
    cls = {"block": GPUBlockEngine, "dense": GPUDenseEngine}[kind]
    return cls(mol, layout, settings, AO_DERIV[xctype], device, **kw)
