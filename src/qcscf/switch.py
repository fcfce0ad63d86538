"""``apply(mf)``: a PySCF or GPU4PySCF SCF object whose J/K builds run on FusionRCG's J/K
engine and whose exchange-correlation integrals (DFT) run on KerneLDI."""

from __future__ import annotations

import fusionrcg
import kerneldi
from fusionrcg.jk.scf import wrapped_gradient


def _on_gpu(mf) -> bool:
    return type(mf).__module__.startswith("gpu4pyscf")


def apply(
    mf, jk: bool = True, xc: bool = True, options="full", kernel_dir=None,
    jk_options: dict | None = None, numint=None, **xc_options,
):  # fmt: skip
    """Make ``mf`` use both engines and return it: ``jk`` routes J and K to ``fusionrcg.JK``
    (``options``, ``kernel_dir`` as for ``fusionrcg.apply``; ``jk_options``: further ``JK``
    arguments, as ``fusionrcg.apply``'s ``engine_options``), ``xc`` sets ``mf._numint`` to a
    ``kerneldi.NumInt`` (``xc_options``: its settings; or ``numint``, one made by the caller,
    e.g. kept across the geometries of an MD run so that nearby geometries reuse its basis
    order, ``Settings.reuse_orders_bohr``) where ``mf`` is a DFT object. The
    backend follows the object: GPU4PySCF's objects get the GPU engines, PySCF's the CPU
    ones. Analytic gradients (``mf.nuc_grad_method()``, ``mf.Gradients()``) take their J/K
    derivatives from FusionRCG's derivative classes (``fusionrcg.jk.grad``) and, for a DFT
    object, their XC part from KerneLDI (``kerneldi.apply_grad``)."""
    backend = "gpu" if _on_gpu(mf) else "cpu"
    kohn_sham = xc and hasattr(mf, "xc")
    if numint is not None and xc_options:
        raise TypeError(f"XC settings {sorted(xc_options)} with a given numint: set them on it")
    if kohn_sham:
        if numint is None:
            numint = kerneldi.NumInt(backend=backend, **xc_options)
        mf._numint = numint
    if jk:
        mf = fusionrcg.apply(
            mf, backend=backend, options=options, kernel_dir=kernel_dir, **(jk_options or {})
        )
    if kohn_sham and not isinstance(mf, _EngineGradients):
        base = type(mf)
        mf.__class__ = type(f"{base.__name__}EngineGradients", (_EngineGradients, base), {})
    return mf


class _EngineGradients:
    """An SCF object whose gradient objects take their XC part from its KerneLDI NumInt.
    Both hooks are overridden, neither an alias of the other: GPU4PySCF's ``nuc_grad_method``
    returns ``self.Gradients()``, which with an alias came back here without end
    (``wrapped_gradient``)."""

    def nuc_grad_method(self):
        return wrapped_gradient(self, _EngineGradients, "nuc_grad_method", kerneldi.apply_grad)

    def Gradients(self):  # noqa: N802 (PySCF's name)
        return wrapped_gradient(self, _EngineGradients, "Gradients", kerneldi.apply_grad)
