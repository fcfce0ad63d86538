"""Angular-momentum bookkeeping: quartet classes, Cartesian components, spherical transforms.

Component orders follow PySCF/libcint so that every array the engine returns can be compared
with ``mol.intor`` element by element.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from .errors import ClassError

LMAX = 4
"""Highest angular momentum per shell that the generated path supports (g functions)."""

Cart = tuple[int, int, int]

# libcint folds these angular factors into s and p functions; for l >= 2 they live in the
# Cartesian-to-spherical coefficients instead.
_SP_COMMON_FACTOR = (0.282094791773878143, 0.488602511902919921)


CENTRES = "ABCD"


@dataclass(frozen=True, order=True)
class QuartetClass:
    """Angular momenta (la lb|lc ld) of a shell-quartet class.

    ``deriv`` (0..3 or None) makes it a first-derivative class: the three components of the
    gradient of the basis function on that centre, (nabla_x a b|c d) for ``deriv=0`` (PySCF's
    ``int2e_ip1``; nabla acts on the function, so it is minus the derivative with respect to
    the centre's coordinates). Its integrals need one more unit of angular momentum on that
    centre internally, so derivative classes of g shells reach l = 5 inside the graph.
    """

    la: int
    lb: int
    lc: int
    ld: int
    deriv: int | None = None

    def __post_init__(self) -> None:
        if self.deriv is not None and (
            not isinstance(self.deriv, (int, np.integer))
            or isinstance(self.deriv, bool)
            or not 0 <= self.deriv <= 3
        ):
            raise ClassError(f"deriv must be a centre 0..3 (A..D) or None, got {self.deriv!r}")
        for name, value in zip("abcd", self.ls):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise ClassError(f"l{name} must be an integer, got {value!r}")
            if value < 0:
                raise ClassError(f"l{name} = {value} is negative")
            if value > LMAX:
                raise ClassError(
                    f"l{name} = {value} exceeds the generated path's limit "
                    f"l <= {LMAX} (g functions)"
                )

    @classmethod
    def parse(cls, text: str) -> QuartetClass:
        """Parse ``"2,2,1,1"`` (also accepts spaces, ``|`` and parentheses: ``"(2,2|1,1)"``)."""
        parts = [p for p in re.split(r"[\s,|()]+", text.strip()) if p]
        if len(parts) != 4 or not all(re.fullmatch(r"-?\d+", p) for p in parts):
            raise ClassError(f"a quartet class needs four integers like 2,2,1,1; got {text!r}")
        return cls(*(int(p) for p in parts))

    @classmethod
    def from_tag(cls, tag: str) -> QuartetClass:
        """The class a ``tag`` names (``2211``, ``2211_dA``)."""
        digits, _, centre = tag.partition("_d")
        if len(digits) != 4 or not digits.isdigit() or centre not in ("", *CENTRES):
            raise ClassError(f"not a class tag like 2211 or 2211_dA: {tag!r}")
        return cls(*map(int, digits), deriv=CENTRES.index(centre) if centre else None)

    @property
    def ls(self) -> tuple[int, int, int, int]:
        return (self.la, self.lb, self.lc, self.ld)

    @property
    def total(self) -> int:
        return self.la + self.lb + self.lc + self.ld

    @property
    def boys_order(self) -> int:
        """Highest Boys order the class needs: its total, one more for a derivative class."""
        return self.total + (self.deriv is not None)

    def with_deriv(self, deriv: int | None) -> QuartetClass:
        return QuartetClass(*self.ls, deriv=deriv)

    def canonical(self) -> QuartetClass:
        """The representative of this class under the 8-fold ERI permutation symmetry.

        Within a pair the higher l goes first (fewer HRR inputs); the pair with the larger
        (l1 + l2, l1) becomes the bra.
        """
        bra = tuple(sorted((self.la, self.lb), reverse=True))
        ket = tuple(sorted((self.lc, self.ld), reverse=True))
        key = lambda p: (p[0] + p[1], p[0])  # noqa: E731
        if key(ket) > key(bra):
            bra, ket = ket, bra
        if self.deriv is not None:
            raise ClassError(
                "canonical() maps angular momenta only; a derivative class follows its centre "
                "through engine.canonical_permutation"
            )
        return QuartetClass(bra[0], bra[1], ket[0], ket[1])

    def is_canonical(self) -> bool:
        """Whether the angular momenta are in canonical order (a derivative's centre aside)."""
        plain = QuartetClass(*self.ls)
        return plain == plain.canonical()

    def __str__(self) -> str:
        text = f"({self.la},{self.lb}|{self.lc},{self.ld})"
        return text if self.deriv is None else f"{text} nabla_{CENTRES[self.deriv]}"

    @property
    def tag(self) -> str:
        """File-name friendly label, e.g. ``2211`` (``2211_dA`` for nabla on centre A)."""
        text = "".join(str(x) for x in self.ls)
        return text if self.deriv is None else f"{text}_d{CENTRES[self.deriv]}"


def canonical_classes(lmax: int = LMAX) -> list[QuartetClass]:
    """All canonical classes with every l <= lmax, ordered by total then lexicographically."""
    found = {
        QuartetClass(a, b, c, d).canonical()
        for a in range(lmax + 1)
        for b in range(lmax + 1)
        for c in range(lmax + 1)
        for d in range(lmax + 1)
    }
    return sorted(found, key=lambda q: (q.total, q.ls))


def ncart(l: int) -> int:
    return (l + 1) * (l + 2) // 2


def nsph(l: int) -> int:
    return 2 * l + 1


@cache
def cart_components(l: int) -> tuple[Cart, ...]:
    """Cartesian exponents (x, y, z) of a shell in libcint order: xx, xy, xz, yy, yz, zz, ..."""
    return tuple((x, y, l - x - y) for x in range(l, -1, -1) for y in range(l - x, -1, -1))


@cache
def cart2sph(l: int) -> np.ndarray:
    """Cartesian-to-spherical matrix T (ncart x nsph) in PySCF's conventions.

    For s and p shells libcint's spherical functions equal its Cartesian ones (the angular
    factor is already in the Cartesian integrals), so T is the identity there.
    """
    if l <= 1:
        return np.eye(ncart(l))
    from pyscf import gto

    t = np.asarray(gto.cart2sph(l), dtype=float)
    t.setflags(write=False)
    return t


def sp_common_factor(l: int) -> float:
    """Angular factor libcint folds into the Cartesian integrals of s and p shells."""
    return _SP_COMMON_FACTOR[l] if l <= 1 else 1.0


def shell_size(l: int, spherical: bool) -> int:
    return nsph(l) if spherical else ncart(l)
