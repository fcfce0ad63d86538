"""A PySCF or GPU4PySCF SCF whose J/K and XC run over the MPI ranks: rank 0 runs the SCF,
the other ranks serve its builds (``Service``).

``run_scf(ctx, mol, xc=...)`` is collective: every rank calls it with the same molecule; the
root returns the converged SCF object, the other ranks None once the root is done.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass

from fusionrcg.jk import FusionJKMixin

from .comm import Context
from .jk import DistributedJK
from .reduce import Reducer
from .service import Service
from .xc import distributed_numint


class DistributedJKMixin(FusionJKMixin):
    """``fusionrcg.apply``'s J/K routing with the engine a ``DistributedJK`` (its ``get_jk``
    takes the engine's arguments), so that its J/K requests reach every rank. The engine is of
    the SCF's own molecule; another molecule is refused."""

    _keys = {"dist_jk"}

    def fusion_engine(self, mol=None, omega=None):
        if mol is not None and mol is not self.mol:
            raise ValueError("the distributed J/K engine serves the SCF object's own molecule")
        if (self.mol.omega if omega is None else omega) != 0:
            raise NotImplementedError(
                "the distributed J/K engine builds the full-range operator only; run a "
                "range-separated functional in one process (fusionrcg.apply)"
            )
        return self.dist_jk


@dataclass(frozen=True)
class ScfOptions:
    """What the SCF is: ``xc`` "hf" for Hartree-Fock, else a functional; ``unrestricted``
    for UHF/UKS; ``grid_level`` of the DFT grid; ``schedule`` of both engines."""

    basis: str = "cc-pvdz"
    xc: str = "hf"
    unrestricted: bool = False
    grid_level: int = 3
    conv_tol: float = 1e-10
    schedule: str = "pull"
    max_cycle: int = 100


def scf_object(ctx: Context, mol, opts: ScfOptions):
    """The root's SCF object of ``opts`` (PySCF's on the CPU backend, GPU4PySCF's on the GPU)."""
    if ctx.backend == "gpu":
        from gpu4pyscf import dft, scf
    else:
        from pyscf import dft, scf
    if opts.xc.lower() == "hf":
        return scf.UHF(mol) if opts.unrestricted else scf.RHF(mol)
    mf = dft.UKS(mol) if opts.unrestricted else dft.RKS(mol)
    mf.xc = opts.xc
    mf.grids.level = opts.grid_level
    return mf


def run_scf(ctx: Context, mol, opts: ScfOptions = ScfOptions(), jk_options: dict | None = None,
            xc_options: dict | None = None):  # fmt: skip
    """Collective: the SCF of ``mol`` with J/K and XC over the ranks. The root gets the SCF
    object after ``kernel()``; the other ranks get None."""
    reducer = Reducer(ctx)
    tol = 1e-13
    mf = scf_object(ctx, mol, opts) if ctx.root else None
    if mf is not None:
        tol = mf.direct_scf_tol
    tol = ctx.comm.bcast(tol, root=0)
    jk = DistributedJK(ctx, mol, opts.schedule, reducer, tol=tol, **(jk_options or {}))
    dft = opts.xc.lower() != "hf"
    ni = distributed_numint(ctx, mol, opts.schedule, reducer, **(xc_options or {})) if dft else None
    service = Service(ctx, jk, ni)
    try:
        if not ctx.root:
            service.serve()
            return None
        try:
            base = type(mf)
            mf.__class__ = type(f"{base.__name__}DistributedJK", (DistributedJKMixin, base), {})
            mf.dist_jk = jk
            if ni is not None:
                mf._numint = ni
            mf.conv_tol = opts.conv_tol
            mf.max_cycle = opts.max_cycle
            mf.kernel()
        except BaseException:
            # the serving ranks may be inside a build's collective, where a stop request would
            # never reach them: end the whole job
            traceback.print_exc()
            sys.stderr.flush()
            ctx.comm.Abort(1)
            raise
        service.stop()
        return mf
    finally:
        service.free()
