"""The no-scheduling ablation's table and the measured scaling plot, from the ablation runs'
JSON (``python -m qcbench.dist ablation``, one file per rank count)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLUMNS = ["engine", "ranks", "schedule", "backend", "wall_seconds", "speedup", "imbalance",
           "tasks"]  # fmt: skip


def table(paths: list[str]) -> tuple[pd.DataFrame, dict]:
    runs = [json.loads(Path(p).read_text()) for p in paths]
    rows = [row for run in runs for row in run["rows"]]
    df = pd.DataFrame(rows)
    one = df[df["ranks"] == df["ranks"].min()].groupby("engine")["wall_seconds"].min()
    df["speedup"] = [one[e] / w for e, w in zip(df["engine"], df["wall_seconds"])]
    df = df.sort_values(["engine", "ranks", "schedule"])[COLUMNS]
    meta = {k: runs[0][k] for k in ("molecule", "basis", "xc", "grid_level")}
    return df, meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--out-table", nargs=2, required=True, metavar=("CSV", "MD"))
    ap.add_argument("--out-figure", required=True)
    a = ap.parse_args()
    df, meta = table(a.runs)
    df.to_csv(a.out_table[0], index=False)
    head = (
        f"# No-scheduling ablation: pulled tasks against the static partition\n\n"
        f"{Path(meta['molecule']).stem}, {meta['basis']}, {meta['xc']} (grid level "
        f"{meta['grid_level']}). wall_seconds: one build at the root (median), broadcast, "
        "builds and reduction; speedup over the fewest ranks' best; imbalance: the slowest "
        "rank's build time over the mean.\n\n"
    )
    Path(a.out_table[1]).write_text(head + df.to_markdown(index=False, floatfmt=".4g") + "\n")
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    for ax, engine in zip(axes, ("jk", "xc")):
        for schedule, style in (("pull", "-o"), ("static", "--s")):
            sel = df[(df["engine"] == engine) & (df["schedule"] == schedule)]
            ax.plot(sel["ranks"], sel["speedup"], style, label=schedule)
        ranks = sorted(df["ranks"].unique())
        ax.plot(ranks, [r / ranks[0] for r in ranks], ":", color="grey", label="ideal")
        ax.set_title(f"{engine} (measured)")
        ax.set_xlabel("ranks")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("speedup")
    fig.tight_layout()
    fig.savefig(a.out_figure, dpi=120)


if __name__ == "__main__":
    main()
