"""Running generated kernels on the CPU (C++ through ctypes) or the GPU (cubins through CuPy).

Both executors take a plan, segment quartets of its (canonical) class and the segmented basis,
and return the integrals as an (n, n_outputs) array in the output order of the plan, or the
half J and K matrices of a symmetric density (``J = Jh + Jh^T``, ``K = Kh + Kh^T``).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..angmom import QuartetClass
from ..library.store import LibraryKernel, get_kernel
from ..lowering.boys import boys_table
from ..lowering.target import Epilogue
from ..variants import Tier, Variant
from .basis import SegmentedBasis
from .items import ItemBatch
from .pairs import items_per_quartet, primitive_pairs

BUFFER_BUDGET_BYTES = 1 << 30
"""Buffer memory (slots, and on the GPU the integrals) per launch; larger batches are split."""


@dataclass(frozen=True)
class GradientTarget:
    """What a gradient-epilogue launch adds into: ``out`` (natm * 3) the energy gradient of
    j_factor E_J - k_factor E_K, ``seg_atom`` each segment's atom (int32), arrays of the
    executor's side."""

    seg_atom: Any
    out: Any
    j_factor: float
    k_factor: float

    def arguments(self, pointer) -> tuple:
        """The kernel's four extra arguments, arrays through ``pointer``."""
        factors = np.float64(self.j_factor), np.float64(self.k_factor)
        return (pointer(self.seg_atom), pointer(self.out), *factors)


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
def _cpu_function(path: Path, name: str, gradient: bool = False):
    """The kernel ``name`` of ``path``; ``gradient``: it has the gradient epilogue's four
    arguments more (``lowering.kernel.GRAD_KERNEL_ARGS``)."""
    lib = ctypes.CDLL(str(path))
    fn = getattr(lib, name)
    ptr = ctypes.c_void_p
    i32, i64 = ctypes.c_int, ctypes.c_longlong
    fn.argtypes = [i32, *[ptr] * 8, ptr, ptr, i64, *[ptr] * 5, i32, i32, ptr, ptr, ptr, i32]
    if gradient:
        fn.argtypes += [ptr, ptr, ctypes.c_double, ctypes.c_double]
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

    def load(self, kernel: LibraryKernel) -> None:
        """Loads ``kernel``'s shared library ahead of its first run."""
        _cpu_function(kernel.binary, kernel.name)

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
            pairs = primitive_pairs(basis, quartets[lo:hi], self.max_work, kernel.pair_exponents)
            n = len(pairs.quartet)
            items = np.ascontiguousarray(quartets[lo:hi][pairs.quartet])
            sc = np.ascontiguousarray(scales[lo:hi][pairs.quartet])
            buf = np.empty(n * max(kernel.n_slots, 1))
            # one item per quartet: the kernel writes the batch's rows in place
            item_out = np.empty((n, kernel.n_outputs)) if pairs.split else out[lo:hi]
            fn(
                n, _p(items), _p(sc), _p(basis.xyz), _p(pairs.index), _p(basis.ao),
                _p(pairs.prim), _p(pairs.data), _p(table), _p(item_out), _p(buf), kernel.n_slots,
                *(_p(a) for a in prog), p2_len, nao, _p(dmc), _p(vj), _p(vk), 1,
            )  # fmt: skip
            if pairs.split and not jk:  # a split quartet: the sum of its items
                np.add.at(out, lo + pairs.quartet, item_out)
        return (vj, vk) if jk else out

    def integrals(self, kernel: LibraryKernel, quartets, basis: SegmentedBasis) -> np.ndarray:
        return self._run(kernel, quartets, basis)

    def run_items(
        self, kernel: LibraryKernel, batch: ItemBatch, basis: SegmentedBasis, pair_data,
        dm=None, vj=None, vk=None, gradient: GradientTarget | None = None,
    ) -> np.ndarray | None:  # fmt: skip
        """One launch of ``kernel`` over ``batch``: a store kernel returns its integrals
        (n, n_outputs); a J/K kernel adds the half J and K of the densities ``dm`` (n_dm, nao,
        nao) into ``vj`` and ``vk`` (same shape; either may be None); a gradient kernel adds
        the energy gradient of the densities ``dm`` into ``gradient.out``."""
        grad = kernel.epilogue is Epilogue.GRAD
        fn = _cpu_function(kernel.binary, kernel.name, grad)
        n = batch.size
        store = kernel.epilogue is Epilogue.STORE
        out = np.empty((n, kernel.n_outputs)) if store else None
        buf = np.empty(max(1, n * kernel.n_slots))
        *prog, p2_len = _program(kernel)
        prog = [np.ascontiguousarray(a) for a in prog]
        qpair = np.arange(2 * n, dtype=np.int32)
        n_dm = 0 if dm is None else len(dm)
        fn(
            n, _p(batch.quartets), _p(batch.scales), _p(basis.xyz), _p(qpair), _p(basis.ao),
            _p(batch.ranges), _p(pair_data), _p(boys_table()), _p(out), _p(buf), kernel.n_slots,
            *(_p(a) for a in prog), p2_len, basis.nao, _p(dm), _p(vj), _p(vk), n_dm,
            *(gradient.arguments(_p) if grad else ()),
        )  # fmt: skip
        return out

    def jk(self, cls, variant, spherical, quartets, scales, basis: SegmentedBasis, dm):
        kernel = self.kernel(cls, variant, spherical, Epilogue.JK)
        if kernel.tier is Tier.REGISTER:
            return self._run(kernel, quartets, basis, scales, dm)
        ints = self.integrals(kernel, quartets, basis)
        return contract_jk_numpy(kernel.output_shape, ints, quartets, scales, basis, dm)


