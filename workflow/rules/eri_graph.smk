# ERI recurrence graphs: orchestration statistics of every class under every variant, the
# liveness side of FusionRCG Figs. 5(a) and 6, and the tier model (Section III-C).
from qcbench.eri.reporting.graph_tables import graph_classes, orchestration_cost, quartets_within
from qcbench.partition import balanced_groups

GRAPH = f"{RESULTS}/eri/graph"
GRAPH_CONFIG = config["eri"]["graph_stats"]
PAPER_QUARTETS = quartets_within(GRAPH_CONFIG["paper_quartets"], config["eri"]["lmax"])
# one job per group of classes of similar orchestration cost
GRAPH_GROUPS = balanced_groups(
    graph_classes(config["eri"]["lmax"], PAPER_QUARTETS),
    orchestration_cost,
    GRAPH_CONFIG["groups"],
)
GRAPH_FILES = {
    "plans": "plans.csv",
    "plans_md": "plans.md",
    "liveness": "liveness.csv",
    "liveness_md": "liveness.md",
    "axis": "fig5a_axis_priority.png",
    "dsa": "fig6_dsa_liveness.png",
    "profile": "fig6_live_profile.png",
    "tiers": "tiers.png",
    "summary": "SUMMARY.md",
}
ERI_GRAPH_REPORTS = published(*(f"eri/graph/{name}" for name in GRAPH_FILES.values()))


def graph_output(key, caption):
    return report(
        f"{GRAPH}/{GRAPH_FILES[key]}",
        caption=f"../report/{caption}",
        category="ERI graphs",
    )


rule graph_stats_group:
    """Plan records (every variant, spherical; full, Cartesian) and liveness rows of one group."""
    output:
        plans=f"{GRAPH}/groups/{{group}}/plans.csv",
        liveness=f"{GRAPH}/groups/{{group}}/liveness.csv",
    params:
        classes=lambda wc: " ".join(",".join(map(str, c.ls)) for c in GRAPH_GROUPS[int(wc.group)]),
        variants=" ".join(config["eri"]["variants"]),
    wildcard_constraints:
        group=r"\d+",
    log:
        f"{RESULTS}/logs/eri/graph/group{{group}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/eri/graph/group{{group}}.tsv"
    shell:
        "{PY} {SCRIPTS}/eri_graph_group.py --classes {params.classes}"
        " --variants {params.variants} --plans {output.plans} --liveness {output.liveness}"
        " > {log} 2>&1"


rule graph_profile:
    """Live values per schedule step of the profile quartet (Fig. 6, liveness side)."""
    output:
        f"{GRAPH}/profile.csv",
    params:
        quartet=GRAPH_CONFIG["profile_quartet"],
    log:
        f"{RESULTS}/logs/eri/graph/profile.log",
    benchmark:
        f"{RESULTS}/benchmarks/eri/graph/profile.tsv"
    shell:
        "{PY} {SCRIPTS}/eri_graph_profile.py --quartet {params.quartet} --out {output}"
        " > {log} 2>&1"


rule graph_stats:
    """Merged tables, figures and SUMMARY.md; fails if the liveness acceptance check fails."""
    input:
        plans=expand(f"{GRAPH}/groups/{{group}}/plans.csv", group=range(len(GRAPH_GROUPS))),
        liveness=expand(f"{GRAPH}/groups/{{group}}/liveness.csv", group=range(len(GRAPH_GROUPS))),
        profile=rules.graph_profile.output[0],
    output:
        plans=graph_output("plans", "eri_graph_plans.rst"),
        plans_md=f"{GRAPH}/{GRAPH_FILES['plans_md']}",
        liveness=graph_output("liveness", "eri_graph_liveness.rst"),
        liveness_md=f"{GRAPH}/{GRAPH_FILES['liveness_md']}",
        axis=graph_output("axis", "eri_graph_axis.rst"),
        dsa=graph_output("dsa", "eri_graph_dsa.rst"),
        profile=graph_output("profile", "eri_graph_profile.rst"),
        tiers=graph_output("tiers", "eri_graph_tiers.rst"),
        summary=graph_output("summary", "eri_graph_summary.rst"),
    params:
        quartets=" ".join(PAPER_QUARTETS),
        variants=" ".join(config["eri"]["variants"]),
        min_total=GRAPH_CONFIG["acceptance_min_total"],
    log:
        f"{RESULTS}/logs/eri/graph/report.log",
    benchmark:
        f"{RESULTS}/benchmarks/eri/graph/report.tsv"
    shell:
        "{PY} {SCRIPTS}/eri_graph_report.py --plans {input.plans} --liveness {input.liveness}"
        " --profile {input.profile} --paper-quartets {params.quartets}"
        " --min-total {params.min_total} --variants {params.variants}"
        " --out-plans {output.plans} {output.plans_md}"
        " --out-liveness {output.liveness} {output.liveness_md}"
        " --out-axis-figure {output.axis} --out-dsa-figure {output.dsa}"
        " --out-profile-figure {output.profile} --out-tier-figure {output.tiers}"
        " --out-summary {output.summary} > {log} 2>&1"
