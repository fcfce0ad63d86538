"""GPU executor: generated cubins launched through CuPy, plus Kernel 2 (the J/K contraction of
stored integrals) in three forms: the class's own generated kernel in the Tier 2 binary, one
thread per quartet with the integral loop unrolled at compile time (``generated``, small
classes); one thread block per quartet staging its integrals and density tiles in shared memory
(``block``, larger classes); or one thread per quartet looping over the integrals at run time
(``thread``, where a binary has no generated kernel). Tier 1 contracts its integrals into J
and K in its own epilogue (``fused``) up to ``lowering.kernel.FUSED_JK_MAX_OUTPUTS`` integrals;
larger Tier 1 classes store them and run Kernel 2 as Tier 2 does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..angmom import QuartetClass
from ..errors import DeviceError
from ..library.compiler import SUPPORTED_ARCHS
from ..library.store import LibraryKernel, get_kernel
from ..lowering.boys import boys_table
from ..lowering.kernel import FUSED_JK_MAX_OUTPUTS, GENERATED_KERNEL2_MAX_OUTPUTS
from ..lowering.target import (
    Epilogue,
    tiled_output_index,
    tiled_output_size,
    untile_outputs,
)
from ..variants import Tier, Variant
from .basis import SegmentedBasis
from .device import require_cupy
from .items import ItemBatch
from .launch import GradientTarget, _program, _quartet_batches
from .pairs import primitive_pairs

THREADS = 128
JK_THREADS = 64
# The generated Kernel 2 runs where the binary has one (lowering.kernel's
# GENERATED_KERNEL2_MAX_OUTPUTS); otherwise the thread form runs classes with at most this many
# integrals (few enough that one thread's atomic updates cost less than a block's staging),
# and the block form above
KERNEL2_THREAD_MAX_OUTPUTS = 40
# Quartets with more primitive quartets run as several items (``runtime.pairs``): in basis sets
# with deeply contracted shells a few quartets hold hundreds of primitive quartets where the
# mean is tens, and one such quartet would hold its whole warp. Store launches add the items
# up afterwards.
MAX_WORK = 64
KERNEL2_FORMS = ("auto", "fused", "generated", "block", "thread")

# integral k of item q in a store launch's buffer
OUTPUT_INDEX = f"#define FRCG_OUT(k, q, nout) ({tiled_output_index('k', 'q', 'nout')})\n"

JK_TRANSFORM = (
    OUTPUT_INDEX
    + r"""
// Half J and K of each quartet's stored integrals for the n_dm densities stacked in dm (nao x nao
// each, likewise vj and vk); a null vj or vk leaves that matrix out.
#define D(i, j) dmm[(size_t)(i) * nao + (j)]

