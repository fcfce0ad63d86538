import dataclasses

import numpy as np
import pytest

from fusionrcg import QuartetClass, Tier, canonical_classes, get_variant, plan_class
from fusionrcg.graph import AxisPolicy
from fusionrcg.graph.ir import DagBuilder, NodeKind, Term
from fusionrcg.orchestration.liveness import check_order, live_ranges, peak_live
from fusionrcg.orchestration.schedule import (
    OrderKind,
    dsa_order,
    release_scores,
    topological_order,
)
from fusionrcg.orchestration.slots import check_slots
from fusionrcg.orchestration.tier import RegisterModel
from fusionrcg.variants import VARIANTS


def diamond():
    """a -> b, a -> c, (b, c) -> d, d and c are outputs."""
    b = DagBuilder()
    a = b.add("a", NodeKind.BOYS, ())
    x = b.add("b", NodeKind.VRR, (), [Term(1.0, None, a)])
    y = b.add("c", NodeKind.VRR, (), [Term(2.0, None, a)])
    d = b.add("d", NodeKind.VRR, (), [Term(1.0, None, x), Term(1.0, None, y)])
    return b.finish([d, y], leaves_preexist=False)


def test_peak_live_on_a_hand_graph():
    dag = diamond()
    # after a: {a}; after b: {a, b}; after c: {b, c}; after d: {} -> peak 2
    assert peak_live(dag, [0, 1, 2, 3]) == 2
    ranges = live_ranges(dag, [0, 1, 2, 3])
    assert list(ranges.profile()) == [0, 1, 2, 2, 0]


def test_release_score_is_eq7_on_a_hand_graph():
    dag = diamond()
    # out - in: a 2-0=2, b 1-1=0, c 1-1=0, d 0-2=-2; Reach(a) = all
    assert release_scores(dag) == [0, -2, -2, -2]


def test_orders_reject_bad_input():
    dag = diamond()
    with pytest.raises(ValueError, match="before one of its sources"):
        check_order(dag, [1, 0, 2, 3])
    with pytest.raises(ValueError, match="exactly once"):
        check_order(dag, [0, 1, 2])


@pytest.mark.parametrize("cls", [QuartetClass(1, 1, 1, 1), QuartetClass(3, 1, 2, 2)], ids=str)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_orders_topologically_and_packs_slots_optimally(cls, variant):
    plan = plan_class(cls, variant)
    check_order(plan.graph.vrr, plan.vrr_order)
    check_order(plan.graph.hrr, plan.hrr_order)
    check_slots(plan.hrr_ranges, plan.slots)
    outputs = plan.graph.hrr.output_set
    buffered = np.array([v not in outputs for v in range(len(plan.graph.hrr))])
    birth, death = plan.hrr_ranges.birth, plan.hrr_ranges.death
    steps = np.arange(-1, len(plan.hrr_order))
    live = [(buffered & (birth <= t) & (t < death)).sum() for t in steps]
    assert plan.slots.n_slots == max(live), "interval packing is optimal"
    assert plan.slots.n_values == int(buffered.sum())


def test_dsa_beats_plain_order_with_conventional_axes_for_total_7_to_9():
    classes = [q for q in canonical_classes() if 7 <= q.total <= 9]
    assert classes
    full = get_variant("full")
    worst = dataclasses.replace(full, axis=AxisPolicy.CONVENTIONAL, order=OrderKind.TOPOLOGICAL)
    for cls in classes:
        best = plan_class(cls, full).peak_live_vrr
        base = plan_class(cls, worst).peak_live_vrr
        assert best < base, f"{cls}: DSA+priority {best} vs conventional+plain {base}"


def test_dsa_without_release_score_is_still_a_valid_order():
    plan = plan_class(QuartetClass(2, 1, 1, 0))
    order = dsa_order(plan.graph.vrr, list(plan.graph.vrr.outputs), use_release_score=False)
    check_order(plan.graph.vrr, order)
    check_order(plan.graph.vrr, topological_order(plan.graph.vrr))


