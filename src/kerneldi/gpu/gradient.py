"""The XC nuclear gradient on a device: the CPU engine's chunked block products in CuPy.

``GPUGradientEngine`` holds AO values and derivatives one order above the energy's (GPU4PySCF's
evaluator on a GPU, PySCF's on the host device of the tests) in the layout of the energy
engine (Morton grid blocks, basis order) and keeps, per chunk of grid blocks, the basis blocks
any of its grid blocks keeps at t_b (Eq. 12 over every component the gradient multiplies).
A chunk holds as many grid blocks as keep its AO values within ``CHUNK_BYTES`` (at least
``cpu.CHUNK_BLOCKS``, at most ``MAX_CHUNK_BLOCKS``): few large cuBLAS products instead of
thousands of small launches. The gradient products are ``cpu.gradient_chunk`` on the device:
one cuBLAS product per chunk over its kept blocks, Eq. 17's pair decisions per chunk (a pair
runs over the chunk where it passes at any of its grid blocks). The densities are
R = D Phi per chunk over the kept blocks, the D tiles below t_b left out (no t_d pair rule
there). ``dense=True`` keeps every block and pair: the dense cuBLAS baseline on the same path.
The engine is device-generic (``device.xp``); custom kernels are not needed for this first
version.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..blocks import BlockPattern
from ..cpu import CHUNK_BLOCKS, _ranges, gradient_chunk
from ..integrate import NCOMP, NVAR
from ..layout import Layout
from ..settings import Settings

CHUNK_BYTES = 256 * 1024**2
"""AO values (all components, the whole padded basis) of one chunk's points at most; the
products' operands and results take a few times this."""

MAX_CHUNK_BLOCKS = 1024


@dataclass
class DeviceChunk:
    """Grid blocks [g0, g1), the basis blocks any of them keeps (host, ascending), their
    layout positions (device) and which each grid block keeps (device, (grid block, block));
    ``ao``: the chunk's operand (functions, comp, points) when cached; ``subset`` and
    ``subset_rows``: the evaluator's shells of the kept blocks and, per layout position of the
    chunk, its row in their output (-1 on the padding), made on the first evaluation anew."""

    g0: int
    g1: int
    basis: np.ndarray
    positions: object
    kept: object
    ao: object = None
    subset: object = None
    subset_rows: object = None


