"""Axis policies: which index a recurrence reduces at each vertex.

The policy is a value handed to the graph builders; the "no-axis" ablation passes a different
value, never a different builder.

* ``PRIORITY`` is the paper's Algorithm 1 (consumer-first, z -> y -> x): scanning x, y, z, the
  last axis with a non-zero component wins and the ket (c) beats the bra (a) on that axis, so
  the reduction priority is c_z, a_z, c_y, a_y, c_x, a_x.
* ``CONVENTIONAL`` reduces the bra first, x -> y -> z, then the ket, x -> y -> z (the usual
  la -> lc, x -> y -> z ordering of hand-written HGP codes).
"""

from __future__ import annotations

import enum

from ..angmom import Cart
from ..errors import PlanError

BRA, KET = 0, 1


class AxisPolicy(str, enum.Enum):
    PRIORITY = "priority"
    CONVENTIONAL = "conventional"


def vrr_axis(policy: AxisPolicy, e: Cart, f: Cart) -> tuple[int, int]:
    """(side, axis) along which [e0|f0] is reduced; side is BRA or KET."""
    if policy is AxisPolicy.PRIORITY:
        choice = None
        for i in range(3):
            if f[i] > 0:
                choice = (KET, i)
            elif e[i] > 0:
                choice = (BRA, i)
        if choice is None:
            raise PlanError("[00|00] has no axis to reduce")
        return choice
    for side, comp in ((BRA, e), (KET, f)):
        for i in range(3):
            if comp[i] > 0:
                return side, i
    raise PlanError("[00|00] has no axis to reduce")


def hrr_axis(policy: AxisPolicy, b: Cart) -> int:
    """Axis along which the HRR lowers the second index of a pair: z first under PRIORITY,
    x first under CONVENTIONAL."""
    axes = (2, 1, 0) if policy is AxisPolicy.PRIORITY else (0, 1, 2)
    for i in axes:
        if b[i] > 0:
            return i
    raise PlanError("an HRR on a pair whose second index is s has no axis")


def demand_nesting(policy: AxisPolicy) -> tuple[int, ...]:
    """Loop nest the policy induces over the VRR targets' components (a_x, a_y, a_z, c_x, c_y,
    c_z), outermost first: the component reduced first varies fastest. Consecutive targets then
    share the longest reduction chains, which the demand-driven schedule exploits."""
    if policy is AxisPolicy.PRIORITY:
        return (0, 3, 1, 4, 2, 5)
    return (5, 4, 3, 2, 1, 0)