extern "C" __global__ void frcg_jk_transform(
    const int n, const int* __restrict__ quartets, const double* __restrict__ qscale,
    const int* __restrict__ seg_ao, const double* __restrict__ ints,
    const int na, const int nb, const int nc, const int nd, const int nao,
    const double* __restrict__ dm, double* __restrict__ vj, double* __restrict__ vk,
    const int n_dm)
{
    extern __shared__ double smem[];
    const int q = blockIdx.x;
    if (q >= n) return;
    const int oa = seg_ao[quartets[4 * q]], ob = seg_ao[quartets[4 * q + 1]];
    const int oc = seg_ao[quartets[4 * q + 2]], od = seg_ao[quartets[4 * q + 3]];
    const int nout = na * nb * nc * nd;
    double* I = smem;
    double* Dab = I + nout;      // D[a,b] + D[b,a]
    double* Dcd = Dab + na * nb; // D[c,d] + D[d,c]
    double* Dbd = Dcd + nc * nd;
    double* Dad = Dbd + nb * nd;
    double* Dbc = Dad + na * nd;
    double* Dac = Dbc + nb * nc;
    const double s = qscale[q];
    for (int x = threadIdx.x; x < nout; x += blockDim.x) I[x] = s * ints[FRCG_OUT(x, q, nout)];
#define IDX(a, b, c, d) ((((a) * nb + (b)) * nc + (c)) * nd + (d))
    for (int m = 0; m < n_dm; ++m) {
        const size_t o = (size_t)m * nao * nao;
        const double* const dmm = dm + o;
        if (m) __syncthreads();  // the previous density's tiles are no longer read
        for (int x = threadIdx.x; x < na * nb; x += blockDim.x) {
            const int a = x / nb, b = x % nb;
            Dab[x] = D(oa + a, ob + b) + D(ob + b, oa + a);
        }
        for (int x = threadIdx.x; x < nc * nd; x += blockDim.x) {
            const int c = x / nd, d = x % nd;
            Dcd[x] = D(oc + c, od + d) + D(od + d, oc + c);
        }
        for (int x = threadIdx.x; x < nb * nd; x += blockDim.x)
            Dbd[x] = D(ob + x / nd, od + x % nd);
        for (int x = threadIdx.x; x < na * nd; x += blockDim.x)
            Dad[x] = D(oa + x / nd, od + x % nd);
        for (int x = threadIdx.x; x < nb * nc; x += blockDim.x)
            Dbc[x] = D(ob + x / nc, oc + x % nc);
        for (int x = threadIdx.x; x < na * nc; x += blockDim.x)
            Dac[x] = D(oa + x / nc, oc + x % nc);
        __syncthreads();
        if (vj) {
            double* const vjm = vj + o;
            for (int x = threadIdx.x; x < na * nb; x += blockDim.x) {
                const int a = x / nb, b = x % nb;
                double j = 0.0;
                for (int c = 0; c < nc; ++c)
                    for (int d = 0; d < nd; ++d) j += I[IDX(a, b, c, d)] * Dcd[c * nd + d];
                atomicAdd(&vjm[(size_t)(oa + a) * nao + ob + b], j);
            }
            for (int x = threadIdx.x; x < nc * nd; x += blockDim.x) {
                const int c = x / nd, d = x % nd;
                double j = 0.0;
                for (int a = 0; a < na; ++a)
                    for (int b = 0; b < nb; ++b) j += I[IDX(a, b, c, d)] * Dab[a * nb + b];
                atomicAdd(&vjm[(size_t)(oc + c) * nao + od + d], j);
            }
        }
        if (vk) {
            double* const vkm = vk + o;
            for (int x = threadIdx.x; x < na * nc; x += blockDim.x) {
                const int a = x / nc, c = x % nc;
                double k = 0.0;
                for (int b = 0; b < nb; ++b)
                    for (int d = 0; d < nd; ++d) k += I[IDX(a, b, c, d)] * Dbd[b * nd + d];
                atomicAdd(&vkm[(size_t)(oa + a) * nao + oc + c], k);
            }
            for (int x = threadIdx.x; x < nb * nc; x += blockDim.x) {
                const int b = x / nc, c = x % nc;
                double k = 0.0;
                for (int a = 0; a < na; ++a)
                    for (int d = 0; d < nd; ++d) k += I[IDX(a, b, c, d)] * Dad[a * nd + d];
                atomicAdd(&vkm[(size_t)(ob + b) * nao + oc + c], k);
            }
            for (int x = threadIdx.x; x < na * nd; x += blockDim.x) {
                const int a = x / nd, d = x % nd;
                double k = 0.0;
                for (int b = 0; b < nb; ++b)
                    for (int c = 0; c < nc; ++c) k += I[IDX(a, b, c, d)] * Dbc[b * nc + c];
                atomicAdd(&vkm[(size_t)(oa + a) * nao + od + d], k);
            }
            for (int x = threadIdx.x; x < nb * nd; x += blockDim.x) {
                const int b = x / nd, d = x % nd;
                double k = 0.0;
                for (int a = 0; a < na; ++a)
                    for (int c = 0; c < nc; ++c) k += I[IDX(a, b, c, d)] * Dac[a * nc + c];
                atomicAdd(&vkm[(size_t)(ob + b) * nao + od + d], k);
            }
        }
    }
}

