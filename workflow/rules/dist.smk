# Distributed J/K and XC (qcdist) over MPI ranks, one per GPU where there are GPUs (the CPU
# backend otherwise). `snakemake ablation_no_scheduling`: the same builds with the tasks pulled
# from the shared counter and with the static partition, on each rank count of the config,
# measured here: a table of wall times and load imbalance, and the measured scaling plot.
# `snakemake scaling_model`: per-task costs measured on one device and the broadcast/reduction
# costs between two ranks, fed to the scaling model for 8-64 devices (table and plot beside the
# papers' numbers). A distributed rule starts its ranks as "{resources.mpi} -n {resources.tasks}"
# (config dist.launcher; srun under profiles/slurm). On a GPU machine the measurements also
# become a `dist` record; elsewhere the reports read the newest tracked one where it holds the
# file (the GPU's numbers), and measure on the CPU backend what it does not hold.
from qcbench.dist.records import newest as newest_dist_record

DIST = config["dist"]
DIST_DIR = f"{RESULTS}/dist"
DIST_BENCH = f"{PY} -m qcbench.dist"
ABL = DIST["ablation"]
OVERHEAD = DIST["overhead"]
MODEL = DIST["model"]
DIST_GPU_RUN = f"{RUNS}/dist/gpu"
DIST_RECORD = None if GPU else newest_dist_record([RECORDS])
DIST_REPORTS = published(
    "dist/ablation_no_scheduling.md",
    "dist/scaling_measured.png",
    "dist/one_rank_overhead.md",
    "dist/scaling_model.md",
    "dist/scaling_model.png",
) + ([DIST_GPU_RUN] if GPU else [])


def dist_input(name: str, measured: str) -> str:
    """The tracked GPU record's file ``name`` where there is one (and no GPU here), else the
    measurement this machine makes."""
    if DIST_RECORD is not None and DIST_RECORD.has(name):
        return str(DIST_RECORD.file(name))
    return measured


rule dist_ablation_run:
    """Pull against static on {wildcards.ranks} ranks: the J/K and XC builds timed."""
    output:
        f"{DIST_DIR}/ablation/ranks{{ranks}}.json",
    wildcard_constraints:
        ranks=r"\d+",
    resources:
        mpi=DIST["launcher"],
        tasks=lambda wc: int(wc.ranks),
        gpu=1 if GPU else 0,
    log:
        f"{RESULTS}/logs/dist/ablation_ranks{{ranks}}.log",
    shell:
        "{resources.mpi} -n {resources.tasks} {DIST_BENCH} ablation"
        " --molecule {ABL[molecule]} --basis {ABL[basis]} --xc {ABL[xc]}"
        " --grid-level {ABL[grid_level]} --task-pairs {ABL[task_pairs]}"
        " --repeats {ABL[repeats]} --out {output} > {log} 2>&1"


rule ablation_no_scheduling:
    """The no-scheduling ablation's table (CSV, markdown) and the measured scaling plot."""
    input:
        [dist_input(f"ablation_ranks{r}.json", f"{DIST_DIR}/ablation/ranks{r}.json")
         for r in ABL["ranks"]],
    output:
        table=f"{DIST_DIR}/ablation_no_scheduling.csv",
        table_md=f"{DIST_DIR}/ablation_no_scheduling.md",
        figure=f"{DIST_DIR}/scaling_measured.png",
    log:
        f"{RESULTS}/logs/dist/ablation_table.log",
    shell:
        "{PY} {SCRIPTS}/dist_ablation_table.py {input} --out-table {output.table}"
        " {output.table_md} --out-figure {output.figure} > {log} 2>&1"


rule dist_overhead:
    """One rank of the distributed path against the single-process engines."""
    output:
        f"{DIST_DIR}/one_rank_overhead.json",
    params:
        molecule=OVERHEAD["molecule"] if GPU else OVERHEAD["cpu_molecule"],
        backend="gpu" if GPU else "cpu",
    resources:
        mpi=DIST["launcher"],
        gpu=1 if GPU else 0,
    log:
        f"{RESULTS}/logs/dist/overhead.log",
    shell:
        "{resources.mpi} -n 1 {DIST_BENCH} overhead --molecule {params.molecule}"
        " --basis {OVERHEAD[basis]} --xc {OVERHEAD[xc]} --grid-level {OVERHEAD[grid_level]}"
        " --repeats {OVERHEAD[repeats]} --backend {params.backend} --out {output} > {log} 2>&1"


