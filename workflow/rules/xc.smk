# XC engine (KerneLDI) on the CPU: accuracy against PySCF's NumInt, block and pair fractions,
# the block-pair threshold sweep (paper Fig. 3) and timings against EXC-OpenBLAS; plus Figs. 2
# and 4 from the GPU benchmark's records (python -m qcbench.xc.bench): those in records/ and, on
# a GPU machine, a new run of the benchmark (resources gpu=1).
# Jobs run single-threaded (BLAS and OpenMP) so that timings do not depend on other jobs.
XC = config["xc"]
XC_DIR = f"{RESULTS}/xc"
XC_ACC = {s["name"]: s for s in XC["accuracy"]["sets"]}
XC_SWEEP = {s["name"]: s for s in XC["threshold_sweep"]["sets"]}
XC_TIMING = {s["name"]: s for s in XC["cpu_timing"]["sets"]}
XC_ENV = "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1"
XC_GPU_RUN = f"{RUNS}/xc-bench/bench"
XC_CPU_FILES = [
    "accuracy.csv",
    "accuracy.md",
    "fractions.csv",
    "fractions.md",
    "threshold_sweep.csv",
    "threshold_sweep.md",
    "fig3_threshold_sweep.png",
    "cpu_timing.csv",
    "cpu_timing.md",
    "basis_order.csv",
    "basis_order.md",
]
XC_GPU_FILES = ["gpu_fig2_speedup_vs_error.png", "gpu_fig4_time_vs_size.png"]
XC_GPU_FILES += ["gpu_timing.csv", "gpu_timing.md", "gpu_summary.md"]
XC_GPU_FILES += ["gpu_fig2_gradient.png", "gpu_fig4_gradient.png"]
XC_GPU_FILES += ["gpu_gradient_timing.csv", "gpu_gradient_timing.md"]
XC_REPORTS = published(*(f"xc/{f}" for f in XC_CPU_FILES + XC_GPU_FILES))


rule xc_accuracy:
    """CPU backend against PySCF's NumInt on the same grid: one molecule, every functional,
    restricted and unrestricted."""
    output:
        f"{XC_DIR}/accuracy/{{xset}}.csv",
    params:
        s=lambda wc: XC_ACC[wc.xset],
        kinds=lambda wc: " ".join(XC_ACC[wc.xset]["kinds"]),
        functionals=" ".join(XC["accuracy"]["functionals"]),
        forms=" ".join(XC["accuracy"]["density_forms"]),
        tolerance=f"{XC['accuracy']['tolerance']['exc']} {XC['accuracy']['tolerance']['vxc']}",
    wildcard_constraints:
        xset="|".join(XC_ACC),
    threads: 1
    log:
        f"{RESULTS}/logs/xc/accuracy/{{xset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/xc/accuracy/{{xset}}.tsv"
    shell:
        "{XC_ENV} {PY} {SCRIPTS}/xc_accuracy.py --name {wildcards.xset}"
        " --molecule {params.s[molecule]} --basis {params.s[basis]}"
        " --grid-level {params.s[grid_level]} --kinds {params.kinds}"
        " --functionals {params.functionals} --density-forms {params.forms}"
        " --block-size {XC[block_size]}"
        " --thresholds {XC[t_b]} {XC[t_d]} --tolerance {params.tolerance}"
        " --molecules-dir {MOLECULES} --out {output} > {log} 2>&1"


rule xc_accuracy_summary:
    """Accuracy and block/pair fraction tables; fails if a row misses the tolerance."""
    input:
        [f"{XC_DIR}/accuracy/{name}.csv" for name in XC_ACC],
    output:
        accuracy=report(
            f"{XC_DIR}/accuracy.csv",
            caption="../report/xc_accuracy.rst",
            category="XC engine",
        ),
        accuracy_md=f"{XC_DIR}/accuracy.md",
        fractions=report(
            f"{XC_DIR}/fractions.csv",
            caption="../report/xc_fractions.rst",
            category="XC engine",
        ),
        fractions_md=f"{XC_DIR}/fractions.md",
    log:
        f"{RESULTS}/logs/xc/accuracy_summary.log",
    shell:
        "{PY} {SCRIPTS}/xc_accuracy_summary.py --inputs {input}"
        " --accuracy {output.accuracy} {output.accuracy_md}"
        " --fractions {output.fractions} {output.fractions_md} > {log} 2>&1"