def test_tier_model_and_forced_tiers():
    small = plan_class(QuartetClass(2, 0, 2, 0))
    assert small.model_tier == Tier.REGISTER
    fixed = RegisterModel().fixed_registers
    assert small.registers_phase1 == 2 * (small.peak_live_vrr + 36) + fixed
    assert small.tier1_placement.n_slots == 0  # everything fits the registers
    big = plan_class(QuartetClass(3, 2, 2, 2))
    assert big.cls.total == 9 and big.tier == Tier.REGISTER
    assert plan_class(QuartetClass(3, 2, 3, 2)).tier == Tier.BUFFERED
    assert plan_class(QuartetClass(3, 2, 3, 2), "tier1-only").tier == Tier.REGISTER
    assert plan_class(QuartetClass(0, 0, 0, 0), "tier2-only").tier == Tier.BUFFERED
    g = plan_class(QuartetClass(2, 2, 2, 2))
    assert g.n_accumulators == 31 * 31 and g.n_accumulators_paper == 625


def test_tier1_budgets_up_to_total_6_and_beyond():
    model = RegisterModel()
    # up to total 6 every class goes to Tier 1; what exceeds the budgets goes to slots
    tight = plan_class(QuartetClass(2, 1, 2, 1))
    assert tight.cls.total == 6 and tight.model_tier == Tier.REGISTER
    n_reg, p2 = model.tier1_budgets(6, tight.peak_live_vrr, tight.n_accumulators)
    assert n_reg < tight.n_accumulators and p2 == model.tier1_phase2_values
    assert len(tight.tier1_placement.accumulator_slot) == tight.n_accumulators - n_reg
    # ... unless the slots would not fit one block's shared memory
    cramped = RegisterModel(tier1_max_slots=10)
    assert plan_class(QuartetClass(2, 1, 2, 1), model=cramped).model_tier == Tier.BUFFERED
    # above total 6 everything stays in registers (ptxas spills) up to total 9
    spilled = plan_class(QuartetClass(3, 3, 1, 1))
    assert spilled.model_tier == Tier.REGISTER and spilled.tier1_placement.n_slots == 0
    strict = RegisterModel(spilled_tier1_max_total=6)
    assert plan_class(QuartetClass(3, 3, 1, 1), model=strict).model_tier == Tier.BUFFERED


def test_tier1_register_target_for_occupancy():
    model = RegisterModel()
    held = plan_class(QuartetClass(1, 1, 1, 1))  # slots at the full budget, room at 168
    assert held.tier1_registers == model.tier1_occupancy_registers == 168
    assert 0 < held.tier1_fallback.n_slots < held.tier1_placement.n_slots
    warps = model.warps_by_shared_memory(held.tier1_placement.n_slots)
    assert warps >= model.tier1_occupancy_min_warps
    fits = plan_class(QuartetClass(2, 0, 2, 0))  # no slots: its kernel is not register-bound
    assert fits.tier1_registers is None and fits.tier1_fallback is None
    crowded = plan_class(QuartetClass(2, 2, 1, 1))  # its slots leave room for 3 warps
    assert crowded.tier1_registers is None and crowded.tier1_placement.n_slots > 200
    assert model.warps_by_shared_memory(crowded.tier1_placement.n_slots) == 3
    assert plan_class(QuartetClass(3, 3, 1, 1)).tier1_registers is None  # above total 6
    off = RegisterModel(tier1_occupancy_registers=None)
    assert plan_class(QuartetClass(1, 1, 1, 1), model=off).tier1_registers is None


