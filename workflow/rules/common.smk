# Shared helpers of the pipeline's rule files: paths, what this machine can run (nvcc, a CUDA
# GPU with CuPy), and the list of outputs `publish` copies into the tracked reports/.
import json
import subprocess
import sys
from pathlib import Path

from qcbench.records import KINDS, MANIFEST, discover
from qctoolchain import ToolNotFound, find_tool

RESULTS = config["results_dir"]
REPORTS = config["reports_dir"]
RECORDS = config["records_dir"]
MOLECULES = config["molecules_dir"]
KERNELS = config["kernels_dir"]
SCRIPTS = Path(workflow.basedir) / "workflow" / "scripts"
PY = sys.executable
# new records that the GPU rules make, one folder per run: results/records/<kind>/<run>/
RUNS = f"{RESULTS}/records"


def _nvcc():
    try:
        return find_tool("nvcc", "NVCC")
    except ToolNotFound:
        return None


def _cuda_gpus() -> int:
    """CUDA devices CuPy sees, asked in a child process so that this one holds no CUDA
    context; 0 without CuPy or a driver."""
    probe = "import cupy; print(cupy.cuda.runtime.getDeviceCount())"
    try:
        run = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    words = run.stdout.split()
    return int(words[-1]) if run.returncode == 0 and words and words[-1].isdigit() else 0


NVCC = _nvcc()
# config `gpu`: "auto" detects, true/false forces the GPU stages on or off (--config gpu=true)
GPU_SETTING = str(config["gpu"]).lower()
GPU = _cuda_gpus() > 0 if GPU_SETTING == "auto" else GPU_SETTING == "true"
if not NVCC:
    print(
        "nvcc not found (PATH, NVCC, CUDA_HOME): the CUDA kernel stage and the GPU stages are "
        "skipped; the C++ kernels are still built and verified",
        file=sys.stderr,
    )
elif not GPU:
    print(
        "no CUDA GPU with CuPy found: the GPU stages (campaign, ablations, XC and SCF benchmarks) are left "
        "out of `all`; the GPU reports are made from the records in records/ "
        "(--config gpu=true forces the GPU stages)",
        file=sys.stderr,
    )
GPU = GPU and NVCC is not None
# where the GPU reports find their records: the tracked ones, and on a GPU machine the runs
# this pipeline makes (which supersede the tracked ones they measure again)
RECORD_ROOTS = [RECORDS, RUNS] if GPU else [RECORDS]



def tracked_records(*kinds):
    """The manifests of the records of ``kinds`` in records/ (immutable: a new record, not a
    changed one, is what makes a report out of date)."""
    return [str(r.folder / MANIFEST) for kind in kinds for r in discover([RECORDS], kind)]


PUBLISHED = []


def published(*paths):
    """results/ files that `rule all` asks for and `snakemake publish` copies to the same path
    under the tracked reports/ tree."""
    PUBLISHED.extend(paths)
    return [f"{RESULTS}/{p}" for p in paths]


# the shell command that writes the manifest of the record a GPU rule just made in {output};
# the rule's params give its kind, run name, one-line summary and options (JSON), and the
# manifest supersedes the records of records/ that the run measures again
RECORD_MANIFEST = (
    "{PY} -m qcbench.runs {output} --kind {params.kind} --run {params.run}"
    " --summary {params.summary:q} --options {params.options:q} --against {RECORDS}"
)
