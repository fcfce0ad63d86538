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


@lru_cache(maxsize=4)
def build_vrr(
    cls: QuartetClass, policy: AxisPolicy
) -> tuple[Dag, tuple[Cart, ...], tuple[Cart, ...]]:
    """Graph of [e0|f0]^(0) for la <= |e| <= la+lb and lc <= |f| <= lc+ld.

    Returns the DAG (outputs ordered e-major over ``bra_inputs`` x ``ket_inputs``) and the two
    component lists. Vertex keys are (e, f, m); the axis policy picks each vertex's recurrence.
    """
    bra_inputs = hrr_input_components(cls.la, cls.la + cls.lb)
    ket_inputs = hrr_input_components(cls.lc, cls.lc + cls.ld)
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

    outputs = [node(e, f, 0) for e in bra_inputs for f in ket_inputs]
    return b.finish(outputs, leaves_preexist=False), bra_inputs, ket_inputs