class GPUGradientEngine:
    """XC gradient matrices V_k (``integrate.gradient_operands``) on ``device``."""

    name = "kerneldi-gpu-gradient"

    def __init__(
        self, mol, layout: Layout, settings: Settings, deriv: int, device, dense: bool = False,
        chunk_bytes: int = CHUNK_BYTES,
    ):  # fmt: skip
        t0 = time.perf_counter()
        xp = self.xp = device.xp
        self.mol, self.layout, self.settings, self.deriv = mol, layout, settings, deriv
        self.device, self.dense = device, dense
        self.ncomp = NCOMP[deriv]
        self.t_b = 0.0 if dense else settings.t_b
        self.t_d = 0.0 if dense else settings.t_d
        self.evaluator = device.ao_evaluator(mol)
        rows = np.asarray(self.evaluator.rows(layout.basis_perm), dtype=np.int64)
        self.rows = xp.asarray(rows)
        # the evaluator row of every layout position, -1 on the padding
        self.rows_host = np.concatenate([rows, np.full(layout.nao_pad - layout.nao, -1)])
        self.perm = xp.asarray(layout.basis_perm)
        self.coords = xp.asarray(layout.coords)
        self.weights = xp.asarray(layout.weights)
        self.chunks: list[DeviceChunk] = []
        per_block = layout.nao_pad * self.ncomp * layout.d * 8
        self.chunk_blocks = int(np.clip(chunk_bytes // per_block, CHUNK_BLOCKS, MAX_CHUNK_BLOCKS))
        # the cache leaves room for a chunk's operands, products and their temporaries
        budget = settings.gpu_memory_fraction * device.free_bytes() - 8 * chunk_bytes
        if settings.ao_cache == "never":
            budget = 0.0
        held, rows_b, cols_b = 0.0, [], []
        for g0, g1 in _ranges(layout.ngb, self.chunk_blocks):
            ao = self._evaluate(g0, g1)
            chunk, ao = self._chunk(g0, g1, ao)
            g, p = np.nonzero(_host(chunk.kept))
            rows_b.append(chunk.basis[p])
            cols_b.append(g + g0)
            if settings.ao_cache == "always" or held + ao.nbytes <= budget:
                chunk.ao = ao
                held += ao.nbytes
            self.chunks.append(chunk)
        self.cached = all(c.ao is not None for c in self.chunks)
        self.pattern = BlockPattern.from_blocks(
            layout.nbb, layout.ngb, np.concatenate(rows_b), np.concatenate(cols_b)
        )
        self.counts: dict = {}
        device.synchronize()
        self.setup_seconds = time.perf_counter() - t0

    # -- operands ---------------------------------------------------------------------------
    def _evaluate(self, g0: int, g1: int):
        """AO values of grid blocks [g0, g1) in layout order, (nao_pad, comp, points), zero on
        the padding."""
        xp, lay, d = self.xp, self.layout, self.layout.d
        pts = self.coords[g0 * d : min(g1 * d, lay.npts)]
        ao = self.evaluator(pts, self.deriv)  # (comp, evaluator rows, points)
        out = xp.zeros((lay.nao_pad, self.ncomp, (g1 - g0) * d))
        out[: lay.nao, :, : len(pts)] = xp.take(ao, self.rows, axis=1).transpose(1, 0, 2)
        return out

    def _chunk(self, g0: int, g1: int, ao):
        """The chunk's kept blocks and its operand restricted to them (tiles not kept zero)."""
        xp, lay, d = self.xp, self.layout, self.layout.d
        ng = g1 - g0
        norm = xp.abs(ao).reshape(lay.nbb, d, self.ncomp, ng, d).max(axis=(1, 2, 4)).T
        kept = norm >= self.t_b if not self.dense else xp.ones_like(norm, dtype=bool)
        basis = np.flatnonzero(_host(kept.any(axis=0)))
        positions = (basis[:, None] * d + np.arange(d)).ravel()
        kept = kept[:, xp.asarray(basis)]
        pos = xp.asarray(positions)
        chunk = DeviceChunk(g0, g1, basis, pos, kept)
        return chunk, self._kept_tiles(chunk, ao[pos])

    def _kept_tiles(self, chunk: DeviceChunk, ao):
        """``ao`` (the chunk's positions, comp, points) with the tiles its grid blocks do not
        keep set to zero."""
        d, ng = self.layout.d, chunk.g1 - chunk.g0
        sub = ao.reshape(len(chunk.basis), d, self.ncomp, ng, d)
        sub = sub * chunk.kept.T[:, None, None, :, None]
        return sub.reshape(len(chunk.basis) * d, self.ncomp, ng * d)

    def _ao(self, chunk: DeviceChunk):
        """The chunk's operand: cached, or evaluated anew on the shells of its kept blocks only
        (in a large molecule a small part of the basis)."""
        if chunk.ao is not None:
            return chunk.ao
        xp, lay, d = self.xp, self.layout, self.layout.d
        if chunk.subset is None:
            wanted = self.rows_host[(chunk.basis[:, None] * d + np.arange(d)).ravel()]
            chunk.subset = self.evaluator.subset(wanted[wanted >= 0])
            chunk.subset_rows = xp.asarray(chunk.subset.output_rows(wanted))
        pts = self.coords[chunk.g0 * d : min(chunk.g1 * d, lay.npts)]
        ao = self.evaluator(pts, self.deriv, chunk.subset)  # (comp, subset rows, points)
        rows = chunk.subset_rows
        out = xp.zeros((len(rows), self.ncomp, (chunk.g1 - chunk.g0) * d))
        valid = xp.flatnonzero(rows >= 0)
        out[valid, :, : len(pts)] = xp.take(ao, rows[valid], axis=1).transpose(1, 0, 2)
        return self._kept_tiles(chunk, out)

    def _points(self, chunk: DeviceChunk) -> slice:
        d = self.layout.d
        return slice(chunk.g0 * d, chunk.g1 * d)

    def _layout_matrix(self, dm):
        xp, lay = self.xp, self.layout
        out = xp.zeros((lay.nao_pad, lay.nao_pad))
        out[: lay.nao, : lay.nao] = xp.asarray(dm, dtype=np.float64)[
            self.perm[:, None], self.perm[None, :]
        ]
        return out

    # -- Eq. 4 on the kept blocks ---------------------------------------------------------------
    def density(self, dm, xctype: str, orbitals=None):
        """rho (and grad rho, tau) from R = D Phi on each chunk's kept blocks (``orbitals`` are
        not used)."""
        xp, lay, d = self.xp, self.layout, self.layout.d
        dml = self._layout_matrix(dm)
        dmax = xp.abs(dml).reshape(lay.nbb, d, lay.nbb, d).max(axis=(1, 3))
        keep_d = xp.repeat(xp.repeat(dmax >= self.t_b, d, axis=0), d, axis=1)
        dml = dml * keep_d
        nright = 4 if xctype == "MGGA" else 1
        rho = xp.zeros((NVAR[xctype], lay.npts_pad))
        for chunk in self.chunks:
            if not len(chunk.basis):  # a chunk that keeps no block has zero density
                continue
            ao = self._ao(chunk)
            sub = dml[chunk.positions[:, None], chunk.positions[None, :]]
            right = ao[:, :nright]
            r = (sub @ right.reshape(len(sub), -1)).reshape(right.shape)
            rho[:, self._points(chunk)] = _contract(xp, ao, r, xctype)
        return rho[:, : lay.npts]

    # -- the gradient products --------------------------------------------------------------
    def gradient(self, wv, xctype: str):
        """(3, nao, nao): V_k on the device (PySCF's / GPU4PySCF's gradient ``vmat`` is -V)."""
        xp, lay = self.xp, self.layout
        w = xp.zeros((wv.shape[0], lay.npts_pad))
        w[:, : lay.npts] = wv
        f = xp.zeros((3, lay.nao_pad, lay.nao_pad))
        executed = 0
        for chunk in self.chunks:
            if not len(chunk.basis):
                continue
            part, n = gradient_chunk(
                self._ao(chunk),
                w[:, self._points(chunk)],
                chunk.kept,
                xctype,
                self.t_d,
                xp,
                per_chunk=True,
            )
            executed += n
            pos = chunk.positions
            f[:, pos[:, None], pos[None, :]] += part
        self.counts["gradient_pairs"] = executed
        self.counts["gradient_candidates"] = 3 * lay.nbb**2 * lay.ngb
        out = xp.empty((3, lay.nao, lay.nao))
        out[:, self.perm[:, None], self.perm[None, :]] = f[:, : lay.nao, : lay.nao]
        return out

    def stats(self) -> dict:
        p = self.pattern
        return {
            "nao": self.layout.nao,
            "npoints": self.layout.npts,
            "retained_blocks": p.nblk,
            "retained_fraction": p.retained_fraction(),
            "ao_cached": self.cached,
            "setup_seconds": self.setup_seconds,
        } | dict(self.counts)


def _contract(xp, ao, r, xctype: str):
    """rho (and grad rho, tau) at a chunk's points from its AO values and R = D Phi."""
    rho = xp.empty((NVAR[xctype], ao.shape[2]))
    rho[0] = (ao[:, 0] * r[:, 0]).sum(axis=0)
    if xctype != "LDA":
        rho[1:4] = 2 * (ao[:, 1:4] * r[:, None, 0]).sum(axis=0)
    if xctype == "MGGA":
        rho[4] = 0.5 * (ao[:, 1:4] * r[:, 1:4]).sum(axis=(0, 1))
    return rho


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)
