"""The GPU NumInt class: GPU4PySCF's NumInt with KerneLDI's ``nr_rks``/``nr_uks``."""

from __future__ import annotations

import functools

from ..errors import BackendUnavailable
from ..numint import KerneLDIMixin


@functools.cache
def gpu_numint_class():
    """Built on first use, so that the package imports without CuPy or GPU4PySCF."""
    try:
        import cupy
    except ImportError as err:
        raise BackendUnavailable(f"the GPU backend needs CuPy: {err}") from None
    try:
        ndev = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # no driver, no device
        raise BackendUnavailable(f"the GPU backend needs a CUDA GPU: {err}") from None
    if ndev == 0:
        raise BackendUnavailable("the GPU backend needs a CUDA GPU; none is visible")
    try:
        from gpu4pyscf.dft import numint as gpu_numint
    except Exception as err:
        raise BackendUnavailable(f"the GPU backend needs GPU4PySCF: {err}") from None
    from ..integrate import AO_DERIV
    from .device import CupyDevice
    from .engine import make_engine
    from .gradient import GPUGradientEngine

    class GPUNumInt(KerneLDIMixin, gpu_numint.NumInt):
        """GPU4PySCF's NumInt with KerneLDI's GPU engine (CuPy + block-pair kernels)."""

        _kerneldi_backend = "gpu"

        def _new_engine(self, mol, layout, xctype: str, deriv: int | None = None):
            """The energy engines, or for AO derivatives above the energy's (the nuclear
            gradient) the gradient engine (``gradient.py``; ``engine="dense"``: its dense
            baseline)."""
            if deriv is not None and deriv > AO_DERIV[xctype]:
                dense = self.engine_kind == "dense"
                return GPUGradientEngine(mol, layout, self.settings, deriv, CupyDevice(), dense)
            return make_engine(self.engine_kind, mol, layout, self.settings, xctype, CupyDevice())

    return GPUNumInt
