# Reproduces the project's results: generated ERI graphs and kernels (FusionRCG), the XC engine
# (KerneLDI), their verification against PySCF and their benchmarks. Every stage computes into
# results/ (ignored by git); `snakemake publish` copies the reports into the tracked reports/.
# Where a CUDA GPU with CuPy and nvcc are found (or with --config gpu=true), `all` also runs the
# GPU stages: the ERI campaign, its verification, the named ablations, the XC benchmark and
# the SCF benchmark of the J/K engine against GPU4PySCF.
from snakemake.utils import min_version, validate

min_version("8.0")


configfile: "config/config.yaml"


validate(config, "config/schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/eri_graph.smk"
include: "workflow/rules/eri_verify.smk"
include: "workflow/rules/eri_kernels.smk"
include: "workflow/rules/eri_gpu.smk"
include: "workflow/rules/xc.smk"
include: "workflow/rules/jk.smk"
include: "workflow/rules/aimd.smk"
include: "workflow/rules/dist.smk"
include: "workflow/rules/records.smk"


# the kernel builds need nvcc, the GPU stages a GPU as well (common.smk)
rule all:
    default_target: True
    input:
        ERI_GRAPH_REPORTS,
        ERI_VERIFY_REPORTS,
        ERI_KERNEL_REPORTS,
        ERI_GPU_REPORTS,
        ERI_ABLATION_REPORTS,
        XC_REPORTS,
        JK_REPORTS,
        AIMD_REPORTS,
        DIST_REPORTS,
        INDEX,
