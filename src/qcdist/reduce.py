"""Sums of the ranks' partial results and the density broadcast.

Host (NumPy) arrays go through MPI. Device (CuPy) arrays go through NCCL when every rank
drives a device of its own (NCCL refuses a communicator with two ranks on one device), and
otherwise through MPI on host copies: several ranks sharing one GPU, or CuPy without NCCL.
"""

from __future__ import annotations

import sys

import numpy as np

from .comm import Context, mpi


def _is_device(a) -> bool:
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(a, cupy.ndarray)


class Reducer:
    """``sum(a, root)``: the elementwise sum over the ranks of ``a`` (each rank's own array of
    one shape and dtype), at ``root`` (None on the others) or, with ``root=None``, on every
    rank; collective. ``via``: "nccl" or "mpi", what device arrays go through."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._nccl = None
        self.via = "mpi"
        if ctx.backend == "gpu" and ctx.size > 1 and not ctx.devices_shared():
            self._nccl = _nccl_communicator(ctx)
            self.via = "nccl" if self._nccl is not None else "mpi"

    def sum(self, a, root: int | None = 0):
        if _is_device(a) and self._nccl is not None:
            return self._sum_nccl(a, root)
        device = _is_device(a)
        host = np.ascontiguousarray(a.get() if device else a)
        out = self._sum_mpi(host, root)
        if out is None or not device:
            return out
        import cupy

        return cupy.asarray(out)

    def _sum_mpi(self, host: np.ndarray, root: int | None):
        MPI, comm = mpi(), self.ctx.comm
        if comm.size == 1:
            return host.copy()
        out = np.empty_like(host)
        if root is None:
            comm.Allreduce(host, out, op=MPI.SUM)
            return out
        comm.Reduce(host, out if comm.rank == root else None, op=MPI.SUM, root=root)
        return out if comm.rank == root else None

    def _sum_nccl(self, a, root: int | None):
        import cupy
        from cupy.cuda import nccl

        a = cupy.ascontiguousarray(a)
        out = cupy.empty_like(a)
        kinds = {np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int64): nccl.NCCL_INT64}
        kind = kinds[np.dtype(a.dtype)]
        stream = cupy.cuda.get_current_stream().ptr
        if root is None:
            self._nccl.allReduce(a.data.ptr, out.data.ptr, a.size, kind, nccl.NCCL_SUM, stream)
            return out
        self._nccl.reduce(a.data.ptr, out.data.ptr, a.size, kind, nccl.NCCL_SUM, root, stream)
        cupy.cuda.get_current_stream().synchronize()
        return out if self.ctx.rank == root else None


def _nccl_communicator(ctx: Context):
    """An NCCL communicator of the context's ranks, or None where CuPy has no NCCL (the MPI
    path then serves); rank 0 makes the unique id and MPI hands it out."""
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    if not getattr(nccl, "available", True):
        return None
    uid = nccl.get_unique_id() if ctx.root else None
    uid = ctx.comm.bcast(uid, root=0)
    return nccl.NcclCommunicator(ctx.size, uid, ctx.rank)


def broadcast(ctx: Context, a: np.ndarray | None, root: int = 0) -> np.ndarray:
    """``a`` of ``root`` on every rank (a host array; shape and dtype travel with it)."""
    comm = ctx.comm
    if comm.size == 1:
        return np.asarray(a)
    meta = comm.bcast(None if comm.rank != root else (a.shape, a.dtype.str), root=root)
    buf = np.ascontiguousarray(a) if comm.rank == root else np.empty(meta[0], np.dtype(meta[1]))
    comm.Bcast(buf, root=root)
    return buf
