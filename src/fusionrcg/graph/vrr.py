"""Phase 1: the vertical recurrence graph (Eq. 2) of a class, down to the Boys values."""

from __future__ import annotations

from functools import lru_cache

from ..angmom import Cart, QuartetClass, cart_components
from . import symbols as S
from .axis import BRA, AxisPolicy, vrr_axis
from .ir import Dag, DagBuilder, NodeKind, Term

ZERO: Cart = (0, 0, 0)


def _dec(t: Cart, i: int) -> Cart:
    out = list(t)
    out[i] -= 1
    return (out[0], out[1], out[2])


def hrr_input_components(lo: int, hi: int) -> tuple[Cart, ...]:
    """Cartesian components of every shell with lo <= l <= hi: one index of the HRR inputs."""
    return tuple(c for l in range(lo, hi + 1) for c in cart_components(l))


Accumulator = tuple[Cart, Cart, bool]
"""A Phase 1 output as Phase 2 sees it: [e0|f0] contracted, weighted by twice the exponent of
the derivative centre (``True``) or not."""


def _ranges(ls: tuple[int, int, int, int], deriv: int | None):
    """(lo, hi) of |e| and |f| for the plain accumulators and, for a derivative on centre
    ``deriv``, of the weighted ones on that centre's side (None otherwise).

    nabla_x on centre A of (a b|cd) is 2 alpha (a+1_x b|cd) - a_x (a-1_x b|cd): the raised
    class needs [e0| with la+1 <= |e| <= la+lb+1 weighted by 2 alpha, the lowered one
    la-1 <= |e| <= la+lb-1 unweighted. On centre B the raised (a b+1_x| needs
    la <= |e| <= la+lb+1 and the lowered la <= |e| <= la+lb-1; C and D likewise on |f|."""
    la, lb, lc, ld = ls
    plain = [(la, la + lb), (lc, lc + ld)]
    if deriv is None:
        return plain, None
    side, first = divmod(deriv, 2)
    l1, l2 = ls[2 * side], ls[2 * side + 1]
    if ls[deriv] > 0:  # the lowered term exists
        plain[side] = (l1 - 1 + first, l1 + l2 - 1)
    else:
        plain[side] = (l1, l1 - 1)  # empty
    raised = (l1 + 1 - first, l1 + l2 + 1)
    weighted = list(plain)
    weighted[side] = raised
    return plain, weighted


@lru_cache(maxsize=4)
def build_vrr(cls: QuartetClass, policy: AxisPolicy) -> tuple[Dag, tuple[Accumulator, ...]]:
    """Graph of [e0|f0]^(0) for la <= |e| <= la+lb and lc <= |f| <= lc+ld; for a derivative
    class, the ranges of its lowered class and, weighted by ``two_e*`` of its centre, those of
    its raised class (``_ranges``).

    Returns the DAG and its outputs as accumulators (plain first, each e-major); vertex keys
    are (e, f, m); the axis policy picks each vertex's recurrence.
    """
    plain, weighted = _ranges(cls.ls, cls.deriv)
    b = DagBuilder()

    def node(e: Cart, f: Cart, m: int) -> int:
        key = (e, f, m)
        found = b.get(key)
        if found is not None:
            return found
        if e == ZERO and f == ZERO:
            return b.add(key, NodeKind.BOYS, key)
        side, i = vrr_axis(policy, e, f)
        if side == BRA:
            e1 = _dec(e, i)
            terms = [Term(1.0, S.PA[i], node(e1, f, m)), Term(1.0, S.WP[i], node(e1, f, m + 1))]
            if e1[i]:
                e2 = _dec(e1, i)
                terms += [
                    Term(float(e1[i]), S.OO2Z, node(e2, f, m)),
                    Term(-float(e1[i]), S.ROZ_OO2Z, node(e2, f, m + 1)),
                ]
            if f[i]:
                terms.append(Term(float(f[i]), S.OO2ZE, node(e1, _dec(f, i), m + 1)))
        else:
            f1 = _dec(f, i)
            terms = [Term(1.0, S.QC[i], node(e, f1, m)), Term(1.0, S.WQ[i], node(e, f1, m + 1))]
            if f1[i]:
                f2 = _dec(f1, i)
                terms += [
                    Term(float(f1[i]), S.OO2E, node(e, f2, m)),
                    Term(-float(f1[i]), S.ROE_OO2E, node(e, f2, m + 1)),
                ]
            if e[i]:
                terms.append(Term(float(e[i]), S.OO2ZE, node(_dec(e, i), f1, m + 1)))
        return b.add(key, NodeKind.VRR, key, terms)

    accumulators: list[Accumulator] = []
    outputs: list[int] = []
    for ranges, weight in ((plain, False), (weighted, True)):
        if ranges is None:
            continue
        (e_lo, e_hi), (f_lo, f_hi) = ranges
        for e in hrr_input_components(e_lo, e_hi):
            for f in hrr_input_components(f_lo, f_hi):
                v = node(e, f, 0)
                if weight:  # a vertex of its own: two_e* [e0|f0], label (e, f, m)
                    term = Term(1.0, S.TWO_EXP[cls.deriv], v)
                    v = b.add(("w", e, f), NodeKind.VRR, (e, f, 0), [term])
                accumulators.append((e, f, weight))
                outputs.append(v)
    return b.finish(outputs, leaves_preexist=False), tuple(accumulators)
