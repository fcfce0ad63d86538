"""The kernel library: a content-addressed directory of generated sources and their builds.

The pipeline fills it ahead of time (``kernels/`` of the project); anything missing is generated
and compiled on demand, so a library user never has to run the pipeline first. Entries are named
``<kernel>-<hash>`` where the hash covers the source, the compiler flags and the architecture, so
a changed generator never picks up a stale build.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..lowering.kernel import KernelSource, lower
from ..lowering.layout import DEFAULT_SEGMENT_SIZE
from ..lowering.target import Epilogue
from ..orchestration.plan import ClassPlan
from ..variants import Tier
from .compiler import CXX_FLAGS, NVCC_FLAGS, PtxasReport, cxx_shared, nvcc_cubin

ENV_DIR = "FUSIONRCG_KERNEL_DIR"


def kernel_dir(directory: str | Path | None = None) -> Path:
    if directory is not None:
        path = Path(directory)
    elif os.environ.get(ENV_DIR):
        path = Path(os.environ[ENV_DIR])
    else:
        path = Path.home() / ".cache" / "fusionrcg" / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class BuiltKernel:
    kernel: KernelSource
    binary: Path
    report: PtxasReport | None  # CUDA only
    cached: bool

    @property
    def name(self) -> str:
        return self.kernel.name


def _key(kernel: KernelSource, arch: str) -> str:
    flags = " ".join(NVCC_FLAGS if kernel.target == "cuda" else CXX_FLAGS)
    digest = hashlib.sha256(f"{kernel.source}\n{flags}\n{arch}".encode()).hexdigest()
    return digest[:16]


def build_kernel(
    plan: ClassPlan,
    target: str = "cuda",
    epilogue: str | Epilogue = Epilogue.STORE,
    arch: str = "sm_90",
    directory: str | Path | None = None,
    segment_size: int = DEFAULT_SEGMENT_SIZE,
    timeout: float | None = None,
) -> BuiltKernel:
    """Generate and compile (or find in the library) the kernel of ``plan``."""
    epi = Epilogue(epilogue)
    if plan.tier is Tier.BUFFERED:
        epi = Epilogue.STORE  # Tier 2 contracts J/K in its second kernel
    kernel = lower(plan, target, epi, segment_size)
    stem = (
        kernel_dir(directory)
        / f"{kernel.name}-{_key(kernel, arch if target == 'cuda' else 'host')}"
    )
    cuda = kernel.target == "cuda"
    binary = stem.with_suffix(".cubin" if cuda else ".so")
    meta = stem.with_suffix(".json")
    what = f"{plan.cls} variant {plan.variant.name} Tier {int(plan.tier)} ({kernel.target})"
    if binary.exists() and meta.exists():
        info = json.loads(meta.read_text())
        report = PtxasReport(**info["ptxas"]) if info.get("ptxas") else None
        return BuiltKernel(kernel, binary, report, cached=True)
    source = stem.with_suffix(".cu" if cuda else ".cpp")
    source.write_text(kernel.source)
    if cuda:
        report = nvcc_cubin(source, binary, arch, what, timeout)
    else:
        cxx_shared(source, binary, what, timeout)
        report = None
    info = {
        "kernel": kernel.name,
        "class": str(plan.cls),
        "variant": plan.variant.name,
        "tier": int(plan.tier),
        "target": kernel.target,
        "arch": arch if cuda else "host",
        "epilogue": kernel.epilogue.value,
        "n_slots": kernel.n_slots,
        "ptxas": report.as_dict() if report else None,
    }
    tmp = meta.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info, indent=1))
    tmp.replace(meta)
    return BuiltKernel(kernel, binary, report, cached=False)
