"""GPU executor: generated cubins launched through CuPy, plus Kernel 2 (the J/K contraction of
stored integrals) in three forms: the class's own generated kernel in the Tier 2 binary, one
thread per quartet with the integral loop unrolled at compile time (``generated``, small
classes); one thread block per quartet staging its integrals and density tiles in shared memory
(``block``, larger classes); or one thread per quartet looping over the integrals at run time
(``thread``, where a binary has no generated kernel). Tier 1 folds its integrals into J and K
in its own epilogue (``fused``) up to ``TIER1_FUSED_JK_MAX_OUTPUTS`` integrals; larger Tier 1
classes store them and run Kernel 2 as Tier 2 does."""

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
from ..lowering.kernel import GENERATED_KERNEL2_MAX_OUTPUTS
from ..lowering.target import (
    Epilogue,
    tiled_output_index,
    tiled_output_size,
    untile_outputs,
)
from ..variants import Tier, Variant
from .basis import SegmentedBasis
from .launch import _program, _quartet_batches
from .pairs import primitive_pairs

THREADS = 128
JK_THREADS = 64
# The generated Kernel 2 runs where the binary has one (lowering.kernel's
# GENERATED_KERNEL2_MAX_OUTPUTS); otherwise the thread form runs classes with at most this many
# integrals (few enough that one thread's atomic updates cost less than a block's staging),
# and the block form above
KERNEL2_THREAD_MAX_OUTPUTS = 40
# Tier 1's fused J/K epilogue makes six atomic updates per integral; Kernel 2's block form
# makes one per element of the six J/K blocks a quartet touches. With warps of uniform
# primitive counts the atomic updates bound the fused epilogue of the larger classes, so above
# this size they store their integrals and run Kernel 2.
TIER1_FUSED_JK_MAX_OUTPUTS = 63
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
extern "C" __global__ void frcg_jk_transform(
    const int n, const int* __restrict__ quartets, const double* __restrict__ qscale,
    const int* __restrict__ seg_ao, const double* __restrict__ ints,
    const int na, const int nb, const int nc, const int nd, const int nao,
    const double* __restrict__ dm, double* __restrict__ vj, double* __restrict__ vk)
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
#define D(i, j) dm[(size_t)(i) * nao + (j)]
    const double s = qscale[q];
    for (int x = threadIdx.x; x < nout; x += blockDim.x) I[x] = s * ints[FRCG_OUT(x, q, nout)];
    for (int x = threadIdx.x; x < na * nb; x += blockDim.x) {
        const int a = x / nb, b = x % nb;
        Dab[x] = D(oa + a, ob + b) + D(ob + b, oa + a);
    }
    for (int x = threadIdx.x; x < nc * nd; x += blockDim.x) {
        const int c = x / nd, d = x % nd;
        Dcd[x] = D(oc + c, od + d) + D(od + d, oc + c);
    }
    for (int x = threadIdx.x; x < nb * nd; x += blockDim.x) Dbd[x] = D(ob + x / nd, od + x % nd);
    for (int x = threadIdx.x; x < na * nd; x += blockDim.x) Dad[x] = D(oa + x / nd, od + x % nd);
    for (int x = threadIdx.x; x < nb * nc; x += blockDim.x) Dbc[x] = D(ob + x / nc, oc + x % nc);
    for (int x = threadIdx.x; x < na * nc; x += blockDim.x) Dac[x] = D(oa + x / nc, oc + x % nc);
    __syncthreads();
#define IDX(a, b, c, d) ((((a) * nb + (b)) * nc + (c)) * nd + (d))
    for (int x = threadIdx.x; x < na * nb; x += blockDim.x) {
        const int a = x / nb, b = x % nb;
        double j = 0.0;
        for (int c = 0; c < nc; ++c)
            for (int d = 0; d < nd; ++d) j += I[IDX(a, b, c, d)] * Dcd[c * nd + d];
        atomicAdd(&vj[(size_t)(oa + a) * nao + ob + b], j);
    }
    for (int x = threadIdx.x; x < nc * nd; x += blockDim.x) {
        const int c = x / nd, d = x % nd;
        double j = 0.0;
        for (int a = 0; a < na; ++a)
            for (int b = 0; b < nb; ++b) j += I[IDX(a, b, c, d)] * Dab[a * nb + b];
        atomicAdd(&vj[(size_t)(oc + c) * nao + od + d], j);
    }
    for (int x = threadIdx.x; x < na * nc; x += blockDim.x) {
        const int a = x / nc, c = x % nc;
        double k = 0.0;
        for (int b = 0; b < nb; ++b)
            for (int d = 0; d < nd; ++d) k += I[IDX(a, b, c, d)] * Dbd[b * nd + d];
        atomicAdd(&vk[(size_t)(oa + a) * nao + oc + c], k);
    }
    for (int x = threadIdx.x; x < nb * nc; x += blockDim.x) {
        const int b = x / nc, c = x % nc;
        double k = 0.0;
        for (int a = 0; a < na; ++a)
            for (int d = 0; d < nd; ++d) k += I[IDX(a, b, c, d)] * Dad[a * nd + d];
        atomicAdd(&vk[(size_t)(ob + b) * nao + oc + c], k);
    }
    for (int x = threadIdx.x; x < na * nd; x += blockDim.x) {
        const int a = x / nd, d = x % nd;
        double k = 0.0;
        for (int b = 0; b < nb; ++b)
            for (int c = 0; c < nc; ++c) k += I[IDX(a, b, c, d)] * Dbc[b * nc + c];
        atomicAdd(&vk[(size_t)(oa + a) * nao + od + d], k);
    }
    for (int x = threadIdx.x; x < nb * nd; x += blockDim.x) {
        const int b = x / nd, d = x % nd;
        double k = 0.0;
        for (int a = 0; a < na; ++a)
            for (int c = 0; c < nc; ++c) k += I[IDX(a, b, c, d)] * Dac[a * nc + c];
        atomicAdd(&vk[(size_t)(ob + b) * nao + od + d], k);
    }
}

