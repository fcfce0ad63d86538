"""The ptxas figure of the kernel builds: registers, spill bytes and compile time of every
kernel against its class's total angular momentum, one colour per variant."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display in pipeline jobs
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fusionrcg.variants import VARIANTS  # noqa: E402

from .graph_figures import REGISTER_BUDGET  # noqa: E402

COLORS = dict(
    zip(VARIANTS, ("tab:blue", "tab:gray", "tab:orange", "tab:purple", "tab:green", "tab:red"))
)


def _offsets(records: pd.DataFrame) -> np.ndarray:
    """Variants of one total side by side around it."""
    variants = list(dict.fromkeys(records["variant"]))
    rank = records["variant"].map({v: i for i, v in enumerate(variants)}).to_numpy()
    return records["total"].to_numpy() + 0.7 * ((rank + 0.5) / len(variants) - 0.5)


def ptxas_figure(records: pd.DataFrame, path: str | Path) -> None:
    x = _offsets(records)
    ok = records["error"].isna().to_numpy()
    spill = (records["spill_store_bytes"] + records["spill_load_bytes"]).to_numpy()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    panels = (
        ("registers", "registers per thread", "linear"),
        ("spill", "spill stores + loads (bytes)", "symlog"),
        ("compile_seconds", "compile seconds", "log"),
    )
    for ax, (col, label, scale) in zip(axes, panels):
        values = spill if col == "spill" else records[col].to_numpy()
        for variant in dict.fromkeys(records["variant"]):
            sel = ok & (records["variant"] == variant).to_numpy()
            ax.scatter(x[sel], values[sel], s=14, color=COLORS[variant], label=variant)
        ax.set_yscale(scale)
        ax.set_ylabel(label)
        ax.set_xlabel("total angular momentum (variants side by side)")
        ax.set_xticks(sorted(records["total"].unique()))
    axes[0].axhline(REGISTER_BUDGET, color="black", lw=1, ls="--", label="255-register limit")
    if (~ok).any():
        # a kernel that did not compile, drawn at the top of the compile-time panel
        top = np.nanmax(records["compile_seconds"].to_numpy(dtype=float), initial=1.0)
        axes[2].scatter(
            x[~ok],
            np.full((~ok).sum(), 2 * top),
            marker="x",
            color="black",
            label="did not compile",
        )
    axes[0].legend(fontsize=7, ncol=2)
    axes[2].legend(fontsize=7)
    axes[0].set_title("(a) registers")
    axes[1].set_title("(b) spilled bytes")
    axes[2].set_title("(c) nvcc time")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
