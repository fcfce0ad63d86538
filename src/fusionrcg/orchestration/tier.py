"""Decomposed register-pressure model (Eqs. 5-6) and the tier it implies.

Up to total 6 a class goes to Tier 1 where the model says its kernel fits the registers; above
it, while the estimated need stays under a limit calibrated on the H200 measurements (spilling
Tier 1 kernels there still beat the two-kernel Tier 2).

Registers are 32-bit, a double takes two. Phase 1 holds the transient VRR frontier next to the
persistent accumulator bank; Phase 2 holds its own live set, which starts as the whole bank.
The paper's Eq. (5) counts the bank as prod(2 l_i + 1) (the spherical output); the bank that the
accumulate-then-transform loop really keeps is the Cartesian HRR-input set
sum_{l=la}^{la+lb} ncart(l) * sum_{l=lc}^{lc+ld} ncart(l), and that is what the model uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..angmom import QuartetClass
from ..variants import Tier

DOUBLE_REGISTERS = 2
UNLIMITED = 1 << 30


def paper_accumulator_count(cls: QuartetClass) -> int:
    """Eq. (5): prod_i (2 l_i + 1)."""
    return math.prod(2 * l + 1 for l in cls.ls)


@dataclass(frozen=True)
class RegisterModel:
    register_budget: int = 255
    """Architectural per-thread limit of 32-bit registers."""
    fixed_registers: int = 110
    """Registers the kernel spends besides graph values: pair quantities, Boys temporaries,
    addresses and loop state. Calibrated against ptxas (sm_90, CUDA 13) on every class with
    total <= 7 compiled as Tier 1: with it, the model sends to Tier 1 exactly the classes whose
    Tier 1 kernel compiles without spills (reports/eri/build)."""
    spill_free_max_total: int = 6
    """Up to this total a class goes to Tier 1 only where its kernel fits the registers (the
    acceptance asks for spill-free Tier 1 kernels there)."""
    spilled_tier1_max_registers: int = 2350
    """Above ``spill_free_max_total`` a class stays in Tier 1 while the estimated need is at
    most this many registers, its spills accepted: on the H200 the spilling Tier 1 J/K kernel
    ran faster than Tier 2 on every class of total 7-9 measured with a need up to 2346, and
    slower on (2,2|2,2), need 2402 (35 classes, reports/eri/gpu/tiers.csv). Larger classes
    also take minutes to hours to compile as straight-line Tier 1 code."""

    tier1_phase1_fixed: int = 130
    """Registers ptxas spends in Tier 1's primitive loops besides the VRR frontier and the
    accumulators in registers (calibrated: sm_90, CUDA 13)."""
    tier1_phase2_values: int = 40
    """Values Tier 1's Phase 2 keeps in registers; more go to shared-memory slots."""

    def tier1_budgets(self, total: int, peak_live_vrr: int, n_accumulators: int) -> tuple[int, int]:
        """Accumulators Tier 1 keeps in registers through the loops, and values its Phase 2
        keeps in registers. Up to ``spill_free_max_total`` they are what fits, the rest goes
        to shared-memory slots; above it everything stays in registers and ptxas spills (on
        the H200 the large slot banks there cost more occupancy than the spills cost, 0.45x-1.08x
        over 28 classes of total 7-9, reports/gpu/eri/tier1_slots)."""
        if total > self.spill_free_max_total:
            return n_accumulators, UNLIMITED
        room = (self.register_budget - self.tier1_phase1_fixed) // DOUBLE_REGISTERS
        return max(0, min(n_accumulators, room - peak_live_vrr)), self.tier1_phase2_values

    def phase1_registers(self, peak_live_vrr: int, n_accumulators: int) -> int:
        return DOUBLE_REGISTERS * (peak_live_vrr + n_accumulators) + self.fixed_registers

    def phase2_registers(self, peak_live_hrr: int) -> int:
        return DOUBLE_REGISTERS * peak_live_hrr + self.fixed_registers

    tier1_max_slots: int = 1 << 30
    """Up to ``spill_free_max_total`` a class goes to Tier 1 while its placement needs at
    most this many shared-memory slots per thread."""

    def choose_tier(
        self,
        total: int,
        peak_live_vrr: int,
        n_accumulators: int,
        peak_live_hrr: int,
        tier1_slots: int,
    ) -> Tier:
        if total <= self.spill_free_max_total:
            fits = tier1_slots <= self.tier1_max_slots
        else:
            need = max(
                self.phase1_registers(peak_live_vrr, n_accumulators),
                self.phase2_registers(peak_live_hrr),
            )
            fits = need <= self.spilled_tier1_max_registers
        return Tier.REGISTER if fits else Tier.BUFFERED