extern "C" __global__ void frcg_jk_quartet(
    const int n, const int* __restrict__ quartets, const double* __restrict__ qscale,
    const int* __restrict__ seg_ao, const double* __restrict__ ints,
    const int na, const int nb, const int nc, const int nd, const int nao,
    const double* __restrict__ dm, double* __restrict__ vj, double* __restrict__ vk)
{
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n) return;
    const int oa = seg_ao[quartets[4 * q]], ob = seg_ao[quartets[4 * q + 1]];
    const int oc = seg_ao[quartets[4 * q + 2]], od = seg_ao[quartets[4 * q + 3]];
    const double s = qscale[q];
    const int nout = na * nb * nc * nd;
    int x = 0;  // integral x of quartet q, consecutive threads coalesced
    for (int a = 0; a < na; ++a)
        for (int b = 0; b < nb; ++b) {
            const double dab = D(oa + a, ob + b) + D(ob + b, oa + a);
            double jab = 0.0;
            for (int c = 0; c < nc; ++c)
                for (int d = 0; d < nd; ++d, ++x) {
                    const double v = s * ints[FRCG_OUT(x, q, nout)];
                    jab += v * (D(oc + c, od + d) + D(od + d, oc + c));
                    atomicAdd(&vj[(size_t)(oc + c) * nao + od + d], v * dab);
                    atomicAdd(&vk[(size_t)(oa + a) * nao + oc + c], v * D(ob + b, od + d));
                    atomicAdd(&vk[(size_t)(ob + b) * nao + oc + c], v * D(oa + a, od + d));
                    atomicAdd(&vk[(size_t)(oa + a) * nao + od + d], v * D(ob + b, oc + c));
                    atomicAdd(&vk[(size_t)(ob + b) * nao + od + d], v * D(oa + a, oc + c));
                }
            atomicAdd(&vj[(size_t)(oa + a) * nao + ob + b], jab);
        }
}
"""
)


def _cupy():
    try:
        import cupy
    except ImportError as exc:
        raise DeviceError(f"the GPU backend needs CuPy ({exc})") from None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise DeviceError("the GPU backend needs a CUDA GPU; none is visible")
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise DeviceError(f"the GPU backend needs a CUDA GPU: {exc}") from None
    return cupy


@lru_cache(maxsize=512)
def _function(path: Path, name: str):
    cp = _cupy()
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
    return _cupy().RawModule(code=ADD_ITEMS).get_function("frcg_add_items")


@lru_cache(maxsize=2)
def _jk_transform(form: str):
    cp = _cupy()
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
        if n <= TIER1_FUSED_JK_MAX_OUTPUTS:
            return "fused"
        generated = False
    if generated is None:
        generated = n <= GENERATED_KERNEL2_MAX_OUTPUTS
    if generated:
        return "generated"
    return "thread" if n <= KERNEL2_THREAD_MAX_OUTPUTS else "block"


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
        items = untile_outputs(_cupy().asnumpy(self.out), self.n_outputs)
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
        self.cp = _cupy()
        if arch is None:
            arch = f"sm_{self.cp.cuda.Device().compute_capability}"  # CuPy gives "90" for 9.0
        if arch not in SUPPORTED_ARCHS:
            raise DeviceError(
                f"GPU architecture {arch} not supported; need one of {SUPPORTED_ARCHS}"
            )
        self.arch = arch
        self.kernel_dir = kernel_dir
        self._table = self.cp.asarray(boys_table())
        self._bases: dict[int, DeviceBasis] = {}

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
        pairs = primitive_pairs(basis, quartets, None if whole else self.max_work)
        n = len(pairs.quartet)
        order = pairs.launch_order() if self.uniform_warps else np.arange(n)
        items = pairs.quartet[order]
        q = cp.asarray(np.ascontiguousarray(quartets[items]))
        scales = np.ones(len(quartets)) if scales is None else np.asarray(scales, dtype=float)
        sc = cp.asarray(np.ascontiguousarray(scales[items]))
        # a J/K epilogue writes no integrals: no buffer for them
        out = cp.empty(tiled_output_size(n, kernel.n_outputs) if stored else 1)
        threads, smem = THREADS, 0
        if kernel.bank_threads:  # the kernel fixes its block (its slots are in shared memory)
            threads, smem = kernel.bank_threads, 8 * kernel.n_slots * kernel.bank_threads
        buf = cp.empty(max(1, kernel.global_slots * n))
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
            np.int32(dev.nao), dmd, vj, vk,
        )  # fmt: skip
        grid = (n + threads - 1) // threads
        quartet_items = add_items = None
        if stored and whole is not False:
            quartet_items, sources, targets = pairs.item_sums(order)
            if len(sources):
                add_items = self._item_adder(out, kernel.n_outputs, sources, targets)
        return Launch(fn, grid, threads, smem, args, out, kernel.n_outputs, items,
                      quartet_items, add_items)  # fmt: skip

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
        tail = (np.int32(vj.shape[0]), dm, vj, vk)
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
