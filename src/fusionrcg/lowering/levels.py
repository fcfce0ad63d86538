"""A class's recurrences as a program in levels, for the block form of Tier 2.

The straight-line kernels run one work item per thread, so a class with few quartets (the g
classes of cc-pVQZ: tens of quartets) leaves the GPU idle while each thread walks hundreds of
thousands of dependent statements. The block form runs one item per thread block instead: a
vertex's level is one more than its sources' highest, so the vertices of one level depend on
earlier levels only and the block's threads share them out, with a barrier between levels.

The program holds both phases, each vertex one statement ``sum_t coef[t] * sym[code[t]] *
slot[src[t]]`` (``Phase2Program``'s encoding; ``code`` indexes ``BLOCK_SYMBOLS``):

* Phase 1 (per primitive quartet): the Boys leaves [00|00]^(m) are written to slot m before
  level 1; each VRR vertex follows at its level; each Phase 1 output adds itself into its
  accumulator one level after it is made (``acc_k = acc_k + v``).
* Phase 2 (per item, after the primitive loops): the HRR and spherical vertices over the
  accumulators; outputs go to the output buffer (``dst = -k - 1``).

Slots: the Boys leaves at 0..boys_order, the accumulators after them, then the values of one
phase at a time. A slot is reused only by a value made at a level after the last level that
reads the slot's previous value: within a level, threads read and write in any order.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..graph import Dag, NodeKind, Term
from ..graph import symbols as S
from ..orchestration.plan import ClassPlan
from .layout import Phase2Program

BLOCK_SYMBOLS = (None, *S.PRIMITIVE_SYMBOLS, *S.TWO_EXP, *S.AB, *S.CD)
"""The per-quartet quantities a level program's ``code`` indexes; 0 is the constant 1."""
_CODE = {s: i for i, s in enumerate(BLOCK_SYMBOLS)}


@dataclass(frozen=True)
class LevelProgram:
    """Statements level by level: level i is statements ``level_start[i]`` up to
    ``level_start[i + 1]``; the first ``phase1_levels`` levels run per primitive quartet
    (after the Boys leaves are written), the rest once per item."""

    program: Phase2Program
    level_start: tuple[int, ...]
    phase1_levels: int
    acc_base: int  # slot of accumulator 0
    n_slots: int

    @property
    def n_levels(self) -> int:
        return len(self.level_start) - 1


@dataclass
class _Statement:
    level: int
    dst: int | None  # a vertex id (given a slot later) or None for an output
    output: int | None  # output position when dst is None
    terms: tuple[Term, ...]  # src: vertex ids


def _levels(dag: Dag, leaf_level: int = 0) -> list[int]:
    level = [leaf_level] * len(dag)
    for v, node in enumerate(dag.nodes):  # creation order is topological
        if not node.is_leaf:
            level[v] = 1 + max(level[t.src] for t in node.terms)
    return level


def _allocate(
    made: dict[int, int], last_read: dict[int, int], base: int
) -> tuple[dict[int, int], int]:
    """Slots from ``base`` for the values ``made`` (value -> level), each freed after the
    level ``last_read`` (value -> level; a value never read is freed at once): returns the
    slots and the end of the range used."""
    free: list[int] = []
    busy: list[tuple[int, int]] = []  # (last level that reads it, slot)
    slot_of: dict[int, int] = {}
    top = base
    for v in sorted(made, key=lambda v: (made[v], v)):
        level = made[v]
        while busy and busy[0][0] < level:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            s = heapq.heappop(free)
        else:
            s, top = top, top + 1
        slot_of[v] = s
        heapq.heappush(busy, (max(last_read.get(v, level), level), s))
    return slot_of, top


def _last_reads(statements: list[_Statement]) -> dict[int, int]:
    last: dict[int, int] = {}
    for st in statements:
        for t in st.terms:
            last[t.src] = max(last.get(t.src, 0), st.level)
    return last


