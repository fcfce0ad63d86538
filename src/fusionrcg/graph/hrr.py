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
# shell's Cartesian or spherical list.
Index4 = tuple[int, int, int, int]
Lookup = Callable[[Index4], int]


def _step(t: Cart, i: int, delta: int) -> Cart:
    out = list(t)
    out[i] += delta
    return (out[0], out[1], out[2])


class _Phase2Builder:
    def __init__(self, cls: QuartetClass, policy: AxisPolicy, bra_inputs, ket_inputs) -> None:
        self.cls = cls
        self.policy = policy
        self.b = DagBuilder()
        self.acc = {
            (e, f): self.b.add(("acc", e, f), NodeKind.ACC, (e, f))
            for e in bra_inputs
            for f in ket_inputs
        }

    def _hrr(self, key, terms) -> int:
        found = self.b.get(key)
        return found if found is not None else self.b.add(key, NodeKind.HRR, key, terms)

    def bra_hrr(self, a: Cart, b: Cart, f: Cart) -> int:
        """(a b|f 0), Cartesian on every index."""
        if b == ZERO:
            return self.acc[(a, f)]
        key = ("bra", a, b, f)
        found = self.b.get(key)
        if found is not None:
            return found
        i = hrr_axis(self.policy, b)
        b1 = _step(b, i, -1)
        terms = (
            Term(1.0, None, self.bra_hrr(_step(a, i, 1), b1, f)),
            Term(1.0, S.AB[i], self.bra_hrr(a, b1, f)),
        )
        return self._hrr(key, terms)

    def ket_hrr(
        self, bra: Callable[[int, int, Cart], int], p: int, q: int, c: Cart, d: Cart
    ) -> int:
        """(p q|c d) where p, q are bra-stage indices and ``bra(p, q, f)`` gives (p q|f 0)."""
        if d == ZERO:
            return bra(p, q, c)
        key = ("ket", p, q, c, d)
        found = self.b.get(key)
        if found is not None:
            return found
        i = hrr_axis(self.policy, d)
        d1 = _step(d, i, -1)
        terms = (
            Term(1.0, None, self.ket_hrr(bra, p, q, _step(c, i, 1), d1)),
            Term(1.0, S.CD[i], self.ket_hrr(bra, p, q, c, d1)),
        )
        return self._hrr(key, terms)

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


def build_hrr(
    cls: QuartetClass,
    policy: AxisPolicy,
    bra_inputs: tuple[Cart, ...],
    ket_inputs: tuple[Cart, ...],
    spherical: bool,
    fused: bool,
) -> tuple[Dag, tuple[int, int, int, int]]:
    """Phase 2 graph. Its first ``len(bra_inputs) * len(ket_inputs)`` vertices are the ACC leaves
    in the order of the Phase 1 outputs; its outputs are in C order over the returned shape."""
    la, lb, lc, ld = cls.ls
    ph = _Phase2Builder(cls, policy, bra_inputs, ket_inputs)
    ca, cb, cc, cd = (cart_components(l) for l in cls.ls)

    if spherical and fused:
        # bra HRR per ket input f, then a and b turn spherical before the ket HRR starts
        flat_f = {f: k for k, f in enumerate(ket_inputs)}

        def bra_cart(idx: Index4) -> int:
            return ph.bra_hrr(ca[idx[0]], cb[idx[1]], ket_inputs[idx[2]])

        bra_a = ph.transform(bra_cart, 0, la, 0b1000)
        bra_ab = ph.transform(bra_a, 1, lb, 0b1100)

        def bra_stage(p: int, q: int, f: Cart) -> int:
            return bra_ab((p, q, flat_f[f], 0))

        def ket_cart(idx: Index4) -> int:
            return ph.ket_hrr(bra_stage, idx[0], idx[1], cc[idx[2]], cd[idx[3]])

        final = ph.transform(ph.transform(ket_cart, 2, lc, 0b1110), 3, ld, 0b1111)
        shape = (nsph(la), nsph(lb), nsph(lc), nsph(ld))
    else:

        def bra_stage(p: int, q: int, f: Cart) -> int:
            return ph.bra_hrr(ca[p], cb[q], f)

        def ket_cart(idx: Index4) -> int:
            return ph.ket_hrr(bra_stage, idx[0], idx[1], cc[idx[2]], cd[idx[3]])

        final = ket_cart
        if spherical:  # materialize the Cartesian tensor, then transform a, b, c, d
            for position, (l, mask) in enumerate(zip(cls.ls, (0b1000, 0b1100, 0b1110, 0b1111))):
                final = ph.transform(final, position, l, mask)
            shape = (nsph(la), nsph(lb), nsph(lc), nsph(ld))
        else:
            shape = (ncart(la), ncart(lb), ncart(lc), ncart(ld))

    outputs = [final(idx) for idx in product(*(range(n) for n in shape))]
    return ph.b.finish(outputs, leaves_preexist=True), shape
