"""The J/K engine: Coulomb and exchange matrices of a molecule's densities from the generated
kernels, screened, with the work made where the kernels run.

``JK(mol)`` does the one-time work (segment pairs, their primitive-pair rows and Schwarz
bounds, the kernels of every class the basis needs); ``JK.get_jk(dm)`` then screens each
canonical class against the densities, forms the surviving quartets into launch items and runs
the class's kernels, with no loop over quartets in Python. Its arguments and results are those
of ``pyscf.scf.hf.get_jk``.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..angmom import QuartetClass
from ..errors import DeviceError, InputError
from ..library.store import LibraryKernel
from ..lowering.kernel import FUSED_JK_MAX_OUTPUTS
from ..lowering.target import Epilogue, untile_outputs
from ..options import KernelOptions, kernel_options
from ..runtime.device import cupy_or_none
from ..runtime.items import ItemBatch
from ..runtime.launch import BUFFER_BUDGET_BYTES, CpuExecutor, GradientTarget, contract_items
from ..shells import check_mole
from .arrays import DeviceArrays, HostArrays
from .basis import engine_basis
from .deriv import add_position_gradient, contract_deriv_items, scaled_weights
from .kernels import (
    BLOCK_THREADS,
    ClassKernels,
    class_kernels,
    deriv_block_kernels,
    deriv_kernels,
)
from .pairs import PairTable, build_pair_table
from .streams import DEFAULT_STREAMS, ClassStreams
from .tasks import MAX_CANDIDATES, Block, DeviceScreener, HostScreener, Screen, blocks

GPU_MAX_WORK = 256
"""Primitive quartets per work item of a GPU engine by default: fewer, longer items of the
contracted quartets (fewer J/K updates) measured faster than the executor's 64."""

GPU_BLOCK_ITEMS = 2048
"""Launches of a Tier 2 class with at most this many work items run its block form on a GPU
engine by default: below about one warp per SM (132 SMs of 32 threads on an H100 or H200)
the straight-line kernel leaves most of the GPU idle while each thread walks its item's
statements one after another."""

GPU_ROUND_ITEMS = 1 << 26
"""Work items per screening round of a GPU engine at most (fewer where an eighth of the free
memory holds fewer at 160 bytes each: two rounds are alive at once, each item 40 bytes and as
much again when spread): each round costs the host a launch that writes its items and a launch
per class, so few, large rounds leave the host little to do per build (the CPU backend's rounds
stay at ``tasks.MAX_CANDIDATES`` candidates)."""

DEFAULT_TOL = 1e-13
"""Screening threshold when none is given: PySCF's and GPU4PySCF's ``direct_scf_tol``."""

BACKENDS = ("auto", "cpu", "gpu")


class JKInputError(InputError):
    """A density or option the J/K engine cannot take."""


@dataclass
class BuildProfile:
    """Where one ``get_jk`` (or ``jk_energy_per_atom``) call spent its time (seconds, each
    phase synchronized) and how much work survived the screening, per canonical class."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    quartets: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    items: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    flops: dict[str, float] = field(default_factory=lambda: defaultdict(float))


@dataclass(frozen=True)
class JKTask:
    """One unit of a build's work that can run anywhere: block ``block`` of the canonical class
    ``cls`` (a bra pair group against a ket group). ``cost``: the graph FLOPs of the block's
    quartets before screening (primitive loop trips times the per-primitive FLOPs, plus the
    HRR per item), the estimate schedulers order and weigh tasks by."""

    index: int
    cls: str
    block: int
    quartets: int
    cost: float


def _longest_item_flops(kernels: ClassKernels, class_blocks: list[Block]) -> float:
    """Graph FLOPs of the class's longest work item (its primitive loop and HRR): what one
    thread of the class runs, so the class's least time however few its quartets."""
    f = kernels.store.flops
    rows = max(
        (b.bra_size if b.bra_chunks > 1 else b.bra.rows)
        * (b.ket_size if b.ket_chunks > 1 else b.ket.rows)
        for b in class_blocks
    )
    return (f.vrr_per_primitive + f.accumulate_per_primitive) * rows + f.hrr_per_contracted


def _out_of_memory(exc: BaseException) -> bool:
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(exc, cupy.cuda.memory.OutOfMemoryError)


def _less(a, b):
    """``a - b`` of two results of one kind (None where the matrix was not asked for)."""
    return None if a is None else a - b


def _is_cupy(a) -> bool:
    """Whether ``a`` is a CuPy array, subclasses included (GPU4PySCF hands over tagged
    subclasses defined outside CuPy)."""
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(a, cupy.ndarray)


