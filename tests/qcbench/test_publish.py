"""Publishing copies the named reports into the tracked tree with a manifest beside them."""

import json

import pytest

from qcbench.publish import MANIFEST, publish
from qcbench.records import write_manifest


def test_publish_copies_reports_and_writes_their_manifest(tmp_path):
    results, reports, records = tmp_path / "results", tmp_path / "reports", tmp_path / "records"
    (results / "eri" / "gpu").mkdir(parents=True)
    (results / "eri" / "gpu" / "SUMMARY.md").write_text("# summary\n")
    (results / "INDEX.md").write_text("# index\n")
    (results / "scratch.csv").write_text("not published\n")
    run = records / "xc-bench" / "r1"
    run.mkdir(parents=True)
    (run / "sweep.json").write_text("[]")
    write_manifest(
        run, id="r1", kind="xc-bench", created="2026-01-01", commit="c", device={},
        software={}, command="bench", options={}, supersedes=[], summary="s",
    )  # fmt: skip
    made = publish(["eri/gpu/SUMMARY.md", "INDEX.md"], results, reports, "snakemake publish",
                   [records])  # fmt: skip
    assert (reports / "eri" / "gpu" / "SUMMARY.md").read_text() == "# summary\n"
    assert not (reports / "scratch.csv").exists()
    on_disk = json.loads((reports / MANIFEST).read_text())
    assert on_disk == made
    assert made["command"] == "snakemake publish"
    assert made["records"] == {
        "eri-bench": [],
        "eri-verify": [],
        "xc-bench": ["r1"],
        "jk-scf": [],
        "dist": [],
    }
    assert [f["path"] for f in made["files"]] == ["INDEX.md", "eri/gpu/SUMMARY.md"]
    assert {"commit", "versions", "python", "machine", "created", "platform"} <= made.keys()


def test_publish_refuses_a_report_the_run_did_not_make(tmp_path):
    (tmp_path / "results").mkdir()
    with pytest.raises(FileNotFoundError, match="SUMMARY.md"):
        publish(["SUMMARY.md"], tmp_path / "results", tmp_path / "reports", "x")
    assert not (tmp_path / "reports" / MANIFEST).exists()
