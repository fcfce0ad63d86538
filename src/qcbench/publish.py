"""Publishing: copy the pipeline's reports from its working area (``results/``) into the
tracked ``reports/`` tree, with a ``MANIFEST.json`` beside them that says how they were made:
commit, machine, package versions, the command, every published file with its SHA-256 and the
records the reports were built from.

Only this step writes tracked files, and only when asked (``snakemake publish``), so an
ordinary pipeline run leaves the checkout as it found it; volatile numbers such as timings may
appear in published reports because publishing is deliberate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from .provenance import provenance
from .records import KINDS, discover, sha256

MANIFEST = "MANIFEST.json"


def publish(
    files: Sequence[str],
    results: str | Path,
    reports: str | Path,
    command: str,
    record_roots: Sequence[str | Path] = (),
) -> dict:
    """Copy each of ``files`` (paths relative to ``results``) to the same path under
    ``reports`` and write ``reports/MANIFEST.json``; returns the manifest."""
    results, reports = Path(results), Path(reports)
    missing = [f for f in files if not (results / f).is_file()]
    if missing:
        raise FileNotFoundError(f"not in {results}: {', '.join(missing)}")
    # the source tree's state: the reports tree is the output (Snakemake removes the old
    # manifest before the step runs), not a change to the tree that made them
    source = provenance(
        outputs=(str(reports),),
        command=command,
        platform=platform.platform(),
        cpus=os.cpu_count(),
    )
    entries = []
    for name in sorted(set(files)):
        target = reports / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(results / name, target)
        entries.append({"path": name, "bytes": target.stat().st_size, "sha256": sha256(target)})
    manifest = source | dict(
        records={kind: sorted(r.id for r in discover(record_roots, kind)) for kind in KINDS},
        files=entries,
    )
    (reports / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qcbench.publish", description=__doc__)
    ap.add_argument("--results", required=True)
    ap.add_argument("--reports", required=True)
    ap.add_argument("--files", nargs="+", required=True, help="paths relative to --results")
    ap.add_argument("--records", nargs="*", default=[], help="record roots the reports read")
    ap.add_argument("--command", required=True, help="the command that asked for the publish")
    args = ap.parse_args(argv)
    made = publish(args.files, args.results, args.reports, args.command, args.records)
    print(f"{len(made['files'])} file(s) published to {args.reports}/ (commit {made['commit']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
