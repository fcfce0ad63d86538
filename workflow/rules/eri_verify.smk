# ERI verification: the engine against PySCF (libcint) over molecule x basis x output form,
# with 40-digit adjudication of every class that misses the tolerance.
VERIFY = f"{RESULTS}/eri/verify"
VERIFY_CONFIG = config["eri"]["verify"]
VERIFY_SETS = {s["name"]: s for s in VERIFY_CONFIG["sets"]}
# one job per set and output form; within a job classes are the outer loop over the bases
VERIFY_JOBS = [
    (name, "cartesian" if cart else "spherical")
    for name, s in VERIFY_SETS.items()
    for cart in dict.fromkeys(s["cartesian"])
]
VERIFY_TOLERANCE = " ".join(
    str(VERIFY_CONFIG["tolerance"][k]) for k in ("abs", "rel", "rel_floor")
)
VERIFY_SET_FILES = [f"{name}/errors.{ext}" for name in VERIFY_SETS for ext in ("csv", "md")]
VERIFY_FILES = ["SUMMARY.md", "coverage.csv", "coverage.md", *VERIFY_SET_FILES]
ERI_VERIFY_REPORTS = published(*(f"eri/verify/{name}" for name in VERIFY_FILES))


rule verify_eri_reference:
    """Per-class errors of one set in one output form; fails on a class that is wrong against
    both PySCF and the exact value."""
    output:
        f"{VERIFY}/jobs/{{vset}}/{{form}}.csv",
    params:
        molecule=lambda wc: VERIFY_SETS[wc.vset]["molecule"],
        bases=lambda wc: " ".join(VERIFY_SETS[wc.vset]["bases"]),
        cartesian=lambda wc: "--cartesian" if wc.form == "cartesian" else "",
        lmax=config["eri"]["lmax"],
        per_class=VERIFY_CONFIG["per_class"],
        seed=VERIFY_CONFIG["seed"],
        tolerance=VERIFY_TOLERANCE,
    # the longest jobs of the pipeline: start them first so shorter ones fill the cores last
    priority: 1
    wildcard_constraints:
        vset="|".join(VERIFY_SETS),
        form="spherical|cartesian",
    log:
        f"{RESULTS}/logs/eri/verify/{{vset}}_{{form}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/eri/verify/{{vset}}_{{form}}.tsv"
    shell:
        "{PY} {SCRIPTS}/eri_verify_set.py --name {wildcards.vset} --molecule {params.molecule}"
        " --bases {params.bases} {params.cartesian} --molecules-dir {MOLECULES}"
        " --lmax {params.lmax} --per-class {params.per_class} --seed {params.seed}"
        " --tolerance {params.tolerance} --out {output} > {log} 2>&1"


rule verify_eri_summary:
    """Per-set error tables, coverage per class and the combined summary; fails when a class
    is verified on fewer than min_molecules molecules in either form."""
    input:
        [f"{VERIFY}/jobs/{name}/{form}.csv" for name, form in VERIFY_JOBS],
    output:
        summary=report(
            f"{VERIFY}/SUMMARY.md",
            caption="../report/eri_verify_summary.rst",
            category="ERI verification",
        ),
        coverage=report(
            f"{VERIFY}/coverage.csv",
            caption="../report/eri_verify_coverage.rst",
            category="ERI verification",
        ),
        coverage_md=f"{VERIFY}/coverage.md",
        errors=[
            report(
                f"{VERIFY}/{name}/errors.csv",
                caption="../report/eri_verify_errors.rst",
                category="ERI verification",
                subcategory="errors per set",
                labels={"set": name},
            )
            for name in VERIFY_SETS
        ],
        errors_md=[f"{VERIFY}/{name}/errors.md" for name in VERIFY_SETS],
    params:
        lmax=config["eri"]["lmax"],
        min_molecules=VERIFY_CONFIG["min_molecules"],
        tolerance=VERIFY_TOLERANCE,
    log:
        f"{RESULTS}/logs/eri/verify/summary.log",
    benchmark:
        f"{RESULTS}/benchmarks/eri/verify/summary.tsv"
    shell:
        "{PY} {SCRIPTS}/eri_verify_summary.py --errors {input} --lmax {params.lmax}"
        " --min-molecules {params.min_molecules} --tolerance {params.tolerance}"
        " --out-dir {VERIFY} --out-coverage {output.coverage} {output.coverage_md}"
        " --out-summary {output.summary} > {log} 2>&1"
