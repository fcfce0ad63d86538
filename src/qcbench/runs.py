"""New records from the pipeline's GPU runs: the manifest of a run just made under
``results/records/<kind>/<run>/`` (``qcbench.records``), with its provenance from the run's own
device file and, as ``supersedes``, every tracked record of its kind that holds a measurement the
run made again (what "the same measurement" is belongs to each kind's reader).

``python -m qcbench.runs RUN_DIR --kind KIND --run NAME --summary TEXT`` is the pipeline's step
after each GPU command.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .dist.records import DEVICE as DIST_DEVICE
from .dist.records import dist_keys
from .eri.reporting.gpu_results import bench_keys, verify_keys
from .records import KINDS, Record, RecordError, discover, file_entries, ordered, write_manifest
from .scf.records import scf_keys
from .xc.figures import bench_keys as xc_bench_keys

# the file in which each kind's run records its commit, device, software and command
# (``qcbench.provenance``)
DEVICE_FILE = {"eri-bench": "device.json", "eri-verify": "verify_device.json",
               "xc-bench": "provenance.json", "jk-scf": "device.json",
               "dist": DIST_DEVICE}  # fmt: skip
DEVICE_FIELDS = ("gpu", "compute_capability", "multiprocessors", "sms", "memory_gib",
                 "cuda_driver", "cuda_runtime", "fp64_fma_peak", "dgemm_fp64_tflops")  # fmt: skip


def measurement_keys(record: Record) -> set:
    """What ``record`` measured, as keys of its kind: two records that share a key measured
    the same thing, and the later one replaces it."""
    keys = {"eri-bench": bench_keys, "eri-verify": verify_keys, "xc-bench": xc_bench_keys,
            "jk-scf": scf_keys, "dist": dist_keys}  # fmt: skip
    return keys[record.kind](record)


def record_run(
    folder: str | Path,
    kind: str,
    run: str,
    summary: str,
    options: dict,
    against: Sequence[str | Path] = (),
) -> dict:
    """Write the manifest of a run just made in ``folder``: its id from the run's date and
    ``run``, commit, device, software and command from the run's own device file, and as
    ``supersedes`` every record of ``against`` that shares a measurement with it."""
    folder = Path(folder)
    if kind not in KINDS:
        raise RecordError(f"unknown kind {kind!r} (one of {KINDS})")
    info = json.loads((folder / DEVICE_FILE[kind]).read_text())
    rid = f"{info['created'][:10]}-{run}"
    fresh = Record(folder, {"id": rid, "kind": kind, "files": file_entries(folder)})
    keys = measurement_keys(fresh)
    earlier = [r for r in ordered(discover(against, kind)) if r.id != rid]
    software = {"python": info.get("python"), **info.get("versions", {})}
    return write_manifest(
        folder,
        id=rid,
        kind=kind,
        created=info["created"],
        commit=info["commit"],
        device={k: info[k] for k in DEVICE_FIELDS if k in info},
        software=software,
        command=info["command"],
        options=options,
        supersedes=[r.id for r in earlier if measurement_keys(r) & keys],
        summary=summary,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qcbench.runs", description=__doc__)
    ap.add_argument("run_dir")
    ap.add_argument("--kind", required=True, choices=KINDS)
    ap.add_argument("--run", required=True, help="what the run is, e.g. campaign, ablation-no-dsa")
    ap.add_argument("--summary", required=True, help="one line: what was measured")
    ap.add_argument("--options", default="{}", help="JSON object: the options of the run")
    ap.add_argument("--against", nargs="*", default=["records"], help="roots it may supersede")
    args = ap.parse_args(argv)
    try:
        made = record_run(args.run_dir, args.kind, args.run, args.summary,
                          json.loads(args.options), args.against)  # fmt: skip
    except RecordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{made['id']}: supersedes {len(made['supersedes'])} record(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
