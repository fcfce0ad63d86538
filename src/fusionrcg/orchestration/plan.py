"""Orchestration of one class under one variant: orders, liveness, tier, slots, FLOPs."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..angmom import QuartetClass
from ..graph import ClassGraph, build_class_graph
from ..graph.axis import demand_nesting
from ..graph.ir import Dag, node_flops
from ..variants import Tier, Variant, get_variant
from .liveness import LiveRanges, live_ranges
from .placement import Tier1Placement, place_tier1
from .schedule import OrderKind, dsa_order, eq7_only_order, topological_order
from .slots import SlotPlan, pack_slots
from .tier import RegisterModel, paper_accumulator_count

DEFAULT_MODEL = RegisterModel()

RELEASE_SCORE_MAX_NODES = 150_000
"""Eq. (7) costs O(|V| |E|) time and up to gigabytes of bitsets; above this size the DSA
keeps only the demand rank (the Phase 2 graphs of the largest g classes)."""


@dataclass(frozen=True)
class Flops:
    vrr_per_primitive: int
    accumulate_per_primitive: int
    hrr_per_contracted: int

    def per_contracted_quartet(self, n_primitive_quartets: int) -> int:
        per_prim = self.vrr_per_primitive + self.accumulate_per_primitive
        return n_primitive_quartets * per_prim + self.hrr_per_contracted


@dataclass(frozen=True, eq=False)  # identity: plans are cached and used as cache keys
class ClassPlan:
    graph: ClassGraph
    variant: Variant
    vrr_order: tuple[int, ...]
    hrr_order: tuple[int, ...]
    vrr_ranges: LiveRanges
    hrr_ranges: LiveRanges
    peak_live_vrr: int
    peak_live_hrr: int
    n_accumulators: int
    n_accumulators_paper: int
    registers_phase1: int
    registers_phase2: int
    tier1_placement: Tier1Placement
    """Where Tier 1 keeps its values under the model's register budgets."""
    tier1_registers: int | None
    """Registers per thread the Tier 1 kernel is held to (launch bounds); None: the full
    budget (``RegisterModel.tier1_register_target``)."""
    tier1_fallback: Tier1Placement | None
    """With ``tier1_registers``: the placement at the full budget, which the build falls back
    to where ptxas cannot hold the target without spills (``library.store``)."""
    tier1_denser: tuple[Tier1Placement, ...]
    """Full-budget placements of the store kernel with at least the warps per SM of
    ``tier1_placement`` (fewer slots or Phase 2 moves, less room for ptxas), most warps first:
    the build takes the first that compiles without spills (``library.store``)."""
    model_tier: Tier
    slots: SlotPlan
    flops: Flops
    release_score_used: tuple[bool, bool]

    @property
    def cls(self) -> QuartetClass:
        return self.graph.cls

    @property
    def tier(self) -> Tier:
        return self.variant.forced_tier or self.model_tier


def vrr_demand_order(graph: ClassGraph) -> list[int]:
    """Phase 1 outputs in the loop nest of the axis policy."""
    nest = demand_nesting(graph.axis)
    labels = graph.vrr.nodes

    def key(v: int) -> tuple[int, ...]:
        e, f, _ = labels[v].label
        comps = (*e, *f)
        return tuple(comps[i] for i in nest)

    return sorted(graph.vrr.outputs, key=key)


def ket_outer_demand(graph: ClassGraph) -> list[int]:
    """Phase 2 outputs with the ket's indices varying slowest. The HRR transforms the bra of
    each [e0|f0] column first and the ket last, so this nesting finishes a column's bra
    before the next and keeps fewer values live at once than the output order, which for
    some classes is the difference between Phase 2 fitting its registers and moving values
    through shared memory."""
    *lead, na, nb, nc, nd = graph.output_shape
    ng = math.prod(lead)  # the gradient components of a derivative class, else 1
    outs = graph.hrr.outputs
    return [
        outs[(((g * na + a) * nb + b) * nc + c) * nd + d]
        for c in range(nc)
        for d in range(nd)
        for g in range(ng)
        for a in range(na)
        for b in range(nb)
    ]


def order_phase(dag: Dag, kind: OrderKind, demand: list[int]) -> tuple[list[int], bool]:
    if kind is OrderKind.TOPOLOGICAL:
        return topological_order(dag), False
    if kind is OrderKind.EQ7_ONLY:
        return eq7_only_order(dag), True
    use_score = len(dag) <= RELEASE_SCORE_MAX_NODES
    return dsa_order(dag, demand, use_release_score=use_score), use_score


def _phase_flops(dag: Dag) -> int:
    return sum(node_flops(n) for n in dag.nodes)


