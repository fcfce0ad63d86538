"""Phase 2: the horizontal recurrence (Eq. 3) with the Cartesian-to-spherical steps.

With stepwise fusion (Fig. 4, Eqs. 11-16) each index is transformed as soon as the HRR that
moves it is finished, so the transform state of a vertex follows the 4-bit mask
0000 -> 1000 -> 1100 (after the bra HRR) -> 1110 -> 1111 (after the ket HRR) and the ket HRR
already runs on spherical bra indices. Without fusion (the "no-spherical" ablation) both HRR
sweeps stay Cartesian and the four transforms run on the finished Cartesian tensor (Eq. 17).
Cartesian bases (``mol.cart``) skip the transforms.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

from ..angmom import Cart, QuartetClass, cart2sph, cart_components, ncart, nsph
from . import symbols as S
from .axis import AxisPolicy, hrr_axis
from .ir import Dag, DagBuilder, NodeKind, Term

ZERO: Cart = (0, 0, 0)

# An index of a 4-index tensor in one of the fixed-l stages: the component number within the
# shell's Cartesian or spherical list; a derivative class's indices lead with the gradient
# component (x, y, z), so they have five entries and the four shell positions move by one.
Index4 = tuple[int, ...]
Lookup = Callable[[Index4], int]
Acc = tuple[Cart, Cart, bool]


def _step(t: Cart, i: int, delta: int) -> Cart:
    out = list(t)
    out[i] += delta
    return (out[0], out[1], out[2])


class _Phase2Builder:
    def __init__(self, cls: QuartetClass, policy: AxisPolicy, accumulators: tuple[Acc, ...]):
        self.cls = cls
        self.policy = policy
        self.b = DagBuilder()
        # plain classes keep their (e, f) keys and labels; derivative classes add the weight
        self.acc = {
            (e, f, w): self.b.add(
                ("acc", e, f, w) if cls.deriv is not None else ("acc", e, f),
                NodeKind.ACC,
                (e, f, w) if cls.deriv is not None else (e, f),
            )
            for e, f, w in accumulators
        }

    def _hrr(self, key, terms) -> int:
        found = self.b.get(key)
        return found if found is not None else self.b.add(key, NodeKind.HRR, key, terms)

    def bra_hrr(self, a: Cart, b: Cart, f: Cart, w: bool = False) -> int:
        """(a b|f 0), Cartesian on every index; ``w``: from the exponent-weighted accumulators."""
        if b == ZERO:
            return self.acc[(a, f, w)]
        key = ("bra", a, b, f, w) if w else ("bra", a, b, f)
        found = self.b.get(key)
        if found is not None:
            return found
        i = hrr_axis(self.policy, b)
        b1 = _step(b, i, -1)
        terms = (
            Term(1.0, None, self.bra_hrr(_step(a, i, 1), b1, f, w)),
            Term(1.0, S.AB[i], self.bra_hrr(a, b1, f, w)),
        )
        return self._hrr(key, terms)

    def ket_hrr(self, bra: Callable[..., int], p: int, q: int, c: Cart, d: Cart, *tag) -> int:
        """(p q|c d) where p, q are bra-stage indices and ``bra(p, q, f, *tag)`` gives
        (p q|f 0); ``tag`` (derivative classes) names the gradient component or weight that
        ``bra`` depends on."""
        if d == ZERO:
            return bra(p, q, c, *tag)
        key = ("ket", p, q, c, d, *tag)
        found = self.b.get(key)
        if found is not None:
            return found
        i = hrr_axis(self.policy, d)
        d1 = _step(d, i, -1)
        terms = (
            Term(1.0, None, self.ket_hrr(bra, p, q, _step(c, i, 1), d1, *tag)),
            Term(1.0, S.CD[i], self.ket_hrr(bra, p, q, c, d1, *tag)),
        )
        return self._hrr(key, terms)

    def deriv(self, key, i: int, n: int, raised: int, lowered: Callable[[], int]) -> int:
        """nabla_i of a Cartesian component with n = its exponent on axis i:
        -(raised, weighted by 2 exponent) + n (lowered), the lowered term only where n > 0."""
        terms = [Term(-1.0, None, raised)]
        if n:
            terms.append(Term(float(n), None, lowered()))
        return self.b.add(key, NodeKind.DERIV, key, terms)

    def transform(self, src: Lookup, position: int, l: int, mask: int) -> Lookup:
        """Spherical step on one index of a 4-index stage: returns the lookup of the new stage."""
        if l <= 1:
            return src  # libcint's s and p spherical functions are its Cartesian ones
        t = cart2sph(l)

        def lookup(idx: Index4) -> int:
            key = ("sph", mask, idx)
            found = self.b.get(key)
            if found is not None:
                return found
            mu = idx[position]
            terms = []
            for alpha in range(t.shape[0]):
                if t[alpha, mu] != 0.0:
                    src_idx = idx[:position] + (alpha,) + idx[position + 1 :]
                    terms.append(Term(float(t[alpha, mu]), None, src(src_idx)))
            return self.b.add(key, NodeKind.SPH, (mask, idx), terms)

        return lookup


MASKS = (0b1000, 0b1100, 0b1110, 0b1111)


def _columns(accumulators: tuple[Acc, ...], weighted_ket: bool) -> list[tuple]:
    """The distinct ket columns of the accumulators that the bra HRR runs per: f, or (f, w)
    where the weight is on the ket (a derivative on C or D)."""
    cols = [(f, w) if weighted_ket else (f,) for _, f, w in accumulators]
    return list(dict.fromkeys(cols))


def build_hrr(
    cls: QuartetClass,
    policy: AxisPolicy,
    accumulators: tuple[Acc, ...],
    spherical: bool,
    fused: bool,
) -> tuple[Dag, tuple[int, ...]]:
    """Phase 2 graph. Its first ``len(accumulators)`` vertices are the ACC leaves in the order
    of the Phase 1 outputs; its outputs are in C order over the returned shape, which for a
    derivative class leads with the gradient component (3, na, nb, nc, nd).

    A derivative on a bra centre is formed on the Cartesian bra stage (after the bra HRR of
    its raised and lowered classes, before the bra's spherical steps), one on a ket centre on
    the Cartesian ket stage; everything after it, spherical fusion included, is the plain
    class's Phase 2 with the gradient component as one more index."""
    la, lb, lc, ld = cls.ls
    ph = _Phase2Builder(cls, policy, accumulators)
    comps = tuple(cart_components(l) for l in cls.ls)
    ca, cb, cc, cd = comps
    deriv = cls.deriv
    off = 0 if deriv is None else 1  # index position of shell 0
    ket_weighted = deriv is not None and deriv >= 2
    columns = _columns(accumulators, ket_weighted)
    flat = {col: k for k, col in enumerate(columns)}

    def shifted(idx: Index4, position: int, i: int, delta: int) -> tuple[Cart, Cart]:
        """The Cartesian components of the pair holding ``position`` (0..3) with that
        position moved by ``delta`` on axis i."""
        first = position - position % 2
        pair = [comps[first][idx[off + first]], comps[first + 1][idx[off + first + 1]]]
        pair[position % 2] = _step(pair[position % 2], i, delta)
        return pair[0], pair[1]

    def bra_cart(idx: Index4) -> int:
        """(a b|column) Cartesian on a and b; a bra derivative's gradient is taken here."""
        col = columns[idx[off + 2]]
        if deriv is None or deriv >= 2:
            return ph.bra_hrr(ca[idx[off]], cb[idx[off + 1]], *col)
        i = idx[0]
        n = comps[deriv][idx[off + deriv]][i]
        a1, b1 = shifted(idx, deriv, i, +1)
        key = ("dbra", i, ca[idx[1]], cb[idx[2]], col[0])
        found = ph.b.get(key)
        if found is not None:
            return found
        a0, b0 = shifted(idx, deriv, i, -1) if n else (a1, b1)
        lowered = lambda: ph.bra_hrr(a0, b0, col[0], False)  # noqa: E731
        return ph.deriv(key, i, n, ph.bra_hrr(a1, b1, col[0], True), lowered)

    def ket_of(bra_stage: Callable[..., int]) -> Lookup:
        """The Cartesian ket stage (p q|c d) on top of ``bra_stage``; a ket derivative's
        gradient is taken here."""

        def ket_cart(idx: Index4) -> int:
            p, q = idx[off], idx[off + 1]
            c, d = cc[idx[off + 2]], cd[idx[off + 3]]
            if deriv is None:
                return ph.ket_hrr(bra_stage, p, q, c, d)
            if deriv < 2:
                return ph.ket_hrr(bra_stage, p, q, c, d, idx[0])
            i = idx[0]
            n = comps[deriv][idx[off + deriv]][i]
            key = ("dket", i, p, q, c, d)
            found = ph.b.get(key)
            if found is not None:
                return found
            c1, d1 = shifted(idx, deriv, i, +1)
            c0, d0 = shifted(idx, deriv, i, -1) if n else (c1, d1)
            lowered = lambda: ph.ket_hrr(bra_stage, p, q, c0, d0, False)  # noqa: E731
            return ph.deriv(key, i, n, ph.ket_hrr(bra_stage, p, q, c1, d1, True), lowered)

        return ket_cart

    def stage_index(p: int, q: int, f: Cart, *tag) -> Index4:
        """The bra-stage index of (p q|f 0): ``tag`` is the gradient component (bra
        derivative) or the weight (ket derivative)."""
        if deriv is None:
            return (p, q, flat[(f,)], 0)
        if deriv < 2:
            return (tag[0], p, q, flat[(f,)], 0)
        return (0, p, q, flat[(f, tag[0])], 0)

    if spherical and fused:
        # bra HRR per ket column, then a and b turn spherical before the ket HRR starts
        bra_a = ph.transform(bra_cart, off, la, MASKS[0])
        bra_ab = ph.transform(bra_a, off + 1, lb, MASKS[1])

        def bra_stage(p: int, q: int, f: Cart, *tag) -> int:
            return bra_ab(stage_index(p, q, f, *tag))

        ket_cart = ket_of(bra_stage)
        final = ph.transform(ph.transform(ket_cart, off + 2, lc, MASKS[2]), off + 3, ld, MASKS[3])
        shape = (nsph(la), nsph(lb), nsph(lc), nsph(ld))
    else:

        def bra_stage(p: int, q: int, f: Cart, *tag) -> int:
            return bra_cart(stage_index(p, q, f, *tag))

        final = ket_of(bra_stage)
        if spherical:  # materialize the Cartesian tensor, then transform a, b, c, d
            for position, (l, mask) in enumerate(zip(cls.ls, MASKS)):
                final = ph.transform(final, off + position, l, mask)
            shape = (nsph(la), nsph(lb), nsph(lc), nsph(ld))
        else:
            shape = (ncart(la), ncart(lb), ncart(lc), ncart(ld))

    if deriv is not None:
        shape = (3, *shape)
    outputs = [final(idx) for idx in product(*(range(n) for n in shape))]
    return ph.b.finish(outputs, leaves_preexist=True), shape
