"""The kernel library: generated sources, their builds and what the runtime needs to launch them.

Builds are content-addressed (``<kernel>-<hash of source, flags, arch>``), so a changed generator
never picks up a stale binary. An index maps the request (class, output basis, epilogue, target,
architecture, the kernel options and a fingerprint of the generator's code) to a build, with the
launch metadata (tier, output shape, slot count, the Tier 2 Phase 2 program, FLOP counts, the
options): a prebuilt kernel is used without rebuilding its graph. The pipeline fills the
library ahead of time (``kernels/``); anything missing is generated and compiled on demand, so
a library user never has to run the pipeline first.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..angmom import QuartetClass
from ..errors import CompileError, CompileTimeout
from ..lowering.block import lower_block
from ..lowering.kernel import KernelSource, lower, pair_fields
from ..lowering.layout import Phase2Program
from ..lowering.target import Epilogue
from ..options import KernelOptions, kernel_options
from ..orchestration.plan import ClassPlan, Flops
from ..orchestration.tier import SM_SUBPARTITIONS
from ..variants import Tier, Variant
from .compiler import (
    CXX_FLAGS,
    NVCC_FLAGS,
    PTXAS_DEFAULT_LEVEL,
    PtxasReport,
    cxx_shared,
    nvcc_cubin,
)

ENV_DIR = "FUSIONRCG_KERNEL_DIR"
# where a request's kernel came from: its request key in the library's index (nothing generated),
# its generated source's binary already in the library (content key), or compiled now
ORIGINS = ("index", "binary", "built")
_GENERATOR_PARTS = (
    "angmom.py", "variants.py", "options.py", "graph", "orchestration", "lowering", "library",
)  # fmt: skip


def locate_kernel_dir(directory: str | Path | None = None) -> tuple[Path, str]:
    """The library directory and what chose it: ``directory`` when given ("argument"), else
    ``$FUSIONRCG_KERNEL_DIR`` ("environment"), else ``~/.cache/fusionrcg/kernels``
    ("default"). Nothing is created."""
    if directory is not None:
        return Path(directory), "argument"
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]), "environment"
    return Path.home() / ".cache" / "fusionrcg" / "kernels", "default"


def kernel_dir(directory: str | Path | None = None) -> Path:
    """``locate_kernel_dir``'s directory, created if missing."""
    path = locate_kernel_dir(directory)[0]
    path.mkdir(parents=True, exist_ok=True)
    return path


# a library's files: "<kernel>-<content key>.<suffix>" at its root (sources, binaries, ptxas
# reports, Tier 2 programs, leftovers of interrupted writes) and "index/<request key>.json"
_BUILD_FILE = re.compile(r".+-[0-9a-f]{16}\..+")
_INDEX_FILE = re.compile(r"[0-9a-f]{20}\..+")
BINARY_SUFFIXES = (".cubin", ".so")


def library_files(root: Path) -> dict[str, list[Path]]:
    """The files of the library at ``root`` by kind: "index" (request entries), "binaries"
    (cubins, shared libraries) and "other"; files named otherwise are not the library's and
    are not listed."""
    files = {"index": [], "binaries": [], "other": []}
    if (root / "index").is_dir():
        files["index"] = sorted(
            f for f in (root / "index").iterdir() if f.is_file() and _INDEX_FILE.fullmatch(f.name)
        )
    if root.is_dir():
        for f in sorted(root.iterdir()):
            if f.is_file() and _BUILD_FILE.fullmatch(f.name):
                files["binaries" if f.suffix in BINARY_SUFFIXES else "other"].append(f)
    return files


def clear_library(root: Path) -> int:
    """Removes the library's files (``library_files``) and its then empty index folder; other
    files and the folder itself stay. Returns the number of files removed."""
    files = [f for group in library_files(root).values() for f in group]
    for f in files:
        f.unlink(missing_ok=True)
    index = root / "index"
    if index.is_dir() and not any(index.iterdir()):
        index.rmdir()
    return len(files)


