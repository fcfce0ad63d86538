"""GPU backend: KerneLDI's block-pair kernels and the dense EXC-cuBLAS baseline.

Host code works on any device of ``device.py`` (CuPy on a GPU; NumPy with the host emulation
of the kernels in the tests). The block structure is built once per geometry and grid; the AO
blocks stay on the device when ``gpu_memory_fraction`` of its free memory holds them, and are
recomputed per grid batch otherwise. Once the kept blocks are known, a batch evaluates only
the shells of the basis blocks it keeps (in large, sparse systems a small part of the basis).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .. import forms
from ..blocks import BlockPattern, pair_fractions
from ..errors import InputError
from ..integrate import AO_DERIV, NVAR
from ..layout import Layout
from ..settings import Settings
from . import kernels as kd

BATCH_BYTES = 4 * 1024**3  # AO values of one grid batch
# grid blocks per thread block of the potential kernel: bounds the work of one output tile
SEGMENT_BLOCKS = 1024


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


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
        profile: bool = False,
    ):
        t_setup = time.perf_counter()
        settings = dataclasses.replace(settings, mma=kd.resolve_mma(settings, device))
        kd.check_supported(settings.block_size, settings.mma, settings.tiling)
        self.segment_blocks = segment_blocks
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
        tile_pairs = pat.tile_pairs()
        self.ntiles = len(tile_pairs)
        self.tiles = self._i32(tile_pairs.ravel())

        # pass 2: keep the AO blocks on the device when they fit
        data_bytes = pat.nblk * (self.ncomp + (1 if deriv else 0)) * d * d * 8
        budget = settings.gpu_memory_fraction * device.free_bytes()
        self.cached = settings.ao_cache == "always" or (
            settings.ao_cache == "auto" and data_bytes <= budget
        )
        self.data = None
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
        self.counts: dict[str, int] = {}
        device.synchronize()
        self.setup_seconds = time.perf_counter() - t_setup

    def apply_settings(self, settings: Settings) -> None:
        """Another product mode, tiling, pair threshold or density form on the same blocks (the
        block structure does not depend on them)."""
        settings = dataclasses.replace(settings, mma=kd.resolve_mma(settings, self.device))
        kd.check_supported(self.layout.d, settings.mma, settings.tiling)
        self.kernels = self.device.kernels(self.layout.d, settings.mma)
        self.mma = kd.MMA_CODES[settings.mma]
        self.settings = settings

    # -- operands ---------------------------------------------------------------------------
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
        rows = np.where(self.rows_host >= 0, sub.position[np.maximum(self.rows_host, 0)], -1)
        return sub, self._i32(rows)

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
        b0, b1 = self.col_ptr_host[g0], self.col_ptr_host[g1]
        if self.data is not None:
            return self.data[b0:b1]
        t0 = self.timer.start()
        out = self.xp.empty((b1 - b0, self.ncomp, self.layout.d, self.layout.d))
        if b1 > b0:  # a batch without kept blocks evaluates nothing
            sub, rows = self.subsets[(g0, g1)]
            self._gather(self._ao(g0, g1, sub), g0, b0, out, rows)
        self.timer.stop("ao", t0)
        return out

    # -- Eq. 4: rho, grad rho, tau -----------------------------------------------------------
    def density(self, dm, xctype: str, orbitals=None):
        """rho (and grad rho, tau) from R = D Phi, or from R = C^T Phi when ``orbitals``
        (C sqrt(n) of D) are given and the form setting picks them (``forms.py``)."""
        xp, lay, d = self.xp, self.layout, self.layout.d
        dm = xp.asarray(dm, dtype=np.float64)
        dpad = xp.zeros((lay.nao_pad, lay.nao_pad))
        dpad[: lay.nao, : lay.nao] = dm[self.perm[:, None], self.perm[None, :]]
        dmax = xp.ascontiguousarray(xp.abs(dpad).reshape(lay.nbb, d, lay.nbb, d).max(axis=(1, 3)))
        st = self.settings
        orb = forms.orbital_operands(orbitals, self.rotation, st, lay, xp)
        form = forms.choose(
            st.density_form, orbitals, np.diff(self.col_ptr_host), xctype, d,
            lambda: float((dmax >= st.t_b).mean()),
            lambda: forms.orbital_fill(orb[1], self.row_idx, st.t_b, xp),
        )  # fmt: skip
        self.counts["density_form"] = form
        rho = xp.zeros((NVAR[xctype], lay.npts_pad))
        counter = xp.zeros(1, dtype=np.uint64)
        xc = kd.XC_CODES[xctype]
        if form == "orbitals":
            ct, cmax = orb
            warp = self.settings.tiling == "warp"
            kernel = self.kernels[
                f"kd_density_orb_warp<{xc}>" if warp else f"kd_density_orb<{xc},{d},{self.mma}>"
            ]
            operands = (ct, cmax, np.int32(lay.nbb), np.int32(len(ct)))
            thresholds = (np.float64(self.settings.t_d),)
            candidates = len(ct) * lay.nbb * lay.ngb
        else:
            dt = xp.ascontiguousarray(dpad.reshape(lay.nbb, d, lay.nbb, d).transpose(0, 2, 1, 3))
            kernel = self.kernels[f"kd_density<{xc},{d},{self.mma}>"]
            operands = (dt, dmax, np.int32(lay.nbb))
            thresholds = (np.float64(self.settings.t_b), np.float64(self.settings.t_d))
            candidates = lay.nbb**2 * lay.ngb
        for g0, g1 in self.batches:
            data = self._batch_data(g0, g1)
            t0 = self.timer.start()
            kernel(
                g1 - g0,
                (data, np.int32(self.ncomp), self.col_ptr, self.row_idx, self.phimax, *operands,
                 np.int32(g0), np.int32(self.col_ptr_host[g0]), *thresholds, rho,
                 np.int32(lay.npts_pad), counter),
            )  # fmt: skip
            self.timer.stop("density", t0)
        self.counts["density_pairs"] = int(_host(counter)[0])
        self.counts["density_candidates"] = candidates
        return rho[:, : lay.npts]

    # -- Eq. 5: F = Phi W Phi^T (+ GGA, meta-GGA terms), symmetric ----------------------------
    def potential(self, wv, xctype: str):
        xp, lay, st, d = self.xp, self.layout, self.settings, self.layout.d
        nvar = NVAR[xctype]
        w = xp.zeros((nvar, lay.npts_pad))
        w[:, : lay.npts] = wv
        wmax = xp.ascontiguousarray(xp.abs(w.reshape(nvar, lay.ngb, d)).max(axis=2))
        dummy = xp.zeros(1)
        w0, wmax0 = (w[0], wmax[0]) if xctype == "LDA" else (dummy, dummy)
        wt, wmaxt = (w[4], wmax[4]) if xctype == "MGGA" else (dummy, dummy)
        f = xp.zeros((lay.nao_pad, lay.nao_pad))
        counter = xp.zeros(1, dtype=np.uint64)
        xc = kd.XC_CODES[xctype]
        if st.tiling == "warp":
            kpot = self.kernels[f"kd_potential_warp<{xc}>"]
        else:
            kpot = self.kernels[f"kd_potential<{xc},{d},{self.mma}>"]
        kaow = self.kernels[f"kd_aow<{d}>"]
        for g0, g1 in self.batches:
            data = self._batch_data(g0, g1)
            t0 = self.timer.start()
            b0 = int(self.col_ptr_host[g0])
            nb = int(self.col_ptr_host[g1]) - b0
            aow = amax = dummy
            if xctype != "LDA":
                aow, amax = xp.empty((max(nb, 1), d, d)), xp.empty(max(nb, 1))
                kaow(nb, (data, np.int32(self.ncomp), w, np.int32(lay.npts_pad), self.blk_col,
                          np.int32(b0), aow, amax))  # fmt: skip
            nseg = -(-(g1 - g0) // self.segment_blocks)
            kpot(
                self.ntiles * nseg,
                (data, np.int32(self.ncomp), aow, amax, self.row_ptr, self.col_idx, self.row_blk,
                 self.phimax, w0, wt, wmax0, wmaxt, self.tiles, np.int32(nseg),
                 np.int32(self.segment_blocks), np.int32(g0), np.int32(g1), np.int32(b0),
                 np.float64(st.t_d), f, np.int32(lay.nao_pad), counter),
            )  # fmt: skip
            self.timer.stop("potential", t0)
        self.counts["potential_pairs"] = int(_host(counter)[0])
        self.counts["potential_candidates"] = lay.nbb**2 * lay.ngb
        f = f[: lay.nao, : lay.nao]
        out = xp.empty_like(f)
        out[self.perm[:, None], self.perm[None, :]] = f
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
            "output_tiles": self.ntiles,
            "ao_cached": self.cached,
            "grid_batches": len(self.batches),
            "setup_seconds": self.setup_seconds,
            "mma": self.settings.mma,
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
        total = self.ncomp * layout.nao * layout.npts * 8
        budget = settings.gpu_memory_fraction * device.free_bytes()
        self.cached = settings.ao_cache == "always" or (
            settings.ao_cache == "auto" and total <= budget
        )
        self.ao_values = (
            [self.ao(self.coords[i0:i1], deriv) for i0, i1 in self._ranges()]
            if self.cached
            else None
        )
        device.synchronize()
        self.setup_seconds = time.perf_counter() - t_setup

    def _ranges(self):
        for i0 in range(0, self.layout.npts, self.batch):
            yield i0, min(i0 + self.batch, self.layout.npts)

    def _batches(self):
        for n, (i0, i1) in enumerate(self._ranges()):
            if self.ao_values is not None:
                yield i0, i1, self.ao_values[n]
            else:
                t0 = self.timer.start()
                ao = self.ao(self.coords[i0:i1], self.deriv)
                self.timer.stop("ao", t0)
                yield i0, i1, ao

    def density(self, dm, xctype: str, orbitals=None):
        """R = D Phi on every AO (the paper's dense baseline; ``orbitals`` are not used)."""
        xp = self.xp
        dm = xp.asarray(dm, dtype=np.float64)[self.orig[:, None], self.orig[None, :]]
        rho = xp.empty((NVAR[xctype], self.layout.npts))
        for i0, i1, ao in self._batches():
            t0 = self.timer.start()
            c0 = dm @ ao[0]  # R = D Phi
            rho[0, i0:i1] = (ao[0] * c0).sum(axis=0)
            if xctype != "LDA":
                rho[1:4, i0:i1] = 2 * (ao[1:4] * c0).sum(axis=1)
            if xctype == "MGGA":
                rho[4, i0:i1] = 0.5 * sum((ao[k] * (dm @ ao[k])).sum(axis=0) for k in (1, 2, 3))
            self.timer.stop("density", t0)
        return rho

    def potential(self, wv, xctype: str):
        xp = self.xp
        nao = self.layout.nao
        f = xp.zeros((nao, nao))
        for i0, i1, ao in self._batches():
            t0 = self.timer.start()
            if xctype == "LDA":
                f += ao[0] @ (wv[0, i0:i1] * ao[0]).T
            else:
                aow = (ao[:4] * wv[:4, None, i0:i1]).sum(axis=0)
                f += ao[0] @ aow.T
                if xctype == "MGGA":
                    for k in (1, 2, 3):
                        # the tau term is symmetric: half of it before F + F^T
                        f += 0.5 * (ao[k] @ (wv[4, i0:i1] * ao[k]).T)
            self.timer.stop("potential", t0)
        if xctype != "LDA":
            f = f + f.T
        out = xp.empty_like(f)
        out[self.orig[:, None], self.orig[None, :]] = f
        return out

    def stats(self) -> dict:
        return {"ao_cached": self.cached, "setup_seconds": self.setup_seconds}


def make_engine(kind: str, mol, layout: Layout, settings: Settings, xctype: str, device, **kw):
    cls = {"block": GPUBlockEngine, "dense": GPUDenseEngine}[kind]
    return cls(mol, layout, settings, AO_DERIV[xctype], device, **kw)
