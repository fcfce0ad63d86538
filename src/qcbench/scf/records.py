"""The SCF benchmark's records (kind ``jk-scf``): each run folder holds ``records.jsonl``, one
JSON row per measurement (``qcbench.scf.bench``), and ``device.json``, its provenance."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..records import Record, discover, ordered

KIND = "jk-scf"
DFT_WAYS = ("gpu4pyscf", "xc only", "both")
"""KerneLDI Fig. 5's three SCF runs: GPU4PySCF as it comes, its J/K with KerneLDI's XC, and
both engines."""
ROWS = "records.jsonl"


def row_key(row: dict) -> tuple:
    """What a row measured: two rows with the same key measured the same thing. A gradient
    row's engine settings (``--engine-option``) are part of what it measured."""
    key = (row["kind"], row.get("molecule"), row.get("basis"), row.get("method"),
           row.get("cartesian"), row.get("backend"))  # fmt: skip
    if row["kind"] == "gradient":
        key += (engine_settings(row.get("command", "")),)
    if row["kind"] == "dft":  # a run may measure some of the three ways (``bench dft --ways``)
        key += (tuple(way for way in DFT_WAYS if way in row), json.dumps(row.get("xc_settings")))
    return key


def engine_settings(command: str) -> tuple[str, ...]:
    """The ``--engine-option NAME=VALUE`` settings of a benchmark command."""
    return tuple(re.findall(r"--engine-option[= ](\S+)", command))


def read_jsonl(path: str | Path) -> list[dict]:
    """The rows of one records.jsonl file."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def scf_keys(record: Record) -> set[tuple]:
    """What a ``jk-scf`` record measured (``qcbench.runs.measurement_keys``); the FP64 peak
    that every run measures for itself is no measurement of its own."""
    return {row_key(r) for r in read_jsonl(record.file(ROWS)) if r["kind"] != "fp64_peak"}


def read_rows(roots: Iterable[str | Path]) -> tuple[list[dict], list[str]]:
    """The rows of every ``jk-scf`` record under ``roots`` (each with its record's id and GPU)
    and the ids of the records they came from: records in supersedes order, a later row of a
    measurement replacing an earlier one."""
    found: dict[tuple, dict] = {}
    source: dict[tuple, str] = {}
    records: Sequence[Record] = ordered(discover(roots, KIND))
    for record in records:
        for row in read_jsonl(record.file(ROWS)):
            gpu = record.manifest.get("device", {}).get("gpu", "")
            found[row_key(row)] = {**row, "record": record.id, "gpu": gpu}
            source[row_key(row)] = record.id
    return list(found.values()), sorted(set(source.values()))
