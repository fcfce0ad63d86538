# ERI kernels on the GPU: tables, Figs. 5(b)/6/7/8 and a summary beside the paper's A100 figures,
# from the GPU campaign's records committed under reports/gpu/eri (python -m qcbench.eri.campaign
# bench / verify on the GPU machine). Part of `rule all` once those records are committed.
ERI_GPU = f"{REPORTS}/gpu/eri"
ERI_GPU_RECORDS = [
    f"{ERI_GPU}/{name}"
    for name in ("measurements.jsonl", "device.json", "verify_gpu.jsonl", "verify_device.json")
]
# later runs that re-measured some kernels: their records replace the campaign's
ERI_GPU_REMEASURED = config["eri"]["gpu"]["remeasured"]
ERI_GPU_RECORDS += [
    f"{ERI_GPU}/{sub}/{name}"
    for sub in ERI_GPU_REMEASURED
    for name in ("measurements.jsonl", "device.json")
]
ERI_GPU_DIR = f"{RESULTS}/eri/gpu"
ERI_GPU_TABLES = ["throughput", "ablations", "tiers", "tier2_options", "tier1_peak", "verification"]
ERI_GPU_FIGURES = ["fig5b_axis.png", "fig6_dsa.png", "fig7_spherical.png", "fig8_tiers.png"]
ERI_GPU_FILES = [f"{t}.{ext}" for t in ERI_GPU_TABLES for ext in ("csv", "md")]
ERI_GPU_FILES += ERI_GPU_FIGURES + ["SUMMARY.md"]
ERI_GPU_REPORTS = (
    published(*(f"eri/gpu/{name}" for name in ERI_GPU_FILES))
    if all(Path(p).exists() for p in ERI_GPU_RECORDS)
    else []
)


rule eri_gpu_reports:
    """Throughput, ablation, tier and verification tables, the four figures and SUMMARY.md."""
    input:
        records=ERI_GPU_RECORDS,
        plans=f"{GRAPH}/plans.csv",
    output:
        **{
            f"{t}{suffix}": f"{ERI_GPU_DIR}/{t}.{ext}"
            for t in ERI_GPU_TABLES
            for suffix, ext in (("", "csv"), ("_md", "md"))
        },
        **{
            name.split("_")[0]: report(
                f"{ERI_GPU_DIR}/{name}", caption="../report/eri_gpu.rst", category="ERI GPU"
            )
            for name in ERI_GPU_FIGURES
        },
        summary=report(
            f"{ERI_GPU_DIR}/SUMMARY.md", caption="../report/eri_gpu.rst", category="ERI GPU"
        ),
    params:
        quartets=" ".join(PAPER_QUARTETS),
        goals=GPU_CONFIG["goals"],
        mid=" ".join(map(str, GPU_CONFIG["goals"]["mid_totals"])),
        remeasured=" ".join(ERI_GPU_REMEASURED),
    log:
        f"{RESULTS}/logs/eri/gpu/report.log",
    shell:
        "{PY} {SCRIPTS}/eri_gpu_report.py --results {ERI_GPU} --plans {input.plans}"
        " --remeasured {params.remeasured}"
        " --paper-quartets {params.quartets} --lmax {config[eri][lmax]}"
        " --tier-choice-goal {params.goals[tier_choice]}"
        " --peak-goal {params.goals[peak_fraction]} --mid-totals {params.mid}"
        " --out-throughput {output.throughput} {output.throughput_md}"
        " --out-ablations {output.ablations} {output.ablations_md}"
        " --out-tiers {output.tiers} {output.tiers_md}"
        " --out-tier2-options {output.tier2_options} {output.tier2_options_md}"
        " --out-peak {output.tier1_peak} {output.tier1_peak_md}"
        " --out-verification {output.verification} {output.verification_md}"
        " --out-figures {output.fig5b} {output.fig6} {output.fig7} {output.fig8}"
        " --out-summary {output.summary} > {log} 2>&1"
