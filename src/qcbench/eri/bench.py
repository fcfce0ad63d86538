"""GPU measurements of the generated kernels: throughput, FP64 rate, tiers and ablations.

Timing follows the project's rules: a warm-up launch (module load, first-touch), then the
median of several launches timed with CUDA events; every number carries the FLOP count of the
graph, so the achieved FP64 rate can be set against a peak measured in the same process.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from fusionrcg.angmom import QuartetClass
from fusionrcg.lowering.target import Epilogue
from fusionrcg.options import KernelOptions, kernel_options
from fusionrcg.orchestration.plan import Flops
from fusionrcg.runtime.basis import SegmentedBasis

TARGET_FLOPS_PER_LAUNCH = 4e11  # about 20-40 ms of FP64 work per launch
MAX_QUARTETS = 1 << 20
MIN_QUARTETS = 2048

FMA_PEAK_KERNEL = r"""
extern "C" __global__ void fma_peak(double* out, const int iters) {
    double a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3;
    double a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
    const double b = 0.999999, c = 1e-7;
    for (int i = 0; i < iters; ++i) {
        a0 = fma(a0, b, c); a1 = fma(a1, b, c); a2 = fma(a2, b, c); a3 = fma(a3, b, c);
        a4 = fma(a4, b, c); a5 = fma(a5, b, c); a6 = fma(a6, b, c); a7 = fma(a7, b, c);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
"""


@dataclass(frozen=True)
class Measurement:
    cls: str
    total: int
    variant: str
    tier: int
    epilogue: str
    basis: str
    n_quartets: int
    seconds_median: float
    seconds_min: float
    quartets_per_second: float
    flops: float
    flop_rate: float
    fraction_of_peak: float
    mean_primitive_quartets: float
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_bytes: int
    ptxas_level: int  # ptxas optimization level of the kernel (3 unless a compile fallback)
    slots_per_quartet: int
    bank: str  # where a Tier 2 slot bank is: "shared", "global" ("" for Tier 1)
    kernel2: str  # J/K epilogue: "fused" (Tier 1) or the Kernel 2 form; store epilogue: ""
    quartet_order: str  # "primitive": warps grouped by primitive counts; "given": as sampled
    max_work: int  # primitive quartets per work item at most (``runtime.pairs``); 0: no split
    options: dict  # the kernel's options (``KernelOptions.to_json``)

    def row(self) -> dict:
        return asdict(self)


def event_median(cp, run, repeats: int = 5) -> tuple[float, float]:
    """Median and minimum seconds of ``run()`` over ``repeats`` launches, after a warm-up."""
    run()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times)), float(min(times))


def fp64_peak(cp) -> float:
    """FP64 FLOP/s of independent FMA chains on the CUDA cores, measured here."""
    fn = cp.RawModule(code=FMA_PEAK_KERNEL).get_function("fma_peak")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks, threads, iters = sms * 16, 256, 4096
    out = cp.empty(blocks * threads)
    seconds, _ = event_median(cp, lambda: fn((blocks,), (threads,), (out, np.int32(iters))))
    return 2.0 * 8 * iters * blocks * threads / seconds


def sample_quartets(basis: SegmentedBasis, cls: QuartetClass, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cols = []
    for l in cls.ls:
        pool = basis.segments_with_l(l)
        if pool.size == 0:
            raise ValueError(f"the basis has no l = {l} shells for {cls}")
        cols.append(rng.choice(pool, size=n))
    return np.stack(cols, axis=1).astype(np.int32)


def quartet_flops(f: Flops, basis: SegmentedBasis, quartets: np.ndarray) -> tuple[float, float]:
    """Total graph FLOPs of the quartets and their mean primitive-quartet count."""
    nprim = np.prod(basis.prim[quartets, 1].astype(float), axis=1)
    total = nprim.sum() * (f.vrr_per_primitive + f.accumulate_per_primitive)
    return float(total + len(quartets) * f.hrr_per_contracted), float(nprim.mean())


def measure(
    executor,
    cls: QuartetClass,
    variant: str | KernelOptions,
    basis: SegmentedBasis,
    basis_name: str,
    epilogue: Epilogue,
    peak: float,
    seed: int = 0,
    dm=None,
    bank: str = "auto",
    kernel2: str = "auto",
) -> Measurement:
    """One timed launch series of ``cls`` under ``variant`` (a preset name or kernel options)."""
    cp = executor.cp
    options = kernel_options(variant)
    kernel = executor.kernel(cls, options, basis.spherical, epilogue, bank)
    nprim = [int(basis.prim[basis.segments_with_l(l), 1].mean()) for l in cls.ls]
    per_quartet = kernel.flops.per_contracted_quartet(max(1, int(np.prod(nprim))))
    n = int(np.clip(TARGET_FLOPS_PER_LAUNCH / max(per_quartet, 1), MIN_QUARTETS, MAX_QUARTETS))
    if kernel.global_slots:  # the global slot buffer stays under 4 GiB
        n = min(n, max(256, (4 << 30) // (8 * kernel.global_slots)))
    quartets = sample_quartets(basis, cls, n, seed)
    flops, mean_prims = quartet_flops(kernel.flops, basis, quartets)
    form = ""
    if epilogue is Epilogue.JK:
        nao = basis.nao
        vj, vk = cp.zeros((nao, nao)), cp.zeros((nao, nao))
        kernel, form, batches = executor.jk_launches(
            cls, options, basis.spherical, quartets, np.full(n, 0.125), basis, dm,
            vj, vk, kernel2, bank,
        )  # fmt: skip
        runs = list(batches)

        def run() -> None:
            for r in runs:
                r()
    else:
        run = executor.prepare(kernel, quartets, basis)
    seconds, fastest = event_median(cp, run)
    r = kernel.report
    return Measurement(
        cls=str(cls), total=cls.total, variant=options.variant.name, tier=int(kernel.tier),
        epilogue=epilogue.value, basis=basis_name, n_quartets=n, seconds_median=seconds,
        seconds_min=fastest, quartets_per_second=n / seconds, flops=flops,
        flop_rate=flops / seconds, fraction_of_peak=flops / seconds / peak,
        mean_primitive_quartets=mean_prims, registers=r.registers,
        spill_store_bytes=r.spill_store_bytes, spill_load_bytes=r.spill_load_bytes,
        stack_bytes=r.stack_bytes, ptxas_level=r.ptxas_level, slots_per_quartet=kernel.n_slots,
        bank=kernel.slot_bank or "",
        kernel2=form, quartet_order="primitive" if executor.uniform_warps else "given",
        max_work=executor.max_work or 0, options=kernel.options.to_json(),
    )  # fmt: skip
