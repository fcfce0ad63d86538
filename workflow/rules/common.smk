# Shared helpers of the pipeline's rule files.
import sys
from pathlib import Path

RESULTS = config["results_dir"]
REPORTS = config["reports_dir"]
MOLECULES = config["molecules_dir"]
KERNELS = config["kernels_dir"]
SCRIPTS = Path(workflow.basedir) / "workflow" / "scripts"
PY = sys.executable


PUBLISHED = []


def published(*paths):
    """results/ files that `rule all` asks for; after a successful run each is copied to the
    same path under the tracked reports/ tree. Targets live in the untracked results/, so a
    fresh clone computes everything even though reports/ is committed."""
    PUBLISHED.extend(paths)
    return [f"{RESULTS}/{p}" for p in paths]


def publish_reports():
    import filecmp
    import shutil

    copied = 0
    for path in PUBLISHED:
        src, dst = Path(RESULTS) / path, Path(REPORTS) / path
        if src.exists() and not (dst.exists() and filecmp.cmp(src, dst, shallow=False)):
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            copied += 1
    print(f"reports: {copied} file(s) updated under {REPORTS}/", file=sys.stderr)


onsuccess:
    publish_reports()