def test_denser_placements_hold_at_least_the_warps_most_first():
    model = RegisterModel()
    plan = plan_class(QuartetClass(3, 1, 1, 1))  # 205 slots at the model's budgets: 4 warps
    assert model.warps_per_sm(None, plan.tier1_placement.n_slots) == 4
    warps = [model.warps_per_sm(None, p.n_slots) for p in plan.tier1_denser]
    assert warps[0] > 4 and min(warps) >= 4 and warps == sorted(warps, reverse=True)
    for p in plan.tier1_denser:  # never fewer accumulators in registers than the model's
        assert len(p.register_accumulators()) >= len(plan.tier1_placement.register_accumulators())
        assert p != plan.tier1_placement
    assert len(set(map(id, plan.tier1_denser))) == len(plan.tier1_denser)
    assert model.warps_per_sm(168, 0) == 12 and model.warps_per_sm(None, 0) == 8
    assert plan_class(QuartetClass(1, 1, 1, 1)).tier1_denser == ()  # held: 12 warps already
    assert plan_class(QuartetClass(2, 0, 2, 0)).tier1_denser == ()  # no slots
    assert plan_class(QuartetClass(2, 2, 2, 1)).tier1_denser == ()  # above total 6


def test_flops_account_for_every_vertex():
    plan = plan_class(QuartetClass(1, 0, 0, 0))
    # [p0|00]^(0) = PA*F0 + WP*F1 for each of x, y, z: 3 flops each
    assert plan.flops.vrr_per_primitive == 9
    assert plan.flops.accumulate_per_primitive == 3
    assert plan.flops.hrr_per_contracted == 0
    assert plan.flops.per_contracted_quartet(4) == 4 * 12


def test_ket_outer_demand_is_the_outputs_with_the_ket_slowest():
    from fusionrcg.orchestration.plan import ket_outer_demand

    plan = plan_class(QuartetClass(2, 1, 1, 1))
    g = plan.graph
    demand = ket_outer_demand(g)
    assert sorted(demand) == sorted(g.hrr.outputs)
    na, nb, nc, nd = g.output_shape
    assert demand[: na * nb] == [g.hrr.outputs[(a * nb + b) * nc * nd]
                                 for a in range(na) for b in range(nb)]  # fmt: skip


def test_tier1_phase2_takes_the_nesting_with_fewer_slot_accesses():
    from fusionrcg.orchestration.placement import place_tier1
    from fusionrcg.orchestration.plan import DEFAULT_MODEL, ket_outer_demand, order_phase
    from fusionrcg.orchestration.schedule import OrderKind

    for ls, ket_wins in (((2, 2, 1, 1), True), ((2, 1, 2, 1), False)):
        plan = plan_class(QuartetClass(*ls))
        g = plan.graph
        split = DEFAULT_MODEL.tier1_budgets(plan.cls.total, plan.peak_live_vrr, plan.n_accumulators)
        ket_order = tuple(order_phase(g.hrr, OrderKind.DSA, ket_outer_demand(g))[0])
        check_order(g.hrr, list(ket_order))
        bra = place_tier1(g.hrr, plan.hrr_order, plan.n_accumulators, *split)
        ket = place_tier1(g.hrr, ket_order, plan.n_accumulators, *split)
        assert (ket.phase2_slot_accesses < bra.phase2_slot_accesses) is ket_wins
        best = min(bra.phase2_slot_accesses, ket.phase2_slot_accesses)
        assert plan.tier1_placement.phase2_slot_accesses == best
    # the no-DSA ablation keeps its own order
    plan = plan_class(QuartetClass(2, 2, 1, 1), "no-dsa")
    assert [s.vertex for s in plan.tier1_placement.steps] == list(plan.hrr_order)


def test_phase2_slot_accesses_count_slot_reads_and_moves():
    from fusionrcg.orchestration.placement import place_tier1

    plan = plan_class(QuartetClass(2, 1, 1, 0))
    g = plan.graph
    everything = place_tier1(g.hrr, plan.hrr_order, plan.n_accumulators, plan.n_accumulators, 10**4)
    assert everything.phase2_slot_accesses == 0
    p = place_tier1(g.hrr, plan.hrr_order, plan.n_accumulators, 0, 4)
    slot = dict(p.accumulator_slot)
    count = 0
    for step in p.steps:
        count += sum(1 for t in g.hrr.nodes[step.vertex].terms if t.src in slot)
        count += len(step.to_slot)
        slot.update(step.to_slot)
    assert p.phase2_slot_accesses == count > 0