rule xc_basis_order:
    """Block structure and one M06-2X call under each basis order for one accuracy molecule."""
    output:
        f"{XC_DIR}/basis_order/{{xset}}.csv",
    params:
        s=lambda wc: XC_ACC[wc.xset],
        orders=" ".join(XC["basis_order"]["orders"]),
    wildcard_constraints:
        xset="|".join(XC_ACC),
    threads: 1
    log:
        f"{RESULTS}/logs/xc/basis_order/{{xset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/xc/basis_order/{{xset}}.tsv"
    shell:
        "{XC_ENV} {PY} {SCRIPTS}/xc_basis_order.py --molecule {params.s[molecule]}"
        " --basis {params.s[basis]} --grid-level {params.s[grid_level]}"
        " --xc {XC[basis_order][xc]} --orders {params.orders} --block-size {XC[block_size]}"
        " --thresholds {XC[t_b]} {XC[t_d]} --molecules-dir {MOLECULES} --out {output}"
        " > {log} 2>&1"


rule xc_basis_order_table:
    input:
        [f"{XC_DIR}/basis_order/{name}.csv" for name in XC_ACC],
    output:
        table=report(
            f"{XC_DIR}/basis_order.csv",
            caption="../report/xc_basis_order.rst",
            category="XC engine",
        ),
        table_md=f"{XC_DIR}/basis_order.md",
    log:
        f"{RESULTS}/logs/xc/basis_order_table.log",
    shell:
        "{PY} {SCRIPTS}/xc_table.py --inputs {input} --out {output.table} {output.table_md}"
        " > {log} 2>&1"


rule xc_threshold_sweep:
    """Exc and Vxc errors against the block-pair threshold t_d for one molecule."""
    output:
        f"{XC_DIR}/threshold_sweep/{{sset}}.csv",
    params:
        s=lambda wc: XC_SWEEP[wc.sset],
        t_d=" ".join(str(t) for t in XC["threshold_sweep"]["t_d"]),
    wildcard_constraints:
        sset="|".join(XC_SWEEP),
    threads: 1
    log:
        f"{RESULTS}/logs/xc/threshold_sweep/{{sset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/xc/threshold_sweep/{{sset}}.tsv"
    shell:
        "{XC_ENV} {PY} {SCRIPTS}/xc_threshold_sweep.py --molecule {params.s[molecule]}"
        " --basis {params.s[basis]} --grid-level {params.s[grid_level]}"
        " --xc {XC[threshold_sweep][xc]} --t-d {params.t_d} --block-size {XC[block_size]}"
        " --t-b {XC[t_b]} --molecules-dir {MOLECULES} --out {output} > {log} 2>&1"


rule xc_threshold_figure:
    """KerneLDI Fig. 3: error against t_d on three molecules."""
    input:
        [f"{XC_DIR}/threshold_sweep/{name}.csv" for name in XC_SWEEP],
    output:
        plot=report(
            f"{XC_DIR}/fig3_threshold_sweep.png",
            caption="../report/xc_threshold_sweep.rst",
            category="XC engine",
        ),
        table=f"{XC_DIR}/threshold_sweep.csv",
        table_md=f"{XC_DIR}/threshold_sweep.md",
    log:
        f"{RESULTS}/logs/xc/threshold_figure.log",
    shell:
        "{PY} {SCRIPTS}/xc_threshold_figure.py --inputs {input} --default-t-d {XC[t_d]}"
        " --plot {output.plot} --table {output.table} {output.table_md} > {log} 2>&1"


