"""Measurement records: manifests, the order supersedes gives, checks, new runs, adoption and
the index; and the repository's own records against their manifests."""

import json
from pathlib import Path

import pytest

from qcbench import records as R
from qcbench.runs import record_run

REPO_RECORDS = Path(__file__).resolve().parents[2] / "records"


def bench_run(folder: Path, created: str, classes: list[str], command: str = "bench") -> Path:
    """A folder shaped like ``campaign bench``'s output: full/store of each class."""
    folder.mkdir(parents=True)
    rows = [{"cls": c, "variant": "full", "epilogue": "store", "tier": 1} for c in classes]
    (folder / "measurements.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    device = {"commit": "abc", "versions": {"numpy": "2"}, "python": "3.12", "created": created,
              "gpu": "Test GPU", "fp64_fma_peak": 1e13, "command": command}  # fmt: skip
    (folder / "device.json").write_text(json.dumps(device))
    return folder


def record(root: Path, rid: str, created: str, supersedes=(), classes=("(1,0|0,0)",)):
    folder = bench_run(root / "eri-bench" / rid, created, list(classes))
    R.write_manifest(
        folder, id=rid, kind="eri-bench", created=created, commit="abc", device={},
        software={}, command="bench", options={}, supersedes=list(supersedes), summary=rid,
    )  # fmt: skip
    return R.read_record(folder)


def test_supersedes_orders_records_before_creation_time(tmp_path):
    a = record(tmp_path, "a", "2026-01-01T10:00:00")
    # b was started before a but measured its kernels again: it goes after a
    b = record(tmp_path, "b", "2026-01-01T09:00:00", supersedes=["a"])
    c = record(tmp_path, "c", "2026-01-01T08:00:00")
    assert [r.id for r in R.ordered([a, b, c])] == ["c", "a", "b"]
    assert [r.id for r in R.heads([a, b, c])] == ["c", "b"]


def test_a_supersedes_cycle_is_an_error(tmp_path):
    a = record(tmp_path, "a", "2026-01-01T10:00:00", supersedes=["b"])
    b = record(tmp_path, "b", "2026-01-01T11:00:00", supersedes=["a"])
    with pytest.raises(R.RecordError, match="cycle"):
        R.ordered([a, b])


def test_a_record_and_its_adopted_copy_count_once(tmp_path):
    record(tmp_path / "records", "a", "2026-01-01T10:00:00")
    R.adopt(tmp_path / "records" / "eri-bench" / "a", tmp_path / "copy")
    found = R.discover([tmp_path / "records", tmp_path / "copy"], "eri-bench")
    assert [r.folder.parent.parent.name for r in found] == ["records"]
    record(tmp_path / "other", "a", "2026-01-02T10:00:00")
    with pytest.raises(R.RecordError, match="two records 'a'"):
        R.discover([tmp_path / "records", tmp_path / "other"], "eri-bench")


def test_problems_name_changed_unlisted_and_unknown(tmp_path):
    a = record(tmp_path, "a", "2026-01-01T10:00:00", supersedes=["gone"])
    assert R.problems(a, {"a"}) == ["a: supersedes unknown record 'gone'"]
    with (a.folder / "measurements.jsonl").open("a") as fh:
        fh.write("\n")
    (a.folder / "notes.txt").write_text("x")
    found = R.problems(a, {"a", "gone"})
    assert "a: notes.txt is not in the manifest" in found
    assert "a: measurements.jsonl differs from its manifest (size or SHA-256)" in found
    with pytest.raises(R.RecordError, match="no file 'notes.txt'"):
        a.file("notes.txt")


def test_a_malformed_manifest_is_an_error(tmp_path):
    a = record(tmp_path, "a", "2026-01-01T10:00:00")
    manifest = json.loads((a.folder / R.MANIFEST).read_text())
    del manifest["supersedes"]
    (a.folder / R.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(R.RecordError, match="'supersedes' missing"):
        R.read_record(a.folder)


def test_a_new_run_supersedes_the_records_it_measures_again(tmp_path):
    records = tmp_path / "records"
    record(records, "old-10", "2026-01-01T10:00:00", classes=["(1,0|0,0)"])
    record(records, "old-20", "2026-01-01T11:00:00", classes=["(2,0|0,0)"])
    run = bench_run(tmp_path / "results" / "eri-bench" / "campaign", "2026-02-03T04:05:06",
                    ["(1,0|0,0)", "(1,1|0,0)"])  # fmt: skip
    made = record_run(run, "eri-bench", "campaign", "what it measured", {"budget": 5},
                        [records])  # fmt: skip
    assert made["id"] == "2026-02-03-campaign"
    assert made["supersedes"] == ["old-10"]
    assert made["device"] == {"gpu": "Test GPU", "fp64_fma_peak": 1e13}
    assert made["software"] == {"python": "3.12", "numpy": "2"}
    assert {f["path"] for f in made["files"]} == {"measurements.jsonl", "device.json"}
    (run / R.SNAKEMAKE_MARKER).touch()  # Snakemake's directory() marker, made after the manifest
    adopted = R.adopt(run, records)
    assert adopted == records / "eri-bench" / "2026-02-03-campaign"
    assert not (adopted / R.SNAKEMAKE_MARKER).exists()
    assert R.main(["check", str(records)]) == 0
    with pytest.raises(R.RecordError, match="immutable"):
        R.adopt(run, records)


def test_index_lists_records_newest_first_and_marks_superseded(tmp_path):
    record(tmp_path, "a", "2026-01-01T10:00:00")
    record(tmp_path, "b", "2026-01-02T10:00:00", supersedes=["a"])
    text = R.index_markdown(tmp_path, ["eri/gpu/SUMMARY.md"])
    rows = [line for line in text.splitlines() if line.startswith("| [")]
    assert rows[0].startswith("| [b](../records/eri-bench/b/manifest.json) |")
    assert "*(superseded)*" in rows[1] and "*(superseded)*" not in rows[0]
    assert "- [eri/gpu/SUMMARY.md](eri/gpu/SUMMARY.md)" in text
    deeper = R.index_markdown(tmp_path, link="../../records")
    assert "(../../records/eri-bench/b/manifest.json)" in deeper


def test_the_repository_records_match_their_manifests():
    for kind in R.KINDS:
        if not (REPO_RECORDS / kind).is_dir():  # a kind no run has recorded yet
            continue
        found = R.discover([REPO_RECORDS], kind)
        assert found, kind
        known = {r.id for r in found}
        assert [p for r in found for p in R.problems(r, known)] == []
        R.ordered(found)
