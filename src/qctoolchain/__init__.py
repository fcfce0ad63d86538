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

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

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


class KernelModule(Protocol):
    """What callers use of a module ``nvrtc_module`` returns: its kernels by name (by name
    expression where it was compiled with them), as CuPy ``RawKernel`` objects."""

    def get_function(self, name: str) -> Any: ...


class NvrtcModule:
    """A module compiled with name expressions: ``get_function(name_expression)`` gives the
    kernel of that expression through the lowered (mangled) names NVRTC reported, as
    ``cupy.RawModule.get_function`` does for a module it compiled itself. ``raw`` is the CuPy
    ``RawModule`` (loaded from ``path`` where the module came from the NVRTC cache), ``lowered``
    maps each name expression to its lowered name (empty where ``raw`` maps them itself) and
    ``from_cache`` says whether the binary was read from the cache rather than compiled now."""

    def __init__(
        self, raw: Any, lowered: Mapping[str, str], path: Path | None, from_cache: bool
    ) -> None:
        self.raw = raw
        self.lowered = dict(lowered)
        self.path = path
        self.from_cache = from_cache

    def get_function(self, name: str) -> Any:
        return self.raw.get_function(self.lowered.get(name, name))


NVRTC_CACHE_ENV = "QCTOOLCHAIN_NVRTC_CACHE"
NVRTC_CACHE_FORMAT = 1  # layout of the entries below; part of the key
# CuPy links these with cudadevrt after NVRTC; the cache stores NVRTC's output unlinked
_RDC_OPTIONS = frozenset({"--device-c", "-dc", "-rdc=true", "--relocatable-device-code=true"})
_warned_folders: set[str] = set()


def nvrtc_cache_dir() -> Path:
    """The folder of the NVRTC cache: ``$QCTOOLCHAIN_NVRTC_CACHE`` if set, else
    ``qctoolchain/nvrtc`` under ``$XDG_CACHE_HOME`` (``~/.cache`` where that is unset)."""
    folder = os.environ.get(NVRTC_CACHE_ENV)
    if folder:
        return Path(folder).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "qctoolchain" / "nvrtc"


def nvrtc_cache_key(
    code: str,
    options: Sequence[str],
    name_expressions: Sequence[str],
    arch: str,
    nvrtc_version: Sequence[int],
    cupy_version: str,
) -> dict:
    """The fields that decide a cached module: the source (by its sha256), the NVRTC options
    and name expressions in their order, the device's compute capability, NVRTC's and CuPy's
    versions and the layout of the entry. ``nvrtc_cache_digest`` hashes them."""
    return {
        "format": NVRTC_CACHE_FORMAT,
        "code_sha256": hashlib.sha256(code.encode()).hexdigest(),
        "options": list(options),
        "name_expressions": list(name_expressions),
        "arch": str(arch),
        "nvrtc_version": [int(v) for v in nvrtc_version],
        "cupy_version": str(cupy_version),
    }


