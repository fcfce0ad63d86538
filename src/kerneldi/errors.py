"""Errors raised by the XC engine; each names the cause."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import qctoolchain


class KerneLDIError(Exception):
    """Base class of every error the engine raises on purpose."""


class InputError(KerneLDIError, ValueError):
    """Input that the engine cannot use (bad shape, dtype, value)."""


class FunctionalError(InputError):
    """An exchange-correlation functional that is unknown or not supported."""


class GridError(InputError):
    """An integration grid that is empty or inconsistent."""


class DensityMatrixError(InputError):
    """A density matrix whose shape or dtype does not fit the molecule."""


class SettingsError(InputError):
    """An engine setting outside its allowed values."""


class BackendUnavailable(KerneLDIError, RuntimeError):
    """The requested backend cannot run here (no CuPy, no GPU, no GPU4PySCF)."""


class KernelBuildError(KerneLDIError, RuntimeError):
    """The kernels that did not compile (NVRTC, nvcc or the host emulation's C++ compiler)."""


@contextmanager
def compiler_errors() -> Iterator[None]:
    """The toolchain's errors raised inside as ``KernelBuildError``."""
    try:
        yield
    except qctoolchain.ToolchainError as exc:
        raise KernelBuildError(str(exc)) from None
