"""Figures of the graph statistics: the liveness side of the paper's Figs. 5(a) and 6, and the
register model's tier choice over all classes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display in pipeline jobs
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fusionrcg.angmom import QuartetClass  # noqa: E402

from .graph_tables import (  # noqa: E402
    CONVENTIONAL,
    DSA,
    EQ7,
    FACTORS,
    PRIORITY,
    TOPOLOGICAL,
    factor_column,
    peak_column,
)

LABELS = {
    (CONVENTIONAL, DSA): "axis disabled (conventional + DSA)",
    (PRIORITY, DSA): "FusionRCG (priority + DSA)",
    (PRIORITY, TOPOLOGICAL): "DSA disabled (priority + topological)",
    (CONVENTIONAL, TOPOLOGICAL): "neither (conventional + topological)",
    (PRIORITY, EQ7): "Eq. 7 alone (priority)",
}
COLORS = {
    (CONVENTIONAL, DSA): "tab:gray",
    (PRIORITY, DSA): "tab:blue",
    (PRIORITY, TOPOLOGICAL): "tab:orange",
    (CONVENTIONAL, TOPOLOGICAL): "tab:red",
    (PRIORITY, EQ7): "tab:green",
}
REGISTER_BUDGET = 255


def _save(fig: plt.Figure, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


def _quartet_bars(
    ax: plt.Axes, rows: pd.DataFrame, combos: Sequence[tuple[str, str]], factor: str
) -> None:
    """Grouped VRR PeakLive bars per quartet, the reduction factor written above each group."""
    x = np.arange(len(rows))
    width = 0.8 / len(combos)
    for i, combo in enumerate(combos):
        values = rows[peak_column("vrr", *combo)].to_numpy()
        ax.bar(
            x + (i - (len(combos) - 1) / 2) * width,
            values,
            width,
            label=LABELS[combo],
            color=COLORS[combo],
        )
    tops = rows[[peak_column("vrr", *c) for c in combos]].max(axis=1).to_numpy()
    for xi, top, f in zip(x, tops, rows[factor_column(factor, "vrr")]):
        ax.annotate(
            f"{f:.2f}x",
            (xi, top),
            ha="center",
            va="bottom",
            fontsize=8,
            xytext=(0, 2),
            textcoords="offset points",
        )
    ax.set_xticks(x, rows["class"], rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("PeakLive, VRR phase (values)")
    ax.legend(fontsize=8, loc="upper left")


def _sweep(ax: plt.Axes, liveness: pd.DataFrame, factor: str, log: bool) -> None:
    """Factor of every class against its total angular momentum, both phases, with the
    per-total maximum."""
    rng = np.random.default_rng(0)  # fixed jitter, reproducible figures
    for phase, marker, color in (("vrr", "o", "tab:blue"), ("hrr", "^", "tab:purple")):
        col = factor_column(factor, phase)
        data = liveness.dropna(subset=[col])
        jitter = rng.uniform(-0.18, 0.18, len(data))
        ax.scatter(
            data["total"] + jitter,
            data[col],
            s=14,
            marker=marker,
            alpha=0.6,
            color=color,
            label=f"{phase.upper()} phase, one class",
        )
        top = data.groupby("total")[col].max()
        ax.plot(top.index, top.to_numpy(), color=color, lw=1, label=f"{phase.upper()} maximum")
    ax.axhline(1.0, color="black", lw=0.8, ls=":")
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_xlabel("total angular momentum la + lb + lc + ld")
    ax.set_ylabel("PeakLive reduction factor")
    ax.legend(fontsize=8)


def axis_priority_figure(liveness: pd.DataFrame, quartets: Sequence[str], path: str | Path) -> None:
    """Fig. 5(a): PeakLive reduction from axis priority, both under DSA."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.8))
    _quartet_bars(a, _select(liveness, quartets), FACTORS["axis"], "axis")
    a.set_title("(a) paper quartets: conventional / priority axes, DSA order")
    _sweep(b, liveness[liveness["canonical"]], "axis", log=False)
    b.set_title("(b) all classes: conventional+DSA over priority+DSA")
    _save(fig, path)


def dsa_figure(liveness: pd.DataFrame, quartets: Sequence[str], path: str | Path) -> None:
    """Fig. 6, liveness side: PeakLive of DSA against a plain topological order (and Eq. 7
    alone) on the axis-priority graph."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.8))
    combos = [(PRIORITY, TOPOLOGICAL), (PRIORITY, EQ7), (PRIORITY, DSA)]
    _quartet_bars(a, _select(liveness, quartets), combos, "dsa")
    a.set_title("(a) paper quartets: topological / DSA on the priority graph")
    _sweep(b, liveness[liveness["canonical"]], "dsa", log=True)
    b.set_title("(b) all classes: priority+topological over priority+DSA")
    _save(fig, path)


def profile_figure(profile: pd.DataFrame, path: str | Path) -> None:
    """Live values over the schedule of one class, per phase and orchestration."""
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    for ax, phase in zip(axes, ("vrr", "hrr")):
        part = profile[profile["phase"] == phase]
        # the full pipeline last and thicker, so the curves it overlaps do not hide it
        for combo in sorted(LABELS, key=lambda c: c == (PRIORITY, DSA)):
            steps = part[(part["axis"] == combo[0]) & (part["order"] == combo[1])]
            full = combo == (PRIORITY, DSA)
            ax.plot(
                steps["step"],
                steps["live"],
                lw=1.8 if full else 1,
                label=LABELS[combo],
                color=COLORS[combo],
            )
        ax.set_title(f"{profile['class'].iloc[0]}: {phase.upper()} phase")
        ax.set_xlabel("schedule step")
        ax.set_ylabel("live values")
        ax.legend(fontsize=8)
    _save(fig, path)


def tier_figure(plans: pd.DataFrame, path: str | Path) -> None:
    """Registers of both phases per class (full variant, spherical) against the budget; the
    classes of one total are spread side by side around it."""
    rows = plans[(plans["variant"] == "full") & plans["spherical"]].sort_values(
        ["total", "la", "lb", "lc", "ld"]
    )
    rank = rows.groupby("total").cumcount().to_numpy()
    size = rows.groupby("total")["total"].transform("size").to_numpy()
    x = rows["total"].to_numpy() + 0.7 * ((rank + 0.5) / size - 0.5)
    fig, ax = plt.subplots(figsize=(13, 4.8))
    for tier, color in ((1, "tab:green"), (2, "tab:red")):
        sel = rows["tier"].to_numpy() == tier
        ax.scatter(
            x[sel],
            rows["registers_phase1"].to_numpy()[sel],
            s=16,
            marker="o",
            color=color,
            label=f"Phase 1 (VRR + bank), Tier {tier}",
        )
        ax.scatter(
            x[sel],
            rows["registers_phase2"].to_numpy()[sel],
            s=16,
            marker="x",
            color=color,
            label=f"Phase 2 (HRR), Tier {tier}",
        )
    ax.axhline(REGISTER_BUDGET, color="black", lw=1, ls="--", label="255-register budget")
    ax.set_xticks(sorted(rows["total"].unique()))
    ax.set_xlabel("total angular momentum la + lb + lc + ld (classes of one total side by side)")
    ax.set_ylabel("32-bit registers (model)")
    ax.set_yscale("log")
    ax.legend(fontsize=8, ncol=2)
    _save(fig, path)


def _select(liveness: pd.DataFrame, quartets: Sequence[str]) -> pd.DataFrame:
    by_class = liveness.set_index("class")
    return by_class.loc[[str(QuartetClass.parse(q)) for q in quartets]].reset_index()