rule dist_overhead_table:
    """The one-rank overhead as a markdown table."""
    input:
        dist_input("one_rank_overhead.json", rules.dist_overhead.output[0]),
    output:
        f"{DIST_DIR}/one_rank_overhead.md",
    log:
        f"{RESULTS}/logs/dist/overhead_table.log",
    shell:
        "{DIST_BENCH} overhead-table --json {input} --out {output} > {log} 2>&1"


rule dist_record:
    """The GPU's distributed measurements as a new `dist` record with its manifest."""
    input:
        overhead=rules.dist_overhead.output[0],
        costs=f"{DIST_DIR}/model/task_costs.json",
        comm=f"{DIST_DIR}/model/communication.json",
        ablation=expand(f"{DIST_DIR}/ablation/ranks{{ranks}}.json", ranks=ABL["ranks"]),
    output:
        directory(DIST_GPU_RUN),
    params:
        kind="dist",
        run="dist",
        summary="qcdist on one GPU: one rank against the single-process engines, per-task "
        "costs and communication for the scaling model, pull against static on 1-4 ranks",
        options=json.dumps(DIST),
        ranks=" ".join(str(r) for r in ABL["ranks"]),
    log:
        f"{RESULTS}/logs/dist/record.log",
    shell:
        "(mkdir -p {output} && cp {input.overhead} {input.costs} {input.comm} {output}/"
        " && for r in {params.ranks}; do cp {DIST_DIR}/ablation/ranks$r.json"
        " {output}/ablation_ranks$r.json; done"
        " && {DIST_BENCH} device --command 'snakemake dist_record' --out {output}/device.json"
        " && " + RECORD_MANIFEST + ") > {log} 2>&1"


rule dist_measure:
    """Per-task costs of both engines on one device (one process)."""
    output:
        f"{DIST_DIR}/model/task_costs.json",
    params:
        m=MODEL["measure"],
        molecule=MODEL["measure"]["gpu_molecule" if GPU else "molecule"],
        task_pairs=MODEL["measure"]["gpu_task_pairs" if GPU else "task_pairs"],
        backend="gpu" if GPU else "cpu",
    resources:
        gpu=1 if GPU else 0,
    log:
        f"{RESULTS}/logs/dist/measure.log",
    shell:
        "{DIST_BENCH} measure --molecule {params.molecule}"
        " --jk-basis {params.m[jk_basis]} --xc-basis {params.m[xc_basis]}"
        " --grid-level {params.m[grid_level]} --task-pairs {params.task_pairs}"
        " --repeats {params.m[repeats]} --backend {params.backend} --out {output} > {log} 2>&1"


rule dist_comm:
    """Broadcast and reduction seconds between ranks (qcdist's own calls)."""
    output:
        f"{DIST_DIR}/model/communication.json",
    resources:
        mpi=DIST["launcher"],
        tasks=MODEL["comm_ranks"],
        gpu=1 if GPU else 0,
    log:
        f"{RESULTS}/logs/dist/comm.log",
    shell:
        "{resources.mpi} -n {resources.tasks} {DIST_BENCH} comm --out {output} > {log} 2>&1"


rule scaling_model:
    """Predicted speedup and efficiency of pull and static on 8-64 devices (ubiquitin)."""
    input:
        costs=dist_input("task_costs.json", rules.dist_measure.output[0]),
        comm=dist_input("communication.json", rules.dist_comm.output[0]),
    output:
        table=f"{DIST_DIR}/scaling_model.csv",
        table_md=f"{DIST_DIR}/scaling_model.md",
        figure=f"{DIST_DIR}/scaling_model.png",
    params:
        t=MODEL["target"],
        links=MODEL["links"],
        e=MODEL["exponents"],
        ranks=" ".join(str(r) for r in MODEL["ranks"]),
    log:
        f"{RESULTS}/logs/dist/model.log",
    shell:
        "{DIST_BENCH} model --costs {input.costs} --comm {input.comm}"
        " --target {params.t[name]} --formula {params.t[formula]}"
        " --jk-basis {params.t[jk_basis]} --xc-basis {params.t[xc_basis]} --ranks {params.ranks}"
        " --gpus-per-node {params.links[gpus_per_node]} --nvlink-gbs {params.links[nvlink_gbs]}"
        " --infiniband-gbs {params.links[infiniband_gbs]} --fetch-s {params.links[fetch_s]}"
        " --jk-work-exponent {params.e[jk_work]} --xc-work-exponent {params.e[xc_work]}"
        " --task-exponent {params.e[tasks]} --out-table {output.table} {output.table_md}"
        " --out-figure {output.figure} > {log} 2>&1"