def nvrtc_cache_digest(key: Mapping) -> str:
    """The sha256 of ``key`` (from ``nvrtc_cache_key``): the file names of its entry."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _warn_unwritable(folder: Path, exc: OSError) -> None:
    if str(folder) in _warned_folders:
        return
    _warned_folders.add(str(folder))
    warnings.warn(
        f"NVRTC cache {folder} cannot be written ({exc}); modules compiled with name "
        f"expressions are compiled in every process (set ${NVRTC_CACHE_ENV} to a writable "
        "folder)",
        stacklevel=3,
    )


def _cuda_include_options(cupy: Any) -> tuple[str, ...]:
    """``-I`` of the CUDA headers that ``cupy.RawModule`` hands NVRTC: ``include`` under CuPy's
    CUDA path (``cupy.cuda.get_cuda_path()``: the toolkit, or the CUDA wheels, NVRTC came
    from), where there is one."""
    get_cuda_path = getattr(cupy.cuda, "get_cuda_path", None)
    root = get_cuda_path() if get_cuda_path is not None else None
    if root and (Path(root) / "include").is_dir():
        return (f"-I{Path(root) / 'include'}",)
    return ()


def _read_entry(folder: Path, digest: str, key: dict, cupy: Any) -> NvrtcModule | None:
    """The module of entry ``digest`` if it is whole and made for ``key``, else None: a
    record that does not parse or names another key, a binary whose sha256 is not the
    recorded one, or one the driver does not load, counts as missing."""
    try:
        record = json.loads((folder / f"{digest}.json").read_text())
        if record["key"] != key or record["kind"] not in ("cubin", "ptx"):
            return None
        binary = folder / f"{digest}.{record['kind']}"
        if hashlib.sha256(binary.read_bytes()).hexdigest() != record["binary_sha256"]:
            return None
        lowered = {str(k): str(v) for k, v in record["lowered"].items()}
        if set(lowered) != set(key["name_expressions"]):
            return None
        raw = cupy.RawModule(path=str(binary))
        raw.compile()  # loads the binary now, so that a bad one is recompiled here
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    except cupy.cuda.driver.CUDADriverError:
        return None
    return NvrtcModule(raw, lowered, binary, from_cache=True)


def _raw_module(cupy: Any, code: str, what: str, opts: tuple[str, ...], names: Any) -> Any:
    """``code`` compiled by ``cupy.RawModule`` (CuPy's own cache, options and architecture)."""
    try:
        if names is None:
            module = cupy.RawModule(code=code, options=opts)
        else:
            module = cupy.RawModule(code=code, options=opts, name_expressions=names)
        module.compile()
    except cupy.cuda.compiler.CompileException as exc:
        raise CompileFailed(f"{what}: NVRTC could not compile it: {exc}") from exc
    return module


def nvrtc_module(
    code: str,
    what: str,
    options: Sequence[str] | None = None,
    name_expressions: Sequence[str] | None = None,
) -> KernelModule:
    """``code`` compiled by NVRTC (``nvrtc_options()`` unless ``options``); ``name_expressions``
    names template instantiations to compile, which ``get_function`` then takes as names.

    Without name expressions this is a CuPy ``RawModule`` (CuPy's disk cache keeps it). With
    them it is an ``NvrtcModule`` kept in the NVRTC cache (``nvrtc_cache_dir()``), because
    CuPy before 14.2 does not look in its disk cache for such modules and every process would
    compile them again. An entry is keyed by ``nvrtc_cache_key`` (source, options, name
    expressions, compute capability, NVRTC and CuPy versions); on a miss the module is
    compiled by ``cupy.cuda.compiler.compile_using_nvrtc`` for the architecture CuPy's
    ``RawModule`` picks (a cubin where NVRTC knows the device, else PTX), with the CUDA
    headers' folder and ``-ftz=true`` that ``RawModule`` adds (CuPy's own headers are not on
    the path), and written under a temporary name and renamed: the binary, then a JSON record
    of the lowered names, the key and the binary's sha256. An entry that is unreadable,
    corrupt or for another key is compiled and written again; a cache folder that cannot be
    written warns once and the module is compiled by ``RawModule`` as without the cache.
    Options that ask for relocatable device code (``-rdc=true``) bypass the cache."""
    import cupy

    opts = tuple(nvrtc_options() if options is None else options)
    if name_expressions is None or _RDC_OPTIONS.intersection(opts):
        return _raw_module(cupy, code, what, opts, name_expressions)
    names = tuple(name_expressions)
    full = (*opts, *_cuda_include_options(cupy), "-ftz=true")
    key = nvrtc_cache_key(
        code, full, names, cupy.cuda.Device().compute_capability,
        cupy.cuda.nvrtc.getVersion(), cupy.__version__,
    )  # fmt: skip
    digest = nvrtc_cache_digest(key)
    folder = nvrtc_cache_dir()
    cached = _read_entry(folder, digest, key, cupy)
    if cached is not None:
        return cached
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise PermissionError(f"no write permission on {folder}")
    except OSError as exc:
        _warn_unwritable(folder, exc)
        return NvrtcModule(_raw_module(cupy, code, what, opts, names), {}, None, False)
    filename = re.sub(r"[^\w.-]", "_", Path(what).name) or "kern.cu"
    try:
        binary, lowered = cupy.cuda.compiler.compile_using_nvrtc(
            code, full, arch=None, filename=filename, name_expressions=names
        )
    except cupy.cuda.compiler.CompileException as exc:
        raise CompileFailed(f"{what}: NVRTC could not compile it: {exc}") from exc
    if isinstance(binary, str):
        binary = binary.encode()
    kind = "cubin" if binary.startswith(b"\x7fELF") else "ptx"
    lowered = {name: lowered[name] for name in names}
    path = folder / f"{digest}.{kind}"
    record = {
        "what": what,
        "kind": kind,
        "binary_sha256": hashlib.sha256(binary).hexdigest(),
        "lowered": lowered,
        "key": key,
    }
    try:
        _write_atomic(path, binary)
        _write_atomic(folder / f"{digest}.json", json.dumps(record, indent=1).encode())
    except OSError as exc:
        _warn_unwritable(folder, exc)
        return NvrtcModule(_raw_module(cupy, code, what, opts, names), {}, None, False)
    raw = cupy.RawModule(path=str(path))
    raw.compile()
    return NvrtcModule(raw, lowered, path, from_cache=False)
