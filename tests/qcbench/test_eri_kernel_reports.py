"""The kernel build stage: jobs, cost, one record per kernel (or its compile error), the spill
acceptance check, the summary and the figure. Records other than the nvcc builds are
synthetic."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fusionrcg import QuartetClass
from qcbench.eri.reporting.kernel_builds import (
    RECORD_COLUMNS,
    BuildJob,
    build_cost,
    build_jobs,
    build_record,
    deriv_classes,
    sorted_records,
    spill_violations,
)
from qcbench.eri.reporting.kernel_figures import ptxas_figure
from qcbench.eri.reporting.kernel_summary import summary_markdown

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow" / "scripts"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def record(
    cls, variant, tier, spill=0, error=None, registers=128, epilogue="store", deriv=None
) -> dict:
    c = QuartetClass.parse(cls).with_deriv(deriv)
    rec = dict.fromkeys(RECORD_COLUMNS) | {
        "class": str(c), "la": c.la, "lb": c.lb, "lc": c.lc, "ld": c.ld, "total": c.total,
        "deriv": "" if deriv is None else "ABCD"[deriv],
        "variant": variant, "spherical": True, "epilogue": epilogue, "tier": tier,
    }  # fmt: skip
    if error:
        return rec | {"error": error}
    return rec | {
        "kernel": f"k{c.tag}_{variant}.cubin", "registers": registers,
        "spill_store_bytes": spill, "spill_load_bytes": spill, "stack_bytes": 2 * spill,
        "functions": tier, "slots_per_quartet": 0 if tier == 1 else 100, "compile_seconds": 1.5,
    }  # fmt: skip


def records(spill_on_tier1: int = 0) -> pd.DataFrame:
    rows = [
        record("1,1,1,0", "full", 1, spill=spill_on_tier1),
        record("1,1,1,0", "tier2-only", 2, spill=8),
        record("2,2,1,1", "full", 2, spill=40),
        record("2,2,1,1", "tier1-only", 1, spill=4000, registers=255),
        record("2,2,2,2", "tier1-only", 1, error="(2,2|2,2): compilation exceeded 600 s"),
        record("2,2,2,2", "full", 2, spill=100),
    ]
    return sorted_records(pd.DataFrame(rows))


def test_jobs_round_trip_and_cover_classes_x_variants_x_epilogues():
    classes = [QuartetClass(1, 0, 0, 0), QuartetClass(1, 1, 1, 1)]
    jobs = build_jobs(classes, ["full", "no-dsa"], ["store", "jk"])
    assert len(jobs) == 8
    assert all(BuildJob.parse(j.text()) == j for j in jobs)
    assert jobs[0].text() == "1000:full:spherical:store"


def test_derivative_jobs_round_trip_and_do_not_count_for_the_spill_check():
    jobs = build_jobs(deriv_classes([QuartetClass(1, 1, 1, 0)]), ["full"], ["store", "grad"])
    assert len(jobs) == 6 and jobs[0].text() == "1110_dA:full:spherical:store"
    assert all(BuildJob.parse(j.text()) == j for j in jobs)
    rows = [record("1,1,1,0", "full", 1), record("1,1,1,0", "full", 1, spill=64, deriv=1)]
    recs = sorted_records(pd.DataFrame(rows))
    assert list(recs["deriv"]) == ["", "B"]
    assert spill_violations(recs, 6).empty


def test_cost_grows_with_the_class_and_is_capped_for_forced_tier1():
    small, big = QuartetClass(1, 0, 0, 0), QuartetClass(4, 4, 4, 4)
    for variant in ("full", "tier1-only"):
        assert build_cost(BuildJob(small, variant, True, "store"), 600) < build_cost(
            BuildJob(big, variant, True, "store"), 600
        )
    assert build_cost(BuildJob(big, "tier1-only", True, "store"), 600) == 600


def test_acceptance_flags_spilling_or_failed_model_tier1_kernels():
    assert spill_violations(records(), 6).empty
    bad = spill_violations(records(spill_on_tier1=16), 6)
    assert list(bad["class"]) == ["(1,1|1,0)"]
    # forced Tier 1 and classes above the limit do not count
    assert spill_violations(records(), 8).empty
    failed = pd.concat([records(), pd.DataFrame([record("1,0,0,0", "full", 1, error="boom")])])
    assert list(spill_violations(failed, 6)["class"]) == ["(1,0|0,0)"]


def test_summary_and_figure(tmp_path):
    text = summary_markdown(records(), 6, "sm_90", 600)
    assert "**PASS**" in text
    assert "compilation exceeded 600 s" in text
    assert "first failure at total 8" in text
    assert "**FAIL on (1,1|1,0) store**" in summary_markdown(records(16), 6, "sm_90", 600)
    ptxas_figure(records(), tmp_path / "ptxas.png")
    assert (tmp_path / "ptxas.png").stat().st_size > 0


def test_report_script_fails_loudly_on_a_spilling_tier1_class(tmp_path):
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    records().to_csv(good, index=False)
    records(16).to_csv(bad, index=False)
    outs = ["--out-table", str(tmp_path / "t.csv"), str(tmp_path / "t.md")]
    outs += ["--out-figure", str(tmp_path / "f.png"), "--out-summary", str(tmp_path / "S.md")]
    base = [sys.executable, str(SCRIPTS / "eri_kernel_report.py"), "--spill-free-max-total", "6"]
    base += ["--arch", "sm_90", "--timeout", "600"]
    ok = subprocess.run([*base, "--records", str(good), *outs], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert len(pd.read_csv(tmp_path / "t.csv")) == len(records())
    fail = subprocess.run([*base, "--records", str(bad), *outs], capture_output=True, text=True)
    assert fail.returncode != 0
    assert "(1,1|1,0) (store)" in fail.stderr


@needs_nvcc
def test_build_record_reports_ptxas_or_the_compile_error(tmp_path):
    job = BuildJob(QuartetClass(1, 0, 0, 0), "full", True, "store")
    rec = build_record(job, tmp_path, timeout=300)
    assert rec["error"] is None and rec["tier"] == 1
    assert rec["spill_store_bytes"] == 0 and rec["registers"] > 0
    assert set(rec) == set(RECORD_COLUMNS)
    # found in the library the second time, with the same report
    assert build_record(job, tmp_path, timeout=300) == rec
    slow = build_record(BuildJob(QuartetClass(1, 1, 0, 0), "no-dsa", True, "store"), tmp_path, 1e-3)
    assert "(1,1|0,0)" in slow["error"] and "exceeded" in slow["error"]
    assert slow["tier"] == 1 and np.isnan(float(slow["registers"] or np.nan))
