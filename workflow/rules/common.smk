# Shared helpers of the pipeline's rule files.
import sys
from pathlib import Path

RESULTS = config["results_dir"]
REPORTS = config["reports_dir"]
MOLECULES = config["molecules_dir"]
KERNELS = config["kernels_dir"]
SCRIPTS = Path(workflow.basedir) / "workflow" / "scripts"
PY = sys.executable


def published(*paths):
    """The reports/ copies of results/ files: what `rule all` asks for."""
    return [f"{REPORTS}/{p}" for p in paths]


rule publish:
    """Copy a finished table or plot from results/ into the tracked reports/ tree."""
    input:
        f"{RESULTS}/{{path}}",
    output:
        f"{REPORTS}/{{path}}",
    wildcard_constraints:
        path=r"(?!gpu/).+",
    localrule: True
    shell:
        "cp {input} {output}"
