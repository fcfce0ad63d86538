"""The kernel library: generated sources, their builds and what the runtime needs to launch them.

Builds are content-addressed (``<kernel>-<hash of source, flags, arch>``), so a changed generator
never picks up a stale binary. An index maps the request (class, variant, output basis,
epilogue, target, architecture, segment size and a fingerprint of the generator's code) to a
build, with the launch metadata (tier, output shape, slot count, the Tier 2 Phase 2 program,
FLOP counts): a prebuilt kernel is used without rebuilding its graph. The pipeline fills the
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
from ..lowering.kernel import KernelSource, lower
from ..lowering.layout import DEFAULT_SEGMENT_SIZE, Phase2Program
from ..lowering.target import Epilogue
from ..orchestration.plan import DEFAULT_MODEL, ClassPlan, Flops, plan_class
from ..orchestration.tier import SM_SUBPARTITIONS
from ..variants import Tier, Variant, get_variant
from .compiler import (
    CXX_FLAGS,
    NVCC_FLAGS,
    PTXAS_DEFAULT_LEVEL,
    CompileError,
    CompileTimeout,
    PtxasReport,
    cxx_shared,
    nvcc_cubin,
)

ENV_DIR = "FUSIONRCG_KERNEL_DIR"
# where a request's kernel came from: its request key in the library's index (nothing generated),
# its generated source's binary already in the library (content key), or compiled now
ORIGINS = ("index", "binary", "built")
_GENERATOR_PARTS = ("angmom.py", "variants.py", "graph", "orchestration", "lowering", "build")


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
    output_shape: tuple[int, int, int, int]
    n_slots: int  # Tier 2: slots of its bank; Tier 1: shared-memory (CPU: local) slots
    bank_threads: int  # threads per block fixed by the kernel (Tier 1, shared bank); 0: any
    jk_kernel: str | None  # Tier 2 on the GPU: the generated Kernel 2 in the same binary
    program: Phase2Program | None
    flops: Flops
    report: PtxasReport | None
    origin: str  # one of ORIGINS

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
        if self.target == "cuda" and self.bank_threads:
            return "shared"
        return "local" if self.tier is Tier.REGISTER else "global"

    @property
    def global_slots(self) -> int:
        """Slots per quartet in the global buffer (Tier 2 with its bank there)."""
        return self.n_slots if self.slot_bank == "global" else 0


def _request_key(cls, v: Variant, spherical, epilogue, target, arch, segment_size, bank) -> str:
    text = json.dumps(
        [cls.tag, asdict(v), spherical, epilogue.value, target, arch, segment_size, bank,
         generator_fingerprint()],
        default=str,
    )  # fmt: skip
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
        origin=origin,
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
    fallback_level: int | None = None,
) -> tuple[Path, PtxasReport | None, bool]:
    """The binary of ``kernel`` in the library (compiled unless there): its path stem, the
    ptxas report (CUDA) and whether it was there already. Where ptxas at its default level
    runs past ``timeout``, ``fallback_level`` (if given) builds the kernel once more at that
    ptxas optimization level; a build at either level that is there already is used."""
    cuda = target == "cuda"
    levels = [PTXAS_DEFAULT_LEVEL]
    if cuda and fallback_level is not None and fallback_level != PTXAS_DEFAULT_LEVEL:
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


# Tier 1 forms in the order tried until ptxas reports no spills: held to the model's register
# target, then the full budget; slots read early, then in order (early reads cost registers).
# Forms that do not apply to a kernel give the same source and are not compiled again.
SPILL_FALLBACKS = tuple(
    {"register_target": held, "ordered_slot_reads": ordered, "arrival_order": arrival}
    for held in (True, False)
    for ordered in (False, True)
    for arrival in (True, False)
)


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


def denser_forms(plan: ClassPlan) -> list[dict]:
    """The forms of ``plan``'s denser placements in the order the library tries them (see
    ``_compile_without_spills``), as keyword arguments of ``lower``."""
    ranked = []
    for i, placement in enumerate(plan.tier1_denser):
        warps = DEFAULT_MODEL.warps_per_sm(None, placement.n_slots)
        for ordered in (False, True):
            for arrival in (True, False):
                key = (ordered, -min(warps, SM_SUBPARTITIONS), not arrival, -warps, i)
                ranked.append((key, {"denser": i, "ordered_slot_reads": ordered,
                                     "arrival_order": arrival}))  # fmt: skip
    return [form for _, form in sorted(ranked, key=lambda r: r[0])]


def _compile_without_spills(
    plan: ClassPlan,
    target: str,
    epi: Epilogue,
    segment_size: int,
    bank: str,
    root: Path,
    arch: str,
    what: str,
    timeout: float | None,
    fallback_level: int | None,
) -> _Built:
    """Tier 2: the first of ``SPILL_FALLBACKS``. Tier 1: the first of them that compiles
    without spills (otherwise the first of those with the fewest spill bytes: Tier 1 above
    ``spill_free_max_total`` always spills);
    then, for a store kernel that compiled without spills, the first form that does too of
    the plan's denser placements, each with its operands in arrival order or in graph order
    (``lower``): slots read early first (in the sweep (3,1|1,1) ran faster with them at four
    warps per SM than with ordered reads at five, reports/gpu/eri/slot_reads); then the forms
    that leave fewer of the SM's sub-partitions without a warp; then arrival order; then more
    warps. On the H200 a warp for an idle sub-partition was worth more than the order, a fifth
    warp less: (2,2|1,1) ran at 31.7% of the FP64 peak with four warps in graph order against
    28.7% with three in arrival order, (3,1|1,1) at 31.7% with four in arrival order against
    29.8% with five in graph order (reports/gpu/eri/arrival_order)."""
    tried = set()

    def attempt(**form) -> _Built | None:
        kernel = lower(plan, target, epi, segment_size, bank, **form)
        if kernel.source in tried:
            return None
        tried.add(kernel.source)
        return _Built(kernel, *_compile(kernel, root, target, arch, what, timeout, fallback_level))

    built = attempt(**SPILL_FALLBACKS[0])
    if plan.tier is Tier.BUFFERED:
        # Tier 2's segment functions run at the register ceiling and spill in every form
        # (they differ by under 1%): one build, not one per form, which doubled the compile
        # time of the largest classes
        return built
    for form in SPILL_FALLBACKS[1:]:
        if not built.spills:
            break
        other = attempt(**form)
        if other is not None and _spill_bytes(other) < _spill_bytes(built):
            built = other
    if built.spills or epi is not Epilogue.STORE:
        return built
    for form in denser_forms(plan):
        denser = attempt(**form)
        if denser is not None and not denser.spills:
            return denser
    return built


def get_kernel(
    cls: QuartetClass,
    variant: str | Variant = "full",
    spherical: bool = True,
    epilogue: str | Epilogue = Epilogue.STORE,
    target: str = "cuda",
    arch: str = "sm_90",
    directory: str | Path | None = None,
    segment_size: int = DEFAULT_SEGMENT_SIZE,
    timeout: float | None = None,
    bank: str = "auto",
    fallback_ptxas_level: int | None = None,
) -> LibraryKernel:
    """The kernel of ``cls`` under ``variant``: from the library, or generated and compiled.
    ``bank`` places a Tier 2 kernel's slot bank (``lowering.kernel.shared_bank``). A compile
    that runs past ``timeout`` raises ``CompileTimeout``, or with ``fallback_ptxas_level``
    is done once more at that ptxas optimization level (the ptxas report keeps the level; the
    library then serves that build to every request of the kernel): the largest forced Tier 1
    kernels do not finish at ptxas's default -O3 in hours."""
    v = get_variant(variant)
    epi = Epilogue(epilogue)
    if target != "cuda":
        arch = "host"
    root = kernel_dir(directory)
    index = root / "index"
    index.mkdir(exist_ok=True)
    key = _request_key(cls, v, spherical, epi, target, arch, segment_size, bank)
    entry = index / f"{key}.json"
    if entry.exists():
        return _load(entry, "index")

    try:
        plan = plan_class(cls, v, spherical)
    except ModuleNotFoundError as exc:  # the spherical coefficients come from PySCF
        raise CompileError(
            f"{cls} variant {v.name}: not in the kernel library at {root} and it cannot be "
            f"generated here ({exc}); install PySCF or build the library ahead of time"
        ) from exc
    if plan.tier is Tier.BUFFERED:
        epi = Epilogue.STORE  # Tier 2 contracts J/K in its second kernel
    what = f"{cls} variant {v.name} Tier {int(plan.tier)} ({target})"
    kernel, stem, report, cached = _compile_without_spills(
        plan, target, epi, segment_size, bank, root, arch, what, timeout, fallback_ptxas_level
    )
    cuda = target == "cuda"
    binary = stem.with_suffix(".cubin" if cuda else ".so")
    program_file = None
    if kernel.layout is not None:
        program_file = stem.with_suffix(".program.npz")
        if not program_file.exists():
            np.savez(
                program_file.with_suffix(f".{os.getpid()}.npz"), **asdict(kernel.layout.program)
            )
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
    }
    # a Tier 2 kernel answers the store and the J/K request alike (Kernel 2 contracts what it
    # stores), so a library built for either serves both without generating anything
    for served in tuple(Epilogue) if plan.tier is Tier.BUFFERED else (epi,):
        key = _request_key(cls, v, spherical, served, target, arch, segment_size, bank)
        _write_atomic(index / f"{key}.json", json.dumps(info, indent=1))
    return _load(entry, "binary" if cached else "built")
