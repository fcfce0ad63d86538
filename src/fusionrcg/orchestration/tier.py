"""Decomposed register-pressure model (Eqs. 5-6), Tier 1's register budgets and the tier.

Registers are 32-bit, a double takes two. Phase 1 holds the transient VRR frontier next to the
persistent accumulator bank; Phase 2 holds its own live set, which starts as the whole bank.
The paper's Eq. (5) counts the bank as prod(2 l_i + 1) (the spherical output); the bank that the
accumulate-then-transform loop really keeps is the Cartesian HRR-input set
sum_{l=la}^{la+lb} ncart(l) * sum_{l=lc}^{lc+ld} ncart(l), and that is what the model uses.

Up to total 6 every class goes to Tier 1 without spills: what does not fit the register
budgets lives in shared-memory slots (``placement``). A class with slots at the full budget
runs at most 8 warps per SM (255 registers); its store kernel is placed for 168 registers
instead (12 warps) when the slots of that placement still leave shared memory for at least 10
warps, and the build falls back to the full budget where ptxas cannot hold 168 without
spills. Above total 6 a class goes to Tier 1 up to total 9 with everything in registers,
ptxas spills accepted, and to Tier 2 beyond. The tier rules are those of the benchmark that
sets Tier 1 against Tier 2 with the J/K epilogue on every class (the pipeline's tier
comparison); its records hold the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..angmom import QuartetClass
from ..variants import Tier

DOUBLE_REGISTERS = 2
UNLIMITED = 1 << 30
WARP = 32
SM_REGISTERS = 65_536
SM_SHARED_BYTES = 228 * 1024
SM_SUBPARTITIONS = 4  # warp schedulers of an SM: each issues from its own warps only
BLOCK_RESERVED_SHARED_BYTES = 1024  # the runtime's share of every resident block (sm_90)


def paper_accumulator_count(cls: QuartetClass) -> int:
    """Eq. (5): prod_i (2 l_i + 1)."""
    return math.prod(2 * l + 1 for l in cls.ls)


@dataclass(frozen=True)
class RegisterModel:
    register_budget: int = 255
    """Architectural per-thread limit of 32-bit registers."""
    fixed_registers: int = 110
    """Registers the kernel spends besides graph values (pair quantities, Boys temporaries,
    addresses and loop state) in the Eq. 6 estimates of both phases that the reports show;
    calibrated against ptxas (sm_90, CUDA 13) on the classes up to total 7 whose whole bank
    fits the registers."""
    spill_free_max_total: int = 6
    """Up to this total Tier 1 kernels keep within the registers (the acceptance asks for
    spill-free Tier 1 kernels there) and place the rest in shared-memory slots."""
    spilled_tier1_max_total: int = 9
    """Above ``spill_free_max_total`` and up to this total a class stays in Tier 1 with its
    spills, which cost less than Tier 2's round trips through the slot buffer. Above it,
    straight-line Tier 1 code takes ptxas tens of minutes to hours per class."""
    tier1_phase1_fixed: int = 130
    """Registers ptxas spends in Tier 1's primitive loops besides the VRR frontier and the
    accumulators in registers. Calibrated with ptxas (sm_90, CUDA 13): with it and
    ``tier1_phase2_values`` every class up to total 6 compiles without spills in Tier 1."""
    tier1_phase2_values: int = 32
    """Values Tier 1's Phase 2 keeps in registers (or as many as accumulators the loops kept
    in registers, if more); more go to shared-memory slots."""
    tier1_occupancy_registers: int | None = 168
    """Register target of the store kernels of classes whose placement at the full budget needs
    slots: 12 warps per SM instead of 8 (``tier1_register_target``; None: always the full
    budget), more latency hidden for kernels whose slots already cost shared-memory
    traffic."""
    tier1_occupancy_fixed: int = 80
    """``tier1_phase1_fixed`` under that target: ptxas, held to it by launch bounds, spends
    fewer registers on scheduling. Calibrated with ptxas (sm_90, CUDA 13) like the former."""
    tier1_occupancy_min_warps: int = 10
    """Warps per SM the shared-memory slots of the reduced placement must leave room for: with
    fewer, shared memory rather than registers bounds the occupancy and the target buys no
    warps."""
    tier1_denser_min_fixed: int = 64
    """Smallest ``tier1_phase1_fixed`` of the denser full-budget placements the library tries
    (``ClassPlan.tier1_denser``): more accumulators in registers, fewer slots, more warps per
    SM, and less room for ptxas, which may then spill (the library keeps what does not)."""
    tier1_denser_phase2: tuple[int, ...] = (64, 96)
    """``tier1_phase2_values`` of those placements: a larger Phase 2 register set, fewer moves
    to slots and no slots beyond the accumulators', so more warps per SM where ptxas manages
    without spills."""
    tier1_max_slots: int = 908
    """Up to ``spill_free_max_total`` a class goes to Tier 1 while its placement needs at most
    this many shared-memory slots per thread: 227 KB per block of 32 threads."""

    def tier1_budgets(
        self,
        total: int,
        peak_live_vrr: int,
        n_accumulators: int,
        registers: int | None = None,
        fixed: int | None = None,
        phase2_values: int | None = None,
    ) -> tuple[int, int]:
        """Accumulators Tier 1 keeps in registers through the loops, and values its Phase 2
        keeps in registers, for a kernel of ``registers`` per thread (default: the full
        budget; ``tier1_occupancy_registers`` otherwise) that leaves ``fixed`` registers to
        ptxas (default: the model's for that budget) and keeps ``phase2_values`` in registers
        in Phase 2 (default: ``tier1_phase2_values``). Up to ``spill_free_max_total`` they
        are what fits, the rest goes to shared-memory slots; above it everything stays in
        registers and ptxas spills (the slot banks of those classes would cost more occupancy
        than the spills cost time)."""
        if total > self.spill_free_max_total:
            return n_accumulators, UNLIMITED
        full = registers is None or registers >= self.register_budget
        if fixed is None:
            fixed = self.tier1_phase1_fixed if full else self.tier1_occupancy_fixed
        room = ((self.register_budget if full else registers) - fixed) // DOUBLE_REGISTERS
        in_registers = max(0, min(n_accumulators, room - peak_live_vrr))
        # Phase 2 starts from the accumulators the loops kept: it may keep as many
        if phase2_values is None:
            phase2_values = self.tier1_phase2_values
        return in_registers, max(phase2_values, in_registers)

    def warps_by_shared_memory(self, n_slots: int) -> int:
        """Tier 1 warps (blocks of one warp) one SM holds with ``n_slots`` slots per thread."""
        per_block = 8 * n_slots * WARP + BLOCK_RESERVED_SHARED_BYTES
        return SM_SHARED_BYTES // per_block

    def warps_per_sm(self, registers: int | None, n_slots: int) -> int:
        """Tier 1 warps one SM holds with ``registers`` per thread (None: the full budget)
        and ``n_slots`` slots per thread."""
        by_registers = SM_REGISTERS // (WARP * (registers or self.register_budget))
        return min(by_registers, self.warps_by_shared_memory(n_slots))

    def tier1_register_target(self, slots_full: int, slots_reduced: int) -> int | None:
        """Registers per thread Tier 1 is held to, None for the full budget: the occupancy
        target when the placement at the full budget needs ``slots_full`` > 0 slots (the
        kernel then takes all registers: 8 warps per SM) and the reduced placement's
        ``slots_reduced`` leave room for ``tier1_occupancy_min_warps``."""
        target = self.tier1_occupancy_registers
        if target is None or target >= self.register_budget or slots_full == 0:
            return None
        if self.warps_by_shared_memory(slots_reduced) < self.tier1_occupancy_min_warps:
            return None
        return target

    def phase1_registers(self, peak_live_vrr: int, n_accumulators: int) -> int:
        return DOUBLE_REGISTERS * (peak_live_vrr + n_accumulators) + self.fixed_registers

    def phase2_registers(self, peak_live_hrr: int) -> int:
        return DOUBLE_REGISTERS * peak_live_hrr + self.fixed_registers

    def choose_tier(self, total: int, tier1_slots: int) -> Tier:
        if total <= self.spill_free_max_total:
            fits = tier1_slots <= self.tier1_max_slots
        else:
            fits = total <= self.spilled_tier1_max_total
        return Tier.REGISTER if fits else Tier.BUFFERED