def _phase1(plan: ClassPlan) -> list[_Statement]:
    vrr = plan.graph.vrr
    level = _levels(vrr)
    out = [
        _Statement(level[v], v, None, node.terms)
        for v, node in enumerate(vrr.nodes)
        if not node.is_leaf
    ]
    # accumulator k is vertex -(k + 1) here: it reads and writes itself
    for k, v in enumerate(vrr.outputs):
        acc = -(k + 1)
        out.append(_Statement(level[v] + 1, acc, None, (Term(1.0, None, acc), Term(1.0, None, v))))
    return out


def _phase2(plan: ClassPlan) -> list[_Statement]:
    hrr = plan.graph.hrr
    n_acc = plan.n_accumulators
    for v in range(n_acc):
        if hrr.nodes[v].kind != NodeKind.ACC:
            raise AssertionError("Phase 2 leaves 0..n_acc-1 must be the accumulators")
    level = _levels(hrr)
    positions: dict[int, list[int]] = {}
    for k, v in enumerate(hrr.outputs):
        positions.setdefault(v, []).append(k)
    out = []
    for v, node in enumerate(hrr.nodes):
        if node.is_leaf:
            continue
        ks = positions.get(v, [])
        if len(ks) == 1:  # an output vertex goes straight to its position
            out.append(_Statement(level[v], None, ks[0], node.terms))
        else:
            out.append(_Statement(level[v], v, None, node.terms))
    # outputs that are accumulators, or vertices filling several positions, are copied out
    for v, ks in positions.items():
        if hrr.nodes[v].is_leaf or len(ks) > 1:
            out += [_Statement(level[v] + 1, None, k, (Term(1.0, None, v),)) for k in ks]
    return out


def _encode(
    statements: list[_Statement], slot, dst, start, src, coef, code, level_start
) -> int:  # fmt: skip
    """Appends ``statements`` level by level; returns the number of levels appended."""
    statements = sorted(statements, key=lambda st: st.level)
    levels = 0
    previous = None
    for st in statements:
        if st.level != previous:
            level_start.append(len(dst))
            previous = st.level
            levels += 1
        dst.append(slot(st.dst) if st.dst is not None else -st.output - 1)
        for t in st.terms:
            src.append(slot(t.src))
            coef.append(t.coef)
            code.append(_CODE[t.symbol])
        start.append(len(src))
    return levels


def level_program(plan: ClassPlan) -> LevelProgram:
    """The level program of ``plan``'s class (see the module's docstring)."""
    vrr, n_acc = plan.graph.vrr, plan.n_accumulators
    n_boys = plan.cls.boys_order + 1
    acc_base = n_boys
    temp_base = acc_base + n_acc
    boys_slot = {}
    for v, node in enumerate(vrr.nodes):
        if node.is_leaf:
            if node.kind != NodeKind.BOYS:
                raise AssertionError("Phase 1 leaves must be Boys values")
            boys_slot[v] = int(node.label[2])

    p1 = _phase1(plan)
    made1 = {st.dst: st.level for st in p1 if st.dst is not None and st.dst >= 0}
    slots1, top1 = _allocate(made1, _last_reads(p1), temp_base)
    slots1 |= boys_slot
    slots1 |= {-(k + 1): acc_base + k for k in range(n_acc)}

    p2 = _phase2(plan)
    made2 = {st.dst: st.level for st in p2 if st.dst is not None}
    slots2, top2 = _allocate(made2, _last_reads(p2), temp_base)
    slots2 |= {k: acc_base + k for k in range(n_acc)}

    dst, start, src, coef, code, level_start = [], [0], [], [], [], []
    phase1_levels = _encode(p1, slots1.__getitem__, dst, start, src, coef, code, level_start)
    _encode(p2, slots2.__getitem__, dst, start, src, coef, code, level_start)
    level_start.append(len(dst))
    program = Phase2Program(
        dst=np.asarray(dst, dtype=np.int32),
        start=np.asarray(start, dtype=np.int32),
        src=np.asarray(src, dtype=np.int32),
        coef=np.asarray(coef, dtype=np.float64),
        code=np.asarray(code, dtype=np.int32),
    )
    return LevelProgram(program, tuple(level_start), phase1_levels, acc_base, max(top1, top2))
