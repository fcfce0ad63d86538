"""Errors raised by the ERI engine; each names the cause.

Every error the engine raises on purpose derives from ``FusionRCGError``; input errors are also
``ValueError``, errors of the machine (compiler, GPU) also ``RuntimeError``. An
``AssertionError`` marks a broken internal invariant (a bug), never bad input.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import qctoolchain


class FusionRCGError(Exception):
    """Base class of every error the engine raises on purpose."""


class InputError(FusionRCGError, ValueError):
    """Input that the engine cannot use."""


class ClassError(InputError):
    """An angular-momentum class that the engine cannot generate."""


class ShellError(InputError):
    """A shell index or shell quartet the engine cannot use."""


class VariantError(InputError):
    """An unknown variant name."""


class BackendError(InputError):
    """A backend that does not exist."""


class OptionsError(InputError):
    """A kernel option outside its allowed values, or one the class cannot take."""


class PlanError(InputError):
    """A graph, evaluation order or register budget that breaks the orchestration's rules."""


class CompileError(FusionRCGError, RuntimeError):
    """A generated kernel that did not compile; the message names the kernel and the cause."""


class CompileTimeout(CompileError):
    """A compile stopped at its time limit (the largest forced Tier 1 kernels at ptxas -O3)."""


class DeviceError(FusionRCGError, RuntimeError):
    """No usable GPU, or not enough of its memory."""


@contextmanager
def compiler_errors() -> Iterator[None]:
    """The toolchain's errors raised inside as the engine's: ``CompileTimeout`` for a compile
    past its limit, ``CompileError`` for the rest."""
    try:
        yield
    except qctoolchain.CompileTimeout as exc:
        raise CompileTimeout(str(exc)) from None
    except qctoolchain.ToolchainError as exc:
        raise CompileError(str(exc)) from None
