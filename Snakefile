# Reproduces the project's results: generated ERI graphs and kernels (FusionRCG), the XC engine
# (KerneLDI), their verification against PySCF and their benchmarks. Every stage computes into
# results/ and publishes its tables and plots into reports/ (see README.md).
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


# the kernel builds need nvcc and the GPU reports committed GPU records: each is empty without
rule all:
    input:
        ERI_GRAPH_REPORTS,
        ERI_VERIFY_REPORTS,
        ERI_KERNEL_REPORTS,
        ERI_GPU_REPORTS,
        XC_REPORTS,
