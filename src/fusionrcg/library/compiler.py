"""Compiling generated sources: nvcc to cubins (with the ptxas report) and the host C++ compiler
to shared libraries."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SUPPORTED_ARCHS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
NVCC_FLAGS = ("-O3", "-std=c++17", "--fmad=true")
PTXAS_DEFAULT_LEVEL = 3  # ptxas's own default (-O3)
PTXAS_LEVELS = (0, 1, 2, 3)
CXX_FLAGS = ("-O2", "-shared", "-fPIC", "-fno-math-errno")


class CompileError(RuntimeError):
    """A generated kernel that did not compile; the message names the kernel and the cause."""


class CompileTimeout(CompileError):
    """A compile stopped at its time limit (the largest forced Tier 1 kernels at ptxas -O3)."""


@dataclass(frozen=True)
class PtxasReport:
    """Resources of a kernel and everything it calls, from ``nvcc -Xptxas -v``."""

    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_bytes: int
    functions: int
    compile_seconds: float
    ptxas_level: int = PTXAS_DEFAULT_LEVEL

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes + self.spill_load_bytes > 0


_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")


def parse_ptxas(
    text: str, seconds: float = 0.0, ptxas_level: int = PTXAS_DEFAULT_LEVEL
) -> PtxasReport:
    props = [tuple(map(int, m.groups())) for m in _PROPS.finditer(text)]
    used = [int(m.group(1)) for m in _USED.finditer(text)]
    if not props or not used:
        raise ValueError("no ptxas resource report in the compiler output")
    return PtxasReport(
        registers=max(used),
        spill_store_bytes=sum(p[1] for p in props),
        spill_load_bytes=sum(p[2] for p in props),
        stack_bytes=max(p[0] for p in props),
        functions=len(props),
        compile_seconds=seconds,
        ptxas_level=ptxas_level,
    )


def find_tool(name: str, env: str) -> str:
    path = os.environ.get(env) or shutil.which(name)
    if not path and name == "nvcc":
        for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if root and (Path(root) / "bin" / "nvcc").exists():
                path = str(Path(root) / "bin" / "nvcc")
                break
    if not path:
        raise CompileError(f"{name} not found: install it or set {env}")
    return path


def _run(cmd: list[str], what: str, timeout: float | None) -> tuple[str, float]:
    start = time.perf_counter()
    # own process group: on a timeout the compiler's children (cicc, ptxas) go too
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise CompileTimeout(f"{what}: compilation exceeded {timeout:.0f} s") from None
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "\n".join((stderr or stdout).strip().splitlines()[-15:])
        raise CompileError(f"{what}: compiler failed (exit {proc.returncode}):\n{tail}")
    return stdout + stderr, seconds


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
    if arch not in SUPPORTED_ARCHS:
        raise CompileError(
            f"{what or source.name}: architecture {arch!r} not supported; "
            f"use one of {', '.join(SUPPORTED_ARCHS)}"
        )
    if ptxas_level not in PTXAS_LEVELS:
        raise CompileError(f"{what or source.name}: ptxas level {ptxas_level!r} is not one of "
                           f"{PTXAS_LEVELS}")  # fmt: skip
    nvcc = find_tool("nvcc", "NVCC")
    tmp = cubin.with_suffix(f".{os.getpid()}.tmp")
    cmd = [
        nvcc,
        f"-arch={arch}",
        "-cubin",
        "-Xptxas",
        "-v",
        *NVCC_FLAGS,
        *(() if ptxas_level == PTXAS_DEFAULT_LEVEL else ("-Xptxas", f"-O{ptxas_level}")),
        "-o",
        str(tmp),
        str(source),
    ]
    text, seconds = _run(cmd, what or source.name, timeout)
    tmp.replace(cubin)  # never leave a half-written cubin under the final name
    return parse_ptxas(text, seconds, ptxas_level)


def cxx_shared(source: Path, library: Path, what: str = "", timeout: float | None = None) -> float:
    cxx = find_tool("g++", "CXX") if not os.environ.get("CXX") else os.environ["CXX"]
    tmp = library.with_suffix(f".{os.getpid()}.tmp")
    _, seconds = _run([cxx, *CXX_FLAGS, "-o", str(tmp), str(source)], what or source.name, timeout)
    tmp.replace(library)
    return seconds
