"""The kernels a J/K build runs for each canonical class, and building them ahead of time.

Every class has a store kernel: it evaluates the Schwarz bounds of the diagonal classes and, for
Tier 2 and for Tier 1 classes with more integrals than the fused threshold
(``lowering.kernel.FUSED_JK_MAX_OUTPUTS`` by default), the integrals that Kernel 2 contracts
into J and K. Tier 1 classes up to that size contract J and K in their own epilogue (the fused
kernel): the quartet's integrals stay in registers and each element of the six J/K blocks it
touches gets one atomic update, with no integrals stored and read again; above that size
holding them would spill.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from ..angmom import QuartetClass, canonical_classes
from ..library.store import LibraryKernel, get_kernel
from ..lowering.kernel import FUSED_JK_MAX_OUTPUTS
from ..lowering.target import Epilogue
from ..options import KernelOptions, kernel_options
from ..variants import Tier
from .deriv import DERIV_POSITIONS

FIRST_FORM_MIN_TOTAL = 7
"""From this total on, every Tier 1 form of a class spills: the J/K engine builds the first
form instead of compiling each to keep the one with the fewest spill bytes."""


BLOCK_THREADS = 256
"""Threads per work item of the block form of Tier 2 (``lowering.block``): its levels hold
tens to tens of thousands of statements each."""

DERIV_BLOCK_MIN_TOTAL = 6
DERIV_BLOCK_MIN_L = 3
"""By default, a first-derivative class from total ``DERIV_BLOCK_MIN_TOTAL`` on that holds an
f or g shell (l >= ``DERIV_BLOCK_MIN_L``) runs in Tier 2's block form only, at any launch
size. Its graph reaches one unit of l more on the differentiated centre and holds three
gradient components: its straight-line forms (Tier 1 and Tier 2 alike) run at 255 registers
with kilobytes of spills per thread, and ptxas takes from ten minutes ((dd|dd)) to hours per
position over them, where the block form (``lowering.block``) interprets its level program
without spills and compiles in seconds up to (gg|gg). The d classes of total 6 to 8 keep their
straight-line forms: despite their spills they ran 2-6x faster than the block form in the
cc-pVDZ gradient benchmark (their many items fill the GPU one per thread)."""


@dataclass(frozen=True)
class ClassKernels:
    """The kernels of one canonical class: ``store`` always, ``fused`` where J/K is folded
    into the integral kernel (else Kernel 2 contracts the stored integrals), ``block`` the
    block form of a Tier 2 class's store kernel where asked for (launches of few items)."""

    cls: QuartetClass
    store: LibraryKernel
    fused: LibraryKernel | None
    block: LibraryKernel | None = None

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return self.store.output_shape


def uses_fused(store: LibraryKernel, max_outputs: int = FUSED_JK_MAX_OUTPUTS) -> bool:
    """Whether the class of ``store`` contracts J and K in its own epilogue: Tier 1 with at
    most ``max_outputs`` integrals."""
    return store.tier is Tier.REGISTER and store.n_outputs <= max_outputs


def _library_options(cls: QuartetClass, options: KernelOptions) -> KernelOptions:
    """``options`` as the J/K engine asks the library for ``cls``: the first Tier 1 form from
    ``FIRST_FORM_MIN_TOTAL`` on."""
    if cls.total >= FIRST_FORM_MIN_TOTAL:
        return options.replace(spill_fallbacks=False)
    return options


