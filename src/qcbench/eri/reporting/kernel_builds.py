"""Building the CUDA kernel library ahead of time: the build jobs (energy classes and the
first-derivative classes of the gradients), their estimated cost for balancing pipeline jobs,
one record per built kernel (the ptxas report, or the compile error that stopped it) and the
spill acceptance check."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fusionrcg.angmom import CENTRES, QuartetClass
from fusionrcg.errors import CompileError
from fusionrcg.jk.deriv import DERIV_POSITIONS
from fusionrcg.library.store import get_kernel
from fusionrcg.orchestration.plan import plan_class
from fusionrcg.variants import VARIANTS, get_variant

from .graph_tables import orchestration_cost

RECORD_COLUMNS = (
    "class", "la", "lb", "lc", "ld", "deriv", "total", "variant", "spherical", "epilogue", "tier",
    "kernel", "registers", "spill_store_bytes", "spill_load_bytes", "stack_bytes", "functions",
    "slots_per_quartet", "compile_seconds", "error",
)  # fmt: skip
ERROR_CHARS = 300  # a compile error's tail is enough to name the cause in a table cell


@dataclass(frozen=True)
class BuildJob:
    """One kernel of the library: class, variant, output form and epilogue."""

    cls: QuartetClass
    variant: str
    spherical: bool
    epilogue: str

    def text(self) -> str:
        form = "spherical" if self.spherical else "cartesian"
        return f"{self.cls.tag}:{self.variant}:{form}:{self.epilogue}"

    @classmethod
    def parse(cls, text: str) -> BuildJob:
        """A job from ``text()``: the class tag may name a derivative centre (``1110_dB``)."""
        tag, variant, form, epilogue = text.split(":")
        return cls(QuartetClass.from_tag(tag), variant, form == "spherical", epilogue)


def build_jobs(
    classes: Sequence[QuartetClass], variants: Sequence[str], epilogues: Sequence[str]
) -> list[BuildJob]:
    return [
        BuildJob(cls, variant, True, epilogue)
        for cls in classes
        for variant in variants
        for epilogue in epilogues
    ]


def deriv_classes(classes: Sequence[QuartetClass]) -> list[QuartetClass]:
    """The first-derivative classes the J/K gradients run of each canonical class: the
    gradient on positions A, B and C (the fourth follows by translational invariance)."""
    return [cls.with_deriv(p) for cls in classes for p in DERIV_POSITIONS]


def build_cost(job: BuildJob, timeout: float) -> float:
    """Rough seconds to orchestrate and compile ``job``, for balancing pipeline jobs only.

    Both grow with the accumulator bank. A forced Tier 1 kernel of a class the model puts in
    Tier 2 is one straight-line function over the whole graph, and nvcc's time grows about as
    bank^2.5 there (8 s at (2,2|2,1), 42 s at (2,2|2,2)), up to the compile timeout."""
    bank = orchestration_cost(job.cls)
    if job.variant == "tier1-only":
        return min(timeout, 1.0 + 1.5e-6 * bank**2.5)
    return 0.5 + bank / 80.0


def build_record(
    job: BuildJob, directory: str | Path, timeout: float | None, arch: str = "sm_90"
) -> dict:
    """The ptxas report of ``job``'s kernel (built now or found in the library), or the compile
    error that stopped it."""
    cls = job.cls
    record = {"class": str(cls), "la": cls.la, "lb": cls.lb, "lc": cls.lc, "ld": cls.ld}
    record |= {"deriv": "" if cls.deriv is None else CENTRES[cls.deriv]}
    record |= {"total": cls.total, "variant": job.variant, "spherical": job.spherical}
    record |= {"epilogue": job.epilogue}
    try:
        kernel = get_kernel(
            cls, job.variant, job.spherical, job.epilogue, "cuda", arch, directory,
            timeout=timeout,
        )  # fmt: skip
    except CompileError as exc:
        # get_kernel has just orchestrated the class: this plan comes from its cache
        plan = plan_class(cls, get_variant(job.variant), job.spherical)
        return (
            dict.fromkeys(RECORD_COLUMNS)
            | record
            | {
                "tier": int(plan.tier),
                "error": str(exc)[-ERROR_CHARS:],
            }
        )
    report = kernel.report.as_dict()
    return record | {
        "tier": int(kernel.tier),
        "kernel": kernel.binary.name,
        **{k: report[k] for k in RECORD_COLUMNS if k in report},
        "slots_per_quartet": kernel.n_slots,
        "error": None,
    }


def sorted_records(records: pd.DataFrame) -> pd.DataFrame:
    """Rows by total, class, variant (in the generator's order) and epilogue."""
    rank = {v: i for i, v in enumerate(VARIANTS)}
    keyed = records.assign(_v=records["variant"].map(rank))
    keyed["deriv"] = keyed["deriv"].fillna("") if "deriv" in keyed else ""
    keyed = keyed.sort_values(["total", "la", "lb", "lc", "ld", "deriv", "_v", "epilogue"])
    return keyed.drop(columns="_v").reset_index(drop=True)[list(RECORD_COLUMNS)]


def failed(records: pd.DataFrame) -> pd.DataFrame:
    return records[records["error"].notna()]


def model_tier1(records: pd.DataFrame, max_total: int) -> pd.DataFrame:
    """Kernels of variant ``full`` (the model's tier) in Tier 1, spherical, total <= max_total,
    of the energy classes (the paper's statement; derivative classes reach one l higher)."""
    sel = (records["variant"] == "full") & (records["tier"] == 1) & records["spherical"]
    sel &= records["deriv"].fillna("") == ""
    return records[sel & (records["total"] <= max_total)]


def spill_violations(records: pd.DataFrame, max_total: int) -> pd.DataFrame:
    """Model Tier 1 kernels with total <= ``max_total`` that spill or did not compile."""
    tier1 = model_tier1(records, max_total)
    spills = tier1["spill_store_bytes"].fillna(1) + tier1["spill_load_bytes"].fillna(1)
    return tier1[(spills > 0) | tier1["error"].notna()]
