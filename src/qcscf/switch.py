"""``apply(mf)``: a PySCF or GPU4PySCF SCF object whose J/K builds run on FusionRCG's J/K
engine and whose exchange-correlation integrals (DFT) run on KerneLDI."""

from __future__ import annotations

import fusionrcg
import kerneldi


def _on_gpu(mf) -> bool:
    return type(mf).__module__.startswith("gpu4pyscf")


def apply(mf, jk: bool = True, xc: bool = True, options="full", kernel_dir=None, **xc_options):
    """Make ``mf`` use both engines and return it: ``jk`` routes J and K to ``fusionrcg.JK``
    (``options``, ``kernel_dir`` as for ``fusionrcg.apply``), ``xc`` sets ``mf._numint`` to a
    ``kerneldi.NumInt`` (``xc_options``: its settings) where ``mf`` is a DFT object. The
    backend follows the object: GPU4PySCF's objects get the GPU engines, PySCF's the CPU
    ones. Analytic gradients (``mf.nuc_grad_method()``) keep the object's own J/K-derivative
    and XC-gradient code until the engines have theirs."""
    backend = "gpu" if _on_gpu(mf) else "cpu"
    if xc and hasattr(mf, "xc"):
        mf._numint = kerneldi.NumInt(backend=backend, **xc_options)
    if jk:
        mf = fusionrcg.apply(mf, backend=backend, options=options, kernel_dir=kernel_dir)
    return mf
