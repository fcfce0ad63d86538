# The CUDA kernel library built ahead of time with nvcc: one ptxas record per class (energy
# classes and the gradients' first-derivative classes), variant and epilogue, the ptxas table
# and figure, and the spill acceptance check. Part of `rule all` only
# where nvcc is found (common.smk).
from fusionrcg.angmom import canonical_classes
from qcbench.eri.reporting.kernel_builds import build_cost, build_jobs, deriv_classes
from qcbench.partition import balanced_groups

KERNEL_CONFIG = config["eri"]["kernels"]
KERNEL_RESULTS = f"{RESULTS}/eri/kernels"
KERNEL_JOBS = build_jobs(
    [c for c in canonical_classes(config["eri"]["lmax"]) if c.total <= KERNEL_CONFIG["max_total"]],
    config["eri"]["variants"],
    KERNEL_CONFIG["epilogues"],
) + build_jobs(
    deriv_classes(
        [c for c in canonical_classes(config["eri"]["lmax"])
         if c.total <= KERNEL_CONFIG["deriv_max_total"]]
    ),
    config["eri"]["variants"],
    KERNEL_CONFIG["deriv_epilogues"],
)
KERNEL_GROUPS = balanced_groups(
    KERNEL_JOBS,
    lambda job: build_cost(job, KERNEL_CONFIG["compile_timeout"]),
    KERNEL_CONFIG["groups"],
)
KERNEL_FILES = ["ptxas.csv", "ptxas.md", "ptxas.png", "SUMMARY.md"]


ERI_KERNEL_REPORTS = (
    published(*(f"eri/kernels/{name}" for name in KERNEL_FILES)) if NVCC else []
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
