# ERI kernels on the GPU. The GPU campaign (python -m qcbench.eri.campaign): its inputs and
# kernels are made on any machine with nvcc; its measurements and its check against PySCF run
# on the GPU (resources gpu=1; part of `all` where a GPU is found, common.smk), each as a new
# record under results/records/<kind>/<run>/. The reports (tables, Figs. 5(b)/6/7/8, SUMMARY.md
# beside the paper's A100 figures) come from the records in records/ and, on a GPU machine,
# from those new runs. Each ablation of the design is a named target (ablation_no_dsa, ...):
# the full kernel against that variant on a few quartets, built, measured in one run and
# reported under results/eri/gpu/ablation/<variant>/.

GPU_CONFIG = config["eri"]["gpu"]
ERI_GPU_DIR = f"{RESULTS}/eri/gpu"
GPU_INPUTS = f"{ERI_GPU_DIR}/inputs"
CAMPAIGN_BENCH = f"{RUNS}/eri-bench/campaign"
CAMPAIGN_VERIFY = f"{RUNS}/eri-verify/campaign"
ABLATION = GPU_CONFIG["ablation"]
ABLATION_DIR = f"{ERI_GPU_DIR}/ablation"
ABLATED = [v for v in config["eri"]["variants"] if v != "full"]
ABLATION_FILES = ["ablation.csv", "ablation.md", "ablation.png"]
COMPILE = f"--timeout {GPU_CONFIG['compile_timeout']}" + (
    ""
    if GPU_CONFIG["compile_fallback_ptxas_level"] is None
    else f" --fallback-ptxas-level {GPU_CONFIG['compile_fallback_ptxas_level']}"
)


ERI_GPU_RUNS = (
    [CAMPAIGN_BENCH, CAMPAIGN_VERIFY, *(f"{RUNS}/eri-bench/ablation-{v}" for v in ABLATED)]
    if GPU
    else []
)
ERI_GPU_TABLES = ["throughput", "ablations", "tiers", "tier2_options", "tier1_peak", "verification"]
ERI_GPU_FIGURES = ["fig5b_axis.png", "fig6_dsa.png", "fig7_spherical.png", "fig8_tiers.png"]
ERI_GPU_FILES = [f"{t}.{ext}" for t in ERI_GPU_TABLES for ext in ("csv", "md")]
ERI_GPU_FILES += ERI_GPU_FIGURES + ["SUMMARY.md"]
ERI_GPU_REPORTS = published(*(f"eri/gpu/{name}" for name in ERI_GPU_FILES))
ERI_ABLATION_REPORTS = (
    published(*(f"eri/gpu/ablation/{v}/{name}" for v in ABLATED for name in ABLATION_FILES))
    if GPU
    else []
)


rule eri_gpu_reports:
    """Throughput, ablation, tier and verification tables, the four figures and SUMMARY.md."""
    input:
        records=tracked_records("eri-bench", "eri-verify") + ERI_GPU_RUNS,
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
        roots=" ".join(RECORD_ROOTS),
        quartets=" ".join(PAPER_QUARTETS),
        goals=GPU_CONFIG["goals"],
        mid=" ".join(map(str, GPU_CONFIG["goals"]["mid_totals"])),
    log:
        f"{RESULTS}/logs/eri/gpu/report.log",
    shell:
        "{PY} {SCRIPTS}/eri_gpu_report.py --records {params.roots} --plans {input.plans}"
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


rule eri_gpu_inputs:
    """The campaign's measurement plan and segmented bases (needs PySCF, not a GPU)."""
    output:
        plan=f"{GPU_INPUTS}/plan.json",
    params:
        quartets=";".join(PAPER_QUARTETS),
        tier_max_total=GPU_CONFIG["tier_max_total"],
    log:
        f"{RESULTS}/logs/eri/gpu/inputs.log",
    shell:
        "{PY} -m qcbench.eri.campaign prepare --out {GPU_INPUTS}"
        " --paper-quartets '{params.quartets}' --tier-max-total {params.tier_max_total}"
        " > {log} 2>&1"


