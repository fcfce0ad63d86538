"""Running generated kernels on the CPU (C++ through ctypes) or the GPU (cubins through CuPy).

Both executors take a plan, segment quartets of its (canonical) class and the segmented basis,
and return the integrals as an (n, n_outputs) array in the output order of the plan, or the
half J and K matrices of a symmetric density (``J = Jh + Jh^T``, ``K = Kh + Kh^T``).
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..angmom import QuartetClass
from ..library.store import LibraryKernel, get_kernel
from ..lowering.boys import boys_table
from ..lowering.target import Epilogue
from ..variants import Tier, Variant
from .basis import SegmentedBasis
from .pairs import items_per_quartet, primitive_pairs

BUFFER_BUDGET_BYTES = 1 << 30
"""Buffer memory (slots, and on the GPU the integrals) per launch; larger batches are split."""


def _item_batches(items: np.ndarray, n_slots: int, budget: int = BUFFER_BUDGET_BYTES):
    """Consecutive quartet ranges whose items (``items`` per quartet) need at most ``budget``
    bytes of ``n_slots`` doubles each (a range holds one quartet at least)."""
    n = len(items)
    if n == 0:
        return
    if n_slots == 0:
        yield 0, n
        return
    per_batch = max(1, budget // (8 * n_slots))
    ends = np.cumsum(items)
    start = 0
    while start < n:
        before = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + per_batch, side="right")))
        yield start, stop
        start = stop


def _quartet_batches(basis: SegmentedBasis, quartets, max_work: int | None, n_slots: int):
    """``_item_batches`` of ``quartets`` as ``primitive_pairs`` will split them."""
    return _item_batches(items_per_quartet(basis, quartets, max_work), n_slots)


def _program(kernel: LibraryKernel):
    p = kernel.program
    if p is None:
        empty_i = np.zeros(1, dtype=np.int32)
        return empty_i, np.zeros(2, dtype=np.int32), empty_i, np.zeros(1), empty_i, 0
    return p.dst, p.start, p.src, p.coef, p.code, len(p)


# --------------------------------------------------------------------------------------------
# CPU: the C++ lowering


@lru_cache(maxsize=256)
def _cpu_function(path: Path, name: str):
    lib = ctypes.CDLL(str(path))
    fn = getattr(lib, name)
    ptr = ctypes.c_void_p
    i32, i64 = ctypes.c_int, ctypes.c_longlong
    fn.argtypes = [i32, *[ptr] * 8, ptr, ptr, i64, *[ptr] * 5, i32, i32, ptr, ptr, ptr]
    fn.restype = None
    return fn


def _p(a: np.ndarray | None):
    return None if a is None else a.ctypes.data_as(ctypes.c_void_p)


class CpuExecutor:
    """Runs the C++ lowering; ``max_work`` splits quartets into items as the GPU executor does
    (``runtime.pairs``; off by default: a CPU thread runs the items one after another)."""

    target = "cpp"
    arch = "host"

    def __init__(self, kernel_dir=None, max_work: int | None = None) -> None:
        self.kernel_dir = kernel_dir
        self.max_work = max_work

    def kernel(self, cls: QuartetClass, variant: Variant, spherical: bool, epilogue=Epilogue.STORE):
        return get_kernel(cls, variant, spherical, epilogue, "cpp", directory=self.kernel_dir)

    def _run(self, kernel: LibraryKernel, quartets, basis, scales=None, dm=None):
        fn = _cpu_function(kernel.binary, kernel.name)
        quartets = np.ascontiguousarray(quartets, dtype=np.int32)
        table = boys_table()
        *prog, p2_len = _program(kernel)
        prog = [np.ascontiguousarray(a) for a in prog]
        out = np.zeros((len(quartets), kernel.n_outputs))
        jk = kernel.epilogue is Epilogue.JK
        nao = basis.nao
        vj = np.zeros((nao, nao)) if jk else None
        vk = np.zeros((nao, nao)) if jk else None
        dmc = np.ascontiguousarray(dm) if dm is not None else None
        scales = np.ones(len(quartets)) if scales is None else np.asarray(scales, dtype=float)
        for lo, hi in _quartet_batches(basis, quartets, self.max_work, kernel.n_slots):
            pairs = primitive_pairs(basis, quartets[lo:hi], self.max_work)
            n = len(pairs.quartet)
            items = np.ascontiguousarray(quartets[lo:hi][pairs.quartet])
            sc = np.ascontiguousarray(scales[lo:hi][pairs.quartet])
            buf = np.empty(n * max(kernel.n_slots, 1))
            # one item per quartet: the kernel writes the batch's rows in place
            item_out = np.empty((n, kernel.n_outputs)) if pairs.split else out[lo:hi]
            fn(
                n, _p(items), _p(sc), _p(basis.xyz), _p(pairs.index), _p(basis.ao),
                _p(pairs.prim), _p(pairs.data), _p(table), _p(item_out), _p(buf), kernel.n_slots,
                *(_p(a) for a in prog), p2_len, nao, _p(dmc), _p(vj), _p(vk),
            )  # fmt: skip
            if pairs.split and not jk:  # a split quartet: the sum of its items
                np.add.at(out, lo + pairs.quartet, item_out)
        return (vj, vk) if jk else out

    def integrals(self, kernel: LibraryKernel, quartets, basis: SegmentedBasis) -> np.ndarray:
        return self._run(kernel, quartets, basis)

    def jk(self, cls, variant, spherical, quartets, scales, basis: SegmentedBasis, dm):
        kernel = self.kernel(cls, variant, spherical, Epilogue.JK)
        if kernel.tier is Tier.REGISTER:
            return self._run(kernel, quartets, basis, scales, dm)
        ints = self.integrals(kernel, quartets, basis)
        return contract_jk_numpy(kernel.output_shape, ints, quartets, scales, basis, dm)


def contract_jk_numpy(shape, ints, quartets, scales, basis, dm):
    """Kernel 2 on the CPU: half J and K from integrals of one class (NumPy)."""
    nao = basis.nao
    vj = np.zeros((nao, nao))
    vk = np.zeros((nao, nao))
    ranges = [np.arange(n) for n in shape]
    for (i, j, k, l), s, v in zip(quartets, scales, ints.reshape(-1, *shape)):
        a, b, c, d = (basis.ao[x] + r for x, r in zip((i, j, k, l), ranges))
        sv = s * v
        vj[np.ix_(a, b)] += np.einsum("abcd,cd->ab", sv, dm[np.ix_(c, d)] + dm[np.ix_(d, c)].T)
        vj[np.ix_(c, d)] += np.einsum("abcd,ab->cd", sv, dm[np.ix_(a, b)] + dm[np.ix_(b, a)].T)
        vk[np.ix_(a, c)] += np.einsum("abcd,bd->ac", sv, dm[np.ix_(b, d)])
        vk[np.ix_(b, c)] += np.einsum("abcd,ad->bc", sv, dm[np.ix_(a, d)])
        vk[np.ix_(a, d)] += np.einsum("abcd,bc->ad", sv, dm[np.ix_(b, c)])
        vk[np.ix_(b, d)] += np.einsum("abcd,ac->bd", sv, dm[np.ix_(a, c)])
    return vj, vk


def executor(backend: str, kernel_dir=None):
    if backend == "cpu":
        return CpuExecutor(kernel_dir)
    if backend == "gpu":
        from .gpu import GpuExecutor

        return GpuExecutor(kernel_dir)
    raise ValueError(f"no executor for backend {backend!r}")
