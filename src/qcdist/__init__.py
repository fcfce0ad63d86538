"""qcdist: FusionRCG's J/K and KerneLDI's XC over MPI ranks, one rank per GPU.

``init()`` gives a rank its context (device bound from its local rank); ``DistributedJK`` and
``distributed_numint`` spread the engines' tasks over the ranks (pulled from a shared counter,
or the static partition of the no-scheduling ablation) and sum the partial results;
``run_scf`` runs a PySCF/GPU4PySCF SCF on rank 0 with the others serving its builds.
``mpirun -n 4 python -m qcdist scf molecule.xyz --basis cc-pvdz --xc b3lyp`` is the command.
"""

from .comm import Context, DistError, init
from .jk import BuildStats, DistributedJK
from .reduce import Reducer, broadcast
from .scf import ScfOptions, run_scf
from .schedule import SCHEDULES, PullQueue, Scheduler, largest_first, static_share
from .service import Service
from .xc import distributed_numint

__all__ = [
    "SCHEDULES",
    "BuildStats",
    "Context",
    "DistError",
    "DistributedJK",
    "PullQueue",
    "Reducer",
    "ScfOptions",
    "Scheduler",
    "Service",
    "broadcast",
    "distributed_numint",
    "init",
    "largest_first",
    "run_scf",
    "static_share",
]