def contract_jk_numpy(shape, ints, quartets, scales, basis, dm):
    """Kernel 2 on the CPU for one density: half J and K from integrals of one class."""
    nao = basis.nao
    vj = np.zeros((1, nao, nao))
    vk = np.zeros((1, nao, nao))
    contract_items(shape, ints, quartets, scales, basis.ao, dm[None], vj, vk)
    return vj[0], vk[0]


def contract_items(shape, ints, quartets, scales, seg_ao, dm, vj, vk, chunk: int = 1 << 22):
    """Kernel 2 on the CPU: adds the half J and K of integrals ``ints`` (n, n_outputs) of one
    class, quartets ``quartets`` (segment indices) weighted by ``scales``, for the densities
    ``dm`` (n_dm, nao, nao) into ``vj`` and ``vk`` (either may be None)."""
    na, nb, nc, nd = shape
    per = max(1, chunk // max(1, na * nb * nc * nd))
    for lo in range(0, len(quartets), per):
        q = np.asarray(quartets[lo : lo + per])
        v = (np.asarray(ints[lo : lo + per]) * np.asarray(scales[lo : lo + per])[:, None]).reshape(
            len(q), na, nb, nc, nd
        )
        ia, ib, ic, id_ = (seg_ao[q[:, k]][:, None] + np.arange(s) for k, s in enumerate(shape))

        def block(x, y):  # (n, len x, len y) index pair for a block of rows x, columns y
            return x[:, :, None], y[:, None, :]

        for m in range(len(dm)):
            d = dm[m]
            if vj is not None:
                dcd = d[block(ic, id_)] + d[block(id_, ic)].transpose(0, 2, 1)
                dab = d[block(ia, ib)] + d[block(ib, ia)].transpose(0, 2, 1)
                np.add.at(vj[m], block(ia, ib), np.einsum("qabcd,qcd->qab", v, dcd))
                np.add.at(vj[m], block(ic, id_), np.einsum("qabcd,qab->qcd", v, dab))
            if vk is not None:
                np.add.at(vk[m], block(ia, ic), np.einsum("qabcd,qbd->qac", v, d[block(ib, id_)]))
                np.add.at(vk[m], block(ib, ic), np.einsum("qabcd,qad->qbc", v, d[block(ia, id_)]))
                np.add.at(vk[m], block(ia, id_), np.einsum("qabcd,qbc->qad", v, d[block(ib, ic)]))
                np.add.at(vk[m], block(ib, id_), np.einsum("qabcd,qac->qbd", v, d[block(ia, ic)]))


def executor(backend: str, kernel_dir=None):
    if backend == "cpu":
        return CpuExecutor(kernel_dir)
    if backend == "gpu":
        from .gpu import GpuExecutor

        return GpuExecutor(kernel_dir)
    raise ValueError(f"no executor for backend {backend!r}")
