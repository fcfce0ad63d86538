# The CUDA kernel library built ahead of time with nvcc: one ptxas record per class, variant and
# epilogue, the ptxas table and figure, and the spill acceptance check. Part of `rule all` only
# where nvcc is found. Also the GPU campaign's inputs and kernels (explicit targets, see README).
from fusionrcg.angmom import canonical_classes
from fusionrcg.library.compiler import CompileError, find_tool
from qcbench.eri.reporting.kernel_builds import build_cost, build_jobs
from qcbench.partition import balanced_groups

KERNEL_CONFIG = config["eri"]["kernels"]
KERNEL_RESULTS = f"{RESULTS}/eri/kernels"
KERNEL_JOBS = build_jobs(
    [c for c in canonical_classes(config["eri"]["lmax"]) if c.total <= KERNEL_CONFIG["max_total"]],
    config["eri"]["variants"],
    KERNEL_CONFIG["epilogues"],
)
KERNEL_GROUPS = balanced_groups(
    KERNEL_JOBS,
    lambda job: build_cost(job, KERNEL_CONFIG["compile_timeout"]),
    KERNEL_CONFIG["groups"],
)
KERNEL_FILES = ["ptxas.csv", "ptxas.md", "ptxas.png", "SUMMARY.md"]


def nvcc_found():
    try:
        return find_tool("nvcc", "NVCC")
    except CompileError:
        return None


if nvcc_found():
    ERI_KERNEL_REPORTS = published(*(f"eri/kernels/{name}" for name in KERNEL_FILES))
else:
    ERI_KERNEL_REPORTS = []
    print(
        "nvcc not found (PATH, NVCC, CUDA_HOME): the CUDA kernel build stage is skipped; "
        "the C++ kernels are still built and verified",
        file=sys.stderr,
    )


rule eri_kernel_build:
    """Generate and compile one group of kernels into the kernel library; a kernel that does
    not compile (or runs past the timeout) is recorded with its error."""
    output:
        f"{KERNEL_RESULTS}/groups/{{group}}.csv",
    params:
        jobs=lambda wc: " ".join(job.text() for job in KERNEL_GROUPS[int(wc.group)]),
        arch=KERNEL_CONFIG["arch"],
        timeout=KERNEL_CONFIG["compile_timeout"],
    wildcard_constraints:
        group=r"\d+",
    log:
        f"{RESULTS}/logs/eri/kernels/group{{group}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/eri/kernels/group{{group}}.tsv"
    shell:
        "{PY} {SCRIPTS}/eri_kernel_group.py --jobs {params.jobs} --kernel-dir {KERNELS}"
        " --arch {params.arch} --timeout {params.timeout} --out {output} > {log} 2>&1"


rule eri_kernel_report:
    """The ptxas table, figure and summary; fails if a Tier 1 kernel (variant full) with total
    up to spill_free_max_total spills or did not compile."""
    input:
        expand(f"{KERNEL_RESULTS}/groups/{{group}}.csv", group=range(len(KERNEL_GROUPS))),
    output:
        table=report(
            f"{KERNEL_RESULTS}/ptxas.csv",
            caption="../report/eri_kernels_ptxas.rst",
            category="ERI kernels",
        ),
        table_md=f"{KERNEL_RESULTS}/ptxas.md",
        figure=report(
            f"{KERNEL_RESULTS}/ptxas.png",
            caption="../report/eri_kernels_ptxas.rst",
            category="ERI kernels",
        ),
        summary=report(
            f"{KERNEL_RESULTS}/SUMMARY.md",
            caption="../report/eri_kernels_summary.rst",
            category="ERI kernels",
        ),
    params:
        limit=KERNEL_CONFIG["spill_free_max_total"],
        arch=KERNEL_CONFIG["arch"],
        timeout=KERNEL_CONFIG["compile_timeout"],
    log:
        f"{RESULTS}/logs/eri/kernels/report.log",
    shell:
        "{PY} {SCRIPTS}/eri_kernel_report.py --records {input}"
        " --spill-free-max-total {params.limit} --arch {params.arch} --timeout {params.timeout}"
        " --out-table {output.table} {output.table_md} --out-figure {output.figure}"
        " --out-summary {output.summary} > {log} 2>&1"


GPU_CONFIG = config["eri"]["gpu"]
GPU_INPUTS = f"{RESULTS}/eri/gpu/inputs"


rule eri_gpu_inputs:
    """The GPU campaign's measurement plan and segmented bases (needs PySCF, not a GPU)."""
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
    """Every kernel the campaign runs, compiled into the kernel library; a kernel that does not
    compile is recorded in the build log, not fatal."""
    input:
        rules.eri_gpu_inputs.output.plan,
    output:
        f"{RESULTS}/eri/gpu/kernels.jsonl",
    params:
        timeout=GPU_CONFIG["compile_timeout"],
        fallback=(
            ""
            if GPU_CONFIG["compile_fallback_ptxas_level"] is None
            else f"--fallback-ptxas-level {GPU_CONFIG['compile_fallback_ptxas_level']}"
        ),
    threads: GPU_CONFIG["kernel_jobs"]
    log:
        f"{RESULTS}/logs/eri/gpu/kernels.log",
    shell:
        # the campaign appends to its build log: start from an empty one
        "rm -f {output} && {PY} -m qcbench.eri.campaign kernels --inputs {GPU_INPUTS}"
        " --kernel-dir {KERNELS} --out {output} --timeout {params.timeout} {params.fallback}"
        " --jobs {threads} > {log} 2>&1"