def class_kernels(
    cls: QuartetClass,
    options: KernelOptions,
    spherical: bool,
    target: str,
    arch: str,
    directory=None,
    block_threads: int = 0,
    fused_max_outputs: int = FUSED_JK_MAX_OUTPUTS,
) -> ClassKernels:
    """The kernels of ``cls`` from the library (built on first use); with ``block_threads``
    also the block form of a Tier 2 class, that many threads per item; the fused J/K kernel
    where the class is Tier 1 with at most ``fused_max_outputs`` integrals."""
    options = _library_options(cls, options)
    store = get_kernel(cls, options, spherical, Epilogue.STORE, target, arch, directory)
    fused = block = None
    if uses_fused(store, fused_max_outputs):
        fused = get_kernel(cls, options, spherical, Epilogue.JK, target, arch, directory)
    if block_threads and store.tier is Tier.BUFFERED:
        block = get_kernel(
            cls, options.replace(item_threads=block_threads), spherical, Epilogue.STORE,
            target, arch, directory,
        )  # fmt: skip
    return ClassKernels(cls, store, fused, block)


def block_only(
    cls: QuartetClass, options: KernelOptions, block_min_total: int | None = None
) -> bool:
    """Whether the first-derivative classes of ``cls`` run in the block form only: with
    ``block_min_total`` None the default rule (``DERIV_BLOCK_MIN_TOTAL``, ``DERIV_BLOCK_MIN_L``),
    else every class from that total on; never where the variant forces Tier 1."""
    if options.variant.forced_tier is Tier.REGISTER:
        return False
    if block_min_total is None:
        return cls.total >= DERIV_BLOCK_MIN_TOTAL and max(cls.ls) >= DERIV_BLOCK_MIN_L
    return cls.total >= block_min_total


def _block_options(options: KernelOptions, threads: int = BLOCK_THREADS) -> KernelOptions:
    """``options`` with Tier 2 forced (where the variant leaves the tier to the model) and
    ``threads`` threads per work item: the block form of any class."""
    if options.variant.forced_tier is None:
        options = options.replace(
            variant=dataclasses.replace(options.variant, forced_tier=Tier.BUFFERED)
        )
    return options.replace(item_threads=threads)


def deriv_options(
    cls: QuartetClass, options: KernelOptions, block_min_total: int | None = None
) -> KernelOptions:
    """The options the J/K engine asks the library for the first-derivative classes of
    ``cls`` under ``options``: the block form's where ``block_only`` says so, else the
    straight-line forms' (``_library_options``)."""
    options = _library_options(cls, options)
    return _block_options(options) if block_only(cls, options, block_min_total) else options


def deriv_kernel(
    cls: QuartetClass,
    position: int,
    options: KernelOptions,
    spherical: bool,
    target: str,
    arch: str,
    directory=None,
    epilogue: Epilogue = Epilogue.STORE,
    block_min_total: int | None = None,
) -> LibraryKernel:
    """The kernel of the first-derivative class of ``cls`` on ``position`` (0, 1, 2: A, B, C)
    from the library (built on first use): its store kernel, or with ``Epilogue.GRAD`` the
    fused gradient kernel where the class is Tier 1 (a Tier 2 class then answers with its
    store kernel); the block form where ``block_only`` says so."""
    options = deriv_options(cls, options, block_min_total)
    if options.item_threads > 1:  # the block form stores its integrals (Tier 2)
        epilogue = Epilogue.STORE
    return get_kernel(
        cls.with_deriv(position), options, spherical, epilogue, target, arch, directory
    )


def deriv_kernels(
    cls: QuartetClass,
    options: KernelOptions,
    spherical: bool,
    target: str,
    arch: str,
    directory=None,
    epilogue: Epilogue = Epilogue.STORE,
    block_min_total: int | None = None,
) -> tuple[LibraryKernel, ...]:
    """``deriv_kernel`` of ``cls`` on each of its positions A, B and C
    (``deriv.DERIV_POSITIONS``)."""
    return tuple(
        deriv_kernel(cls, p, options, spherical, target, arch, directory, epilogue, block_min_total)
        for p in DERIV_POSITIONS
    )


