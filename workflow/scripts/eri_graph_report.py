"""Merge the group tables, draw the figures, write SUMMARY.md; fail if the liveness acceptance
check does not hold."""

import argparse
import sys
from pathlib import Path

import pandas as pd

from qcbench.eri.reporting import graph_figures, graph_summary
from qcbench.eri.reporting.graph_tables import acceptance_violations
from qcbench.tables import write_table

CLASS_ORDER = ["total", "la", "lb", "lc", "ld"]


def merged(paths: list[str]) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plans", nargs="+", required=True, help="group plan CSVs")
    parser.add_argument("--liveness", nargs="+", required=True, help="group liveness CSVs")
    parser.add_argument("--profile", required=True, help="profile CSV")
    parser.add_argument("--paper-quartets", nargs="+", required=True)
    parser.add_argument("--min-total", type=int, required=True)
    parser.add_argument("--variants", nargs="+", required=True, help="row order of plans")
    parser.add_argument("--out-plans", nargs=2, required=True, metavar=("CSV", "MD"))
    parser.add_argument("--out-liveness", nargs=2, required=True, metavar=("CSV", "MD"))
    parser.add_argument("--out-axis-figure", required=True)
    parser.add_argument("--out-dsa-figure", required=True)
    parser.add_argument("--out-profile-figure", required=True)
    parser.add_argument("--out-tier-figure", required=True)
    parser.add_argument("--out-summary", required=True)
    args = parser.parse_args()

    plans = merged(args.plans)
    variant_rank = {v: i for i, v in enumerate(args.variants)}
    plans = plans.assign(
        _variant=plans["variant"].map(variant_rank), _cart=~plans["spherical"]
    ).sort_values([*CLASS_ORDER, "_cart", "_variant"])
    plans = plans.drop(columns=["_variant", "_cart"]).reset_index(drop=True)
    liveness = merged(args.liveness)
    liveness = liveness.sort_values(["canonical", *CLASS_ORDER], ascending=[False] + [True] * 5)
    liveness = liveness.reset_index(drop=True)
    write_table(plans, *args.out_plans)
    write_table(liveness, *args.out_liveness)

    quartets = args.paper_quartets
    graph_figures.axis_priority_figure(liveness, quartets, args.out_axis_figure)
    graph_figures.dsa_figure(liveness, quartets, args.out_dsa_figure)
    graph_figures.profile_figure(pd.read_csv(args.profile), args.out_profile_figure)
    graph_figures.tier_figure(plans, args.out_tier_figure)
    text = graph_summary.summary_markdown(plans, liveness, quartets, args.min_total)
    Path(args.out_summary).write_text(text + "\n")

    bad = acceptance_violations(liveness[liveness["canonical"]], args.min_total)
    if not bad.empty:
        sys.exit(
            "acceptance check failed: axis priority + DSA does not lower the VRR PeakLive "
            f"below conventional + topological on {', '.join(bad['class'])}"
        )


if __name__ == "__main__":
    main()
