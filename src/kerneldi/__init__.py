"""KerneLDI: exchange-correlation integration as block-sparse matrix products.

``NumInt(backend="cpu" | "gpu")`` is a drop-in replacement for PySCF's / GPU4PySCF's
``NumInt``: ``mf._numint = kerneldi.NumInt(backend="cpu")`` makes an RKS or UKS object use it.
CuPy and GPU4PySCF are imported only when the GPU backend is asked for.
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
    "GridError",
    "InputError",
    "KerneLDIError",
    "KernelBuildError",
    "NumInt",
    "Settings",
    "SettingsError",
    "block_sparse_matmul",
    "compact",
]