rule eri_gpu_kernels:
    """Every kernel the campaign measures and verifies, compiled into the kernel library (needs
    nvcc, not a GPU); a kernel that does not compile is recorded in the build log, not fatal."""
    input:
        rules.eri_gpu_inputs.output.plan,
    output:
        f"{ERI_GPU_DIR}/kernels.jsonl",
    threads: GPU_CONFIG["kernel_jobs"]
    log:
        f"{RESULTS}/logs/eri/gpu/kernels.log",
    shell:
        # the campaign appends to its build log: start from an empty one
        "rm -f {output} && {PY} -m qcbench.eri.campaign kernels --inputs {GPU_INPUTS}"
        " --kernel-dir {KERNELS} --out {output} {COMPILE} --jobs {threads} > {log} 2>&1"


rule eri_gpu_bench:
    """The campaign's measurements on the GPU: a new eri-bench record."""
    input:
        plan=rules.eri_gpu_inputs.output.plan,
        kernels=rules.eri_gpu_kernels.output,
    output:
        directory(CAMPAIGN_BENCH),
    params:
        kind="eri-bench",
        run="campaign",
        summary="The GPU campaign: the paper's quartets in every variant (store) and both "
        f"tiers (J/K) on every class up to total {GPU_CONFIG['tier_max_total']}",
        options=json.dumps(
            {"budget": GPU_CONFIG["bench_budget"], "paper_quartets": PAPER_QUARTETS,
             "tier_max_total": GPU_CONFIG["tier_max_total"]}  # fmt: skip
        ),
    resources:
        gpu=1,
    log:
        f"{RESULTS}/logs/eri/gpu/bench.log",
    shell:
        "{PY} -m qcbench.eri.campaign bench --inputs {GPU_INPUTS} --kernel-dir {KERNELS}"
        " --out {output} --budget {GPU_CONFIG[bench_budget]} > {log} 2>&1"
        " && " + RECORD_MANIFEST + " >> {log} 2>&1"


rule eri_gpu_verify:
    """Every class up to (gg|gg) on the GPU against PySCF, and the first-derivative classes
    (int2e_ip1) up to the J/K engine's derivative l through the kernels it runs for them: a
    new eri-verify record."""
    input:
        rules.eri_gpu_kernels.output,
        # the J/K engine's derivative kernels (rule jk_kernels)
        f"{RESULTS}/jk/kernels_sm.done",
    output:
        directory(CAMPAIGN_VERIFY),
    params:
        kind="eri-verify",
        run="campaign",
        summary="Every canonical class up to (gg|gg) on the GPU against PySCF, water dimer in "
        "cc-pVQZ and ANO-RCC, spherical and Cartesian; the first-derivative classes (int2e_ip1) "
        "through the J/K engine's kernels, cc-pVQZ spherical",
        options=json.dumps({"deriv_lmax": config["jk"]["deriv_prebuild_lmax"]}),
    resources:
        gpu=1,
    log:
        f"{RESULTS}/logs/eri/gpu/verify.log",
    shell:
        "FUSIONRCG_KERNEL_DIR={KERNELS} {PY} -m qcbench.eri.campaign verify --out {output}"
        " --deriv-lmax {config[jk][deriv_prebuild_lmax]} > {log} 2>&1 && "
        + RECORD_MANIFEST + " >> {log} 2>&1"


rule eri_ablation_inputs:
    """The plan of one ablation: full and the variant, store epilogue, on the ablation's
    quartets whatever tier the model gives them."""
    output:
        plan=f"{ABLATION_DIR}/{{variant}}/inputs/plan.json",
    params:
        quartets=";".join(ABLATION["quartets"]),
    wildcard_constraints:
        variant="|".join(ABLATED),
    log:
        f"{RESULTS}/logs/eri/gpu/ablation/{{variant}}/inputs.log",
    shell:
        "{PY} -m qcbench.eri.campaign prepare --out {ABLATION_DIR}/{wildcards.variant}/inputs"
        " --paper-quartets '{params.quartets}' --tier-max-total -1"
        " --variants full,{wildcards.variant} > {log} 2>&1"


