"""Tables, Figs. 5(b)/6/7/8 and SUMMARY.md from the GPU campaign's records (eri-bench and
eri-verify records under each root, qcbench.records)."""

import argparse
from pathlib import Path

import pandas as pd

from fusionrcg.angmom import canonical_classes
from qcbench.eri.reporting import gpu_figures, gpu_results, gpu_summary
from qcbench.records import discover
from qcbench.tables import write_table

TITLES = {
    "axis": "Throughput gain from axis priority (cf. paper Fig. 5(b))",
    "dsa": "Throughput and speedup from DSA scheduling (cf. paper Fig. 6)",
    "spherical": "Throughput speedup from spherical fusion (cf. paper Fig. 7)",
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--records", nargs="+", required=True, help="record roots, e.g. records")
    p.add_argument("--plans", required=True, help="graph plan records (the model's tiers)")
    p.add_argument("--paper-quartets", nargs="+", required=True)
    p.add_argument("--lmax", type=int, required=True)
    p.add_argument("--tier-choice-goal", type=float, required=True)
    p.add_argument("--peak-goal", type=float, required=True)
    p.add_argument("--mid-totals", nargs=2, type=int, required=True)
    p.add_argument("--out-throughput", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--out-tiers", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--out-tier2-options", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--out-peak", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--out-ablations", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--out-verification", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--out-figures", nargs=4, required=True, metavar=("AXIS", "DSA", "SPH", "TIERS"))
    p.add_argument("--out-summary", required=True)
    a = p.parse_args()

    results = gpu_results.load_results(
        discover(a.records, "eri-bench"), discover(a.records, "eri-verify")
    )
    throughput = gpu_results.throughput_table(results.measurements, results.device["fp64_fma_peak"])
    write_table(throughput, *a.out_throughput)
    tiers_by_class = gpu_results.model_tiers(pd.read_csv(a.plans))
    ablations = {
        name: gpu_results.ablation_table(throughput, a.paper_quartets, name)
        for name in gpu_results.ABLATIONS
    }
    write_table(pd.concat(ablations.values(), ignore_index=True), *a.out_ablations)
    for (name, table), path in zip(ablations.items(), a.out_figures[:3]):
        gpu_figures.ablation_figure(table, TITLES[name], path)
    tiers = gpu_results.tier_table(throughput, tiers_by_class)
    write_table(tiers, *a.out_tiers)
    gpu_figures.tier_figure(tiers, a.out_figures[3])
    options = gpu_results.tier2_options_table(throughput)
    write_table(options, *a.out_tier2_options)
    peak = gpu_results.tier1_peak_table(throughput, tiers_by_class)
    write_table(peak, *a.out_peak)
    verification = gpu_results.verification_table(results.verification)
    write_table(verification, *a.out_verification)
    goals = gpu_summary.Goals(a.tier_choice_goal, a.peak_goal, tuple(a.mid_totals))
    text = gpu_summary.summary_markdown(
        throughput, ablations, tiers, options, peak, verification, canonical_classes(a.lmax),
        results, goals,
    )  # fmt: skip
    Path(a.out_summary).write_text(text + "\n")


if __name__ == "__main__":
    main()