extern "C" __global__ void frcg_jk_quartet(
    const int n, const int* __restrict__ quartets, const double* __restrict__ qscale,
    const int* __restrict__ seg_ao, const double* __restrict__ ints,
    const int na, const int nb, const int nc, const int nd, const int nao,
    const double* __restrict__ dm, double* __restrict__ vj, double* __restrict__ vk,
    const int n_dm)
{
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n) return;
    const int oa = seg_ao[quartets[4 * q]], ob = seg_ao[quartets[4 * q + 1]];
    const int oc = seg_ao[quartets[4 * q + 2]], od = seg_ao[quartets[4 * q + 3]];
    const double s = qscale[q];
    const int nout = na * nb * nc * nd;
    for (int m = 0; m < n_dm; ++m) {
        const size_t o = (size_t)m * nao * nao;
        const double* const dmm = dm + o;
        double* const vjm = vj ? vj + o : nullptr;
        double* const vkm = vk ? vk + o : nullptr;
        int x = 0;  // integral x of quartet q, consecutive threads coalesced
        for (int a = 0; a < na; ++a)
            for (int b = 0; b < nb; ++b) {
                const double dab = D(oa + a, ob + b) + D(ob + b, oa + a);
                double jab = 0.0;
                for (int c = 0; c < nc; ++c)
                    for (int d = 0; d < nd; ++d, ++x) {
                        const double v = s * ints[FRCG_OUT(x, q, nout)];
                        if (vjm) {
                            jab += v * (D(oc + c, od + d) + D(od + d, oc + c));
                            atomicAdd(&vjm[(size_t)(oc + c) * nao + od + d], v * dab);
                        }
                        if (vkm) {
                            atomicAdd(&vkm[(size_t)(oa + a) * nao + oc + c], v * D(ob + b, od + d));
                            atomicAdd(&vkm[(size_t)(ob + b) * nao + oc + c], v * D(oa + a, od + d));
                            atomicAdd(&vkm[(size_t)(oa + a) * nao + od + d], v * D(ob + b, oc + c));
                            atomicAdd(&vkm[(size_t)(ob + b) * nao + od + d], v * D(oa + a, oc + c));
                        }
                    }
                if (vjm) atomicAdd(&vjm[(size_t)(oa + a) * nao + ob + b], jab);
            }
    }
}
"""
)


_NULL = np.uint64(0)  # a null pointer argument

CUDA_ERROR_OUT_OF_MEMORY = 2  # the driver's CUDA_ERROR_OUT_OF_MEMORY, the runtime's
# cudaErrorMemoryAllocation
CUDA_LIMIT_STACK_SIZE = 0  # cudaLimitStackSize: the local memory each thread is given


def launch_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is CUDA refusing a launch or a stack limit for memory: a kernel's local
    memory (its stack, which the driver reserves for every thread the device can hold at once)
    larger than what the device has free, where no allocation of the caller's failed."""
    return (
        type(exc).__name__ in ("CUDADriverError", "CUDARuntimeError")
        and getattr(exc, "status", None) == CUDA_ERROR_OUT_OF_MEMORY
    )


def local_memory_bytes(per_thread: int, device) -> int:
    """The local memory the driver reserves on ``device`` for ``per_thread`` bytes per thread:
    as much for every thread the device holds at once."""
    per_sm = device.attributes["MaxThreadsPerMultiProcessor"]
    return int(per_thread) * per_sm * device.attributes["MultiProcessorCount"]


def _densities(dm, vj, vk) -> tuple:
    """The kernels' last arguments: densities, J, K (null where not wanted) and their count."""
    n_dm = 0 if dm is None else int(dm.shape[0])
    return (
        _NULL if dm is None else dm,
        _NULL if vj is None else vj,
        _NULL if vk is None else vk,
        np.int32(n_dm),
    )


@lru_cache(maxsize=512)
def _function(path: Path, name: str):
    cp = require_cupy()
    return cp.RawModule(path=str(path)).get_function(name)


# Adds the integrals of a split quartet's other items into its first item's.
ADD_ITEMS = (
    OUTPUT_INDEX
    + r"""
extern "C" __global__ void frcg_add_items(const int n_sources, const int n_outputs,
    const long long* __restrict__ source, const long long* __restrict__ target,
    double* __restrict__ out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t >= (long long)n_sources * n_outputs) return;
    const long long i = t % n_sources, k = t / n_sources;
    atomicAdd(&out[FRCG_OUT(k, target[i], n_outputs)], out[FRCG_OUT(k, source[i], n_outputs)]);
}
"""
)


