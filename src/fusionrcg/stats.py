"""Graph and orchestration statistics of a class, as plain records for the CLI and reports."""

from __future__ import annotations

import dataclasses
from itertools import product

from .angmom import CENTRES, QuartetClass
from .graph.axis import AxisPolicy
from .orchestration.plan import ClassPlan, plan_class
from .orchestration.schedule import OrderKind
from .variants import VARIANTS, Variant, get_variant

LIVENESS_ORDERS = (OrderKind.DSA, OrderKind.TOPOLOGICAL)


def plan_record(plan: ClassPlan) -> dict:
    """One flat row describing an orchestrated class."""
    g = plan.graph
    return {
        "class": str(plan.cls),
        "la": plan.cls.la,
        "lb": plan.cls.lb,
        "lc": plan.cls.lc,
        "ld": plan.cls.ld,
        "total": plan.cls.total,
        "variant": plan.variant.name,
        "spherical": g.spherical,
        "nodes_vrr": len(g.vrr),
        "nodes_hrr": len(g.hrr),
        "nodes": g.n_nodes,
        "edges": g.n_edges,
        "peak_live_vrr": plan.peak_live_vrr,
        "peak_live_hrr": plan.peak_live_hrr,
        "accumulators": plan.n_accumulators,
        "accumulators_eq5": plan.n_accumulators_paper,
        "registers_phase1": plan.registers_phase1,
        "registers_phase2": plan.registers_phase2,
        "model_tier": int(plan.model_tier),
        "tier": int(plan.tier),
        "slots_before_packing": plan.slots.n_values,
        "slots_after_packing": plan.slots.n_slots,
        "flops_vrr_per_primitive": plan.flops.vrr_per_primitive,
        "flops_accumulate_per_primitive": plan.flops.accumulate_per_primitive,
        "flops_hrr_per_contracted": plan.flops.hrr_per_contracted,
        "release_score_vrr": plan.release_score_used[0],
        "release_score_hrr": plan.release_score_used[1],
    }


def with_orchestration(variant: Variant, axis: AxisPolicy, order: OrderKind) -> Variant:
    """``variant`` with another axis policy and evaluation order: the named variant that has
    exactly those parameters where one exists (so ``plan_class``'s cache serves the plan
    records and the liveness matrix alike), else a copy named after the combination."""
    wanted = dataclasses.replace(variant, axis=axis, order=order)
    for named in VARIANTS.values():
        if dataclasses.replace(named, name=wanted.name, description=wanted.description) == wanted:
            return named
    return dataclasses.replace(wanted, name=f"{axis.value}+{order.value}")


def liveness_matrix(
    cls: QuartetClass, spherical: bool = True, base: str | Variant = "full"
) -> dict[str, dict[str, dict[str, int]]]:
    """PeakLive of both phases for every axis policy x evaluation order."""
    v = get_variant(base)
    out: dict[str, dict[str, dict[str, int]]] = {}
    for axis, order in product(AxisPolicy, LIVENESS_ORDERS):
        plan = plan_class(cls, with_orchestration(v, axis, order), spherical)
        out.setdefault(axis.value, {})[order.value] = {
            "vrr": plan.peak_live_vrr,
            "hrr": plan.peak_live_hrr,
        }
    return out


def graph_summary(
    cls: QuartetClass, variant: str | Variant = "full", spherical: bool = True
) -> dict:
    """What ``fusionrcg graph`` prints."""
    plan = plan_class(cls, variant, spherical)
    rec = plan_record(plan)
    return {
        "class": rec["class"],
        # the differentiated centre of a derivative class, else None
        "deriv": None if cls.deriv is None else CENTRES[cls.deriv],
        "variant": rec["variant"],
        "spherical": spherical,
        "nodes": {"vrr": rec["nodes_vrr"], "hrr": rec["nodes_hrr"], "total": rec["nodes"]},
        "edges": {
            "vrr": plan.graph.vrr.n_edges,
            "hrr": plan.graph.hrr.n_edges,
            "total": rec["edges"],
        },
        "peak_live": {"variant": {"vrr": rec["peak_live_vrr"], "hrr": rec["peak_live_hrr"]}}
        | liveness_matrix(cls, spherical, variant),
        "accumulators": {"hrr_inputs": rec["accumulators"], "eq5": rec["accumulators_eq5"]},
        "registers": {"phase1": rec["registers_phase1"], "phase2": rec["registers_phase2"]},
        "tier": {"model": rec["model_tier"], "chosen": rec["tier"]},
        "buffer_slots": {
            "before_packing": rec["slots_before_packing"],
            "after_packing": rec["slots_after_packing"],
        },
        "flops": {
            "vrr_per_primitive_quartet": rec["flops_vrr_per_primitive"],
            "accumulate_per_primitive_quartet": rec["flops_accumulate_per_primitive"],
            "hrr_per_contracted_quartet": rec["flops_hrr_per_contracted"],
        },
    }
