"""The distributed builds' records (kind ``dist``): a GPU run's data files as the ``qcbench.dist``
commands wrote them (``one_rank_overhead.json``, ``task_costs.json``, ``communication.json``,
``ablation_ranks<N>.json``) and ``device.json``, its provenance. Machines without a GPU make
the distributed reports from the newest such record instead of measuring on the CPU backend."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..records import Record, discover, ordered

KIND = "dist"
DEVICE = "device.json"


def dist_keys(record: Record) -> set[tuple]:
    """What a ``dist`` record measured (``qcbench.runs.measurement_keys``): one key per data
    file, so that a later run of the same measurement replaces it."""
    return {(KIND, f["path"]) for f in record.manifest["files"] if f["path"] != DEVICE}


def newest(roots: Iterable[str | Path]) -> Record | None:
    """The last ``dist`` record under ``roots`` in supersedes order, or None."""
    found = ordered(discover(roots, KIND))
    return found[-1] if found else None
