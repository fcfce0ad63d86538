# Ab initio MD with both engines (qcscf.Calculator under ASE): every run of config `aimd.runs`
# with our engines, with our J/K and KerneLDI's dense XC baseline (EXC-cuBLAS on a GPU), and
# with the baseline SCF objects (the same settings), its trajectory and
# per-step log under results/aimd/<run>/<engines>/, and one table and figure over them (seconds
# per step, total-energy drift in NVE, temperature). Runs with `backend: gpu` need a GPU
# (resources gpu=1) and are left out of `all` where none is found.
AIMD = config["aimd"]
AIMD_DIR = f"{RESULTS}/aimd"
AIMD_RUNS = {r["name"]: r for r in AIMD["runs"] if r["backend"] == "cpu" or GPU}
AIMD_ENGINES = ("ours", "dense", "baseline")  # each engines choice of qcscf.Calculator
AIMD_FILES = ["aimd.csv", "aimd.md", "aimd_energy_temperature.png"]
AIMD_REPORTS = published(*(f"aimd/{f}" for f in AIMD_FILES))


def _aimd_options(wildcards):
    r = AIMD_RUNS[wildcards.run]
    return (
        f"--molecule {r['molecule']} --xc {r['xc']} --basis {r['basis']} --charge {r['charge']}"
        f" --spin {r['spin']} --backend {r['backend']} --grid-level {r['grid_level']}"
        f" --ensemble {r['ensemble']} --timestep-fs {r['timestep_fs']} --steps {r['steps']}"
        f" --temperature-k {r['temperature_k']}"
    )


rule aimd_run:
    """One MD trajectory: a run of config aimd.runs with our engines, the dense XC baseline's
    or the baseline's."""
    output:
        log=f"{AIMD_DIR}/{{run}}/{{engines}}/log.csv",
        info=f"{AIMD_DIR}/{{run}}/{{engines}}/run.json",
    wildcard_constraints:
        engines="|".join(AIMD_ENGINES),
    params:
        options=_aimd_options,
        out=lambda wc: f"{AIMD_DIR}/{wc.run}/{wc.engines}",
    resources:
        gpu=lambda wc: int(AIMD_RUNS[wc.run]["backend"] == "gpu"),
    log:
        f"{RESULTS}/logs/aimd/{{run}}_{{engines}}.log",
    shell:
        "{PY} -m qcbench.md run {params.options} --engines {wildcards.engines}"
        " --out {params.out} > {log} 2>&1"


rule aimd_report:
    """Seconds per MD step, NVE drift and temperature of every run, ours beside the baseline."""
    input:
        [f"{AIMD_DIR}/{run}/{e}/run.json" for run in AIMD_RUNS for e in AIMD_ENGINES],
    output:
        table=f"{AIMD_DIR}/aimd.csv",
        table_md=f"{AIMD_DIR}/aimd.md",
        figure=report(
            f"{AIMD_DIR}/aimd_energy_temperature.png",
            caption="../report/aimd.rst",
            category="Ab initio MD",
        ),
    params:
        runs=" ".join(f"{AIMD_DIR}/{run}/{e}" for run in AIMD_RUNS for e in AIMD_ENGINES),
    log:
        f"{RESULTS}/logs/aimd/report.log",
    shell:
        "{PY} -m qcbench.md report --runs {params.runs} --table {output.table}"
        " --table-md {output.table_md} --figure {output.figure} > {log} 2>&1"
