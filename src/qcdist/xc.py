"""Distributed XC: KerneLDI's grid tasks (ranges of grid blocks, costed from their kept block
pairs) integrated on every rank, pulled from a shared counter largest first (or from the static
partition), and the partial Vxc, Exc and electron counts summed in one reduction.

``distributed_numint(ctx, ...)`` returns a KerneLDI NumInt (PySCF's or GPU4PySCF's class, as
``kerneldi.NumInt`` gives) whose ``nr_rks``/``nr_uks`` spread each call over the ranks; the
rest of the NumInt (libxc, grid pruning, response kernels) is its class's, on the root alone.
The root's molecule is every rank's (each rank builds the same one); the root's grid travels
to the other ranks whenever it changes (PySCF prunes it after the first density).
"""

from __future__ import annotations

import time

import numpy as np

from kerneldi import NumInt

from .comm import Context, DistError
from .jk import BuildStats, _cupy, _host, _recorded
from .reduce import Reducer, broadcast
from .schedule import Scheduler


class _Grid:
    """The root's grid on another rank: what KerneLDI's engines read of a grid."""

    def __init__(self, coords, weights, atm_idx) -> None:
        self.coords, self.weights, self.atm_idx = coords, weights, atm_idx

    @property
    def size(self) -> int:
        return len(self.weights)


def _grid_key(grids) -> tuple:
    """Tells a changed grid (a new object, new arrays, or arrays changed in place); the sums
    run where the arrays live, so a device grid is not copied to the host."""
    w, c = grids.weights, grids.coords
    return (id(grids), id(w), len(w), float(w.sum()), float(c[::97].sum()))