rule eri_ablation_kernels:
    """The kernels of one ablation, compiled into the kernel library (needs nvcc)."""
    input:
        rules.eri_ablation_inputs.output.plan,
    output:
        f"{ABLATION_DIR}/{{variant}}/kernels.jsonl",
    wildcard_constraints:
        variant="|".join(ABLATED),
    threads: GPU_CONFIG["kernel_jobs"]
    log:
        f"{RESULTS}/logs/eri/gpu/ablation/{{variant}}/kernels.log",
    shell:
        "rm -f {output} && {PY} -m qcbench.eri.campaign kernels"
        " --inputs {ABLATION_DIR}/{wildcards.variant}/inputs --kernel-dir {KERNELS}"
        " --out {output} {COMPILE} --bench-only --jobs {threads} > {log} 2>&1"


rule eri_ablation_bench:
    """Full and the variant measured in one run on the GPU: a new eri-bench record."""
    input:
        plan=rules.eri_ablation_inputs.output.plan,
        kernels=rules.eri_ablation_kernels.output,
    output:
        directory(f"{RUNS}/eri-bench/ablation-{{variant}}"),
    params:
        kind="eri-bench",
        run=lambda wc: f"ablation-{wc.variant}",
        summary=lambda wc: f"Ablation: full against {wc.variant} (store) on "
        + ", ".join(ABLATION["quartets"]),
        options=lambda wc: json.dumps(
            {"budget": ABLATION["budget"], "variants": ["full", wc.variant],
             "quartets": ABLATION["quartets"]}  # fmt: skip
        ),
    wildcard_constraints:
        variant="|".join(ABLATED),
    resources:
        gpu=1,
    log:
        f"{RESULTS}/logs/eri/gpu/ablation/{{variant}}/bench.log",
    shell:
        "{PY} -m qcbench.eri.campaign bench --inputs {ABLATION_DIR}/{wildcards.variant}/inputs"
        " --kernel-dir {KERNELS} --out {output} --budget {ABLATION[budget]} > {log} 2>&1"
        " && " + RECORD_MANIFEST + " >> {log} 2>&1"


rule eri_ablation_report:
    """Table and figure of one ablation from its record."""
    input:
        rules.eri_ablation_bench.output,
    output:
        table=report(
            f"{ABLATION_DIR}/{{variant}}/ablation.csv",
            caption="../report/eri_gpu_ablation.rst",
            category="ERI GPU ablations",
            subcategory="{variant}",
        ),
        table_md=f"{ABLATION_DIR}/{{variant}}/ablation.md",
        figure=report(
            f"{ABLATION_DIR}/{{variant}}/ablation.png",
            caption="../report/eri_gpu_ablation.rst",
            category="ERI GPU ablations",
            subcategory="{variant}",
        ),
    params:
        quartets=" ".join(ABLATION["quartets"]),
    wildcard_constraints:
        variant="|".join(ABLATED),
    log:
        f"{RESULTS}/logs/eri/gpu/ablation/{{variant}}/report.log",
    shell:
        "{PY} {SCRIPTS}/eri_ablation_report.py --record {input} --variant {wildcards.variant}"
        " --quartets {params.quartets} --out-table {output.table} {output.table_md}"
        " --out-figure {output.figure} > {log} 2>&1"


NO_GPU = (
    "needs a CUDA GPU with CuPy and nvcc; none found here "
    "(--config gpu=true forces the GPU stages)"
)

for _variant in ABLATED:
    _target = f"ablation_{_variant.replace('-', '_')}"
    if GPU:

        rule:
            name:
                _target
            input:
                [f"{ABLATION_DIR}/{_variant}/{name}" for name in ABLATION_FILES],
            localrule: True

    else:

        rule:
            name:
                _target
            localrule: True
            log:
                f"{RESULTS}/logs/eri/gpu/ablation/{_variant}/target.log",
            shell:
                f"echo '{_target} {NO_GPU}' | tee {{log}} >&2; exit 1"
