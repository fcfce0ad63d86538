"""Measurement records: immutable run folders ``<root>/<kind>/<id>/`` with a ``manifest.json``.

A manifest says what a run measured and how (commit, device, software versions, command,
options), which data files it holds (size and SHA-256 each) and which earlier records of its
kind it supersedes. Readers take records of one kind in :func:`ordered` order: every record
after those it supersedes, records that do not depend on each other by creation time. Where
two records hold the same measurement the later one wins; what "the same measurement" is
belongs to the reader of each kind (``qcbench.runs.measurement_keys``).

``python -m qcbench.records check`` verifies the tracked records, ``adopt`` copies a run the
pipeline made under ``results/records/`` (its manifest written by ``qcbench.runs``) into
``records/`` and ``index`` writes the index of records and reports.
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "manifest.json"
# Snakemake touches this file in a directory() output after the rule ends, so after the
# manifest is written; it is not part of the record and adoption leaves it behind.
SNAKEMAKE_MARKER = ".snakemake_timestamp"
KINDS = ("eri-bench", "eri-verify", "xc-bench", "jk-scf", "dist")
REQUIRED = {
    "id": str,
    "kind": str,
    "created": str,
    "commit": str,
    "device": dict,
    "software": dict,
    "command": str,
    "options": dict,
    "supersedes": list,
    "files": list,
    "summary": str,
}


class RecordError(ValueError):
    """A record folder or manifest that does not follow the format."""


@dataclass(frozen=True)
class Record:
    folder: Path
    manifest: dict

    @property
    def id(self) -> str:
        return self.manifest["id"]

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    @property
    def created(self) -> str:
        return self.manifest["created"]

    @property
    def supersedes(self) -> tuple[str, ...]:
        return tuple(self.manifest["supersedes"])

    def file(self, name: str) -> Path:
        """The data file ``name``; it must be one the manifest lists."""
        if name not in {f["path"] for f in self.manifest["files"]}:
            raise RecordError(f"{self.id}: no file {name!r} in its manifest")
        return self.folder / name

    def has(self, name: str) -> bool:
        return name in {f["path"] for f in self.manifest["files"]}


def read_record(folder: str | Path) -> Record:
    """The record in ``folder``; raises :class:`RecordError` if its manifest is malformed."""
    folder = Path(folder)
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: {exc}") from exc
    for field, kind in REQUIRED.items():
        if not isinstance(manifest.get(field), kind):
            raise RecordError(f"{path}: field {field!r} missing or not a {kind.__name__}")
    if manifest["kind"] not in KINDS:
        raise RecordError(f"{path}: unknown kind {manifest['kind']!r} (one of {KINDS})")
    return Record(folder, manifest)


def discover(roots: Iterable[str | Path], kind: str) -> list[Record]:
    """Every record of ``kind`` under each root (``<root>/<kind>/*/manifest.json``). A record
    found under two roots with the same manifest (a run and its adopted copy) counts once, from
    the first root; the same id with different manifests is an error."""
    found: dict[str, Record] = {}
    for root in roots:
        for path in sorted(Path(root, kind).glob(f"*/{MANIFEST}")):
            record = read_record(path.parent)
            if record.kind != kind:
                raise RecordError(f"{path}: kind {record.kind!r} under {kind}/")
            seen = found.setdefault(record.id, record)
            if seen.manifest != record.manifest:
                raise RecordError(f"two records {record.id!r}: {seen.folder} and {record.folder}")
    return list(found.values())


def ordered(records: Sequence[Record]) -> list[Record]:
    """``records`` with every record after those it supersedes (ids not among ``records`` are
    ignored), otherwise by creation time, then id; raises on a supersedes cycle."""
    by_id = {r.id: r for r in records}
    after: dict[str, list[str]] = {r.id: [] for r in records}
    waiting = {r.id: 0 for r in records}
    for r in records:
        for old in set(r.supersedes) & by_id.keys():
            after[old].append(r.id)
            waiting[r.id] += 1
    ready = [(by_id[i].created, i) for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, rid = heapq.heappop(ready)
        out.append(by_id[rid])
        for nxt in after[rid]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (by_id[nxt].created, nxt))
    if len(out) != len(records):
        cycle = sorted(i for i, n in waiting.items() if n > 0)
        raise RecordError(f"records supersede each other in a cycle: {cycle}")
    return out


def superseded_ids(records: Sequence[Record]) -> set[str]:
    return {old for r in records for old in r.supersedes}


def heads(records: Sequence[Record]) -> list[Record]:
    """The records no other record of the list supersedes, in :func:`ordered` order."""
    gone = superseded_ids(records)
    return [r for r in ordered(records) if r.id not in gone]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _members(folder: Path) -> list[Path]:
    """What ``folder`` holds as a record's files: everything but the manifest and Snakemake's
    marker."""
    return sorted(p for p in folder.iterdir() if p.name not in (MANIFEST, SNAKEMAKE_MARKER))


def file_entries(folder: Path) -> list[dict]:
    """Size and SHA-256 of every file in ``folder`` but the manifest (no subfolders)."""
    entries = []
    for path in _members(folder):
        if path.is_dir():
            raise RecordError(f"{path}: a record holds files only, not folders")
        entries.append({"path": path.name, "bytes": path.stat().st_size, "sha256": sha256(path)})
    return entries


def problems(record: Record, known_ids: set[str], *, named: bool = True) -> list[str]:
    """What is wrong with ``record``: files that differ from its manifest or that it does not
    list, ids it supersedes that are not in ``known_ids`` and, with ``named``, a folder not
    named by its id."""
    out = []
    listed = {f["path"]: f for f in record.manifest["files"]}
    on_disk = {p.name for p in _members(record.folder)}
    for name in sorted(on_disk - listed.keys()):
        out.append(f"{record.id}: {name} is not in the manifest")
    for name, entry in sorted(listed.items()):
        path = record.folder / name
        if not path.is_file():
            out.append(f"{record.id}: {name} is missing")
        elif path.stat().st_size != entry["bytes"] or sha256(path) != entry["sha256"]:
            out.append(f"{record.id}: {name} differs from its manifest (size or SHA-256)")
    for old in record.supersedes:
        if old not in known_ids:
            out.append(f"{record.id}: supersedes unknown record {old!r}")
    if named and record.folder.name != record.id:
        out.append(f"{record.id}: folder is named {record.folder.name!r}")
    return out


def write_manifest(folder: str | Path, **fields) -> dict:
    """Write ``folder``'s manifest from ``fields`` (every field of the format but ``files``,
    plus optional extras such as ``source_tree`` or ``parts``); files are listed as they are."""
    folder = Path(folder)
    missing = sorted(set(REQUIRED) - {"files"} - fields.keys())
    if missing:
        raise RecordError(f"manifest of {folder}: missing {missing}")
    manifest = dict(fields)
    manifest["files"] = file_entries(folder)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def adopt(run: str | Path, root: str | Path) -> Path:
    """Copy the run folder ``run`` (with its manifest) to ``<root>/<kind>/<id>/`` after
    checking it; the target must not exist yet (records are immutable)."""
    record = read_record(run)
    target = Path(root, record.kind, record.id)
    if target.exists():
        raise RecordError(f"{target} exists: records are immutable")
    found = problems(record, {r.id for r in discover([root], record.kind)}, named=False)
    if found:
        raise RecordError("; ".join(found))
    shutil.copytree(run, target, ignore=shutil.ignore_patterns(SNAKEMAKE_MARKER))
    return target


def index_markdown(root: str | Path, reports: Sequence[str] = (), link: str = "../records") -> str:
    """The index of the records under ``root``, newest first per kind, and of ``reports``;
    ``link`` is ``root`` as seen from where the index is published."""
    lines = ["# Records and reports", ""]
    lines += [
        "Generated from the manifests under `records/` (`python -m qcbench.records index`).",
        "A record marked *superseded* has later measurements of everything it holds, or of",
        "part of it (see its manifest); the reports use the latest of each measurement.",
        "",
    ]
    for kind in KINDS:
        records = discover([root], kind)
        if not records:
            continue
        gone = superseded_ids(records)
        lines += [
            f"## {kind}",
            "",
            "| record | created | device | summary |",
            "| --- | --- | --- | --- |",
        ]
        for r in reversed(ordered(records)):
            mark = " *(superseded)*" if r.id in gone else ""
            ref = f"[{r.id}]({link}/{kind}/{r.id}/manifest.json)"
            gpu = r.manifest["device"].get("gpu", "-")
            lines.append(f"| {ref}{mark} | {r.created[:10]} | {gpu} | {r.manifest['summary']} |")
        lines.append("")
    if reports:
        lines += ["## Reports", ""]
        lines += [f"- [{p}]({p})" for p in reports]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qcbench.records", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="verify every manifest and its files")
    c.add_argument("root", nargs="?", default="records")
    a = sub.add_parser("adopt", help="copy a pipeline run into the records")
    a.add_argument("run", help="a run folder, e.g. results/records/eri-bench/campaign")
    a.add_argument("--root", default="records")
    i = sub.add_parser("index", help="write the index of records and reports")
    i.add_argument("--root", default="records")
    i.add_argument("--reports", nargs="*", default=[], help="report paths relative to the index")
    i.add_argument("--link", default="../records", help="the root as seen from the index")
    i.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    try:
        if args.command == "check":
            found = []
            for kind in KINDS:
                records = discover([args.root], kind)
                ordered(records)
                found += [p for r in records for p in problems(r, {x.id for x in records})]
            print("\n".join(found) or f"{args.root}: every record matches its manifest")
            return 1 if found else 0
        if args.command == "adopt":
            print(adopt(args.run, args.root))
        else:
            Path(args.out).write_text(index_markdown(args.root, args.reports, args.link))
        return 0
    except RecordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
