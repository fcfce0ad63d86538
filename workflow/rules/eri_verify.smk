# ERI verification: the engine against PySCF (libcint) over molecule x basis x output form, per
# backend (reference = the NumPy evaluator, cpu = the generated C++ kernels), with 40-digit
# adjudication of every class that misses the tolerance; the first-derivative classes of the
# gradients (int2e_ip1 / int2e_ip2) up to verify.deriv_max_total likewise.
from qcbench.eri.reporting.verification import verification_cost, verified_classes
from qcbench.partition import balanced_groups

VERIFY = f"{RESULTS}/eri/verify"
VERIFY_CONFIG = config["eri"]["verify"]
VERIFY_BACKENDS = VERIFY_CONFIG["backends"]
VERIFY_SETS = {s["name"]: s for s in VERIFY_CONFIG["sets"]}
# one job per group of classes over every set, basis, form and backend that covers them: a class
# is orchestrated once per form, and an element both backends miss is adjudicated once
VERIFY_CLASSES = verified_classes(
    config["eri"]["lmax"], max(VERIFY_BACKENDS.values()), VERIFY_CONFIG["deriv_max_total"]
)
VERIFY_GROUPS = balanced_groups(
    VERIFY_CLASSES,
    lambda cls: verification_cost(cls, [b for b, top in VERIFY_BACKENDS.items() if cls.total <= top]),
    VERIFY_CONFIG["groups"],
)
VERIFY_TOLERANCE, VERIFY_DERIV_TOLERANCE = (
    " ".join(str(VERIFY_CONFIG[which][k]) for k in ("abs", "rel", "rel_floor"))
    for which in ("tolerance", "deriv_tolerance")
)
VERIFY_SET_ARGS = " ".join(
    f"--set {name} {s['molecule']} "
    + ",".join("cartesian" if c else "spherical" for c in dict.fromkeys(s["cartesian"]))
    + " "
    + " ".join(s["bases"])
    for name, s in VERIFY_SETS.items()
)
VERIFY_SET_FILES = [f"{name}/errors.{ext}" for name in VERIFY_SETS for ext in ("csv", "md")]
VERIFY_FILES = ["SUMMARY.md", "coverage.csv", "coverage.md", *VERIFY_SET_FILES]
ERI_VERIFY_REPORTS = published(
    *(f"eri/verify/{backend}/{name}" for backend in VERIFY_BACKENDS for name in VERIFY_FILES)
)


rule verify_eri_group:
    """Per-class errors of one group of classes on every set, basis, form and backend; fails on
    a class that is wrong against both PySCF and the exact value."""
    output:
        f"{VERIFY}/jobs/{{group}}.csv",
    params:
        classes=lambda wc: " ".join(c.tag for c in VERIFY_GROUPS[int(wc.group)]),
        backends=" ".join(f"{b}:{top}" for b, top in VERIFY_BACKENDS.items()),
        per_class=VERIFY_CONFIG["per_class"],
        seed=VERIFY_CONFIG["seed"],
        tolerance=VERIFY_TOLERANCE,
    # the longest jobs of the pipeline: start them first so shorter ones fill the cores last
    priority: 1
    wildcard_constraints:
        group=r"\d+",
    log:
        f"{RESULTS}/logs/eri/verify/group{{group}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/eri/verify/group{{group}}.tsv"
    shell:
        # the C++ kernels compile on first use into the project's kernel library
        "FUSIONRCG_KERNEL_DIR={KERNELS} {PY} {SCRIPTS}/eri_verify_group.py"
        " --classes {params.classes} {VERIFY_SET_ARGS} --backends {params.backends}"
        " --molecules-dir {MOLECULES} --per-class {params.per_class} --seed {params.seed}"
        " --tolerance {params.tolerance} --deriv-tolerance {VERIFY_DERIV_TOLERANCE}"
        " --out {output} > {log} 2>&1"


rule verify_eri_summary:
    """Per-set error tables, coverage per class and the summary of one backend; fails when a
    class is verified on fewer than min_molecules molecules in either form."""
    input:
        expand(f"{VERIFY}/jobs/{{group}}.csv", group=range(len(VERIFY_GROUPS))),
    output:
        summary=report(
            f"{VERIFY}/{{backend}}/SUMMARY.md",
            caption="../report/eri_verify_summary.rst",
            category="ERI verification",
            subcategory="{backend}",
        ),
        coverage=report(
            f"{VERIFY}/{{backend}}/coverage.csv",
            caption="../report/eri_verify_coverage.rst",
            category="ERI verification",
            subcategory="{backend}",
        ),
        coverage_md=f"{VERIFY}/{{backend}}/coverage.md",
        errors=[
            report(
                f"{VERIFY}/{{backend}}/{name}/errors.csv",
                caption="../report/eri_verify_errors.rst",
                category="ERI verification",
                subcategory="{backend}",
                labels={"set": name},
            )
            for name in VERIFY_SETS
        ],
        errors_md=[f"{VERIFY}/{{backend}}/{name}/errors.md" for name in VERIFY_SETS],
    params:
        lmax=config["eri"]["lmax"],
        max_total=lambda wc: VERIFY_BACKENDS[wc.backend],
        min_molecules=VERIFY_CONFIG["min_molecules"],
        tolerance=VERIFY_TOLERANCE,
    wildcard_constraints:
        backend="|".join(VERIFY_BACKENDS),
    log:
        f"{RESULTS}/logs/eri/verify/{{backend}}/summary.log",
    benchmark:
        f"{RESULTS}/benchmarks/eri/verify/{{backend}}/summary.tsv"
    shell:
        "{PY} {SCRIPTS}/eri_verify_summary.py --errors {input} --backend {wildcards.backend}"
        " --lmax {params.lmax} --max-total {params.max_total}"
        " --deriv-max-total {VERIFY_CONFIG[deriv_max_total]}"
        " --deriv-tolerance {VERIFY_DERIV_TOLERANCE}"
        " --min-molecules {params.min_molecules} --tolerance {params.tolerance}"
        " --out-dir {VERIFY}/{wildcards.backend} --out-coverage {output.coverage}"
        " {output.coverage_md} --out-summary {output.summary} > {log} 2>&1"
