"""The report builders: rows, factors, the acceptance check, coverage, and the summaries."""

import math

import pandas as pd
import pytest

from fusionrcg import QuartetClass, canonical_classes, plan_class
from fusionrcg.graph.axis import AxisPolicy
from fusionrcg.orchestration.schedule import OrderKind
from fusionrcg.stats import with_orchestration
from fusionrcg.variants import VARIANTS
from qcbench.eri.reporting import graph_summary
from qcbench.eri.reporting.graph_tables import (
    acceptance_violations,
    eq7_not_computed,
    factor_column,
    graph_classes,
    liveness_row,
    peak_column,
    plan_rows,
    profile_rows,
    quartets_within,
)
from qcbench.eri.reporting.verification import (
    VerifySet,
    class_rows,
    coverage,
    load_sets,
    summary_markdown,
    uncovered,
    verified_classes,
)
from qcbench.eri.verify import Tolerance
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
    sets = [
        VerifySet("a", "water_clusters/002", ("sto-3g",), (False, True)),
        VerifySet("b", "water_clusters/002", ("sto-3g",), (False,)),
    ]
    mols = load_sets(sets, ROOT)
    classes = verified_classes(1, 2)
    rows = [r for c in classes for r in class_rows(c, sets, mols, ["reference"], 1, 0, tol)]
    errors = pd.DataFrame(rows)
    assert errors["verified"].all() and (errors["backend"] == "reference").all()
    cov = coverage(errors, classes)
    assert list(cov["class"]) == [str(c) for c in canonical_classes(1) if c.total <= 2]
    assert (cov["spherical_molecules"] == 1).all() and (cov["cartesian_molecules"] == 1).all()
    assert len(uncovered(cov, 1)) == 0 and len(uncovered(cov, 2)) == len(cov)
    text = summary_markdown(errors, cov, classes, "reference", 1, tol)
    assert "backend `reference`" in text and "total <= 2 (4 classes)" in text


def test_verification_rows_do_not_depend_on_the_grouping():
    """Quartets are seeded per class, so a class's rows are the same alone or after others."""
    tol = Tolerance()
    sets = [VerifySet("a", "water_clusters/002", ("cc-pvdz",), (False,))]
    mols = load_sets(sets, ROOT)
    cls = QuartetClass(1, 1, 1, 0)
    alone = class_rows(cls, sets, mols, ["reference"], 3, 5, tol)
    class_rows(QuartetClass(1, 0, 0, 0), sets, mols, ["reference"], 3, 5, tol)
    again = class_rows(cls, sets, mols, ["reference"], 3, 5, tol)
    assert [r["worst_quartet"] for r in alone] == [r["worst_quartet"] for r in again]


def test_with_orchestration_names_the_matching_variant():
    full = VARIANTS["full"]
    assert with_orchestration(full, AxisPolicy.CONVENTIONAL, OrderKind.DSA) is VARIANTS["no-axis"]
    assert (
        with_orchestration(full, AxisPolicy.PRIORITY, OrderKind.TOPOLOGICAL) is VARIANTS["no-dsa"]
    )
    other = with_orchestration(full, AxisPolicy.CONVENTIONAL, OrderKind.TOPOLOGICAL)
    assert other.name == "conventional+topological" and other.order is OrderKind.TOPOLOGICAL


def test_liveness_row_reuses_the_plans_of_the_named_variants():
    cls = QuartetClass(2, 1, 1, 0)
    plan_class.cache_clear()
    plan_rows(cls, list(VARIANTS))
    before = plan_class.cache_info().misses
    liveness_row(cls)
    # only conventional axes + topological order has no named variant
    assert plan_class.cache_info().misses - before == 1


def test_eq7_is_not_computed_above_the_size_limit(monkeypatch):
    cls = QuartetClass(2, 2, 1, 0)
    plan = plan_class(cls, VARIANTS["full"], True)
    limit = (len(plan.graph.vrr) + len(plan.graph.hrr)) // 2
    assert min(len(plan.graph.vrr), len(plan.graph.hrr)) <= limit
    monkeypatch.setattr("qcbench.eri.reporting.graph_tables.RELEASE_SCORE_MAX_NODES", limit)
    row = liveness_row(cls)
    for phase, dag in (("vrr", plan.graph.vrr), ("hrr", plan.graph.hrr)):
        value = row[peak_column(phase, "priority", "eq7-only")]
        assert math.isnan(value) == (len(dag) > limit)
    skipped = eq7_not_computed(pd.DataFrame([row]))
    assert sum(len(c) for c in skipped.values()) == 1
    assert "was not computed" in graph_summary._eq7_note(pd.DataFrame([row]))


def test_verified_classes_add_each_position_of_the_derivative_classes():
    from fusionrcg import QuartetClass
    from qcbench.eri.reporting.verification import scope, verified_classes

    classes = verified_classes(1, 4, deriv_max_total=1)
    energy = [c for c in classes if c.deriv is None]
    assert len(energy) == 6 and len(classes) == 6 + 2 * 4
    assert QuartetClass(1, 0, 0, 0, deriv=3) in classes
    assert "first derivatives" in scope(classes) and "total <= 1" in scope(classes)
