"""The recurrence graph's intermediate representation.

Every computed vertex is a linear combination ``sum_k coef_k * symbol_k * value(src_k)``: the VRR
(Eq. 2), the HRR (Eq. 3) and the Cartesian-to-spherical steps (Eq. 8) all have this form, so one
representation serves the scheduler, the liveness analysis, the reference evaluator and every
lowering. ``symbol`` names a per-quartet quantity (``PAx``, ``oo2z``, ``ABy`` ...) or is ``None``
for a plain constant.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from ..errors import PlanError


class NodeKind(enum.IntEnum):
    BOYS = 0  # leaf [00|00]^(m) = prefactor * F_m(T)
    VRR = 1  # vertical recurrence, Eq. (2)
    ACC = 2  # leaf of Phase 2: a contracted HRR input [e0|f0]
    HRR = 3  # horizontal recurrence, Eq. (3)
    SPH = 4  # one Cartesian-to-spherical step on one index, Eq. (8)
    DERIV = 5  # first derivative: -(raised, exponent-weighted) + n (lowered), Phase 2


@dataclass(frozen=True, slots=True)
class Term:
    coef: float
    symbol: str | None
    src: int


@dataclass(frozen=True, slots=True)
class Node:
    kind: NodeKind
    label: tuple
    terms: tuple[Term, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.terms


@dataclass(eq=False)  # identity semantics: analyses cache per graph object
class Dag:
    """One phase of a class graph: nodes in creation (topological) order plus its outputs.

    ``leaves_preexist`` says whether the leaves hold values before the phase starts (Phase 2's
    accumulators) or are produced by scheduling them (Phase 1's Boys values).
    """

    nodes: list[Node]
    outputs: tuple[int, ...]
    leaves_preexist: bool

    def __len__(self) -> int:
        return len(self.nodes)

    @cached_property
    def parents(self) -> tuple[tuple[int, ...], ...]:
        """Distinct sources of each node, in first-use order."""
        return tuple(tuple(dict.fromkeys(t.src for t in n.terms)) for n in self.nodes)

    @cached_property
    def consumers(self) -> tuple[tuple[int, ...], ...]:
        users: list[list[int]] = [[] for _ in self.nodes]
        for v, ps in enumerate(self.parents):
            for p in ps:
                users[p].append(v)
        return tuple(tuple(u) for u in users)

    @cached_property
    def n_edges(self) -> int:
        return sum(len(p) for p in self.parents)

    @cached_property
    def output_set(self) -> frozenset[int]:
        return frozenset(self.outputs)

    @cached_property
    def leaves(self) -> tuple[int, ...]:
        return tuple(v for v, n in enumerate(self.nodes) if n.is_leaf)

    def count(self, kind: NodeKind) -> int:
        return sum(1 for n in self.nodes if n.kind == kind)


@dataclass
class DagBuilder:
    """Creates nodes once per key, so that shared intermediates become shared vertices."""

    nodes: list[Node] = field(default_factory=list)
    index: dict[Hashable, int] = field(default_factory=dict)

    def get(self, key: Hashable) -> int | None:
        return self.index.get(key)

    def add(self, key: Hashable, kind: NodeKind, label: tuple, terms: Sequence[Term] = ()) -> int:
        if key in self.index:
            raise PlanError(f"node {key!r} created twice")
        self.index[key] = len(self.nodes)
        self.nodes.append(Node(kind, label, tuple(terms)))
        return self.index[key]

    def finish(self, outputs: Sequence[int], leaves_preexist: bool) -> Dag:
        return Dag(self.nodes, tuple(outputs), leaves_preexist)


def node_flops(node: Node) -> int:
    """Floating-point operations of one vertex as lowered: a multiply per weighted term, an add
    between terms (an FMA counts 2). Integer factors are folded into per-quartet constants."""
    if node.is_leaf:
        return 0
    weighted = sum(1 for t in node.terms if not (t.coef == 1.0 and t.symbol is None))
    return weighted + len(node.terms) - 1
