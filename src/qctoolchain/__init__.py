"""The compilers both engines call: nvcc (cubins, with ptxas's resource report), the host C++
compiler (shared libraries) and NVRTC through CuPy (modules compiled at run time).

Every call names what it compiles (``what``) so that its errors do; a compile that fails raises
``CompileFailed`` with the tail of the compiler's output, one past its time limit
``CompileTimeout`` (the compiler and its children stopped), a missing compiler ``ToolNotFound``.
Outputs are written under a temporary name and renamed, so a concurrent reader never sees half
a binary. The engines translate these errors into their own hierarchies; this package imports
neither engine.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

PTXAS_DEFAULT_LEVEL = 3  # ptxas's own default (-O3)
PTXAS_LEVELS = (0, 1, 2, 3)


class ToolchainError(RuntimeError):
    """A compiler that is missing or did not produce its output."""


class ToolNotFound(ToolchainError):
    """A compiler that is not installed (nor named by its environment variable)."""


class CompileFailed(ToolchainError):
    """A compile that exited with an error; the message ends with the compiler's output."""


class CompileTimeout(CompileFailed):
    """A compile stopped at its time limit."""


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
_ENTRY = re.compile(r"Compiling entry function")


def parse_ptxas(
    text: str, seconds: float = 0.0, ptxas_level: int = PTXAS_DEFAULT_LEVEL
) -> PtxasReport:
    """The report of ``nvcc -Xptxas -v`` output ``text``: the most registers and stack of any
    function, the spill bytes of all of them. Raises ``ValueError`` on text without one."""
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


def entry_functions(text: str) -> int:
    """How many kernels (entry functions) ptxas compiled, from ``nvcc -Xptxas -v`` output."""
    return len(_ENTRY.findall(text))


def find_tool(name: str, env: str) -> str:
    """The compiler ``name``: the path in environment variable ``env`` if set, else the one on
    ``PATH``; nvcc also under ``$CUDA_HOME`` or /usr/local/cuda."""
    path = os.environ.get(env) or shutil.which(name)
    if not path and name == "nvcc":
        for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if root and (Path(root) / "bin" / "nvcc").exists():
                path = str(Path(root) / "bin" / "nvcc")
                break
    if not path:
        raise ToolNotFound(f"{name} not found: install it or set {env}")
    return path


def run(cmd: Sequence[str], what: str, timeout: float | None = None) -> tuple[str, float]:
    """Runs a compiler: its stdout and stderr together and the seconds it took."""
    start = time.perf_counter()
    # own process group: on a timeout the compiler's children (cicc, ptxas) go too
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise CompileTimeout(f"{what}: compilation exceeded {timeout:.0f} s") from None
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "\n".join((stderr or stdout).strip().splitlines()[-15:])
        raise CompileFailed(f"{what}: compiler failed (exit {proc.returncode}):\n{tail}")
    return stdout + stderr, seconds


def _temporary(path: Path) -> Path:
    return path.with_suffix(f".{os.getpid()}.tmp")


@dataclass(frozen=True)
class NvccBuild:
    """A cubin's ptxas report and nvcc's whole output."""

    report: PtxasReport
    log: str


def nvcc_cubin(
    source: Path,
    cubin: Path,
    arch: str,
    flags: Sequence[str] = (),
    what: str = "",
    timeout: float | None = None,
    ptxas_level: int = PTXAS_DEFAULT_LEVEL,
) -> NvccBuild:
    """``source`` compiled to ``cubin`` for ``arch`` with ``flags``, ptxas at optimization
    level ``ptxas_level`` (ptxas's default adds no flag)."""
    what = what or source.name
    if ptxas_level not in PTXAS_LEVELS:
        raise CompileFailed(f"{what}: ptxas level {ptxas_level!r} is not one of {PTXAS_LEVELS}")
    level = () if ptxas_level == PTXAS_DEFAULT_LEVEL else ("-Xptxas", f"-O{ptxas_level}")
    tmp = _temporary(cubin)
    cmd = [find_tool("nvcc", "NVCC"), f"-arch={arch}", "-cubin", "-Xptxas", "-v", *flags, *level,
           "-o", str(tmp), str(source)]  # fmt: skip
    text, seconds = run(cmd, what, timeout)
    tmp.replace(cubin)
    return NvccBuild(parse_ptxas(text, seconds, ptxas_level), text)


def cxx_shared(
    source: Path,
    library: Path,
    flags: Sequence[str],
    what: str = "",
    timeout: float | None = None,
) -> float:
    """``source`` compiled by the host C++ compiler (``$CXX``, else g++) to the shared library
    ``library`` with ``flags`` (which make it one: ``-shared -fPIC``); the seconds it took."""
    tmp = _temporary(library)
    cmd = [find_tool("g++", "CXX"), *flags, "-o", str(tmp), str(source)]
    _, seconds = run(cmd, what or source.name, timeout)
    tmp.replace(library)
    return seconds


def nvrtc_options(std: str = "c++17") -> tuple[str, ...]:
    """NVRTC flags. CUDA's pip wheels ship ``mma.h`` without the ``crt/mma.h`` it includes, so
    the include folder of an installed toolkit (the one holding nvcc) goes first when present."""
    nvcc = shutil.which("nvcc")
    toolkit = Path(nvcc).resolve().parent.parent / "include" if nvcc else None
    if toolkit is not None and (toolkit / "crt" / "mma.h").exists():
        return (f"-std={std}", f"-I{toolkit}")
    return (f"-std={std}",)


def nvrtc_module(
    code: str,
    what: str,
    options: Sequence[str] | None = None,
    name_expressions: Sequence[str] | None = None,
):
    """``code`` compiled by NVRTC into a CuPy ``RawModule`` (``nvrtc_options()`` unless
    ``options``); ``name_expressions`` names template instantiations to compile."""
    import cupy

    opts = tuple(nvrtc_options() if options is None else options)
    try:
        if name_expressions is None:
            module = cupy.RawModule(code=code, options=opts)
        else:
            module = cupy.RawModule(code=code, options=opts, name_expressions=name_expressions)
        module.compile()
    except cupy.cuda.compiler.CompileException as exc:
        raise CompileFailed(f"{what}: NVRTC could not compile it: {exc}") from exc
    return module
