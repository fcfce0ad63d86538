"""Public entry points: contracted shell-quartet ERIs in PySCF's layout."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import permutations

import numpy as np

from .angmom import QuartetClass
from .orchestration.plan import plan_class
from .shells import Shell, check_mole, shell_quartet
from .variants import Variant, get_variant

BACKENDS = ("reference",)

# Axis permutations that preserve (ab|cd) under the 8-fold permutation symmetry.
_SYMMETRIES = tuple(
    p
    for p in permutations(range(4))
    if {frozenset(p[:2]), frozenset(p[2:])} == {frozenset((0, 1)), frozenset((2, 3))}
)


class BackendError(ValueError):
    """A backend that does not exist or cannot run here."""


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")


def canonical_permutation(ls: Sequence[int]) -> tuple[int, ...]:
    """A symmetry permutation p with (ls[p0] ls[p1]|ls[p2] ls[p3]) canonical."""
    target = QuartetClass(*ls).canonical().ls
    for p in _SYMMETRIES:
        if tuple(ls[i] for i in p) == target:
            return p
    raise AssertionError(f"no symmetry maps {tuple(ls)} to {target}")


def _evaluate(backend: str, plan, quartets: list[tuple[Shell, ...]]) -> np.ndarray:
    from .reference.evaluator import evaluate_batch

    return evaluate_batch(plan, quartets)


def eri_quartets(
    mol,
    quartets: Iterable[Sequence[int]],
    backend: str = "reference",
    variant: str | Variant = "full",
) -> list[np.ndarray]:
    """Contracted ERIs of many shell quartets; each result is shaped and ordered like
    ``mol.intor('int2e_sph' | 'int2e_cart', shls_slice=...)`` for that quartet.

    Quartets are mapped to their canonical class, grouped by class and primitive/contraction
    counts, and evaluated batch by batch.
    """
    _check_backend(backend)
    check_mole(mol)
    v = get_variant(variant)
    spherical = not mol.cart
    requested = list(quartets)
    groups: dict[tuple, list[tuple[int, tuple[int, ...], tuple[Shell, ...]]]] = defaultdict(list)
    for n, idx in enumerate(requested):
        shells = shell_quartet(mol, idx)
        perm = canonical_permutation([s.l for s in shells])
        canon = tuple(shells[i] for i in perm)
        key = (tuple(s.l for s in canon), tuple(s.coefficients.shape for s in canon))
        groups[key].append((n, perm, canon))
    results: list[np.ndarray | None] = [None] * len(requested)
    for (ls, _), members in groups.items():
        plan = plan_class(QuartetClass(*ls), v, spherical)
        values = _evaluate(backend, plan, [m[2] for m in members])
        for (n, perm, _), value in zip(members, values):
            inverse = tuple(perm.index(j) for j in range(4))
            results[n] = np.ascontiguousarray(value.transpose(inverse))
    return results  # type: ignore[return-value]


def shell_quartet_eri(
    mol, shells: Sequence[int], backend: str = "reference", variant: str | Variant = "full"
) -> np.ndarray:
    """(ab|cd) over shells (i, j, k, l) of ``mol``, equal in shape, order and value to
    ``mol.intor('int2e_sph', shls_slice=(i, i+1, j, j+1, k, k+1, l, l+1))``
    (``int2e_cart`` when ``mol.cart``)."""
    return eri_quartets(mol, [shells], backend, variant)[0]