def _denser_placements(
    model: RegisterModel,
    placement: Tier1Placement,
    registers: int | None,
    place: Callable[[tuple[int, int]], Tier1Placement],
    budgets: Callable[[int, int], tuple[int, int]],
) -> tuple[Tier1Placement, ...]:
    """Full-budget placements that hold at least the warps per SM of ``placement`` (held to
    ``registers``): for each Phase 2 register set of the model and each number of warps, the
    one that leaves ptxas the most registers (the largest fixed reserve, at most the model's).
    Most warps first, then the smaller Phase 2 set."""
    if not placement.n_slots:
        return ()
    least = model.warps_per_sm(registers, placement.n_slots)
    found: dict[tuple[int, int], Tier1Placement] = {}
    for phase2 in model.tier1_denser_phase2:
        seen = set()
        for fixed in range(model.tier1_phase1_fixed, model.tier1_denser_min_fixed - 1, -2):
            split = budgets(fixed, phase2)
            if split in seen:
                continue
            seen.add(split)
            candidate = place(split)
            warps = model.warps_per_sm(None, candidate.n_slots)
            if warps >= least and (-warps, phase2) not in found and candidate != placement:
                found[(-warps, phase2)] = candidate
    unique: list[Tier1Placement] = []
    for key in sorted(found):
        if found[key] not in unique:
            unique.append(found[key])
    return tuple(unique)


@lru_cache(maxsize=8)
def plan_class(
    cls: QuartetClass,
    variant: str | Variant = "full",
    spherical: bool = True,
    model: RegisterModel | None = None,
    order: OrderKind | None = None,
) -> ClassPlan:
    """Build and orchestrate ``cls`` under ``variant`` (``order`` overrides the variant's
    evaluation order, for the liveness studies). A derivative class (``cls.deriv``) is
    orchestrated like any other graph; the register model sees it as a class of its Boys
    order (total + 1), which its Phase 1 reaches."""
    model = model or DEFAULT_MODEL
    v = get_variant(variant)
    graph = build_class_graph(cls, v.axis, spherical, v.spherical_fusion)
    kind = order or v.order
    vrr_order, vrr_scored = order_phase(graph.vrr, kind, vrr_demand_order(graph))
    hrr_order, hrr_scored = order_phase(graph.hrr, kind, list(graph.hrr.outputs))
    vrr_ranges = live_ranges(graph.vrr, vrr_order)
    hrr_ranges = live_ranges(graph.hrr, hrr_order)
    peak_vrr, peak_hrr = vrr_ranges.peak(), hrr_ranges.peak()
    n_acc = graph.n_accumulators
    outputs = graph.hrr.output_set

    def budgets(registers: int | None, fixed=None, phase2=None) -> tuple[int, int]:
        return model.tier1_budgets(cls.boys_order, peak_vrr, n_acc, registers, fixed, phase2)

    # Tier 1's Phase 2 follows the output nesting, of the two, whose placement moves fewer
    # values through shared memory (neither wins on every class); DSA orders only
    tier1_orders = [tuple(hrr_order)]
    if kind is OrderKind.DSA and cls.boys_order <= model.spill_free_max_total:
        tier1_orders.append(tuple(order_phase(graph.hrr, kind, ket_outer_demand(graph))[0]))

    def place(split: tuple[int, int]) -> Tier1Placement:
        candidates = [place_tier1(graph.hrr, o, n_acc, *split) for o in tier1_orders]
        return min(candidates, key=lambda p: (p.phase2_slot_accesses, p.n_slots))

    def placement_for(registers: int | None) -> Tier1Placement:
        return place(budgets(registers))

    placement = placement_for(None)
    tier1_registers = fallback = None
    if placement.n_slots and model.tier1_occupancy_registers is not None:
        reduced = placement_for(model.tier1_occupancy_registers)
        tier1_registers = model.tier1_register_target(placement.n_slots, reduced.n_slots)
        if tier1_registers is not None:
            placement, fallback = reduced, placement
    denser = _denser_placements(
        model, placement, tier1_registers, place, lambda f, p: budgets(None, f, p)
    )
    buffered = [u for u in range(len(graph.hrr)) if u not in outputs]
    return ClassPlan(
        graph=graph,
        variant=v,
        vrr_order=tuple(vrr_order),
        hrr_order=tuple(hrr_order),
        vrr_ranges=vrr_ranges,
        hrr_ranges=hrr_ranges,
        peak_live_vrr=peak_vrr,
        peak_live_hrr=peak_hrr,
        n_accumulators=n_acc,
        n_accumulators_paper=paper_accumulator_count(cls),
        registers_phase1=model.phase1_registers(peak_vrr, n_acc),
        registers_phase2=model.phase2_registers(peak_hrr),
        tier1_placement=placement,
        tier1_registers=tier1_registers,
        tier1_fallback=fallback,
        tier1_denser=denser,
        model_tier=model.choose_tier(cls.boys_order, placement.n_slots),
        slots=pack_slots(hrr_ranges, buffered),
        flops=Flops(_phase_flops(graph.vrr), n_acc, _phase_flops(graph.hrr)),
        release_score_used=(vrr_scored, hrr_scored),
    )