@lru_cache(maxsize=1)
def _add_items():
    return require_cupy().RawModule(code=ADD_ITEMS).get_function("frcg_add_items")


@lru_cache(maxsize=2)
def _jk_transform(form: str):
    cp = require_cupy()
    name = {"block": "frcg_jk_transform", "thread": "frcg_jk_quartet"}[form]
    return cp.RawModule(code=JK_TRANSFORM, options=("-std=c++17",)).get_function(name)


def kernel2_form(
    shape, form: str = "auto", generated: bool | None = None, tier: Tier = Tier.BUFFERED
) -> str:
    """How a class with integrals of ``shape`` in ``tier`` builds J and K: ``form`` unless
    "auto"; ``generated``: whether the Tier 2 binary holds a generated Kernel 2 (by default,
    whether the generator emits one for this size; Tier 1 binaries hold none)."""
    if form not in KERNEL2_FORMS:
        raise ValueError(f"unknown Kernel 2 form {form!r}; one of {', '.join(KERNEL2_FORMS)}")
    if form == "fused" and tier is not Tier.REGISTER:
        raise ValueError("only Tier 1 kernels fold J and K into their own epilogue")
    if form != "auto":
        return form
    n = int(np.prod(shape))
    if tier is Tier.REGISTER:
        if n <= FUSED_JK_MAX_OUTPUTS:
            return "fused"
        generated = False
    if generated is None:
        generated = n <= GENERATED_KERNEL2_MAX_OUTPUTS
    if generated:
        return "generated"
    return "thread" if n <= KERNEL2_THREAD_MAX_OUTPUTS else "block"