@lru_cache(maxsize=1)
def generator_fingerprint() -> str:
    """Hash of the code that decides what a kernel contains."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for part in _GENERATOR_PARTS:
        path = root / part
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(f.relative_to(root).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class LibraryKernel:
    """A compiled kernel and its launch metadata."""

    name: str
    binary: Path
    target: str
    tier: Tier
    epilogue: Epilogue
    output_shape: tuple[int, ...]  # leads with the gradient component for derivatives
    n_slots: int  # Tier 2: slots of its bank; Tier 1: shared-memory (CPU: local) slots
    bank_threads: int  # threads per block fixed by a kernel whose slots are in shared memory
    jk_kernel: str | None  # Tier 2 on the GPU: the generated Kernel 2 in the same binary
    program: Phase2Program | None
    flops: Flops
    report: PtxasReport | None
    options: KernelOptions
    origin: str  # one of ORIGINS
    pair_width: int = 6  # doubles per pair-data row: 8 for derivative classes (exponents)
    item_threads: int = 1  # threads per work item: a block each in Tier 2's block form

    @property
    def pair_exponents(self) -> bool:
        """Whether the kernel reads the primitive exponents with its pair data."""
        return self.pair_width > 6

    @property
    def cached(self) -> bool:
        """Whether the kernel came out of the library rather than a compile of this request."""
        return self.origin != "built"

    @property
    def n_outputs(self) -> int:
        return int(np.prod(self.output_shape))

    @property
    def slot_bank(self) -> str | None:
        """Where the kernel's slots are ("shared", "global", or "local" for Tier 1 on the
        CPU); None without slots."""
        if not self.n_slots:
            return None
        if self.target == "cuda" and self.bank_threads:  # a block's bank in the block form
            return "shared"
        return "local" if self.tier is Tier.REGISTER else "global"

    @property
    def global_slots(self) -> int:
        """Slots per quartet in the global buffer (Tier 2 with its bank there)."""
        return self.n_slots if self.slot_bank == "global" else 0


def request_key(
    cls: QuartetClass,
    options: KernelOptions,
    spherical: bool,
    epilogue: Epilogue,
    target: str,
    arch: str,
) -> str:
    """The index key of a request: equal requests under the same generator code share it."""
    text = json.dumps(
        [cls.tag, options.key(), spherical, epilogue.value, target, arch, generator_fingerprint()]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _content_key(source: str, target: str, arch: str, ptxas_level: int) -> str:
    flags = " ".join(NVCC_FLAGS if target == "cuda" else CXX_FLAGS)
    if ptxas_level != PTXAS_DEFAULT_LEVEL:  # default builds keep the keys they always had
        flags += f" -Xptxas -O{ptxas_level}"
    return hashlib.sha256(f"{source}\n{flags}\n{arch}".encode()).hexdigest()[:16]


def _load(entry: Path, origin: str) -> LibraryKernel:
    """An index entry; its file names are relative to the library root (the index's parent)."""
    root = entry.parent.parent
    info = json.loads(entry.read_text())
    program = None
    if info["program"]:
        with np.load(root / info["program"]) as data:
            program = Phase2Program(**{k: data[k] for k in data.files})
    return LibraryKernel(
        name=info["kernel"],
        binary=root / info["binary"],
        target=info["target"],
        tier=Tier(info["tier"]),
        epilogue=Epilogue(info["epilogue"]),
        output_shape=tuple(info["output_shape"]),
        n_slots=info["n_slots"],
        bank_threads=info["bank_threads"],
        jk_kernel=info["jk_kernel"],
        program=program,
        flops=Flops(**info["flops"]),
        report=PtxasReport(**info["ptxas"]) if info["ptxas"] else None,
        options=KernelOptions.from_json(info["options"]),
        origin=origin,
        pair_width=info.get("pair_width", 6),
        item_threads=info.get("item_threads", 1),
    )


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _compile(
    kernel: KernelSource,
    root: Path,
    target: str,
    arch: str,
    what: str,
    timeout: float | None,
    level: int = PTXAS_DEFAULT_LEVEL,
    fallback_level: int | None = None,
) -> tuple[Path, PtxasReport | None, bool]:
    """The binary of ``kernel`` in the library (compiled unless there): its path stem, the
    ptxas report (CUDA) and whether it was there already. Where ptxas at ``level`` runs past
    ``timeout``, ``fallback_level`` (if given) builds the kernel once more at that ptxas
    optimization level; a build at either level that is there already is used."""
    cuda = target == "cuda"
    levels = [level]
    if cuda and fallback_level is not None and fallback_level != level:
        levels.append(fallback_level)
    stems = [
        root / f"{kernel.name}-{_content_key(kernel.source, target, arch, lv)}" for lv in levels
    ]
    for stem in stems:
        binary = stem.with_suffix(".cubin" if cuda else ".so")
        report_file = stem.with_suffix(".ptxas.json")
        if binary.exists() and (report_file.exists() or not cuda):
            report = PtxasReport(**json.loads(report_file.read_text())) if cuda else None
            return stem, report, True
    if not cuda:
        source = stems[0].with_suffix(".cpp")
        source.write_text(kernel.source)
        cxx_shared(source, stems[0].with_suffix(".so"), what, timeout)
        return stems[0], None, False
    for level, stem in zip(levels, stems):
        source = stem.with_suffix(".cu")
        source.write_text(kernel.source)
        try:
            report = nvcc_cubin(source, stem.with_suffix(".cubin"), arch, what, timeout, level)
            break
        except CompileTimeout:
            if len(levels) == 1:
                raise
            if stem is stems[-1]:
                raise CompileTimeout(
                    f"{what}: compilation exceeded {timeout:.0f} s at ptxas -O{levels[0]} and "
                    f"at -O{level}"
                ) from None
    _write_atomic(stem.with_suffix(".ptxas.json"), json.dumps(report.as_dict()))
    return stem, report, False


def _choices(fixed: bool | None, order: tuple[bool, bool]) -> tuple[bool, ...]:
    return order if fixed is None else (fixed,)


def spill_forms(options: KernelOptions) -> list[dict]:
    """Tier 1 forms, as keyword arguments of ``lower``, in the order tried until ptxas reports
    no spills: held to the model's register target, then the full budget; slots read early,
    then in order (early reads cost registers); operands in arrival order, then in graph order.
    A choice the options fix is not varied; without ``spill_fallbacks`` only the first form.
    Forms that do not apply to a kernel give the same source and are not compiled again."""
    forms = [
        {"register_target": held, "ordered_slot_reads": ordered, "arrival_order": arrival}
        for held in _choices(options.register_target, (True, False))
        for ordered in _choices(options.ordered_slot_reads, (False, True))
        for arrival in _choices(options.arrival_order, (True, False))
    ]
    return forms if options.spill_fallbacks else forms[:1]


class _Built(NamedTuple):
    kernel: KernelSource
    stem: Path
    report: PtxasReport | None  # None: a host build, which has no spills to report
    cached: bool

    @property
    def spills(self) -> bool:
        return self.report is not None and bool(self.report.spills)


def _spill_bytes(built: _Built) -> int:
    return built.report.spill_store_bytes + built.report.spill_load_bytes


def denser_forms(plan: ClassPlan, options: KernelOptions) -> list[dict]:
    """The forms of ``plan``'s denser placements in the order the library tries them (see
    ``_compile_without_spills``), as keyword arguments of ``lower``; none without
    ``denser_placements``."""
    if not options.denser_placements:
        return []
    ranked = []
    for i, placement in enumerate(plan.tier1_denser):
        warps = options.model.warps_per_sm(None, placement.n_slots)
        for ordered in _choices(options.ordered_slot_reads, (False, True)):
            for arrival in _choices(options.arrival_order, (True, False)):
                key = (ordered, -min(warps, SM_SUBPARTITIONS), not arrival, -warps, i)
                ranked.append((key, {"denser": i, "ordered_slot_reads": ordered,
                                     "arrival_order": arrival}))  # fmt: skip
    return [form for _, form in sorted(ranked, key=lambda r: r[0])]


def _compile_without_spills(
    plan: ClassPlan,
    options: KernelOptions,
    target: str,
    epi: Epilogue,
    root: Path,
    arch: str,
    what: str,
    timeout: float | None,
    fallback_level: int | None,
) -> _Built:
    """Tier 2: the first of ``spill_forms``. Tier 1: the first of them that compiles
    without spills (otherwise the first of those with the fewest spill bytes: Tier 1 above
    ``spill_free_max_total`` always spills);
    then, for a store kernel that compiled without spills, the first form that does too of
    the plan's denser placements, each with its operands in arrival order or in graph order
    (``lower``): slots read early first (early reads hide the shared-memory latency, which
    outweighs the warp an ordered form may gain); then the forms that leave fewer of the SM's
    sub-partitions without a warp (a sub-partition issues from its own warps only, so an idle
    one loses a quarter of the SM's issue slots); then arrival order; then more warps (beyond
    one per sub-partition a warp adds latency hiding only)."""
    tried = set()

    def attempt(**form) -> _Built | None:
        if plan.tier is Tier.BUFFERED and options.item_threads > 1:
            kernel = lower_block(
                plan, target, options.item_threads, options.bank,
                options.prefetch_max_accumulators, options.omega,
            )  # fmt: skip
        else:
            kernel = lower(plan, target, epi, **options.lowering(), **form)
        if kernel.source in tried:
            return None
        tried.add(kernel.source)
        compiled = _compile(
            kernel, root, target, arch, what, timeout, options.ptxas_level, fallback_level
        )
        return _Built(kernel, *compiled)

    first, *others = spill_forms(options)
    built = attempt(**first)
    if plan.tier is Tier.BUFFERED:
        # Tier 2's segment functions run at the register ceiling and spill in every form, by
        # nearly the same amount: one build, not one per form, which would multiply the
        # compile time of the largest classes
        return built
    for form in others:
        if not built.spills:
            break
        other = attempt(**form)
        if other is not None and _spill_bytes(other) < _spill_bytes(built):
            built = other
    if built.spills or epi is not Epilogue.STORE:
        return built
    for form in denser_forms(plan, options):
        denser = attempt(**form)
        if denser is not None and not denser.spills:
            return denser
    return built


def get_kernel(
    cls: QuartetClass,
    options: str | Variant | KernelOptions = "full",
    spherical: bool = True,
    epilogue: str | Epilogue = Epilogue.STORE,
    target: str = "cuda",
    arch: str = "sm_90",
    directory: str | Path | None = None,
    timeout: float | None = None,
    bank: str = "auto",
    fallback_ptxas_level: int | None = None,
) -> LibraryKernel:
    """The kernel of ``cls`` under ``options`` (``options.kernel_options``: a preset name, a
    variant or the options themselves): from the library, or generated and compiled. ``bank``
    other than "auto" replaces the options' Tier 2 slot bank (``lowering.kernel.shared_bank``).
    ``timeout`` and ``fallback_ptxas_level`` decide how a build is attempted, not what it is:
    a compile that runs past ``timeout`` raises ``CompileTimeout``, or with
    ``fallback_ptxas_level`` is done once more at that ptxas optimization level (the ptxas
    report keeps the level; the library then serves that build to every request of the
    kernel): the largest forced Tier 1 kernels do not finish at ptxas's default -O3 in hours."""
    opts = kernel_options(options)
    if bank != "auto":
        opts = opts.replace(bank=bank)
    v = opts.variant
    epi = Epilogue(epilogue)
    if target != "cuda":
        arch = "host"
    root = kernel_dir(directory)
    index = root / "index"
    index.mkdir(exist_ok=True)
    entry = index / f"{request_key(cls, opts, spherical, epi, target, arch)}.json"
    if entry.exists():
        return _load(entry, "index")

    try:
        plan = opts.plan(cls, spherical)
    except ModuleNotFoundError as exc:  # the spherical coefficients come from PySCF
        raise CompileError(
            f"{cls} variant {v.name}: not in the kernel library at {root} and it cannot be "
            f"generated here ({exc}); install PySCF or build the library ahead of time"
        ) from exc
    if plan.tier is Tier.BUFFERED:
        epi = Epilogue.STORE  # Tier 2 contracts J/K in its second kernel
    what = f"{cls} variant {v.name} Tier {int(plan.tier)} ({target})"
    kernel, stem, report, cached = _compile_without_spills(
        plan, opts, target, epi, root, arch, what, timeout, fallback_ptxas_level
    )
    cuda = target == "cuda"
    binary = stem.with_suffix(".cubin" if cuda else ".so")
    program_file = None
    if kernel.program is not None:
        program_file = stem.with_suffix(".program.npz")
        if not program_file.exists():
            np.savez(program_file.with_suffix(f".{os.getpid()}.npz"), **asdict(kernel.program))
            program_file.with_suffix(f".{os.getpid()}.npz").replace(program_file)
    info = {
        "kernel": kernel.name,
        "binary": binary.name,
        "program": program_file.name if program_file else None,
        "class": str(cls),
        "variant": v.name,
        "spherical": spherical,
        "tier": int(plan.tier),
        "target": target,
        "arch": arch,
        "epilogue": kernel.epilogue.value,
        "output_shape": list(plan.graph.output_shape),
        "n_slots": kernel.n_slots,
        "bank_threads": kernel.bank_threads,
        "jk_kernel": kernel.jk_kernel,
        "flops": asdict(plan.flops),
        "ptxas": report.as_dict() if report else None,
        "options": opts.to_json(),
        "pair_width": len(pair_fields(plan)),
        "item_threads": kernel.item_threads,
    }
    # a Tier 2 kernel answers the store and the J/K request alike (Kernel 2 contracts what it
    # stores), so a library built for either serves both without generating anything
    for served in tuple(Epilogue) if plan.tier is Tier.BUFFERED else (epi,):
        key = request_key(cls, opts, spherical, served, target, arch)
        _write_atomic(index / f"{key}.json", json.dumps(info, indent=1))
    return _load(entry, "binary" if cached else "built")
