"""The scaling model's table and plot (``python -m qcbench.dist model``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from .model import PAPER, Links, nao_of, parse_formula, predict, scaled_tasks

COLUMNS = ("engine", "system", "ranks", "schedule", "seconds", "communication_seconds",
           "speedup", "efficiency", "paper_efficiency")  # fmt: skip


def model_rows(a) -> tuple[list[dict], list[str]]:
    """The predicted rows of both engines, and the notes that state what they rest on."""
    costs = json.loads(Path(a.costs).read_text())
    latency = a.latency_s
    notes = []
    if a.comm:
        comm = json.loads(Path(a.comm).read_text())
        latency = comm["latency_seconds"]
        notes.append(f"latency {latency:.2e} s measured between {comm['ranks']} ranks "
                     f"({comm['via']})")  # fmt: skip
    links = Links(a.gpus_per_node, a.nvlink_gbs, a.infiniband_gbs, latency, a.fetch_s)
    composition = parse_formula(a.formula)
    rows = []
    for engine, basis, exponent, mats in (
        ("jk", a.jk_basis, a.jk_work_exponent, 2), ("xc", a.xc_basis, a.xc_work_exponent, 1)
    ):  # fmt: skip
        measured = costs[engine]
        nao_measured = costs[f"{engine}_nao"]
        nao = nao_of(composition, basis)
        ratio = nao / nao_measured
        work, count = ratio**exponent, ratio**a.task_exponent
        tasks = scaled_tasks([t["seconds"] for t in measured["tasks"]], work, count)
        # every rank's fixed part of a build: the measured one (calls, launches) and passes
        # over the (nao, nao) density and result at the device's memory bandwidth
        overhead = measured["overhead_seconds"] + a.matrix_passes * 8.0 * nao * nao / (
            a.device_gbs * 1e9
        )
        system = f"{a.target}/{basis}"
        found = predict(tasks, overhead, a.ranks, 8.0 * nao * nao, 8.0 * mats * nao * nao,
                        links)  # fmt: skip
        for row in found:
            paper = PAPER.get((engine, row["schedule"]), {}).get(row["ranks"])
            rows.append({"engine": engine, "system": system, **row,
                         "paper_efficiency": "" if paper is None else paper})  # fmt: skip
        notes.append(
            f"{engine}: {len(measured['tasks'])} tasks measured on {costs['molecule']}/"
            f"{costs[f'{engine}_basis']} ({nao_measured} AOs, {costs['backend']} backend), "
            f"scaled to {system} ({nao} AOs): work x{work:.3g} (nao ratio ** {exponent}), "
            f"{len(tasks)} tasks"
        )
    notes.append(
        f"links: {a.gpus_per_node} devices per node, NVLink {a.nvlink_gbs} GB/s, InfiniBand "
        f"{a.infiniband_gbs} GB/s, latency {latency:.2e} s, fetch-and-add {a.fetch_s:.2e} s; "
        f"fixed part of a build per rank: the measured one and {a.matrix_passes} passes over "
        f"an (nao, nao) matrix at {a.device_gbs} GB/s"
    )
    return rows, notes


def model_report(a) -> None:
    rows, notes = model_rows(a)
    csv_path, md_path = (Path(p) for p in a.out_table)
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows(rows)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    head = ["# Scaling model: predicted efficiency of the distributed J/K and XC builds", "",
            "Predicted from per-task costs measured on one device (see notes), not measured "
            "on many devices. Papers: FusionRCG 75% at 64 A100s (J/K); KerneLDI 92.4/87.8/79.2% "
            "at 16/32/64 V100s with dynamic scheduling, 89.7/82.1/64.4% without (XC).", ""]  # fmt: skip
    md_path.write_text("\n".join(head + lines + ["", "Notes:", ""]
                                 + [f"- {n}" for n in notes]) + "\n")  # fmt: skip
    _plot(rows, Path(a.out_figure))


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, engine in zip(axes, ("jk", "xc")):
        for schedule, style in (("pull", "-o"), ("static", "--s")):
            sel = [r for r in rows if r["engine"] == engine and r["schedule"] == schedule]
            ax.plot([r["ranks"] for r in sel], [r["efficiency"] for r in sel], style,
                    label=f"model, {schedule}")  # fmt: skip
            paper = PAPER.get((engine, schedule), {})
            if paper:
                ax.plot(list(paper), list(paper.values()), "x" if schedule == "pull" else "+",
                        ms=9, label=f"paper, {schedule}")  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_title(sel[0]["system"] if sel else engine)
        ax.set_xlabel("devices")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("parallel efficiency")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
