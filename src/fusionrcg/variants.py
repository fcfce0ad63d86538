"""Named variants of the generator: the full pipeline and its ablations.

A variant is a set of parameter values handed to the same graph builders and orchestrator;
none of them forks code.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .errors import VariantError
from .graph.axis import AxisPolicy
from .orchestration.schedule import OrderKind


class Tier(enum.IntEnum):
    REGISTER = 1  # Tier 1: one fused kernel, everything in registers
    BUFFERED = 2  # Tier 2: VRR in registers, accumulators and HRR in a global slot buffer


@dataclass(frozen=True)
class Variant:
    name: str
    axis: AxisPolicy
    order: OrderKind
    spherical_fusion: bool
    forced_tier: Tier | None
    description: str


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant(
            "full",
            AxisPolicy.PRIORITY,
            OrderKind.DSA,
            True,
            None,
            "axis priority, DSA order, stepwise spherical fusion, model-chosen tier",
        ),
        Variant(
            "no-axis",
            AxisPolicy.CONVENTIONAL,
            OrderKind.DSA,
            True,
            None,
            "conventional bra-first x->y->z axis choice",
        ),
        Variant(
            "no-dsa",
            AxisPolicy.PRIORITY,
            OrderKind.TOPOLOGICAL,
            True,
            None,
            "plain topological (Kahn FIFO) evaluation order",
        ),
        Variant(
            "no-spherical",
            AxisPolicy.PRIORITY,
            OrderKind.DSA,
            False,
            None,
            "Cartesian HRR throughout, spherical transform at the end",
        ),
        Variant(
            "tier1-only",
            AxisPolicy.PRIORITY,
            OrderKind.DSA,
            True,
            Tier.REGISTER,
            "forces the register-only Tier 1 kernel",
        ),
        Variant(
            "tier2-only",
            AxisPolicy.PRIORITY,
            OrderKind.DSA,
            True,
            Tier.BUFFERED,
            "forces the buffered two-kernel Tier 2 pipeline",
        ),
    )
}


def get_variant(name: str | Variant) -> Variant:
    if isinstance(name, Variant):
        return name
    try:
        return VARIANTS[name]
    except KeyError:
        known = ", ".join(VARIANTS)
        raise VariantError(f"unknown variant {name!r}; known variants: {known}") from None
