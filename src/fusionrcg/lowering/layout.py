"""Where Tier 2 keeps its values: VRR segments, buffer slots and the Phase 2 program.

Tier 2 cuts the DSA-ordered VRR into segments of at most ``segment_size`` statements, each
lowered as its own non-inlined function: the compiler allocates registers one segment at a time
(a single straight-line VRR of a high class takes the compiler hours and spills anyway). Values
that live across a segment boundary pass through the slot buffer, packed by the same two-pass
lifetime allocator as the accumulators. Phase 2 runs from the buffer: its vertices, in the plan's
order, become a compact program of (destination slot, terms) that the kernel executes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import OptionsError
from ..graph import NodeKind, Term
from ..graph import symbols as S
from ..orchestration.plan import ClassPlan
from ..orchestration.slots import pack_slots

DEFAULT_SEGMENT_SIZE = 1000

# Phase 2 symbol codes: 0 is the constant 1.
PHASE2_SYMBOLS = (None, *S.AB, *S.CD)
_SYMBOL_CODE = {s: i for i, s in enumerate(PHASE2_SYMBOLS)}


@dataclass(frozen=True)
class Phase2Program:
    """Vertex i computes sum_t coef[t] * sym[code[t]] * slot[src[t]] for t in
    start[i]..start[i+1]-1 and writes slot dst[i], or output -dst[i]-1 when dst[i] < 0."""

    dst: np.ndarray
    start: np.ndarray
    src: np.ndarray
    coef: np.ndarray
    code: np.ndarray

    def __len__(self) -> int:
        return self.dst.size


@dataclass(frozen=True)
class Segment:
    statements: tuple[int, ...]  # VRR vertex ids in evaluation order
    live_in: tuple[int, ...]  # vertices read from the buffer at the segment's start
    spill: frozenset[int]  # vertices stored to the buffer when computed


@dataclass(frozen=True)
class Tier2Layout:
    segments: tuple[Segment, ...]
    acc_slot: tuple[int, ...]  # Phase 1 output k accumulates into this slot
    vrr_slot: dict[int, int]  # crossing VRR vertex -> slot
    n_phase2_slots: int
    n_vrr_values: int
    n_vrr_slots: int
    program: Phase2Program

    @property
    def n_slots(self) -> int:
        return self.n_phase2_slots + self.n_vrr_slots


def phase2_program(plan: ClassPlan, acc_slot: tuple[int, ...]) -> Phase2Program:
    hrr = plan.graph.hrr
    out_index = {v: k for k, v in enumerate(hrr.outputs)}
    slot = dict(plan.slots.slot_of) | dict(enumerate(acc_slot))
    for v in hrr.outputs:
        if hrr.consumers[v]:
            raise AssertionError("a Phase 2 output must not feed other vertices")
    dst, start, src, coef, code = [], [0], [], [], []

    def emit(target: int, terms) -> None:
        dst.append(slot[target] if target not in out_index else -out_index[target] - 1)
        for t in terms:
            src.append(slot[t.src])
            coef.append(t.coef)
            code.append(_SYMBOL_CODE[t.symbol])
        start.append(len(src))

    for v in plan.hrr_order:
        emit(v, hrr.nodes[v].terms)
    # outputs that are accumulators themselves (no HRR, s/p indices) are copied out
    for v in hrr.outputs:
        if hrr.nodes[v].kind == NodeKind.ACC:
            emit(v, [Term(1.0, None, v)])
    return Phase2Program(
        dst=np.asarray(dst, dtype=np.int32),
        start=np.asarray(start, dtype=np.int32),
        src=np.asarray(src, dtype=np.int32),
        coef=np.asarray(coef, dtype=np.float64),
        code=np.asarray(code, dtype=np.int32),
    )


def _slot_of_accumulators(plan: ClassPlan) -> tuple[int, ...]:
    """Slot of every accumulator; an accumulator that is an output still needs one."""
    slot = plan.slots.slot_of
    spare = plan.slots.n_slots
    out = []
    for k in range(plan.n_accumulators):
        if k in slot:
            out.append(slot[k])
        else:
            out.append(spare)
            spare += 1
    return tuple(out)


@lru_cache(maxsize=8)
def tier2_layout(plan: ClassPlan, segment_size: int = DEFAULT_SEGMENT_SIZE) -> Tier2Layout:
    if segment_size < 1:
        raise OptionsError("segment_size must be positive")
    order = plan.vrr_order
    birth, death = plan.vrr_ranges.birth, plan.vrr_ranges.death
    seg = lambda step: int(step) // segment_size  # noqa: E731
    crossing = [v for v in order if seg(death[v]) > seg(birth[v])]
    vrr_pack = pack_slots(plan.vrr_ranges, crossing)
    acc_slot = _slot_of_accumulators(plan)
    n_p2 = max([plan.slots.n_slots, *(s + 1 for s in acc_slot)])
    vrr_slot = {v: n_p2 + s for v, s in vrr_pack.slot_of.items()}
    crossing_set = frozenset(crossing)
    segments = []
    for first in range(0, len(order), segment_size):
        stmts = order[first : first + segment_size]
        inside = set(stmts)
        live_in = []
        for v in stmts:
            for p in plan.graph.vrr.parents[v]:
                if p not in inside and p not in live_in:
                    live_in.append(p)
        segments.append(Segment(tuple(stmts), tuple(live_in), crossing_set & inside))
    return Tier2Layout(
        segments=tuple(segments),
        acc_slot=acc_slot,
        vrr_slot=vrr_slot,
        n_phase2_slots=n_p2,
        n_vrr_values=len(crossing),
        n_vrr_slots=vrr_pack.n_slots,
        program=phase2_program(plan, acc_slot),
    )