def deriv_block_kernels(
    cls: QuartetClass,
    options: KernelOptions,
    spherical: bool,
    target: str,
    arch: str,
    directory=None,
    threads: int = BLOCK_THREADS,
    block_min_total: int | None = None,
) -> tuple[LibraryKernel | None, ...]:
    """The block forms (``threads`` per item) of the first-derivative classes of ``cls`` on
    positions A, B and C where the class is Tier 2 and ``deriv_kernels`` gives its
    straight-line form (None where it is Tier 1 or block-only)."""
    stores = deriv_kernels(
        cls, options, spherical, target, arch, directory, block_min_total=block_min_total
    )
    options = _library_options(cls, options).replace(item_threads=threads)
    return tuple(
        None
        if store.tier is not Tier.BUFFERED or store.options.item_threads > 1
        else get_kernel(
            cls.with_deriv(p), options, spherical, Epilogue.STORE, target, arch, directory
        )  # fmt: skip
        for p, store in zip(DERIV_POSITIONS, stores)
    )


def _build(
    cls_tag: str, deriv: bool, options: str, spherical: bool, target: str, arch: str, directory,
    omega: float,
):  # fmt: skip
    """A class's kernels (``deriv``: its first-derivative kernels; those of its positions were
    built by ``_build_position`` first, and what is left are the block forms): (tag, deriv,
    whether all came out of the library, seconds)."""
    start = time.perf_counter()
    cls = QuartetClass(*(int(c) for c in cls_tag))
    args = (cls, kernel_options(options).replace(omega=omega), spherical, target, arch, directory)
    if deriv:
        built = list(deriv_kernels(*args)) + list(deriv_kernels(*args, Epilogue.GRAD))
        built += [k for k in deriv_block_kernels(*args) if k is not None]
    else:
        kernels = class_kernels(*args, block_threads=BLOCK_THREADS)
        built = [k for k in (kernels.store, kernels.fused, kernels.block) if k is not None]
    return cls_tag, deriv, all(k.cached for k in built), time.perf_counter() - start


def _build_position(
    cls_tag: str, position: int, epilogue: Epilogue, options: str, spherical: bool, target: str,
    arch: str, directory, omega: float,
):  # fmt: skip
    """One derivative position's kernel of a class (``deriv_kernel``): (tag, whether it came
    out of the library, seconds)."""
    start = time.perf_counter()
    cls = QuartetClass(*(int(c) for c in cls_tag))
    kernel = deriv_kernel(
        cls, position, kernel_options(options).replace(omega=omega), spherical, target, arch,
        directory, epilogue,
    )  # fmt: skip
    return cls_tag, kernel.cached, time.perf_counter() - start


POSITION_JOBS = tuple((p, e) for p in DERIV_POSITIONS for e in (Epilogue.STORE, Epilogue.GRAD))
"""The separate jobs of a derivative class in ``prebuild``: each position's store and gradient
kernels (the straight-line forms of a Tier 1 class take ptxas minutes each)."""

HEAVY_PTXAS_BYTES = 20 * 2**30
"""Host memory one heavy kernel build may take (``heavy_build``): ptxas peaked at 18.6 GB
resident over the straight-line (dd|dd) gradient kernel of position A; ``prebuild`` runs no
more of them at once than the available memory holds."""


def heavy_build(cls: QuartetClass, options: KernelOptions) -> bool:
    """Whether the first-derivative kernels of ``cls`` are heavy builds: straight-line forms
    (not ``block_only``) from total ``DERIV_BLOCK_MIN_TOTAL`` on, which run at 255 registers
    with spills and take ptxas minutes and gigabytes each."""
    return cls.total >= DERIV_BLOCK_MIN_TOTAL and not block_only(cls, options)


