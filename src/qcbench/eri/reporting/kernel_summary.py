"""SUMMARY.md of the CUDA kernel builds: the spill acceptance check, compile failures, resources
by total angular momentum, and the paper's statements beside ours. Every number of ours is
read from the build records passed in."""

from __future__ import annotations

import pandas as pd

from qcbench.tables import to_markdown

from .kernel_builds import failed, model_tier1, spill_violations

# the paper's statements about its kernels (Sections III-C and V-B; A100, sm_80)
PAPER_SPILL_FREE_MAX_TOTAL = 6
PAPER_TIER1_COMPILES_MAX_TOTAL = 12
PAPER_SPILL_1111 = "484 B residual spill at (1,1|1,1), Tier 1"


def _spills(records: pd.DataFrame) -> pd.Series:
    return records["spill_store_bytes"] + records["spill_load_bytes"]


def acceptance(records: pd.DataFrame, max_total: int) -> str:
    tier1 = model_tier1(records, max_total)
    if tier1.empty:
        return f"No Tier 1 kernel of variant `full` with total <= {max_total} was built."
    bad = spill_violations(records, max_total)
    verdict = "PASS" if bad.empty else f"FAIL on {', '.join(bad['class'] + ' ' + bad['epilogue'])}"
    classes = tier1["class"].nunique()
    return (
        f"Zero spill bytes (stores and loads) for every Tier 1 class (the model's tier, "
        f"variant `full`, spherical) with total <= {max_total}: **{verdict}** ({classes} "
        f"classes; at most {int(tier1['registers'].max())} registers, stack at most "
        f"{int(tier1['stack_bytes'].max())} bytes)."
    )


def failures_table(records: pd.DataFrame) -> str:
    bad = failed(records)
    if bad.empty:
        return "Every kernel compiled."
    cols = ["class", "total", "variant", "epilogue", "tier", "error"]
    return to_markdown(bad[cols].assign(error=bad["error"].str.replace("\n", " ")))


def by_total(records: pd.DataFrame) -> str:
    """Per total and variant: kernels, failures, tiers, registers, spills, compile time."""
    rec = records.assign(
        spill=_spills(records),
        failed=records["error"].notna(),
        classes=records["deriv"].fillna("").map(lambda d: "derivative" if d else "energy"),
    )
    table = (
        rec.groupby(["total", "classes", "variant"], sort=False)
        .agg(
            kernels=("class", "size"),
            failed=("failed", "sum"),
            tier1=("tier", lambda t: int((t == 1).sum())),
            max_registers=("registers", "max"),
            spilling=("spill", lambda s: int((s > 0).sum())),
            max_spill_bytes=("spill", "max"),
            max_compile_s=("compile_seconds", "max"),
        )
        .reset_index()
        .astype({"max_registers": "Int64", "max_spill_bytes": "Int64"})
    )
    return to_markdown(table, floatfmt=".1f")


def paper_comparison(records: pd.DataFrame, max_total: int) -> str:
    full = records[(records["variant"] == "full") & records["spherical"]]
    tier1_forced = records[records["variant"] == "tier1-only"]
    rows = []
    tier1 = model_tier1(records, max_total)
    if not tier1.empty:
        spilling = tier1[_spills(tier1) > 0]
        rows.append(
            (
                f"Tier 1 spill, total <= {PAPER_SPILL_FREE_MAX_TOTAL}",
                "zero for every class",
                f"{len(spilling)} of {tier1['class'].nunique()} model Tier 1 classes spill",
            )
        )
    p1111 = full[(full["class"] == "(1,1|1,1)") & full["error"].isna()]
    if not p1111.empty:
        r = p1111.iloc[0]
        rows.append(
            (
                "(1,1|1,1) kernel",
                PAPER_SPILL_1111,
                f"Tier {int(r['tier'])}, {int(r['registers'])} registers, "
                f"{int(r['spill_store_bytes'] + r['spill_load_bytes'])} B spill "
                f"({r['epilogue']} epilogue)",
            )
        )
    if not tier1_forced.empty:
        bad = failed(tier1_forced)
        ours = (
            f"every forced Tier 1 kernel compiled (totals up to {tier1_forced['total'].max()})"
            if bad.empty
            else f"first failure at total {bad['total'].min()}; failures at "
            f"{bad['total'].nunique()} totals ({len(bad)} kernels)"
        )
        rows.append(
            (
                "Forced Tier 1 compiles",
                f"up to total {PAPER_TIER1_COMPILES_MAX_TOTAL}, fails beyond",
                ours,
            )
        )
    if not rows:
        return "Nothing built that the paper states figures for."
    return to_markdown(pd.DataFrame(rows, columns=["quantity", "paper (A100)", "this build"]))


def summary_markdown(records: pd.DataFrame, max_total: int, arch: str, timeout: float) -> str:
    variants = ", ".join(dict.fromkeys(records["variant"]))
    epilogues = ", ".join(dict.fromkeys(records["epilogue"]))
    return "\n\n".join(
        [
            "# Generated CUDA kernels: ptxas resources",
            f"{len(records)} kernels ({records['class'].nunique()} classes up to total "
            f"{records['total'].max()}; variants {variants}; epilogues {epilogues}; spherical "
            f"output), compiled with nvcc for {arch} with `-Xptxas -v` and a limit of "
            f"{timeout:g} s per kernel. `ptxas.csv` has one row per kernel: tier, registers, "
            "spill stores and loads (bytes, summed over the kernel and the functions it "
            "calls), stack frame, Tier 2 slots per quartet, compile seconds, or the error that "
            "stopped the build.",
            "## Acceptance",
            acceptance(records, max_total),
            "## The paper's statements beside ours",
            paper_comparison(records, max_total),
            "## By total angular momentum, energy or first-derivative classes, and variant",
            by_total(records),
            f"## Kernels that did not build ({len(failed(records))})",
            failures_table(records),
        ]
    )
