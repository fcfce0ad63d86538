import math

import pytest

from fusionrcg.angmom import QuartetClass, cart_components, ncart, nsph
from fusionrcg.graph import AxisPolicy, NodeKind, build_class_graph, node_flops
from fusionrcg.graph.axis import BRA, KET, hrr_axis, vrr_axis
from fusionrcg.graph.ir import Node, Term

CLASSES = [
    QuartetClass(*q) for q in [(0, 0, 0, 0), (1, 0, 0, 0), (1, 1, 1, 1), (2, 1, 2, 0), (3, 2, 2, 1)]
]


def test_algorithm1_last_nonzero_axis_wins_and_ket_beats_bra():
    p = AxisPolicy.PRIORITY
    assert vrr_axis(p, (1, 1, 1), (1, 1, 0)) == (BRA, 2)  # z only on the bra
    assert vrr_axis(p, (1, 1, 1), (0, 0, 1)) == (KET, 2)  # ket wins on the same axis
    assert vrr_axis(p, (2, 0, 0), (0, 1, 0)) == (KET, 1)
    assert vrr_axis(p, (1, 0, 0), (0, 0, 0)) == (BRA, 0)


def test_conventional_rule_is_bra_first_x_to_z():
    c = AxisPolicy.CONVENTIONAL
    assert vrr_axis(c, (0, 1, 1), (1, 0, 0)) == (BRA, 1)
    assert vrr_axis(c, (0, 0, 0), (0, 2, 1)) == (KET, 1)


def test_hrr_axis_order_follows_policy():
    assert hrr_axis(AxisPolicy.PRIORITY, (1, 1, 0)) == 1
    assert hrr_axis(AxisPolicy.CONVENTIONAL, (0, 1, 1)) == 1
    with pytest.raises(ValueError):
        hrr_axis(AxisPolicy.PRIORITY, (0, 0, 0))


@pytest.mark.parametrize("cls", CLASSES, ids=str)
@pytest.mark.parametrize("axis", list(AxisPolicy))
def test_vrr_graph_is_well_formed(cls, axis):
    g = build_class_graph(cls, axis)
    vrr = g.vrr
    keys = [n.label for n in vrr.nodes]
    assert len(set(keys)) == len(keys), "every (e, f, m) appears once"
    for v, node in enumerate(vrr.nodes):
        e, f, m = node.label
        assert all(t.src < v for t in node.terms), "creation order is topological"
        if node.kind == NodeKind.BOYS:
            assert e == f == (0, 0, 0) and 0 <= m <= cls.total
        else:
            assert 2 <= len(node.terms) <= 5
            for t in node.terms:  # each source lowers the angular momentum by one or two
                se, sf, sm = vrr.nodes[t.src].label
                assert sum(se) + sum(sf) < sum(e) + sum(f) and sm in (m, m + 1)
    # Phase 1 outputs: every HRR input [e0|f0]^(0), e-major
    bra = [c for l in range(cls.la, cls.la + cls.lb + 1) for c in cart_components(l)]
    ket = [c for l in range(cls.lc, cls.lc + cls.ld + 1) for c in cart_components(l)]
    assert [vrr.nodes[v].label for v in vrr.outputs] == [(e, f, 0) for e in bra for f in ket]


@pytest.mark.parametrize("cls", CLASSES, ids=str)
@pytest.mark.parametrize("spherical, fused", [(True, True), (True, False), (False, False)])
def test_hrr_graph_is_well_formed(cls, spherical, fused):
    g = build_class_graph(cls, AxisPolicy.PRIORITY, spherical, fused)
    hrr = g.hrr
    n_acc = g.n_accumulators
    assert [n.kind for n in hrr.nodes[:n_acc]] == [NodeKind.ACC] * n_acc
    size = nsph if spherical else ncart
    assert g.output_shape == tuple(size(l) for l in cls.ls)
    assert len(hrr.outputs) == math.prod(g.output_shape)
    used = {t.src for n in hrr.nodes for t in n.terms} | set(hrr.outputs)
    assert all(k in used for k in range(n_acc)), "every accumulator feeds the HRR"
    for v, node in enumerate(hrr.nodes):
        assert all(t.src < v for t in node.terms)
        if node.kind == NodeKind.HRR:
            assert len(node.terms) == 2 and node.terms[1].symbol[:2] in ("AB", "CD")
        if node.kind == NodeKind.SPH:
            assert all(t.symbol is None for t in node.terms)
    if not spherical:
        assert hrr.count(NodeKind.SPH) == 0


def test_stepwise_fusion_shrinks_phase2_for_d_and_higher():
    cls = QuartetClass(2, 2, 2, 2)
    fused = build_class_graph(cls, AxisPolicy.PRIORITY, True, True)
    late = build_class_graph(cls, AxisPolicy.PRIORITY, True, False)
    assert len(fused.hrr) < len(late.hrr)
    # the ket HRR of the fused graph runs on 5 x 5 spherical bra pairs instead of 6 x 6
    ket_pairs = lambda g: {n.label[1:3] for n in g.hrr.nodes if n.label[0] == "ket"}  # noqa: E731
    assert len(ket_pairs(fused)) == 25 and len(ket_pairs(late)) == 36
    masks = {n.label[0] for n in fused.hrr.nodes if n.kind == NodeKind.SPH}
    assert masks == {0b1000, 0b1100, 0b1110, 0b1111}


def test_flop_rule():
    full_vrr = Node(NodeKind.VRR, (), tuple(Term(1.0, "s", i) for i in range(5)))
    hrr = Node(NodeKind.HRR, (), (Term(1.0, None, 0), Term(1.0, "ABx", 1)))
    assert node_flops(full_vrr) == 9  # five multiplies, four adds
    assert node_flops(hrr) == 2  # one FMA
    assert node_flops(Node(NodeKind.BOYS, ())) == 0