def available_memory() -> int:
    """The host memory available to new processes (``MemAvailable``; free pages where
    ``/proc/meminfo`` is not there)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def prebuild(
    lmax: int,
    spherical: bool = True,
    options: str = "full",
    target: str = "cuda",
    arch: str = "sm_90",
    directory=None,
    jobs: int = 1,
    out=None,
    deriv_lmax: int | None = None,
    omega: float = 0.0,
    memory: int | None = None,
) -> None:
    """Build the J/K kernels of every canonical class with l <= ``lmax`` under ``options`` (a
    preset name; Tier 2 classes in both forms, ``ClassKernels``) and, with ``deriv_lmax``,
    the first-derivative kernels (gradients) of every class with l <= ``deriv_lmax``;
    ``omega`` > 0: the kernels of the long-range operator erf(omega r)/r instead (what a
    range-separated functional's builds add, ``JK``); ``jobs`` at a time, largest classes
    first (they take longest), printing one progress line per class. A derivative class is
    several jobs: each position's store and gradient kernels (``POSITION_JOBS``), then the
    class's block forms, which depend on their tiers; so its six straight-line kernels compile
    side by side where ``jobs`` allows. Of the heavy builds (``heavy_build``) no more run at
    once than ``memory`` (bytes; by default ``available_memory()``) holds at
    ``HEAVY_PTXAS_BYTES`` each, one at least."""
    kernel_options(options).replace(omega=omega)  # bad options fail here, not in each worker
    out = sys.stderr if out is None else out
    jobs = max(1, jobs)
    memory = available_memory() if memory is None else memory
    heavy_slots = max(1, min(jobs, memory // HEAVY_PTXAS_BYTES))
    work = [(c, False) for c in canonical_classes(lmax)]
    if deriv_lmax is not None:
        work += [(c, True) for c in canonical_classes(deriv_lmax)]
    work.sort(key=lambda w: -w[0].total - w[1])
    tail = (options, spherical, target, arch, directory, omega)
    library_options = kernel_options(options).replace(omega=omega)
    heavy: deque = deque()  # (function, arguments) of the jobs waiting, in order
    light: deque = deque()
    pending: dict[str, int] = {}  # a derivative class's position jobs not yet done
    built: dict[str, tuple[bool, float]] = {}  # (all from the library, seconds) of those done
    for c, deriv in work:
        if not deriv:
            light.append((_build, (c.tag, False, *tail)))
            continue
        # a block-only class stores its integrals for the gradient too: one job per position
        block = block_only(c, library_options)
        jobs_of_class = [(p, e) for p, e in POSITION_JOBS if not (block and e is Epilogue.GRAD)]
        pending[c.tag] = len(jobs_of_class)
        built[c.tag] = (True, 0.0)
        queue = heavy if heavy_build(c, library_options) else light
        queue.extend((_build_position, (c.tag, p, e, *tail)) for p, e in jobs_of_class)
    done = 0
    running: dict = {}  # future -> (its job's function, whether it is a heavy build)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        while heavy or light or running:
            # the pool gets no backlog: what runs next is chosen here, heavy builds first
            while len(running) < jobs:
                if heavy and sum(h for _, h in running.values()) < heavy_slots:
                    fn, args = heavy.popleft()
                    running[pool.submit(fn, *args)] = (fn, True)
                elif light:
                    fn, args = light.popleft()
                    running[pool.submit(fn, *args)] = (fn, False)
                else:
                    break
            future = next(as_completed(running))
            fn, _ = running.pop(future)
            if fn is _build_position:
                tag, cached, seconds = future.result()
                was_cached, so_far = built[tag]
                built[tag] = (was_cached and cached, so_far + seconds)
                pending[tag] -= 1
                if not pending[tag]:  # its block forms, which follow its tiers
                    light.appendleft((_build, (tag, True, *tail)))
                continue
            tag, deriv, cached, seconds = future.result()
            if deriv:
                was_cached, so_far = built[tag]
                cached, seconds = was_cached and cached, so_far + seconds
            done += 1
            how = "in the library" if cached else f"built in {seconds:.0f} s"
            what = "derivatives of " if deriv else ""
            print(f"[{done}/{len(work)}] {what}({tag[:2]}|{tag[2:]}) {how}", file=out, flush=True)