rule xc_cpu_timing:
    """The engine against EXC-OpenBLAS and PySCF's nr_rks on one molecule (one thread)."""
    output:
        f"{XC_DIR}/cpu_timing/{{tset}}.csv",
    params:
        s=lambda wc: XC_TIMING[wc.tset],
    wildcard_constraints:
        tset="|".join(XC_TIMING),
    threads: 1
    log:
        f"{RESULTS}/logs/xc/cpu_timing/{{tset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/xc/cpu_timing/{{tset}}.tsv"
    shell:
        "{XC_ENV} {PY} {SCRIPTS}/xc_cpu_timing.py --molecule {params.s[molecule]}"
        " --basis {params.s[basis]} --grid-level {params.s[grid_level]}"
        " --xc {XC[cpu_timing][xc]} --out {output} > {log} 2>&1"


rule xc_cpu_timing_table:
    input:
        [f"{XC_DIR}/cpu_timing/{name}.csv" for name in XC_TIMING],
    output:
        table=report(
            f"{XC_DIR}/cpu_timing.csv",
            caption="../report/xc_cpu_timing.rst",
            category="XC engine",
        ),
        table_md=f"{XC_DIR}/cpu_timing.md",
    log:
        f"{RESULTS}/logs/xc/cpu_timing_table.log",
    shell:
        "{PY} {SCRIPTS}/xc_table.py --inputs {input} --out {output.table} {output.table_md}"
        " > {log} 2>&1"


rule xc_gpu_bench:
    """The XC benchmark on the GPU (accuracy, SCF, the size sweep, def2-TZVP and the MADFT
    systems against GPU4PySCF and EXC-cuBLAS): a new xc-bench record."""
    output:
        directory(XC_GPU_RUN),
    params:
        kind="xc-bench",
        run="bench",
        summary="KerneLDI on the GPU: accuracy and SCF against PySCF/GPU4PySCF, the size "
        "sweep, def2-TZVP and the MADFT systems (Figs. 2 and 4)",
        options=json.dumps({"budget": XC["gpu"]["budget"]}),
    resources:
        gpu=1,
    log:
        f"{RESULTS}/logs/xc/gpu_bench.log",
    shell:
        "{PY} -m qcbench.xc.bench --out {output} --budget {XC[gpu][budget]} > {log} 2>&1"
        " && " + RECORD_MANIFEST + " >> {log} 2>&1"


rule xc_gpu_figures:
    """KerneLDI Figs. 2 and 4, their XC-gradient panels (Fig. 2 right, Fig. 4b) and a summary
    from the GPU benchmark's records."""
    input:
        tracked_records("xc-bench") + ([XC_GPU_RUN] if GPU else []),
    output:
        fig2=report(
            f"{XC_DIR}/gpu_fig2_speedup_vs_error.png",
            caption="../report/xc_gpu.rst",
            category="XC engine (GPU)",
        ),
        fig4=report(
            f"{XC_DIR}/gpu_fig4_time_vs_size.png",
            caption="../report/xc_gpu.rst",
            category="XC engine (GPU)",
        ),
        fig2_gradient=report(
            f"{XC_DIR}/gpu_fig2_gradient.png",
            caption="../report/xc_gpu.rst",
            category="XC engine (GPU)",
        ),
        fig4_gradient=report(
            f"{XC_DIR}/gpu_fig4_gradient.png",
            caption="../report/xc_gpu.rst",
            category="XC engine (GPU)",
        ),
        table=f"{XC_DIR}/gpu_timing.csv",
        table_md=f"{XC_DIR}/gpu_timing.md",
        gradient_table=f"{XC_DIR}/gpu_gradient_timing.csv",
        gradient_table_md=f"{XC_DIR}/gpu_gradient_timing.md",
        summary=f"{XC_DIR}/gpu_summary.md",
    params:
        roots=" ".join(RECORD_ROOTS),
    log:
        f"{RESULTS}/logs/xc/gpu_figures.log",
    shell:
        "{PY} {SCRIPTS}/xc_gpu_figures.py --records {params.roots} --fig2 {output.fig2}"
        " --fig4 {output.fig4} --table {output.table} {output.table_md}"
        " --fig2-gradient {output.fig2_gradient} --fig4-gradient {output.fig4_gradient}"
        " --gradient-table {output.gradient_table} {output.gradient_table_md}"
        " --summary {output.summary} > {log} 2>&1"