class DistributedNumIntMixin:
    """``nr_rks``/``nr_uks`` of a KerneLDI NumInt spread over the ranks (module docstring)."""

    def dist_setup(self, ctx: Context, mol, schedule: str, reducer: Reducer | None) -> None:
        self.dist_ctx = ctx
        self.dist_mol = mol
        self.dist_scheduler = Scheduler(ctx.comm, schedule)
        self.dist_reducer = reducer if reducer is not None else Reducer(ctx)
        self.dist_last = BuildStats()
        self._dist_grid = None
        self._dist_grid_key = None
        self._dist_costs: dict[str, list[float]] = {}

    @property
    def schedule(self) -> str:
        return self.dist_scheduler.schedule

    def nr_rks(self, mol, grids, xc_code, dms, relativity=0, hermi=1, max_memory=2000,
               verbose=None):  # fmt: skip
        return self._dist_call("rks", grids, xc_code, dms, relativity, hermi)

    def nr_uks(self, mol, grids, xc_code, dms, relativity=0, hermi=1, max_memory=2000,
               verbose=None):  # fmt: skip
        return self._dist_call("uks", grids, xc_code, dms, relativity, hermi)

    def nr_vxc(self, mol, grids, xc_code, dms, spin=0, relativity=0, hermi=0, max_memory=2000,
               verbose=None):  # fmt: skip
        kind = "rks" if spin == 0 else "uks"
        return self._dist_call(kind, grids, xc_code, dms, relativity, hermi)

    get_vxc = nr_vxc

    def _dist_call(self, kind, grids, xc_code, dms, relativity, hermi):
        """Root: the whole call's result from every rank's share. Collective."""
        ctx = self.dist_ctx
        if ctx.size == 1:
            return self._alone(kind, grids, xc_code, dms, relativity, hermi)
        header = None
        if ctx.root:
            self.dist_scheduler.start()  # before the broadcast: see schedule.py
            key = _grid_key(grids)
            new_grid = key != self._dist_grid_key
            self._dist_grid_key = key
            self._dist_grid = grids
            tags = (getattr(dms, "mo_coeff", None) is not None
                    and getattr(dms, "mo_occ", None) is not None)  # fmt: skip
            header = ("xc", kind, xc_code, int(relativity), int(hermi), new_grid, tags,
                      hasattr(dms, "__cuda_array_interface__"))  # fmt: skip
        header = ctx.comm.bcast(header, root=0)
        return self.follow(header, dms)

    def follow(self, header: tuple, dms=None):
        """The rank's part of the XC call that ``header`` (the root's broadcast) describes."""
        op, kind, xc_code, relativity, hermi, new_grid, tags, device_in = header
        if op != "xc":
            raise DistError(f"ranks out of step: an XC call met a {op!r} request")
        ctx = self.dist_ctx
        stats = self.dist_last = BuildStats()
        t0 = time.perf_counter()
        if new_grid:
            self._receive_grid()
        dm = broadcast(ctx, _host(dms) if ctx.root else None)
        if tags:
            mo_coeff = broadcast(ctx, _host(dms.mo_coeff) if ctx.root else None)
            mo_occ = broadcast(ctx, _host(dms.mo_occ) if ctx.root else None)
        if self._kerneldi_backend == "gpu":
            dm = _cupy().asarray(dm)
        if tags:
            dm = _tagged(dm, mo_coeff, mo_occ)
        t1 = time.perf_counter()
        grids, mol = self._dist_grid, self.dist_mol
        costs = self._costs(mol, grids, xc_code)
        self.select_tasks(_recorded(self.dist_scheduler.mine(costs), stats.tasks))
        try:
            fn = super().nr_rks if kind == "rks" else super().nr_uks
            nelec, exc, vmat = fn(mol, grids, xc_code, dm, relativity, hermi)
        finally:
            self.select_tasks(None)
        xp = _cupy() if hasattr(vmat, "__cuda_array_interface__") else np
        nelec, exc = np.asarray(nelec, dtype=np.float64), np.asarray(exc, dtype=np.float64)
        flat = xp.concatenate([xp.asarray(vmat).ravel(), xp.asarray(nelec).ravel(),
                               xp.asarray(exc).ravel()])  # fmt: skip
        t2 = time.perf_counter()
        total = self.dist_reducer.sum(flat, root=0)
        stats.broadcast_seconds, stats.build_seconds = t1 - t0, t2 - t1
        stats.reduce_seconds = time.perf_counter() - t2
        if total is None:
            return None
        nv, nn = vmat.size, nelec.size
        vmat = total[:nv].reshape(vmat.shape)
        nelec = _host(total[nv : nv + nn]).reshape(nelec.shape)
        exc = _host(total[nv + nn :]).reshape(exc.shape)
        vmat = _cupy().asarray(vmat) if device_in else _host(vmat)
        if nelec.ndim == 0:
            nelec, exc = float(nelec), float(exc)
        elif exc.ndim == 0:
            exc = float(exc)
        return nelec, exc, vmat

    def _alone(self, kind, grids, xc_code, dms, relativity, hermi):
        """One rank: the engine's whole-grid call on the caller's own arrays, with no copy of
        the density or the result and no reduction (the single-process path)."""
        stats = self.dist_last = BuildStats()
        t0 = time.perf_counter()
        key = _grid_key(grids)
        if key != self._dist_grid_key:
            self._dist_grid_key, self._dist_grid = key, grids
            self._dist_costs.clear()
        stats.tasks = list(range(len(self._costs(self.dist_mol, grids, xc_code))))
        fn = super().nr_rks if kind == "rks" else super().nr_uks
        result = fn(self.dist_mol, grids, xc_code, dms, relativity, hermi)
        stats.build_seconds = time.perf_counter() - t0
        return result

    def _receive_grid(self) -> None:
        ctx, g = self.dist_ctx, self._dist_grid
        atm = getattr(g, "atm_idx", None) if ctx.root else None
        has_atm = ctx.comm.bcast(atm is not None, root=0)
        coords = broadcast(ctx, _host(g.coords) if ctx.root else None)
        weights = broadcast(ctx, _host(g.weights) if ctx.root else None)
        atm_idx = broadcast(ctx, _host(atm) if ctx.root else None) if has_atm else None
        if not ctx.root:
            self._dist_grid = _Grid(coords, weights, atm_idx)
            if self._kerneldi_backend == "gpu":
                cupy = _cupy()
                self._dist_grid = _Grid(cupy.asarray(coords), cupy.asarray(weights), atm_idx)
        self._dist_costs.clear()

    def _costs(self, mol, grids, xc_code) -> list[float]:
        """The grid tasks' costs, the root's on every rank (so that every rank orders the same
        task numbers alike); every rank's engine has the same tasks. Collective on the first
        call of a grid and functional, which every rank makes at the same point."""
        if xc_code not in self._dist_costs:
            mine = [t.cost for t in self.xc_tasks(mol, grids, xc_code)]
            costs = self.dist_ctx.comm.bcast(mine if self.dist_ctx.root else None, root=0)
            if len(costs) != len(mine):
                raise DistError(
                    f"rank {self.dist_ctx.rank} has {len(mine)} grid tasks, the root {len(costs)}"
                )
            self._dist_costs[xc_code] = costs
        return self._dist_costs[xc_code]

    def free(self) -> None:
        self.dist_scheduler.free()


def _tagged(dm, mo_coeff, mo_occ):
    """``dm`` tagged with its orbitals, as PySCF's and GPU4PySCF's SCF objects hand it over."""
    if hasattr(dm, "__cuda_array_interface__"):
        from gpu4pyscf.lib.cupy_helper import tag_array

        cupy = _cupy()
        return tag_array(dm, mo_coeff=cupy.asarray(mo_coeff), mo_occ=cupy.asarray(mo_occ))
    from pyscf import lib

    return lib.tag_array(dm, mo_coeff=mo_coeff, mo_occ=mo_occ)


def distributed_numint(
    ctx: Context, mol, schedule: str = "pull", reducer: Reducer | None = None, **options
):
    """A KerneLDI NumInt of the context's backend (``options``: ``kerneldi.NumInt``'s) whose
    ``nr_rks``/``nr_uks`` run over the ranks. Collective (the pull queue's window)."""
    ni = NumInt(backend=ctx.backend, **options)
    base = type(ni)
    ni.__class__ = type(f"Distributed{base.__name__}", (DistributedNumIntMixin, base), {})
    ni.dist_setup(ctx, mol, schedule, reducer)
    return ni
