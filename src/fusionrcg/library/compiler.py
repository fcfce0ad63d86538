"""The engine's compiles through the toolchain (``qctoolchain``): generated CUDA to cubins with
the ptxas report, generated C++ to shared libraries, with the flags that are part of a build's
identity (the library's content keys hash them) and the toolchain's errors as the engine's."""

from __future__ import annotations

from pathlib import Path

import qctoolchain
from qctoolchain import PTXAS_DEFAULT_LEVEL, PTXAS_LEVELS, PtxasReport

from ..errors import CompileError, compiler_errors

SUPPORTED_ARCHS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
NVCC_FLAGS = ("-O3", "-std=c++17", "--fmad=true")
CXX_FLAGS = ("-O2", "-shared", "-fPIC", "-fno-math-errno")

__all__ = [
    "CXX_FLAGS",
    "NVCC_FLAGS",
    "PTXAS_DEFAULT_LEVEL",
    "PTXAS_LEVELS",
    "SUPPORTED_ARCHS",
    "PtxasReport",
    "cxx_shared",
    "nvcc_cubin",
]


def nvcc_cubin(
    source: Path,
    cubin: Path,
    arch: str = "sm_90",
    what: str = "",
    timeout: float | None = None,
    ptxas_level: int = PTXAS_DEFAULT_LEVEL,
) -> PtxasReport:
    """``source`` compiled to ``cubin`` for ``arch``, ptxas at optimization level
    ``ptxas_level``; the ptxas resource report."""
    what = what or source.name
    if arch not in SUPPORTED_ARCHS:
        raise CompileError(
            f"{what}: architecture {arch!r} not supported; use one of {', '.join(SUPPORTED_ARCHS)}"
        )
    if ptxas_level not in PTXAS_LEVELS:
        raise CompileError(f"{what}: ptxas level {ptxas_level!r} is not one of {PTXAS_LEVELS}")
    with compiler_errors():
        build = qctoolchain.nvcc_cubin(source, cubin, arch, NVCC_FLAGS, what, timeout, ptxas_level)
    return build.report


def cxx_shared(source: Path, library: Path, what: str = "", timeout: float | None = None) -> float:
    """``source`` compiled to the shared library ``library``; the seconds it took."""
    with compiler_errors():
        return qctoolchain.cxx_shared(source, library, CXX_FLAGS, what, timeout)