class JK:
    """Coulomb and exchange builder for one molecule and basis.

    ``backend``: ``"gpu"`` (generated CUDA kernels through CuPy), ``"cpu"`` (the same
    arithmetic as C++) or ``"auto"`` (the GPU when CuPy sees one). ``tol``: screening
    threshold on Q_ab Q_cd |D| (as ``mf.direct_scf_tol``). ``options``: the kernels'
    ``KernelOptions`` or the name of a preset (a variant, ``fusionrcg.PRESETS``).
    ``profile``: synchronize after each phase and keep a ``BuildProfile`` of the last call in
    ``last_profile``. ``decontract``: build J and K over
    the primitives of generally contracted shells and contract them back (``jk.basis``; fewer
    primitive quartets, more quartets, and on the GPU the quartets' J/K updates cost more than
    the primitive work saved); by default each contraction column is a segment over all of its
    shell's primitives. ``max_work``: primitive quartets per work item at most (larger quartets
    are split); by default ``GPU_MAX_WORK`` on the GPU, none on the CPU. ``spread_items``
    (GPU): give the integral kernels each block's items in a strided order
    (``tasks.DeviceScreener``) instead of the order written (a warp's items share a bra pair,
    its pair data and J element; measured the faster).
    ``task_pairs``: cut each block into blocks of this many bra pairs at most, so that a build
    divides into tasks (``tasks``) small enough to spread over many devices; by default whole
    blocks. ``omega`` (default ``mol.omega``, PySCF's convention): 0 the Coulomb operator,
    > 0 the long-range erf(omega r)/r, < 0 the short-range erfc(|omega| r)/r (the full-range
    build less the long-range one). ``streams`` (GPU): classes run concurrently on this many
    CUDA streams (``jk.streams``); 1 runs them one after another on the caller's stream.
    ``block_items``: a Tier 2 class's launches of at most this many work items run the block
    form of its kernels (``lowering.block``: a thread block per item, sharing out each level
    of the recurrences, where the straight-line kernel runs an item per thread and few items
    leave the GPU idle), energy and derivative builds alike; 0 never; by default
    ``GPU_BLOCK_ITEMS`` on the GPU, 0 on the CPU (one thread there either way).
    ``fused_max_outputs``: Tier 1 classes with at most this many integrals contract J and K
    in their integral kernel (``jk.kernels``), larger ones store their integrals for Kernel 2;
    0 runs every class through Kernel 2. ``round_items``: the work items of one screening
    round at most (``tasks``; on the CPU, the candidates it tests); by default
    ``GPU_ROUND_ITEMS`` on the GPU (within the free memory), ``tasks.MAX_CANDIDATES`` on the
    CPU. ``deriv_block_min_total``: the first-derivative classes (gradients) from this total on
    run in Tier 2's block form at any launch size; by default (None) those from total 6 on
    with an f or g shell (``jk.kernels.block_only``). ``time_builds``: each ``get_jk`` appends
    its wall seconds, the device synchronized before and after, to ``build_seconds`` (an SCF's
    J/K share per cycle; one synchronization more per build).
    """

    def __init__(
        self,
        mol,
        backend: str = "auto",
        tol: float = DEFAULT_TOL,
        options: str | KernelOptions = "full",
        kernel_dir=None,
        profile: bool = False,
        decontract: bool = False,
        max_work: int | None = None,
        spread_items: bool = False,
        task_pairs: int | None = None,
        omega: float | None = None,
        streams: int = DEFAULT_STREAMS,
        block_items: int | None = None,
        fused_max_outputs: int = FUSED_JK_MAX_OUTPUTS,
        round_items: int | None = None,
        deriv_block_min_total: int | None = None,
        time_builds: bool = False,
    ) -> None:
        check_mole(mol)
        if backend not in BACKENDS:
            raise JKInputError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
        if not tol > 0.0:
            raise JKInputError(f"the screening threshold must be positive, got {tol!r}")
        if task_pairs is not None and task_pairs < 1:
            raise JKInputError(f"task_pairs must be a positive count, got {task_pairs!r}")
        if streams < 1:
            raise JKInputError(f"streams must be a positive count, got {streams!r}")
        if block_items is not None and block_items < 0:
            raise JKInputError(f"block_items must be a count >= 0, got {block_items!r}")
        if fused_max_outputs < 0:
            raise JKInputError(f"fused_max_outputs must be a count >= 0, got {fused_max_outputs!r}")
        if round_items is not None and round_items < 1:
            raise JKInputError(f"round_items must be a positive count, got {round_items!r}")
        if deriv_block_min_total is not None and deriv_block_min_total < 0:
            raise JKInputError(
                f"deriv_block_min_total must be a total >= 0, got {deriv_block_min_total!r}"
            )
        omega = float(getattr(mol, "omega", 0.0) if omega is None else omega)
        if not np.isfinite(omega):
            raise JKInputError(f"omega must be finite, got {omega!r}")
        start = time.perf_counter()
        self.mol = mol
        self.tol = float(tol)
        self.omega = omega
        self.options = kernel_options(options).replace(omega=max(omega, 0.0))
        # the short-range operator erfc(|omega| r)/r: this engine's full-range builds less
        # those of a long-range engine
        self._long_range = None
        if omega < 0.0:
            self._long_range = JK(
                mol, backend, tol, options, kernel_dir, profile, decontract, max_work,
                spread_items, task_pairs, omega=-omega, streams=streams, block_items=block_items,
                fused_max_outputs=fused_max_outputs, round_items=round_items,
                deriv_block_min_total=deriv_block_min_total,
            )  # fmt: skip
        self.profile = profile
        self.fused_max_outputs = fused_max_outputs
        self.deriv_block_min_total = deriv_block_min_total
        self.last_profile: BuildProfile | None = None
        self.time_builds = time_builds
        self.build_seconds: list[float] = []
        self.basis, contraction = engine_basis(mol, decontract)
        self._nao = mol.nao_nr(cart=mol.cart)
        cupy = cupy_or_none()
        if backend == "auto":
            backend = "gpu" if cupy is not None else "cpu"
        self.backend = backend
        if backend == "gpu":
            from ..runtime.gpu import GpuExecutor

            if cupy is None:
                raise DeviceError("the GPU backend needs CuPy and a CUDA GPU; none is visible")
            self.executor = GpuExecutor(kernel_dir)
            self.arrays = DeviceArrays(cupy)
            self._basis_arrays = self.executor.device_basis(self.basis)
            self.max_work = GPU_MAX_WORK if max_work is None else max_work
            self.block_items = GPU_BLOCK_ITEMS if block_items is None else block_items
            self.streams = ClassStreams(cupy, streams)
            self._workspace = cupy.cuda.MemoryPool()
            self.executor.reclaimers.append(self._workspace.free_all_blocks)
            free = cupy.cuda.Device().mem_info[0]
            # each stream holds one class's buffers at a time
            self._buffer_budget = int(min(BUFFER_BUDGET_BYTES, free // self.streams.count // 8))
            most = GPU_ROUND_ITEMS if round_items is None else round_items
            self._round_items = int(max(1, min(most, free // 8 // 160)))
            target, arch = "cuda", self.executor.arch
        else:
            self.executor = CpuExecutor(kernel_dir)
            self.streams = ClassStreams(None, 1)
            self._workspace = None
            self.arrays = HostArrays()
            self._basis_arrays = self.basis
            self.max_work = max_work
            self.block_items = 0 if block_items is None else block_items
            self._buffer_budget = BUFFER_BUDGET_BYTES
            self._round_items = MAX_CANDIDATES if round_items is None else round_items
            target, arch = "cpp", "host"
        self._kernel_args = (self.options, self.basis.spherical, target, arch, kernel_dir)
        self._kernels: dict[QuartetClass, ClassKernels] = {}
        self._deriv_kernels: dict[tuple, tuple[LibraryKernel, ...]] = {}
        self._deriv_data = None
        xp = self.arrays.xp
        self._contraction = None if contraction is None else xp.asarray(contraction)
        sizes = np.diff(np.append(self.basis.ao, self.basis.nao))
        self._seg_ao = xp.asarray(self.basis.ao, dtype=xp.int32)
        self._seg_size = xp.asarray(sizes, dtype=xp.int32)
        atoms = np.repeat(np.asarray(mol._bas[:, 0], dtype=np.int32), self.basis.nctr)
        self._seg_atom = xp.asarray(atoms)
        self.pairs: PairTable = build_pair_table(self.basis, self.arrays, self._schwarz)
        if self.arrays.device:
            self._screener = DeviceScreener(self.arrays, self._round_items, spread=spread_items)
        else:
            self._screener = HostScreener(self.arrays, self._round_items)
        groups = self.pairs.classes()
        self.classes: list[tuple[ClassKernels, list[Block]]] = []
        for bra_ls, bra in groups.items():
            for ket_ls, ket in groups.items():
                if bra[0].key >= ket[0].key:
                    kernels = self.kernels(QuartetClass(*bra_ls, *ket_ls))
                    found = blocks(bra, ket, self.max_work)
                    found = [piece for b in found for piece in b.pieces(task_pairs)]
                    self.classes.append((kernels, found))
        # the classes of the longest items first: on several streams their latency overlaps
        # the many short items of the low classes instead of ending the build
        self.classes.sort(key=lambda c: -_longest_item_flops(*c))
        if self.arrays.device:  # the shared arrays are complete before any stream reads them
            self._load(
                k for kernels, _ in self.classes
                for k in (kernels.store, kernels.fused, kernels.block) if k is not None
            )  # fmt: skip
            cupy.cuda.Device().synchronize()
        self.setup_seconds = time.perf_counter() - start

    @property
    def tasks(self) -> list[JKTask]:
        """The build's tasks in the engine's order (class by class, block by block); the
        indices are what ``get_jk(..., tasks=...)`` takes."""
        found = []
        for kernels, class_blocks in self.classes:
            f = kernels.store.flops
            per_primitive = f.vrr_per_primitive + f.accumulate_per_primitive
            for b, block in enumerate(class_blocks):
                quartets = block.quartets
                cost = quartets * (
                    per_primitive * block.bra.rows * block.ket.rows
                    + f.hrr_per_contracted * block.items_per_quartet
                )
                found.append(JKTask(len(found), str(kernels.cls), b, quartets, float(cost)))
        return found

    @property
    def nao(self) -> int:
        """AOs of the molecule's basis (what densities and results are over)."""
        return self._nao

    def kernels(self, cls: QuartetClass) -> ClassKernels:
        """The kernels of the canonical class ``cls``, resolved once."""
        if cls not in self._kernels:
            threads = BLOCK_THREADS if self.block_items else 0
            self._kernels[cls] = class_kernels(
                cls, *self._kernel_args, block_threads=threads,
                fused_max_outputs=self.fused_max_outputs,
            )  # fmt: skip
        return self._kernels[cls]

    def deriv_kernels(
        self, cls: QuartetClass, epilogue: Epilogue = Epilogue.STORE
    ) -> tuple[LibraryKernel, ...]:
        """The first-derivative kernels of the canonical class ``cls`` (positions A, B, C):
        store kernels, or the gradient epilogue's where the class is Tier 1; resolved once."""
        key = (cls, epilogue)
        if key not in self._deriv_kernels:
            self._deriv_kernels[key] = deriv_kernels(
                cls, *self._kernel_args, epilogue, self.deriv_block_min_total
            )
        return self._deriv_kernels[key]

    def _deriv_forms(self, cls: QuartetClass, epilogue: Epilogue, items: int):
        """The derivative kernels of ``cls`` (positions A, B, C) for a launch of ``items``
        items: a Tier 2 position's block form where ``block_items`` allows it."""
        kernels = self.deriv_kernels(cls, epilogue)
        if items > self.block_items:
            return kernels
        key = (cls, "block")
        if key not in self._deriv_kernels:
            self._deriv_kernels[key] = deriv_block_kernels(
                cls, *self._kernel_args, BLOCK_THREADS, self.deriv_block_min_total
            )
        return tuple(b or k for b, k in zip(self._deriv_kernels[key], kernels))

    def _schwarz(self, la: int, lb: int, a, b, ranges, data):
        """Q_ab = max |(ab|ab)|^(1/2) of pairs (a, b) from the store kernel of (ab|ab)."""
        xp = self.arrays.xp
        store = self.kernels(QuartetClass(la, lb, la, lb)).store
        n = int(a.shape[0])
        batch = ItemBatch(
            quartets=xp.ascontiguousarray(xp.stack([a, b, a, b], axis=1), dtype=xp.int32),
            scales=xp.ones(n),
            ranges=xp.ascontiguousarray(xp.stack([ranges, ranges], axis=1).reshape(-1, 2)),
        )
        largest = []
        per_item = 8 * (store.n_outputs + store.global_slots)
        for part in batch.parts(per_item, self._buffer_budget):
            ints = self.executor.run_items(store, part, self._basis_arrays, data)
            if self.arrays.device:  # tiles of 32 items: (tiles, n_outputs, 32)
                m = xp.abs(ints.reshape(-1, store.n_outputs, 32)).max(axis=1).ravel()
                largest.append(m[: part.size])
            else:
                largest.append(np.abs(ints).max(axis=1))
        return xp.sqrt(xp.concatenate(largest)) if largest else xp.zeros(0)

    def _densities(self, dm, hermi: int):
        """The densities as an (n, nao, nao) float64 array of the backend, checked."""
        if hermi not in (0, 1):
            raise JKInputError(f"hermi = {hermi!r}: the engine takes 0 (general) or 1 (symmetric)")
        xp = self.arrays.xp
        if _is_cupy(dm) and not self.arrays.device:
            dm = dm.get()
        dms = xp.asarray(dm, dtype=xp.float64)
        nao = self.nao
        if dms.ndim not in (2, 3) or dms.shape[-2:] != (nao, nao):
            raise JKInputError(
                f"density matrix shape {tuple(dms.shape)}: expected ({nao}, {nao}) or "
                f"(n, {nao}, {nao}) for this basis"
            )
        dms = xp.ascontiguousarray(dms.reshape(-1, nao, nao))
        if not dms.size:
            return dms
        # size and asymmetry read back together, one wait for the device; a NaN or infinity
        # anywhere makes the largest |D| NaN or infinite (the maximum propagates NaN)
        checks = [xp.abs(dms).max()]
        if hermi == 1:
            checks.append(xp.abs(dms - dms.transpose(0, 2, 1)).max())
        scale, *asym = self.arrays.to_host(xp.stack(checks)).tolist()
        if not np.isfinite(scale):
            raise JKInputError("the density matrix is not finite (NaN or infinity)")
        if asym and asym[0] > 1e-10 * max(1.0, scale):
            raise JKInputError(
                f"hermi=1 needs a symmetric density; this one differs from its transpose "
                f"by {asym[0]:.3g} (pass hermi=0 for a general density)"
            )
        return dms

    def get_jk(self, dm, hermi: int = 1, with_j: bool = True, with_k: bool = True, tasks=None):
        """(vj, vk) of ``dm`` ((nao, nao) or (n, nao, nao)), shaped like ``dm``; None for a
        matrix not asked for. NumPy in, NumPy out; CuPy in, CuPy out. Running out of device
        memory raises :class:`DeviceError` with the sizes involved.

        ``tasks``: indices into ``self.tasks``; only their quartets are built (screened against
        the whole density as always), so the results over a partition of the tasks add up to
        the full (vj, vk). Any iterable: an iterator is drawn from task by task as the build
        goes (a scheduler handing tasks out on demand). None builds every task."""
        if not (with_j or with_k):
            raise JKInputError("nothing to build: with_j and with_k are both False")
        if self._long_range is not None and tasks is not None:
            raise JKInputError("task selection is not available for the short-range operator")
        timed = self.time_builds
        if timed:
            self._synchronize()
        start = time.perf_counter()
        with self._memory_errors(dm, "J/K"):
            vj, vk = self._build(dm, hermi, with_j, with_k, tasks)
        if self._long_range is not None:
            lj, lk = self._long_range.get_jk(dm, hermi, with_j, with_k)
            vj, vk = _less(vj, lj), _less(vk, lk)
        if timed:
            self._synchronize()
            self.build_seconds.append(time.perf_counter() - start)
        return vj, vk

    def _synchronize(self) -> None:
        """Waits for the device's work (nothing to wait for on the CPU)."""
        if self.arrays.device:
            self.arrays.xp.cuda.Device().synchronize()

    def get_jk_deriv(self, dm, with_j: bool = True, with_k: bool = True):
        """(vj, vk): the nuclear-derivative Coulomb and exchange matrices of ``dm`` as PySCF's
        gradient ``get_jk`` returns them (``pyscf.grad.rhf.get_jk``): vj[x, i, j] = -sum_kl
        (nabla_x i j|k l) D_lk and vk[x, i, l] = -sum_jk (nabla_x i j|k l) D_jk, (3, nao, nao)
        for one density and (n, 3, nao, nao) for n; None for a matrix not asked for. From the
        generated first-derivative classes (``jk.deriv``), over the quartets that pass the
        screening of ``get_jk`` at ``tol``. NumPy in, NumPy out; CuPy in, CuPy out."""
        if not (with_j or with_k):
            raise JKInputError("nothing to build: with_j and with_k are both False")
        with self._memory_errors(dm, "derivative J/K"), self._workspace_memory():
            vj, vk = self._deriv_build(self._densities(dm, 0), with_j, with_k)
        if self.arrays.device:  # into the caller's memory, out of the workspace
            vj, vk = (None if v is None else v.copy() for v in (vj, vk))
        vj, vk = self._like_deriv(dm, vj), self._like_deriv(dm, vk)
        if self._long_range is not None:
            lj, lk = self._long_range.get_jk_deriv(dm, with_j, with_k)
            vj, vk = _less(vj, lj), _less(vk, lk)
        return vj, vk

    def jk_energy_per_atom(self, dm, j_factor: float = 1.0, k_factor: float = 1.0) -> np.ndarray:
        """j_factor dE_J/dR - k_factor dE_K/dR per atom, (natm, 3) on the host, as GPU4PySCF's
        gradient ``jk_energy_per_atom``: ``dm`` is a symmetric restricted total density (nao,
        nao) or (1, nao, nao), or the two spin densities (2, nao, nao) (``jk.deriv`` states the
        energies). Each item's derivative integrals are weighed with the densities in the
        kernel (the gradient epilogue of Tier 1 classes) or from the stored integrals (Tier 2,
        ``jk.deriv.add_position_gradient``), with no derivative matrices."""
        with self._workspace_memory():
            dms = self._densities(dm, 1)
            if dms.shape[0] not in (1, 2):
                raise JKInputError(
                    f"{dms.shape[0]} densities: the energy gradient takes one (restricted) or "
                    "two (spin densities)"
                )
            de = self.arrays.xp.zeros(3 * self.mol.natm)
            if j_factor or k_factor:
                with self._memory_errors(dm, "the J/K energy gradient"):
                    self._energy_gradient(dms, float(j_factor), float(k_factor), de)
            de = self.arrays.to_host(de).reshape(-1, 3)
        if self._long_range is not None:
            de -= self._long_range.jk_energy_per_atom(dm, j_factor, k_factor)
        return de

    def _energy_gradient(self, dms, j_factor: float, k_factor: float, de) -> None:
        """Adds the energy gradient of the checked densities ``dms`` into ``de`` (natm * 3):
        Tier 1 derivative classes through their gradient epilogue, Tier 2 ones from their
        stored integrals (``jk.deriv.add_position_gradient``)."""
        dk = self._engine_densities(dms)
        total = dk.sum(axis=0)  # the Coulomb weights' density, once for every part
        target = GradientTarget(self._seg_atom, de, j_factor, k_factor)
        prof = BuildProfile() if self.profile else None
        tick = self._clock(prof)
        screen = self._deriv_screen(dk, bool(j_factor), bool(k_factor), products=True)
        tick("densities")
        with self.streams.build():
            for kernels, parts in self._deriv_classes(screen, Epilogue.GRAD):
                name = str(kernels.cls)
                with self.streams.one_class():
                    for part, deriv in parts:
                        tick("screening")
                        self._part_gradient(kernels, deriv, part, dk, total, target)
                        tick(f"gradient {name}")
                        if prof is not None:
                            prof.items[name] += part.size
                            prof.flops[name] += self._graph_flops(deriv, part)
        self.last_profile = prof

    def _part_gradient(self, kernels, deriv, part, dk, total, target: GradientTarget) -> None:
        """One part's share of the energy gradient into ``target.out``: Tier 1 derivative
        classes through their gradient epilogue, Tier 2 ones from their stored integrals."""
        weights = None
        for position, kernel in enumerate(deriv):
            if kernel.epilogue is Epilogue.GRAD:
                self.executor.run_items(
                    kernel, part, self._basis_arrays, self._deriv_data, dk, gradient=target
                )
                continue
            if weights is None:
                weights = scaled_weights(
                    self.arrays.xp, kernels.output_shape, part.quartets, part.scales,
                    self._seg_ao, dk, total, target.j_factor, target.k_factor,
                )  # fmt: skip
            grad = self._item_integrals(kernel, part, self._deriv_data)
            add_position_gradient(
                self.arrays, grad, position, part.quartets, weights, self._seg_atom, target.out
            )

    def _load(self, kernels: Iterable[LibraryKernel]) -> None:
        """Loads ``kernels`` for launches from any stream and, on the GPU, gives every thread
        the largest local memory among them now, not at a launch in the middle of a build
        (``GpuExecutor.reserve_local_memory``)."""
        kernels = list(kernels)
        for kernel in kernels:
            self.executor.load(kernel)
        if self.arrays.device:
            self.executor.reserve_local_memory(kernels)

    @property
    def workspace_bytes(self) -> int:
        """Device memory the engine keeps between builds (0 on the CPU backend): what its
        builds allocated, held in its own memory pool for the next build."""
        return 0 if self._workspace is None else int(self._workspace.total_bytes())

    def release_workspace(self) -> None:
        """Gives the device memory the engine keeps between builds back to the device (the
        next build allocates it again), all but the arrays it caches for every build (the
        streams' item-pair indices, the kernels' programs)."""
        if self._workspace is not None:
            self._workspace.free_all_blocks()

    @contextmanager
    def _workspace_memory(self):
        """Device allocations inside come from the engine's own memory pool, which keeps them
        for the next build while the device has room (``_settle_workspace``): no build asks
        the device for memory once one like it has run,
        whatever allocator the caller's CuPy uses (GPU4PySCF's, imported, sends allocations
        over 100 MiB straight to the device and frees them at once, and each such free waits
        for the device). The pool keeps CuPy's per-stream reuse (``streams`` contract)."""
        if self._workspace is None:
            yield
            return
        try:
            with self.arrays.xp.cuda.using_allocator(self._workspace.malloc):
                yield
        finally:
            self._settle_workspace()

    def _settle_workspace(self) -> None:
        """Keeps the workspace's unused memory for the next build only while the device has
        at least as much free, and a quarter of its memory; otherwise gives it back, so that
        what runs between builds (the XC engine's call, the SCF's own arrays, allocated
        straight from the device above GPU4PySCF's threshold) finds the room it had before
        the build."""
        pool = self._workspace
        held = pool.free_bytes()
        if held == 0:
            return
        free, total = self.arrays.xp.cuda.Device().mem_info
        if free < max(held, total // 4):
            pool.free_all_blocks()

    @contextmanager
    def _memory_errors(self, dm, what: str):
        """Running out of device memory becomes a ``DeviceError`` naming the sizes."""
        try:
            yield
        except Exception as exc:
            if not _out_of_memory(exc):
                raise
            n = 1 if np.ndim(dm) == 2 else int(np.shape(dm)[0])
            raise DeviceError(
                f"out of GPU memory building {what} of {n} density matrices over {self.nao} "
                f"AOs ({self.basis.nao} in the engine's basis): {exc}. Free device memory "
                "(e.g. cupy.get_default_memory_pool().free_all_blocks()) or build fewer "
                "densities at once"
            ) from exc

    def _drawn(self, tasks) -> Iterator[tuple[int, Block]]:
        """(class position, block) of each of ``tasks`` (indices into ``self.tasks``), in the
        order given and as they are drawn, each at most once."""
        where = [(k, b) for k, (_, bl) in enumerate(self.classes) for b in range(len(bl))]
        seen: set[int] = set()
        for t in tasks:
            t = int(t)
            if not 0 <= t < len(where) or t in seen:
                raise JKInputError(f"task {t}: not in [0, {len(where)}) or given twice")
            seen.add(t)
            k, b = where[t]
            yield k, self.classes[k][1][b]

    def _build(self, dm, hermi: int, with_j: bool, with_k: bool, tasks=None):
        prof = BuildProfile() if self.profile else None
        tick = self._clock(prof)
        with self._workspace_memory():
            n, vj, vk = self._accumulate(dm, hermi, with_j, with_k, tasks, prof, tick)
        # J and K in the caller's memory; the half-matrix accumulators go back to the workspace
        if vj is not None:
            vj = vj[:n] + vj[:n].transpose(0, 2, 1)
        if vk is not None:
            vk = vk[:n] + (vk[n:] if hermi == 0 else vk[:n]).transpose(0, 2, 1)
        c = self._contraction
        if c is not None:  # back to the molecule's AOs: J = C^T J' C
            vj = None if vj is None else c.T @ vj @ c
            vk = None if vk is None else c.T @ vk @ c
        tick("symmetrize")
        self.last_profile = prof
        return self._like(dm, vj), self._like(dm, vk)

    def _accumulate(self, dm, hermi: int, with_j: bool, with_k: bool, tasks, prof, tick):
        """(n, half J, half K) of the densities ``dm`` over the engine's basis: the
        accumulators the classes' kernels add into, (n or 2n, nao, nao) each (2n: K of a
        general density sees D and D^T)."""
        xp = self.arrays.xp
        dms = self._densities(dm, hermi)
        n = dms.shape[0]
        # K of a general density: K = Kh(D) + Kh(D^T)^T, so the kernels see D and D^T
        dk = xp.concatenate([dms, dms.transpose(0, 2, 1)]) if hermi == 0 and with_k else dms
        c = self._contraction
        if c is not None:  # into the expanded basis: D' = C D C^T
            dk = c @ dk @ c.T
        dk = xp.ascontiguousarray(dk)
        shape = (dk.shape[0], self.basis.nao, self.basis.nao)
        vj = xp.zeros(shape) if with_j else None
        vk = xp.zeros(shape) if with_k else None
        screen = self._screen(dk, with_j, with_k)
        tick("densities")
        if tasks is None:
            work = [(kernels, block) for kernels, bl in self.classes for block in bl]
        else:
            work = [(self.classes[k][0], block) for k, block in self._drawn(tasks)]
        with self.streams.build():
            read = []  # the streams' reads of the previous round's items
            for found in self._screener.rounds(self.pairs, [b for _, b in work], screen):
                tick("screening")
                # the round's items are written on the caller's stream (``streams`` contract)
                self.streams.follow()
                # one launch per class and round: its blocks' items lie together in the round
                for pieces, items in found.spans(lambda piece: work[piece.index][0].cls):
                    kernels = work[pieces[0].index][0]
                    with self.streams.one_class():
                        if prof is not None:
                            for piece in pieces:
                                self._count(
                                    prof, kernels, found.of(piece), piece.block.items_per_quartet
                                )
                        self._run(kernels, items, dk, vj, vk, tick)
                # the previous round's items are let go when the next round is drawn: the
                # caller's stream waits for their readers first (``streams`` contract)
                self.streams.wait(read)
                read = self.streams.mark()
        return n, vj, vk

    def _engine_densities(self, dms):
        """Densities over the molecule's AOs in the engine's basis (D' = C D C^T)."""
        c = self._contraction
        return self.arrays.xp.ascontiguousarray(dms if c is None else c @ dms @ c.T)

    def _deriv_screen(self, dk, with_j: bool, with_k: bool, products: bool = False) -> Screen:
        """The screening of a derivative build of ``dk``, with the pairs' derivative data made
        (both on the caller's stream, before the classes' streams start); ``products``: of an
        energy gradient (``_screen``)."""
        if self._deriv_data is None:
            self._deriv_data = self.pairs.deriv_data(self.arrays.xp)
        return self._screen(dk, with_j, with_k, products)

    def _screen(self, dk, with_j: bool, with_k: bool, products: bool = False) -> Screen:
        """The screening of a build of the densities ``dk`` (engine basis): their segment-block
        maxima against the threshold. ``products``: an energy or energy gradient, whose
        integrals each meet two density elements (``tasks.Screen``): J's of the total density
        and K's of each spin density, so the blocks cover both."""
        if products and dk.shape[0] > 1:
            dk = self.arrays.xp.concatenate([dk, dk.sum(axis=0)[None]])
        blocks = self.arrays.block_absmax(dk, self._seg_ao, self._seg_size)
        largest = float(blocks.max())
        return Screen(self.tol, blocks, largest**2 if products else largest, with_j, with_k,
                      products)  # fmt: skip

    def _deriv_classes(self, screen: Screen, epilogue: Epilogue):
        """(class kernels, parts) of every class: its screened items in parts whose buffers
        fit the budget, screened as they are drawn, each with the derivative kernels on A, B
        and C that run it (``_deriv_forms``)."""
        forms = []
        for kernels, class_blocks in self.classes:
            deriv = self.deriv_kernels(kernels.cls, epilogue)
            if self.block_items:  # parts fit the buffers of either form
                deriv += self._deriv_forms(kernels.cls, epilogue, 0)
            forms.append((kernels, class_blocks, deriv))
        self._load(k for *_, deriv in forms for k in deriv)
        for kernels, class_blocks, deriv in forms:
            # three derivative outputs, their scaled copies, the fourth centre's and weights
            per_item = 8 * (8 * deriv[0].n_outputs + max(k.global_slots for k in deriv))
            parts = (
                (part, self._deriv_forms(kernels.cls, epilogue, part.size))
                for _, items in self._screener.class_items(self.pairs, class_blocks, screen)
                for part in items.parts(per_item, self._buffer_budget)
            )
            yield kernels, parts

    def _deriv_build(self, dms, with_j: bool, with_k: bool):
        """(vj, vk) (n, 3, nao, nao) of the backend over the molecule's AOs, for the checked
        densities ``dms`` (n, nao, nao)."""
        xp = self.arrays.xp
        dk = self._engine_densities(dms)
        shape = (dk.shape[0], 3, self.basis.nao, self.basis.nao)
        vj = xp.zeros(shape) if with_j else None
        vk = xp.zeros(shape) if with_k else None
        screen = self._deriv_screen(dk, with_j, with_k)
        with self.streams.build():
            for kernels, parts in self._deriv_classes(screen, Epilogue.STORE):
                with self.streams.one_class():
                    for part, deriv in parts:
                        grads = [self._item_integrals(k, part, self._deriv_data) for k in deriv]
                        contract_deriv_items(
                            self.arrays, kernels.output_shape, grads, part.quartets,
                            part.scales, self._seg_ao, dk, vj, vk,
                        )  # fmt: skip
        c = self._contraction
        if c is not None:  # back to the molecule's AOs: J = C^T J' C
            vj = None if vj is None else c.T @ vj @ c
            vk = None if vk is None else c.T @ vk @ c
        return vj, vk

    def _item_integrals(self, kernel: LibraryKernel, items, pair_data):
        """(n, n_outputs) integrals of a store kernel's launch over ``items``, where they
        were computed (the device's tiled buffer viewed item by item)."""
        ints = self.executor.run_items(kernel, items, self._basis_arrays, pair_data)
        if self.arrays.device:
            ints = untile_outputs(ints, kernel.n_outputs)[: items.size]
        return ints

    def _count(self, prof: BuildProfile, kernels: ClassKernels, items, per_quartet: int) -> None:
        """Quartets, items and graph FLOPs (every item's primitive quartets and its HRR)."""
        name = str(kernels.cls)
        prof.quartets[name] += items.size // per_quartet
        prof.items[name] += items.size
        prof.flops[name] += self._graph_flops((kernels.store,), items)

    def _graph_flops(self, launched: tuple[LibraryKernel, ...], items) -> float:
        """Graph FLOPs of ``launched`` kernels each over ``items``: every item's primitive
        quartets through the VRR and accumulation, and its HRR."""
        rows = items.ranges[:, 1].reshape(-1, 2).astype(self.arrays.xp.float64)
        primitives = float((rows[:, 0] * rows[:, 1]).sum())
        return sum(
            (k.flops.vrr_per_primitive + k.flops.accumulate_per_primitive) * primitives
            + k.flops.hrr_per_contracted * items.size
            for k in launched
        )

    def _run(self, kernels: ClassKernels, items, dk, vj, vk, tick) -> None:
        """The class's kernels over ``items``: the fused J/K kernel, or the store kernel (its
        block form for at most ``block_items`` items) and Kernel 2 in parts whose integral
        buffers fit the budget."""
        name = str(kernels.cls)
        if kernels.fused is not None:
            self.executor.run_items(
                kernels.fused, items, self._basis_arrays, self.pairs.data, dk, vj, vk
            )
            tick(f"integrals {name}")
            return
        store = kernels.store
        if kernels.block is not None and items.size <= self.block_items:
            store = kernels.block
        per_item = 8 * (store.n_outputs + store.global_slots)
        for part in items.parts(per_item, self._buffer_budget):
            ints = self.executor.run_items(store, part, self._basis_arrays, self.pairs.data)
            tick(f"integrals {name}")
            if self.arrays.device:
                self.executor.contract_items(store, part, ints, self._basis_arrays, dk, vj, vk)
            else:
                contract_items(
                    store.output_shape, ints, part.quartets, part.scales, self.basis.ao,
                    dk, vj, vk,
                )  # fmt: skip
            tick(f"kernel 2 {name}")

    def _clock(self, prof: BuildProfile | None):
        """A function that books the time since its last call under a phase (synchronizing
        the device first); a no-op without profiling."""
        if prof is None:
            return lambda phase: None
        self._synchronize()
        last = [time.perf_counter()]

        def tick(phase: str) -> None:
            self._synchronize()
            now = time.perf_counter()
            prof.seconds[phase] += now - last[0]
            last[0] = now

        return tick

    def _like_deriv(self, dm, v):
        """``v`` (n, 3, nao, nao) as (3, nao, nao) for a two-dimensional ``dm``, in ``dm``'s
        array library."""
        if v is None:
            return None
        return self._library_of(dm, v[0] if np.ndim(dm) == 2 else v)

    def _like(self, dm, v):
        """``v`` (n, nao, nao) shaped like ``dm`` and of its array library."""
        if v is None:
            return None
        return self._library_of(dm, v.reshape(np.shape(dm)))

    def _library_of(self, dm, v):
        """``v`` in ``dm``'s array library: CuPy for CuPy input, NumPy otherwise."""
        if _is_cupy(dm):
            import cupy

            return cupy.asarray(v)
        return self.arrays.to_host(v)