def launch_shape(kernel: LibraryKernel, n: int) -> tuple[int, int, int]:
    """Blocks, threads per block and dynamic shared memory of a launch of ``kernel`` over
    ``n`` items: a block per item in Tier 2's block form (its bank in shared memory where it
    has one), else an item per thread, in blocks the kernel fixes where its slots are in
    shared memory (one lane per thread)."""
    if kernel.item_threads > 1:
        smem = 8 * kernel.n_slots if kernel.bank_threads else 0
        return n, kernel.item_threads, smem
    if kernel.bank_threads:
        threads = kernel.bank_threads
        return -(-n // threads), threads, 8 * kernel.n_slots * threads
    return -(-n // THREADS), THREADS, 0


@dataclass
class DeviceBasis:
    xyz: object
    ao: object
    nao: int


@dataclass
class Launch:
    """A prepared launch over device arrays; calling it runs the kernel (for timing)."""

    fn: object
    grid: int
    threads: int
    shared_mem: int
    args: tuple
    out: object  # store epilogue: the items' integrals, tiled (``target.OUTPUT_TILE``)
    n_outputs: int
    order: np.ndarray  # launched item -> index into the caller's quartets
    quartet_items: np.ndarray | None = None  # caller's quartet -> item holding its integrals
    add_items: Callable[[], None] | None = None  # split quartets: items into the first one

    def __call__(self) -> None:
        self.fn((self.grid,), (self.threads,), self.args, shared_mem=self.shared_mem)
        if self.add_items is not None:
            self.add_items()

    def integrals(self) -> np.ndarray:
        """(n_quartets, n_outputs) on the host in the caller's order, after a call of a store
        launch whose items are summed per quartet (not ``whole=False``)."""
        if self.quartet_items is None:
            raise ValueError("a launch of split quartets has no integrals per quartet")
        items = untile_outputs(require_cupy().asnumpy(self.out), self.n_outputs)
        return np.ascontiguousarray(items[self.quartet_items])


class GpuExecutor:
    """Launches generated kernels. Quartets with more than ``max_work`` primitive quartets
    run as several items over chunks of their primitive pairs (``runtime.pairs``), whose
    integrals store launches add up and J/K launches add into J and K. With ``uniform_warps``
    (the default) the items run grouped by their primitive-pair counts, most work first
    (``PrimitivePairs.launch_order``): in the caller's order a warp of randomly mixed quartets
    runs as many loop trips as its longest quartet, several times the mean."""

    target = "cuda"

    def __init__(
        self,
        kernel_dir=None,
        arch: str | None = None,
        uniform_warps: bool = True,
        max_work: int | None = MAX_WORK,
    ) -> None:
        self.uniform_warps = uniform_warps
        self.max_work = max_work
        self.cp = require_cupy()
        if arch is None:
            arch = f"sm_{self.cp.cuda.Device().compute_capability}"  # CuPy gives "90" for 9.0
        if arch not in SUPPORTED_ARCHS:
            raise DeviceError(
                f"GPU architecture {arch} not supported; need one of {SUPPORTED_ARCHS}"
            )
        self.arch = arch
        self.kernel_dir = kernel_dir
        self._table = self.cp.asarray(boys_table())
        # the integral and slot arguments of a launch that has none (a J/K or gradient
        # epilogue, Tier 1's slots): one double, kept, where each launch allocated its own
        self._unused = self.cp.empty(1)
        self._bases: dict[int, DeviceBasis] = {}
        self._programs: dict[tuple, tuple] = {}
        self._qpair: dict[int, object] = {}  # per stream (``_item_pairs``)
        # free what the caller keeps cached on the device (its unused pool blocks): called
        # when CUDA refuses a launch or a stack limit for memory, before the one retry
        # (``_retried``)
        self.reclaimers: list[Callable[[], None]] = []

    def device_basis(self, basis: SegmentedBasis) -> DeviceBasis:
        key = id(basis)
        if key not in self._bases:
            a = self.cp.asarray
            self._bases[key] = DeviceBasis(a(basis.xyz), a(basis.ao), basis.nao)
        return self._bases[key]

    def kernel(
        self, cls: QuartetClass, variant: Variant, spherical: bool, epilogue=Epilogue.STORE,
        bank: str = "auto",
    ):  # fmt: skip
        return get_kernel(
            cls, variant, spherical, epilogue, "cuda", self.arch, self.kernel_dir, bank=bank
        )

    def prepare(self, kernel: LibraryKernel, quartets, basis: SegmentedBasis, scales=None,
                dm=None, vj=None, vk=None, whole: bool | None = None) -> Launch:  # fmt: skip
        """Device arrays and arguments for one launch over all of ``quartets``, as the items
        the executor runs (``Launch.order``): quartets of more than ``max_work`` primitive
        quartets run as several items unless ``whole``. By default a store launch then adds
        a split quartet's other items into its first one (a small kernel after the class's,
        part of the launch), so that it has integrals per quartet; with ``whole=False`` it
        leaves them apart, as J/K launches and Kernel 2 add items into J and K as they come."""
        cp = self.cp
        dev = self.device_basis(basis)
        quartets = np.asarray(quartets, dtype=np.int32).reshape(-1, 4)
        stored = kernel.epilogue is Epilogue.STORE
        pairs = primitive_pairs(
            basis, quartets, None if whole else self.max_work, kernel.pair_exponents
        )
        n = len(pairs.quartet)
        order = pairs.launch_order() if self.uniform_warps else np.arange(n)
        items = pairs.quartet[order]
        q = cp.asarray(np.ascontiguousarray(quartets[items]))
        scales = np.ones(len(quartets)) if scales is None else np.asarray(scales, dtype=float)
        sc = cp.asarray(np.ascontiguousarray(scales[items]))
        out, buf = self._buffers(kernel, n)
        grid, threads, smem = launch_shape(kernel, n)
        *prog, p2_len = _program(kernel)
        prog = [cp.asarray(a) for a in prog]
        dmd = cp.asarray(dm) if dm is not None else cp.zeros(1)
        vj = vj if vj is not None else cp.zeros(1)
        vk = vk if vk is not None else cp.zeros(1)
        fn = _function(kernel.binary, kernel.name)
        if smem > fn.max_dynamic_shared_size_bytes:
            fn.max_dynamic_shared_size_bytes = smem
        qpair = cp.asarray(np.ascontiguousarray(pairs.index[order]))
        args = (
            np.int32(n), q, sc, dev.xyz, qpair, dev.ao, cp.asarray(pairs.prim),
            cp.asarray(pairs.data), self._table, out, buf, np.int64(n), *prog, np.int32(p2_len),
            np.int32(dev.nao), dmd, vj, vk, np.int32(1),
        )  # fmt: skip
        quartet_items = add_items = None
        if stored and whole is not False:
            quartet_items, sources, targets = pairs.item_sums(order)
            if len(sources):
                add_items = self._item_adder(out, kernel.n_outputs, sources, targets)
        return Launch(fn, grid, threads, smem, args, out, kernel.n_outputs, items,
                      quartet_items, add_items)  # fmt: skip

    def _buffers(self, kernel: LibraryKernel, n: int) -> tuple:
        """The integral and global-slot buffers of a launch of ``kernel`` over ``n`` items: a
        J/K or gradient epilogue writes no integrals and a kernel without global slots uses
        none, so either gets the one kept dummy array instead."""
        cp = self.cp
        store = kernel.epilogue is Epilogue.STORE
        out = cp.empty(tiled_output_size(n, kernel.n_outputs)) if store else self._unused
        slots = kernel.global_slots * n
        return out, cp.empty(slots) if slots else self._unused

    def _item_pairs(self, n: int):
        """qpair for ``n`` items whose ranges are (bra, ket) pairs: item q reads 2q and 2q+1
        (a device array per stream, kept and grown, not made per launch; grown and freed only
        on the stream that reads it)."""
        stream = self.cp.cuda.get_current_stream().ptr
        qpair = self._qpair.get(stream)
        if qpair is None or qpair.shape[0] < 2 * n:
            qpair = self.cp.arange(max(4 * n, 1 << 20), dtype=self.cp.int32)
            self._qpair[stream] = qpair
        return qpair[: 2 * n]

    def load(self, kernel: LibraryKernel) -> None:
        """Loads ``kernel``'s module and copies its Tier 2 program to the device, waiting for
        the copy: a loaded kernel can then be launched from any stream."""
        _function(kernel.binary, kernel.name)
        self._device_program(kernel)

    def _device_program(self, kernel: LibraryKernel) -> tuple:
        key = (kernel.binary, kernel.name)
        if key not in self._programs:
            *prog, p2_len = _program(kernel)
            arrays = tuple(self.cp.asarray(a) for a in prog)
            self.cp.cuda.get_current_stream().synchronize()  # other streams will read them
            self._programs[key] = (*arrays, np.int32(p2_len))
        return self._programs[key]

    def run_items(
        self, kernel: LibraryKernel, batch: ItemBatch, basis: DeviceBasis, pair_data,
        dm=None, vj=None, vk=None, gradient: GradientTarget | None = None,
    ):  # fmt: skip
        """One launch of ``kernel`` over ``batch`` (device arrays): a store kernel returns its
        items' integrals (tiled, ``target.OUTPUT_TILE``); a J/K kernel adds the half J and K of
        the densities ``dm`` (n_dm, nao, nao) into ``vj`` and ``vk`` (same shape; either may be
        None) and returns None; a gradient kernel adds the energy gradient of the densities
        ``dm`` into ``gradient.out``. Asynchronous on the current stream."""
        n = batch.size
        store = kernel.epilogue is Epilogue.STORE
        out, buf = self._buffers(kernel, n)
        grid, threads, smem = launch_shape(kernel, n)
        fn = _function(kernel.binary, kernel.name)
        if smem > fn.max_dynamic_shared_size_bytes:
            fn.max_dynamic_shared_size_bytes = smem
        qpair = self._item_pairs(n)
        args = (
            np.int32(n), batch.quartets, batch.scales, basis.xyz, qpair, basis.ao, batch.ranges,
            pair_data, self._table, out, buf, np.int64(n), *self._device_program(kernel),
            np.int32(basis.nao), *_densities(dm, vj, vk),
        )  # fmt: skip
        if kernel.epilogue is Epilogue.GRAD:
            args += gradient.arguments(lambda a: a)
        self._launch(kernel, fn, grid, threads, args, smem)
        return out if store else None

    def reserve_local_memory(self, kernels) -> None:
        """Gives every thread the largest local memory of ``kernels`` now (the context's stack
        limit, which the driver reserves for all the threads the device holds at once and
        keeps): otherwise the first launch that needs more grows it, in the middle of a build
        whose buffers, or another engine's, may have taken the room. Loads the kernels."""
        need, name = max(
            ((_function(k.binary, k.name).local_size_bytes, k.name) for k in kernels),
            default=(0, ""),
        )
        runtime = self.cp.cuda.runtime
        if need <= runtime.deviceGetLimit(CUDA_LIMIT_STACK_SIZE):
            return
        self._retried(
            name, lambda: need, lambda: runtime.deviceSetLimit(CUDA_LIMIT_STACK_SIZE, int(need))
        )

    def _launch(self, kernel: LibraryKernel, fn, grid: int, threads: int, args, smem: int):
        """Launches ``fn``; a launch refused for memory is retried (``_retried``)."""
        self._retried(
            kernel.name,
            lambda: fn.local_size_bytes,
            lambda: fn((grid,), (threads,), args, shared_mem=smem),
        )

    def _retried(self, name: str, local_bytes: Callable[[], int], call: Callable[[], None]) -> None:
        """Runs ``call``; where CUDA refuses it for memory (the local memory of kernel ``name``,
        ``local_bytes()`` per thread, does not fit beside what the device holds), frees the
        cached blocks of CuPy's pool and of ``reclaimers`` and tries once more, then raises a
        ``DeviceError`` with the sizes."""
        try:
            call()
            return
        except Exception as exc:
            if not launch_out_of_memory(exc):
                raise
        self.cp.cuda.Device().synchronize()  # the blocks' last readers on every stream
        for reclaim in self.reclaimers:
            reclaim()
        self.cp.get_default_memory_pool().free_all_blocks()
        try:
            call()
        except Exception as exc:
            if not launch_out_of_memory(exc):
                raise
            device, per_thread = self.cp.cuda.Device(), local_bytes()
            need = local_memory_bytes(per_thread, device)
            free = device.mem_info[0]
            raise DeviceError(
                f"the GPU has no room for the local memory of {name}: {per_thread} bytes per "
                f"thread, {need / 2**30:.1f} GiB over the device's resident threads, with "
                f"{free / 2**30:.1f} GiB free after the cached blocks were given back. Free "
                "device memory held elsewhere in the process, or run the molecule on a GPU "
                "with more memory"
            ) from exc

    def contract_items(
        self, kernel: LibraryKernel, batch: ItemBatch, ints, basis: DeviceBasis, dm, vj, vk,
        form: str = "auto",
    ) -> None:  # fmt: skip
        """Kernel 2 over the integrals ``ints`` that ``run_items`` stored for ``batch``: adds
        their half J and K into ``vj`` and ``vk`` (either may be None) for the densities ``dm``."""
        shape = kernel.output_shape
        form = kernel2_form(shape, form, kernel.jk_kernel is not None, Tier.BUFFERED)
        n = batch.size
        head = (np.int32(n), batch.quartets, batch.scales, basis.ao, ints)
        tail = (np.int32(basis.nao), *_densities(dm, vj, vk))
        grid = ((n + THREADS - 1) // THREADS,)
        if form == "generated":
            _function(kernel.binary, kernel.jk_kernel)(grid, (THREADS,), head + tail)
            return
        kernel2 = _jk_transform(form)
        args = head + tuple(np.int32(x) for x in shape) + tail
        if form == "thread":
            kernel2(grid, (THREADS,), args)
            return
        smem = 8 * (int(np.prod(shape)) + 6 * max(shape) ** 2)
        if smem > kernel2.max_dynamic_shared_size_bytes:
            kernel2.max_dynamic_shared_size_bytes = smem
        kernel2((n,), (JK_THREADS,), args, shared_mem=smem)

    def _item_adder(self, out, n_outputs: int, sources, targets) -> Callable[[], None]:
        cp = self.cp
        fn = _add_items()
        source, target = (cp.asarray(x, dtype=np.int64) for x in (sources, targets))
        args = (np.int32(len(sources)), np.int32(n_outputs), source, target, out)
        grid = (len(sources) * n_outputs + THREADS - 1) // THREADS
        return lambda: fn((grid,), (THREADS,), args)

    def integrals(self, kernel: LibraryKernel, quartets, basis: SegmentedBasis) -> np.ndarray:
        out = np.empty((len(quartets), kernel.n_outputs))
        n_slots = kernel.global_slots + kernel.n_outputs
        for lo, hi in _quartet_batches(basis, quartets, self.max_work, n_slots):
            launch = self.prepare(kernel, quartets[lo:hi], basis)
            launch()
            out[lo:hi] = launch.integrals()
        return out

    def contraction(self, kernel: LibraryKernel, launch: Launch, dm, vj, vk, form="auto"):
        """Kernel 2 of ``kernel`` over the integrals of ``launch`` (call after it), in ``form``
        (``kernel2_form``)."""
        shape = kernel.output_shape
        form = kernel2_form(shape, form, generated=kernel.jk_kernel is not None)
        n = int(launch.args[0])
        quartets, scales, seg_ao = launch.args[1], launch.args[2], launch.args[5]
        head = (np.int32(n), quartets, scales, seg_ao, launch.out)
        tail = (np.int32(vj.shape[0]), dm, vj, vk, np.int32(1))
        grid = ((n + THREADS - 1) // THREADS,)
        if form == "generated":
            if kernel.jk_kernel is None:
                raise DeviceError(f"{kernel.name} has no generated Kernel 2")
            fn = _function(kernel.binary, kernel.jk_kernel)
            return lambda: fn(grid, (THREADS,), head + tail)
        kernel2 = _jk_transform(form)
        args = head + tuple(np.int32(x) for x in shape) + tail
        if form == "thread":
            return lambda: kernel2(grid, (THREADS,), args)
        smem = 8 * (int(np.prod(shape)) + 6 * max(shape) ** 2)
        if smem > kernel2.max_dynamic_shared_size_bytes:
            kernel2.max_dynamic_shared_size_bytes = smem
        return lambda: kernel2((n,), (JK_THREADS,), args, shared_mem=smem)

    def jk_launches(
        self, cls, variant, spherical, quartets, scales, basis: SegmentedBasis, dm, vj, vk,
        form: str = "auto", bank: str = "auto",
    ) -> tuple[LibraryKernel, str, Iterator[Callable[[], None]]]:  # fmt: skip
        """The kernel that evaluates the integrals, the J/K form (``kernel2_form``) and the
        batches, each prepared when reached (a batch's integral buffer lives until the next
        one), that add the quartets' half J and K into the device arrays ``vj`` and ``vk``."""
        kernel = self.kernel(cls, variant, spherical, Epilogue.JK, bank)
        form = kernel2_form(kernel.output_shape, form, kernel.jk_kernel is not None, kernel.tier)
        if form == "fused":
            return kernel, form, iter([self.prepare(kernel, quartets, basis, scales, dm, vj, vk)])
        if kernel.tier is Tier.REGISTER:
            kernel = self.kernel(cls, variant, spherical, Epilogue.STORE, bank)

        def batches() -> Iterator[Callable[[], None]]:
            n_slots = kernel.global_slots + kernel.n_outputs
            for lo, hi in _quartet_batches(basis, quartets, self.max_work, n_slots):
                launch = self.prepare(kernel, quartets[lo:hi], basis, scales[lo:hi], whole=False)
                contract = self.contraction(kernel, launch, dm, vj, vk, form)

                def run(launch=launch, contract=contract) -> None:
                    launch()
                    contract()

                yield run

        return kernel, form, batches()

    def jk(self, cls, variant, spherical, quartets, scales, basis: SegmentedBasis, dm):
        cp = self.cp
        nao = basis.nao
        vj = cp.zeros((nao, nao))
        vk = cp.zeros((nao, nao))
        dmd = cp.asarray(np.ascontiguousarray(dm, dtype=float))
        _, _, runs = self.jk_launches(cls, variant, spherical, quartets, scales, basis, dmd, vj, vk)
        for run in runs:
            run()
        return cp.asnumpy(vj), cp.asnumpy(vk)
