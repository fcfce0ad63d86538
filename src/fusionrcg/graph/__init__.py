"""Recurrence graphs of shell-quartet classes (what is computed, independent of how)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..angmom import QuartetClass
from .axis import AxisPolicy
from .hrr import build_hrr
from .ir import Dag, Node, NodeKind, Term, node_flops
from .vrr import Accumulator, build_vrr

__all__ = [
    "AxisPolicy",
    "ClassGraph",
    "Dag",
    "Node",
    "NodeKind",
    "Term",
    "build_class_graph",
    "node_flops",
]


@dataclass(frozen=True)
class ClassGraph:
    """Both phases of one class. Phase 2 leaf k is the contraction of Phase 1 output k."""

    cls: QuartetClass
    axis: AxisPolicy
    spherical: bool
    fused: bool
    vrr: Dag
    hrr: Dag
    accumulators: tuple[Accumulator, ...]
    output_shape: tuple[int, ...]
    """(na, nb, nc, nd); (3, na, nb, nc, nd) for a derivative class (``cls.deriv``)."""

    @property
    def deriv(self) -> int | None:
        return self.cls.deriv

    @property
    def n_accumulators(self) -> int:
        return len(self.vrr.outputs)

    @property
    def n_nodes(self) -> int:
        return len(self.vrr) + len(self.hrr)

    @property
    def n_edges(self) -> int:
        return self.vrr.n_edges + self.hrr.n_edges


@lru_cache(maxsize=8)
def build_class_graph(
    cls: QuartetClass, axis: AxisPolicy, spherical: bool = True, fused: bool = True
) -> ClassGraph:
    """Recurrence graph of ``cls`` (a derivative class when ``cls.deriv`` is set): VRR under
    ``axis``, primitive contraction into the HRR inputs, HRR bra then ket with the spherical
    steps (``fused``) or Cartesian throughout with the transform at the end;
    ``spherical=False`` gives Cartesian output."""
    vrr, accumulators = build_vrr(cls, axis)
    hrr, shape = build_hrr(cls, axis, accumulators, spherical, fused and spherical)
    n_acc = len(vrr.outputs)
    assert all(hrr.nodes[k].kind == NodeKind.ACC for k in range(n_acc))
    return ClassGraph(cls, axis, spherical, fused and spherical, vrr, hrr, accumulators, shape)
