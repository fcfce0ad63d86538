# J/K for SCF (fusionrcg.JK, fusionrcg.apply). On every machine: J and K of the C++ backend,
# and their nuclear derivatives, against PySCF (python -m qcbench.scf.bench accuracy). On a GPU
# machine (resources gpu=1): the engine's kernels of every class built ahead, then one run of
# the SCF benchmark against GPU4PySCF in the same process (time per SCF iteration, J/K builds at
# mid-SCF and converged densities, energies, a large build, the host's share, analytic
# gradients), a new jk-scf record. The report (FusionRCG Figs. 9-10, tables, SUMMARY.md) comes
# from the records in records/ and, on a GPU machine, from that new run.
JK = config["jk"]
JK_GPU = JK["gpu"]
JK_DIR = f"{RESULTS}/jk"
JK_GPU_RUN = f"{RUNS}/jk-scf/scf"
DFT_GPU_RUN = f"{RUNS}/jk-scf/dft"
JK_FILES = [f"{t}.{ext}" for t in ("scf_iterations", "jk_builds", "jk_classes", "jk_phases",
                                   "jk_options", "jk_accuracy", "jk_gradients")
            for ext in ("csv", "md")]  # fmt: skip
JK_FILES += ["dft_scf.csv", "dft_scf.md", "fig5_dft_scf.png"]
JK_FILES += ["fig9a_ccpvdz.png", "fig9b_tz_qz.png", "fig10_average.png", "SUMMARY.md"]
JK_REPORTS = published(*(f"jk/{name}" for name in JK_FILES))
JK_BENCH = f"{PY} -m qcbench.scf.bench"
JK_SCF_OPTIONS = (
    f"--method {JK_GPU['method']} --conv-tol {JK_GPU['conv_tol']}"
    f" --direct-scf-tol {JK_GPU['direct_scf_tol']} --repeats {JK_GPU['repeats']}"
)


rule jk_accuracy_cpu:
    """J and K of the engine's C++ backend against PySCF's get_jk at tight screening, RHF and
    UHF mid-SCF densities, spherical and Cartesian."""
    output:
        f"{JK_DIR}/accuracy_cpu/records.jsonl",
    params:
        out=f"{JK_DIR}/accuracy_cpu",
        systems=" ".join(JK["accuracy"]["systems"]),
        deriv="--deriv" if JK["accuracy"]["deriv"] else "",
    log:
        f"{RESULTS}/logs/jk/accuracy_cpu.log",
    shell:
        "rm -f {output} && {JK_BENCH} accuracy --backend cpu --systems {params.systems}"
        " --direct-scf-tol {JK[accuracy][tol]} {params.deriv} --kernel-dir {KERNELS}"
        " --out {params.out} > {log} 2>&1"


rule jk_kernels:
    """The J/K engine's CUDA kernels of every class up to l = prebuild_lmax, and the long-range
    kernels of each of prebuild_omegas, built ahead so that the benchmark's setup times hold no
    compilation."""
    output:
        touch(f"{JK_DIR}/kernels_sm.done"),
    params:
        omegas=" ".join(str(w) for w in JK["prebuild_omegas"]),
    threads: GPU_CONFIG["kernel_jobs"]
    log:
        f"{RESULTS}/logs/jk/kernels.log",
    shell:
        "(set -e; {PY} -m fusionrcg prebuild --lmax {JK[prebuild_lmax]}"
        " --arch {config[eri][kernels][arch]} --deriv-lmax {JK[deriv_prebuild_lmax]}"
        " --kernel-dir {KERNELS} --jobs {threads};"
        " for w in {params.omegas}; do {PY} -m fusionrcg prebuild --lmax {JK[prebuild_lmax]}"
        " --arch {config[eri][kernels][arch]} --omega $w --kernel-dir {KERNELS}"
        " --jobs {threads}; done) > {log} 2>&1"


