"""KerneLDI: exchange-correlation integration as block-sparse matrix products.

``NumInt(backend="cpu" | "gpu")`` is a drop-in replacement for PySCF's / GPU4PySCF's
``NumInt``: ``mf._numint = kerneldi.NumInt(backend="cpu")`` makes an RKS or UKS object use it.
CuPy and GPU4PySCF are imported only when the GPU backend is asked for.

Nuclear gradients: ``kerneldi.Gradients(mf)`` (or ``kerneldi.apply_grad(mf.Gradients())``)
gives PySCF's RKS/UKS gradient object with its XC part from the KerneLDI engine
(``NumInt.get_vxc_grad``, ``NumInt.xc_gradient``); see ``kerneldi.grad``.
"""

from .blocks import BCSC, BCSR, BlockPattern, block_sparse_matmul, compact
from .errors import (
    BackendUnavailable,
    DensityMatrixError,
    FunctionalError,
    GridError,
    InputError,
    KernelBuildError,
    KerneLDIError,
    SettingsError,
)
from .grad import Gradients, apply_grad
from .numint import CPUNumInt, NumInt
from .settings import Settings

__all__ = [
    "BCSC",
    "BCSR",
    "BackendUnavailable",
    "BlockPattern",
    "CPUNumInt",
    "DensityMatrixError",
    "FunctionalError",
    "Gradients",
    "GridError",
    "InputError",
    "KerneLDIError",
    "KernelBuildError",
    "NumInt",
    "Settings",
    "SettingsError",
    "apply_grad",
    "block_sparse_matmul",
    "compact",
]
