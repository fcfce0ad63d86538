"""The report builders: rows, factors, the acceptance check, coverage, and the summaries."""

import math

import pandas as pd
import pytest

from fusionrcg import QuartetClass, canonical_classes
from fusionrcg.reporting import graph_summary
from fusionrcg.reporting.graph_tables import (
    acceptance_violations,
    factor_column,
    graph_classes,
    liveness_row,
    peak_column,
    plan_rows,
    profile_rows,
    quartets_within,
)
from fusionrcg.reporting.verification import coverage, uncovered, verify_set
from fusionrcg.verify import Tolerance
from qcbench.molecules import ROOT
from qcbench.partition import balanced_groups


def test_balanced_groups_keep_every_item_once_and_balance():
    items = list(range(10))
    groups = balanced_groups(items, float, 3)
    assert sorted(i for g in groups for i in g) == items
    loads = [sum(g) for g in groups]
    assert max(loads) - min(loads) <= 9
    assert all(g == sorted(g) for g in groups)
    assert len(balanced_groups(items[:2], float, 5)) == 2
    with pytest.raises(ValueError):
        balanced_groups(items, float, 0)


def test_graph_classes_add_non_canonical_paper_quartets_within_lmax():
    assert quartets_within(["1,0,1,0", "3,0,1,0"], 2) == ["1,0,1,0"]
    classes = graph_classes(2, ["2,0,1,1", "1,1,2,0", "3,0,0,0"])
    assert classes[: len(canonical_classes(2))] == canonical_classes(2)
    assert classes[len(canonical_classes(2)) :] == [QuartetClass(1, 1, 2, 0)]


def test_plan_rows_cover_variants_and_cartesian():
    rows = plan_rows(QuartetClass(1, 1, 1, 0), ["no-dsa", "full"])
    assert [(r["variant"], r["spherical"]) for r in rows] == [
        ("full", True),
        ("no-dsa", True),
        ("full", False),
    ]
    assert all(r["orchestration_s"] >= 0 for r in rows)


def test_liveness_row_factors_are_ratios_to_priority_dsa():
    row = liveness_row(QuartetClass(2, 1, 1, 0))
    full = row[peak_column("vrr", "priority", "dsa")]
    assert (
        row[factor_column("axis", "vrr")] == row[peak_column("vrr", "conventional", "dsa")] / full
    )
    assert row[factor_column("dsa", "hrr")] == (
        row[peak_column("hrr", "priority", "topological")]
        / row[peak_column("hrr", "priority", "dsa")]
    )
    assert row["canonical"]
    assert math.isnan(liveness_row(QuartetClass(0, 0, 0, 0))[factor_column("combined", "vrr")])


def test_profile_peaks_match_the_liveness_row():
    cls = QuartetClass(1, 1, 1, 0)
    prof, row = profile_rows(cls), liveness_row(cls)
    peaks = prof.groupby(["phase", "axis", "order"])["live"].max()
    for (phase, axis, order), peak in peaks.items():
        assert peak == row[peak_column(phase, axis, order)]


def test_acceptance_flags_classes_without_a_reduction():
    live = pd.DataFrame(
        {
            "class": ["a", "b", "c"],
            "total": [3, 7, 8],
            peak_column("vrr", "priority", "dsa"): [9, 5, 10],
            peak_column("vrr", "conventional", "topological"): [5, 9, 10],
        }
    )
    assert list(acceptance_violations(live, 7)["class"]) == ["c"]


def test_graph_summary_reads_its_numbers_from_the_tables():
    classes = canonical_classes(2)
    plans = pd.DataFrame([r for c in classes for r in plan_rows(c, ["full", "no-axis"])])
    live = pd.DataFrame([liveness_row(c) for c in classes])
    text = graph_summary.summary_markdown(plans, live, ["1,1,1,1", "2,2,2,2"], 7)
    p = plans[(plans["class"] == "(2,2|2,2)") & plans["spherical"] & (plans["variant"] == "full")]
    assert f"{int(p['nodes_vrr'].iloc[0]):,} VRR" in text
    assert "**PASS**" in text


def test_verification_rows_and_coverage():
    tol = Tolerance()
    rows = [
        verify_set(name, "water_clusters/002", ["sto-3g"], cart, 1, 1, 0, tol, ROOT)
        for name, cart in (("a", False), ("a", True), ("b", False))
    ]
    errors = pd.concat(rows, ignore_index=True)
    assert errors["verified"].all()
    cov = coverage(errors, 1)
    assert list(cov["class"]) == [str(c) for c in canonical_classes(1)]
    assert (cov["spherical_molecules"] == 1).all() and (cov["cartesian_molecules"] == 1).all()
    assert len(uncovered(cov, 1)) == 0 and len(uncovered(cov, 2)) == len(cov)
