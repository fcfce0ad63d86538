"""The kernels of ``kernels.cu`` built for the host (``emu_shim.h``) and called through ctypes.

This lets the tests run the GPU backend, kernels and host code alike, on a machine without a
GPU: one std::thread per CUDA thread, so only small problems are practical.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import tempfile
from pathlib import Path

import numpy as np

import qctoolchain

from ..errors import InputError, KernelBuildError, compiler_errors
from . import kernels as kd

HERE = Path(__file__).parent
EMULATION_FLAGS = ("-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", f"-I{HERE}")
_CTYPES = {"int": ctypes.c_int, "double": ctypes.c_double}


def kernel_params(name: str) -> list[tuple[str, str]]:
    """(C type, name) of a kernel's parameters, read from the CUDA source."""
    src = kd.SOURCE.read_text()
    m = re.search(rf"\b{name}\(([^)]*)\)\s*{{", src)
    if m is None:
        raise KernelBuildError(f"kernel {name} not found in {kd.SOURCE.name}")
    params = m.group(1).strip()
    if re.fullmatch(r"\w+", params):  # a macro of the source holds the parameter list
        d = re.search(rf"#define {params}((?:.*\\\n)*.*)", src)
        params = d.group(1).replace("\\\n", " ")
    out = []
    for p in params.split(","):
        words = p.replace("__restrict__", "").split()
        ctype = " ".join(words[:-1])
        if not ctype.endswith("*"):  # a const scalar is passed by value
            ctype = ctype.removeprefix("const ")
        out.append((ctype, words[-1]))
    return out


def _wrapper(expr: str) -> str:
    base = expr.split("<")[0]
    params = kernel_params(base)
    decl = ", ".join(f"{t} {n}" for t, n in params)
    call = ", ".join(n for _, n in params)
    return (
        f'extern "C" void {symbol(expr)}(int grid, {decl}) {{\n'
        f"  kd_emu_launch(&{expr}, grid, {call});\n}}\n"
    )


def symbol(expr: str) -> str:
    return "emu_" + re.sub(r"\W+", "_", expr).strip("_")


@functools.cache
def library(d: int, mma: str) -> ctypes.CDLL:
    """Build (once per process and configuration) the host library of one (d, mma)."""
    kd.check_supported(d, mma)
    exprs = kd.names(d, kd.MMA_CODES[mma])
    code = (
        '#include "emu_shim.h"\n#include "kernels.cu"\n'
        'static_assert(KD_NT == 256, "emu_shim.h launches 256 threads");\n'
        + "".join(_wrapper(e) for e in exprs)
    )
    tag = hashlib.sha1(
        (code + kd.SOURCE.read_text() + (HERE / "emu_shim.h").read_text()).encode()
    ).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"kerneldi_emu_{tag}.so"
    if not out.exists():
        src = out.with_suffix(f".{os.getpid()}.cpp")
        src.write_text(code)
        try:
            with compiler_errors():
                qctoolchain.cxx_shared(src, out, EMULATION_FLAGS, "the kernel emulation")
        finally:
            src.unlink()
    lib = ctypes.CDLL(str(out))
    for e in exprs:
        fn = getattr(lib, symbol(e))
        fn.restype = None
        params = kernel_params(e.split("<")[0])
        fn.argtypes = [ctypes.c_int] + [
            ctypes.c_void_p if t.endswith("*") else _CTYPES[t] for t, _ in params
        ]
    return lib


class EmulatedKernel:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, grid: int, args) -> None:
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise InputError("kernel arguments must be C-contiguous")
                conv.append(a.ctypes.data)
            else:
                conv.append(a.item() if isinstance(a, np.generic) else a)
        self.fn(grid, *conv)
