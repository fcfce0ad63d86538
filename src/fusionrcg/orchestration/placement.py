"""Where Tier 1 keeps its values: registers, or per-thread shared-memory slots beyond them.

Tier 1 holds the accumulator bank through the primitive loops and then runs Phase 2. When the
bank and the VRR frontier exceed the registers the model grants, the accumulators that Phase 2
reads last live in shared-memory slots (one lane per thread), and Phase 2 moves to a slot the
value in registers whose next read is farthest away (Belady's rule) whenever more values are
live than it may keep. Slots are reused once their value is dead. Without placement ptxas
would spill the same values to local memory, where they compete with everything else for L1.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PlanError
from ..graph.ir import Dag

NEVER = 1 << 62


@dataclass(frozen=True)
class Phase2Step:
    vertex: int
    """Phase 2 vertex computed at this step."""
    to_slot: tuple[tuple[int, int], ...] = ()
    """(value, slot): values written to their slot after this step, read from it afterwards."""


@dataclass(frozen=True)
class Tier1Placement:
    n_accumulators: int
    accumulator_slot: dict[int, int]
    """Accumulators kept in shared memory from the start, and their slots."""
    steps: tuple[Phase2Step, ...]
    n_slots: int
    """Shared-memory slots per thread (0: everything in registers)."""
    phase2_slot_accesses: int = 0
    """Phase 2's shared-memory reads and writes: reads of values in slots and moves to them."""

    def register_accumulators(self) -> list[int]:
        return [k for k in range(self.n_accumulators) if k not in self.accumulator_slot]


def _reads(dag: Dag, order: tuple[int, ...]) -> dict[int, list[int]]:
    reads: dict[int, list[int]] = {}
    for step, v in enumerate(order):
        for src in {t.src for t in dag.nodes[v].terms}:
            reads.setdefault(src, []).append(step)
    return reads


def place_tier1(
    hrr: Dag,
    hrr_order: tuple[int, ...],
    n_accumulators: int,
    register_accumulators: int,
    phase2_values: int,
) -> Tier1Placement:
    """Placement of Tier 1's values with at most ``register_accumulators`` of the
    ``n_accumulators`` accumulators in registers through the loops and ``phase2_values`` live
    values in registers between the steps of ``hrr_order``."""
    if register_accumulators < 0 or phase2_values < 1:
        raise PlanError("register budgets must be non-negative (Phase 2: at least one value)")
    n_acc = n_accumulators
    reads = _reads(hrr, hrr_order)
    first_read = lambda k: reads.get(k, [NEVER])[0]  # noqa: E731
    by_first_read = sorted(range(n_acc), key=first_read)
    accumulator_slot = {k: s for s, k in enumerate(by_first_read[register_accumulators:])}
    slot = dict(accumulator_slot)
    free: list[int] = []
    n_slots = len(slot)
    cursor = dict.fromkeys(reads, 0)  # index of each value's next read in reads[value]

    def next_read(x: int) -> int:
        r = reads[x]
        return r[cursor[x]] if cursor[x] < len(r) else NEVER

    in_registers = {k for k in range(n_acc) if k not in slot and k in reads}
    steps = []
    accesses = 0
    for v in hrr_order:
        accesses += sum(1 for t in hrr.nodes[v].terms if t.src in slot)
        for src in {t.src for t in hrr.nodes[v].terms}:
            cursor[src] += 1
            if next_read(src) == NEVER:  # dead: its register or slot is free again
                in_registers.discard(src)
                if src in slot:
                    free.append(slot[src])
        if v in reads:
            in_registers.add(v)
        moved = []
        while len(in_registers) > phase2_values:
            x = max(in_registers, key=lambda y: (next_read(y), y))
            if free:
                s = free.pop()
            else:
                s, n_slots = n_slots, n_slots + 1
            slot[x] = s
            in_registers.discard(x)
            moved.append((x, s))
        accesses += len(moved)
        steps.append(Phase2Step(v, tuple(moved)))
    return Tier1Placement(n_acc, accumulator_slot, tuple(steps), n_slots, accesses)
