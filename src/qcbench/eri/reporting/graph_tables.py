"""Rows describing orchestrated classes: per-variant records, the liveness matrix, profiles.

Column names of the liveness rows are ``peak_<phase>_<axis>_<order>`` with phase ``vrr`` or
``hrr``, axis ``priority`` or ``conventional`` and order ``dsa``, ``topological`` or
``eq7-only`` (the last only under axis priority, as a diagnostic of the paper's Eq. 7 alone; NaN,
not computed, for a phase graph above ``RELEASE_SCORE_MAX_NODES``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import pandas as pd

from fusionrcg.angmom import QuartetClass, canonical_classes, ncart
from fusionrcg.graph.axis import AxisPolicy
from fusionrcg.orchestration.liveness import live_ranges
from fusionrcg.orchestration.plan import RELEASE_SCORE_MAX_NODES, plan_class
from fusionrcg.orchestration.schedule import OrderKind, eq7_only_order
from fusionrcg.stats import LIVENESS_ORDERS, liveness_matrix, plan_record, with_orchestration
from fusionrcg.variants import get_variant

PHASES = ("vrr", "hrr")
PRIORITY, CONVENTIONAL = AxisPolicy.PRIORITY.value, AxisPolicy.CONVENTIONAL.value
DSA, TOPOLOGICAL, EQ7 = OrderKind.DSA.value, OrderKind.TOPOLOGICAL.value, OrderKind.EQ7_ONLY.value


def peak_column(phase: str, axis: str, order: str) -> str:
    return f"peak_{phase}_{axis}_{order}"


# reduction factor -> (numerator, denominator) as (axis, order); the denominator is the full
# pipeline (axis priority + DSA)
FACTORS = {
    "axis": ((CONVENTIONAL, DSA), (PRIORITY, DSA)),
    "dsa": ((PRIORITY, TOPOLOGICAL), (PRIORITY, DSA)),
    "combined": ((CONVENTIONAL, TOPOLOGICAL), (PRIORITY, DSA)),
}


def factor_column(name: str, phase: str) -> str:
    return f"{name}_factor_{phase}"


def quartets_within(quartets: Sequence[str], lmax: int) -> list[str]:
    """The quartets (``"la,lb,lc,ld"``) whose every l is at most ``lmax``."""
    return [q for q in quartets if max(QuartetClass.parse(q).ls) <= lmax]


def graph_classes(lmax: int, quartets: Sequence[str]) -> list[QuartetClass]:
    """The canonical classes up to ``lmax``, then those of ``quartets`` (the paper's, as the
    paper writes them) that are not canonical, such as (4,1|3,3)."""
    classes = canonical_classes(lmax)
    extra = [QuartetClass.parse(q) for q in quartets_within(quartets, lmax)]
    return classes + [q for q in dict.fromkeys(extra) if q not in classes]


def orchestration_cost(cls: QuartetClass) -> int:
    """Relative cost of the graph statistics of ``cls``, for balancing jobs: the size of its
    accumulator bank, which grows with the graph sizes that the time of the large classes
    follows."""
    bra = sum(ncart(l) for l in range(cls.la, cls.la + cls.lb + 1))
    ket = sum(ncart(l) for l in range(cls.lc, cls.lc + cls.ld + 1))
    return bra * ket


def plan_rows(cls: QuartetClass, variants: Sequence[str]) -> list[dict]:
    """``plan_record`` of ``cls`` under every variant (spherical output) and of ``full`` with
    Cartesian output, each with the wall time of its ``plan_class`` call.

    ``full`` runs first, so its time is that of a cold orchestration (graph build, Eq. 7 scores,
    orders, liveness, slots); later rows reuse the graphs and scores they share with it."""
    specs = [("full", True)] + [(v, True) for v in variants if v != "full"] + [("full", False)]
    rows = []
    for name, spherical in specs:
        start = time.perf_counter()
        plan = plan_class(cls, get_variant(name), spherical)
        rows.append(plan_record(plan) | {"orchestration_s": time.perf_counter() - start})
    return rows


def eq7_peaks(cls: QuartetClass) -> dict[str, float]:
    """PeakLive of each phase of the full graph in the order of Eq. 7 alone. A phase above
    ``RELEASE_SCORE_MAX_NODES`` is not computed (NaN): the score's O(|V||E|) bitsets are what
    the DSA itself gives up there, and they would dominate the whole stage."""
    graph = plan_class(cls, get_variant("full"), True).graph
    peaks = {}
    for phase, dag in (("vrr", graph.vrr), ("hrr", graph.hrr)):
        too_big = len(dag) > RELEASE_SCORE_MAX_NODES
        peaks[phase] = math.nan if too_big else live_ranges(dag, eq7_only_order(dag)).peak()
    return peaks


def eq7_not_computed(liveness: pd.DataFrame) -> dict[str, list[str]]:
    """Per phase, the classes whose Eq. 7-alone PeakLive was not computed."""
    return {
        phase: list(liveness.loc[liveness[peak_column(phase, PRIORITY, EQ7)].isna(), "class"])
        for phase in PHASES
    }


def liveness_row(cls: QuartetClass) -> dict:
    """PeakLive of both phases for axis policy x order, Eq. 7 alone, and the reduction
    factors (NaN where the full pipeline's PeakLive is zero)."""
    row: dict = {"class": str(cls), "la": cls.la, "lb": cls.lb, "lc": cls.lc, "ld": cls.ld}
    row |= {"total": cls.total, "canonical": cls.is_canonical()}
    for axis, orders in liveness_matrix(cls).items():
        for order, peaks in orders.items():
            for phase in PHASES:
                row[peak_column(phase, axis, order)] = peaks[phase]
    for phase, peak in eq7_peaks(cls).items():
        row[peak_column(phase, PRIORITY, EQ7)] = peak
    for name, (num, den) in FACTORS.items():
        for phase in PHASES:
            top, bottom = row[peak_column(phase, *num)], row[peak_column(phase, *den)]
            row[factor_column(name, phase)] = top / bottom if bottom else math.nan
    return row


def profile_rows(cls: QuartetClass) -> pd.DataFrame:
    """Live values after every schedule step, per phase, for each axis policy x order and for
    Eq. 7 alone (long format: phase, axis, order, step, live)."""
    full = get_variant("full")
    plans = {
        (axis.value, order.value): plan_class(cls, with_orchestration(full, axis, order))
        for axis in AxisPolicy
        for order in LIVENESS_ORDERS
    }
    plans[(PRIORITY, EQ7)] = plan_class(cls, full, True, order=OrderKind.EQ7_ONLY)
    frames = []
    for (axis, order), plan in plans.items():
        for phase, ranges in (("vrr", plan.vrr_ranges), ("hrr", plan.hrr_ranges)):
            live = ranges.profile()
            frames.append(
                pd.DataFrame(
                    {
                        "class": str(cls),
                        "phase": phase,
                        "axis": axis,
                        "order": order,
                        "step": range(len(live)),
                        "live": live,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def acceptance_violations(liveness: pd.DataFrame, min_total: int) -> pd.DataFrame:
    """Classes with total >= ``min_total`` where axis priority + DSA does not have a lower VRR
    PeakLive than conventional axes + topological order."""
    big = liveness[liveness["total"] >= min_total]
    ours = big[peak_column("vrr", PRIORITY, DSA)]
    baseline = big[peak_column("vrr", CONVENTIONAL, TOPOLOGICAL)]
    return big[~(ours < baseline)]
