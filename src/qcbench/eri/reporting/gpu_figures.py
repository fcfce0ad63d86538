"""Figures of the GPU campaign in the style of FusionRCG Figs. 5(b), 6, 7 (throughput of the
full pipeline against one ablation per paper quartet, with the speedup) and 8 (Tier 1-only
against Tier 2-only across total angular momentum)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display in pipeline jobs
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from qctoolchain import PTXAS_DEFAULT_LEVEL

TIER_COLORS = {1: "tab:green", 2: "tab:red"}


def _save(fig: plt.Figure, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


def ablation_figure(table: pd.DataFrame, title: str, path: str | Path) -> None:
    """Throughput bars (log scale) of full and the ablated variant per quartet (a
    ``paired_table``); the speedup on a second axis, written above each quartet, with the
    ptxas level of an ablated kernel built below -O3 (the compile fallback). A quartet without
    both numbers says so."""
    variant = table["ablated"].iloc[0]
    x = np.arange(len(table))
    fig, ax = plt.subplots(figsize=(11, 4.6))
    for offset, col, label, color in (
        (-0.2, "full_qps", "FusionRCG (full)", "tab:blue"),
        (0.2, "ablated_qps", variant, "tab:gray"),
    ):
        ax.bar(x + offset, table[col], 0.4, label=label, color=color)
    ax.set_yscale("log")
    ax.set_ylabel("contracted shell quartets / second")
    ax.set_xticks(x, table["quartet"], rotation=30, ha="right")
    twin = ax.twinx()
    speedup = table["speedup"].to_numpy(dtype=float)
    twin.plot(x, speedup, "D", color="black", label="speedup (full / ablated)")
    twin.axhline(1.0, color="black", lw=0.8, ls=":")
    twin.set_ylabel("speedup (x-fold)")
    finite = speedup[np.isfinite(speedup)]
    # headroom above the largest speedup for its label and the legend
    twin.set_ylim(0, max(2.0, 1.5 * finite.max()) if finite.size else 2.0)
    levels = table["ablated_ptxas_level"].to_numpy(dtype=float)
    for xi, s, level, missing in zip(x, speedup, levels, table["missing"]):
        if np.isfinite(s):
            twin.annotate(
                f"{s:.2f}x" + (f"\n(-O{level:.0f})" if level < PTXAS_DEFAULT_LEVEL else ""),
                (xi, s),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 4),
                textcoords="offset points",
            )
        elif missing:
            twin.annotate("missing", (xi, 0.05), ha="center", fontsize=8, color="tab:red")
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=8, loc="upper right")
    ax.set_title(title)
    _save(fig, path)


def _per_total_axes(ax, tiers: pd.DataFrame, ylabel: str, title: str) -> None:
    """Log-scale values against the total angular momentum, one tick per total present."""
    ax.set_yscale("log")
    ax.set_xlabel("total angular momentum la + lb + lc + ld")
    ax.set_ylabel(ylabel)
    ax.set_xticks(sorted(tiers["total"].unique()))
    ax.legend(fontsize=8)
    ax.set_title(title)


def tier_figure(tiers: pd.DataFrame, path: str | Path) -> None:
    """Fig. 8: (a) throughput of each class under Tier 1-only and Tier 2-only (J/K epilogue)
    against its total, with the per-total median; a kernel that did not run is an x at the
    bottom. (b) Tier 1 over Tier 2 per class, coloured by the model's tier."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 4.8))
    rng = np.random.default_rng(0)  # fixed jitter, reproducible figures
    jitter = rng.uniform(-0.15, 0.15, len(tiers))
    for tier, col in ((1, "tier1_qps"), (2, "tier2_qps")):
        ok = tiers[col].notna()
        a.scatter(
            tiers.loc[ok, "total"] + jitter[ok.to_numpy()],
            tiers.loc[ok, col],
            s=14,
            alpha=0.6,
            color=TIER_COLORS[tier],
            label=f"Tier {tier}-only, one class",
        )
        median = tiers[ok].groupby("total")[col].median()
        a.plot(
            median.index,
            median.to_numpy(),
            color=TIER_COLORS[tier],
            lw=1.2,
            label=f"Tier {tier}-only, median",
        )
    floor = np.nanmin(tiers[["tier1_qps", "tier2_qps"]].to_numpy(dtype=float)) / 3
    for tier in (1, 2):
        failed = tiers[f"tier{tier}_qps"].isna() & tiers[f"tier{tier}_error"].notna()
        if failed.any():
            a.scatter(
                tiers.loc[failed, "total"],
                np.full(failed.sum(), floor),
                marker="x",
                color=TIER_COLORS[tier],
                label=f"Tier {tier} did not run",
            )
    _per_total_axes(
        a,
        tiers,
        "contracted shell quartets / second (J/K epilogue)",
        "(a) Tier 1-only vs Tier 2-only",
    )
    both = tiers["tier1_over_tier2"].notna()
    for tier in (1, 2):
        sel = both & (tiers["model_tier"] == tier)
        b.scatter(
            tiers.loc[sel, "total"] + jitter[sel.to_numpy()],
            tiers.loc[sel, "tier1_over_tier2"],
            s=16,
            color=TIER_COLORS[tier],
            label=f"model picks Tier {tier}",
        )
    b.axhline(1.0, color="black", lw=0.8, ls=":")
    _per_total_axes(b, tiers, "Tier 1 throughput / Tier 2 throughput", "(b) above 1: Tier 1 faster")
    _save(fig, path)