rule jk_scf_bench:
    """The SCF benchmark on the GPU against GPU4PySCF in the same process: a new jk-scf
    record. Each step runs whatever the one before it did (a failed step is in the log and
    leaves its rows out); the record is made if any step measured something."""
    input:
        f"{JK_DIR}/kernels_sm.done",
    output:
        directory(JK_GPU_RUN),
    params:
        kind="jk-scf",
        run="scf",
        summary="J/K for SCF against GPU4PySCF: time per SCF iteration and J/K builds "
        "(FusionRCG Figs. 9-10), energies, a large build, the host's share, analytic gradients",
        options=json.dumps(JK_GPU),
        dz=" ".join(JK_GPU["scf"]),
        large=" ".join(JK_GPU["scf_large"]["systems"]),
        energies=" ".join(JK_GPU["energies"]["systems"]),
        methods=" ".join(JK_GPU["energies"]["methods"]),
        memory=" ".join(JK_GPU["memory"]),
        host=" ".join(JK_GPU["host_share"]),
        gradient=" ".join(JK_GPU["gradient"]["systems"]),
        gradient_methods=" ".join(JK_GPU["gradient"]["methods"]),
        shared_scf=(
            f"--shared-scf {JK_GPU['gradient']['shared_scf']}"
            if JK_GPU["gradient"]["shared_scf"]
            else ""
        ),
    resources:
        gpu=1,
    log:
        f"{RESULTS}/logs/jk/scf_bench.log",
    shell:
        "(set -x; {JK_BENCH} energies --systems {params.energies} --methods {params.methods}"
        " --conv-tol {JK_GPU[energies][conv_tol]} --kernel-dir {KERNELS} --out {output};"
        " {JK_BENCH} scf --systems {params.dz} {JK_SCF_OPTIONS} --engine-options"
        " --kernel-dir {KERNELS} --out {output};"
        " {JK_BENCH} scf --systems {params.large} {JK_SCF_OPTIONS} --engine-options"
        " --max-cycle {JK_GPU[scf_large][max_cycle]} --repeats {JK_GPU[scf_large][repeats]}"
        " --kernel-dir {KERNELS} --out {output};"
        " {JK_BENCH} host-share --systems {params.host} --kernel-dir {KERNELS} --out {output};"
        " {JK_BENCH} memory --systems {params.memory} --kernel-dir {KERNELS} --out {output};"
        " for m in {params.gradient_methods}; do {JK_BENCH} gradient --systems"
        " {params.gradient} --method $m {params.shared_scf}"
        " --conv-tol {JK_GPU[energies][conv_tol]}"
        " --direct-scf-tol {JK_GPU[direct_scf_tol]} --repeats {JK_GPU[repeats]}"
        " --kernel-dir {KERNELS} --out {output}; done;"
        " test -s {output}/records.jsonl && " + RECORD_MANIFEST + ") > {log} 2>&1"


rule dft_scf_bench:
    """KerneLDI Fig. 5 on the GPU: the whole DFT SCF as GPU4PySCF runs it, with KerneLDI's XC,
    and with both engines, in one process: a new jk-scf record (run "dft")."""
    input:
        f"{JK_DIR}/kernels_sm.done",
    output:
        directory(DFT_GPU_RUN),
    params:
        kind="jk-scf",
        run="dft",
        summary="Whole DFT SCF against GPU4PySCF, XC engine alone and both engines (KerneLDI "
        "Fig. 5)",
        options=json.dumps(JK_GPU["dft"]),
        systems=" ".join(JK_GPU["dft"]["systems"]),
    resources:
        gpu=1,
    log:
        f"{RESULTS}/logs/jk/dft_bench.log",
    shell:
        "({JK_BENCH} dft --systems {params.systems} --xc {JK_GPU[dft][xc]}"
        " --grid-level {JK_GPU[dft][grid_level]} --conv-tol {JK_GPU[dft][conv_tol]}"
        " --direct-scf-tol {JK_GPU[direct_scf_tol]} --kernel-dir {KERNELS} --out {output};"
        " test -s {output}/records.jsonl && " + RECORD_MANIFEST + ") > {log} 2>&1"


rule jk_report:
    """FusionRCG Figs. 9-10, the J/K tables and SUMMARY.md from the jk-scf records and the CPU
    accuracy check."""
    input:
        tracked_records("jk-scf") + ([JK_GPU_RUN, DFT_GPU_RUN] if GPU else []),
        cpu=f"{JK_DIR}/accuracy_cpu/records.jsonl",
    output:
        report(f"{JK_DIR}/fig9a_ccpvdz.png", caption="../report/jk_scf.rst", category="J/K for SCF"),
        report(f"{JK_DIR}/fig9b_tz_qz.png", caption="../report/jk_scf.rst", category="J/K for SCF"),
        report(f"{JK_DIR}/fig10_average.png", caption="../report/jk_scf.rst", category="J/K for SCF"),
        report(f"{JK_DIR}/fig5_dft_scf.png", caption="../report/jk_scf.rst", category="J/K for SCF"),
        [f"{JK_DIR}/{name}" for name in JK_FILES if not name.endswith(".png")],
    params:
        roots=" ".join(RECORD_ROOTS),
    log:
        f"{RESULTS}/logs/jk/report.log",
    shell:
        "{PY} -m qcbench.scf.report --records {params.roots} --rows {input.cpu}"
        " --out {JK_DIR} > {log} 2>&1"
