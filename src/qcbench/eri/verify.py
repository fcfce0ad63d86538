"""Element-by-element comparison of the engine with PySCF (libcint) on real shells.

PySCF is the oracle. Where the two differ by more than the tolerance, ``adjudicate`` evaluates
the offending element in 40-digit arithmetic (``reference.exact``) to tell whose rounding it is:
deep general contractions (ANO-RCC's eight s contractions over fourteen primitives) make
libcint's own error exceed 1e-12 on large integrals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from fusionrcg.angmom import QuartetClass, canonical_classes, shell_size
from fusionrcg.engine import eri_deriv_quartets, eri_quartets
from fusionrcg.options import KernelOptions, kernel_options
from fusionrcg.orchestration.plan import plan_class
from fusionrcg.shells import Shell, shell_quartet
from fusionrcg.variants import get_variant


@dataclass(frozen=True)
class Tolerance:
    """An element passes when |mine - ref| <= max(abs, rel * |ref|).

    The absolute bound governs small elements, the relative one large elements (an ERI of 4.7
    Eh carries about 1e-12 of rounding in any double-precision code). Relative errors are also
    reported where |ref| > ``rel_floor``; on elements that come from cancellation they reflect
    the rounding of the large terms, in libcint as much as here (see README, "Accuracy").
    """

    abs: float = 1e-12
    rel: float = 1e-10
    rel_floor: float = 1e-8

    def normalized(self, err: np.ndarray, ref: np.ndarray) -> np.ndarray:
        """Error over its allowance: <= 1 passes."""
        return err / np.maximum(self.abs, self.rel * np.abs(ref))


@dataclass(frozen=True)
class ClassErrors:
    cls: str
    n_quartets: int
    n_values: int
    max_abs_value: float
    max_abs_error: float
    max_rel_error: float
    max_normalized_error: float
    max_primitives: int
    max_contractions: int
    worst_quartet: tuple[int, int, int, int]
    worst_element: tuple[int, ...]  # a derivative class's leads with the component
    # where the relative error (|ref| > rel_floor) is largest; None where no element is above
    relative_quartet: tuple[int, int, int, int] | None = None
    relative_element: tuple[int, ...] | None = None

    @property
    def passed(self) -> bool:
        return self.max_normalized_error <= 1.0

    def row(self) -> dict:
        out = asdict(self)
        out["worst_quartet"] = " ".join(map(str, self.worst_quartet))
        out["worst_element"] = " ".join(map(str, self.worst_element))
        for key in ("relative_quartet", "relative_element"):
            value = getattr(self, key)
            out[key] = None if value is None else " ".join(map(str, value))
        out["passed"] = self.passed
        return out


@dataclass(frozen=True)
class Adjudication:
    exact: float
    engine_error: float
    pyscf_error: float
    engine_normalized: float

    @property
    def engine_right(self) -> bool:
        """The engine is within tolerance of the exact value and closer to it than PySCF."""
        return self.engine_normalized <= 1.0 and abs(self.engine_error) <= abs(self.pyscf_error)


def reference_eri(mol, idx: Sequence[int], centre: int | None = None) -> np.ndarray:
    """PySCF's (ab|cd) over shells ``idx``; with ``centre`` (0..3) the gradient of the
    functions at that position, (3, ni, nj, nk, nl): int2e_ip1 (centre 0) and int2e_ip2
    (centre 2) directly, centres 1 and 3 through the same integrals with that pair swapped."""
    if centre is None:
        i, j, k, l = idx
        intor = "int2e_cart" if mol.cart else "int2e_sph"
        return mol.intor(intor, shls_slice=(i, i + 1, j, j + 1, k, k + 1, l, l + 1))
    name = ("int2e_ip1" if centre < 2 else "int2e_ip2") + ("_cart" if mol.cart else "_sph")
    order = list(idx)
    if centre % 2:  # swap the pair so that the centre comes first in it
        order[centre - 1], order[centre] = order[centre], order[centre - 1]
    value = mol.intor(name, comp=3, shls_slice=sum(((s, s + 1) for s in order), ()))
    if centre % 2:
        axes = [0, 1, 2, 3, 4]
        axes[centre], axes[centre + 1] = axes[centre + 1], axes[centre]
        value = value.transpose(axes)
    return value


def engine_values(
    mol, quartets, centre: int | None, backend: str, variant: str | KernelOptions
) -> list:
    """The engine's (ab|cd) of ``quartets``, or their gradient on ``centre``."""
    if centre is None:
        return eri_quartets(mol, quartets, backend, variant)
    return eri_deriv_quartets(mol, quartets, centre, backend, variant)


def sample_quartets(
    mol, cls: QuartetClass, n: int, rng: np.random.Generator
) -> list[tuple[int, int, int, int]]:
    """Up to ``n`` shell quartets of class ``cls``: the first uses the most contracted shell of
    each l (several primitives, one centre), the rest are random over shells and centres."""
    by_l: dict[int, list[int]] = {}
    for s in range(mol.nbas):
        by_l.setdefault(int(mol.bas_angular(s)), []).append(s)
    if any(l not in by_l for l in cls.ls):
        return []
    weight = lambda s: mol.bas_nprim(s) * mol.bas_nctr(s)  # noqa: E731
    richest = tuple(max(by_l[l], key=weight) for l in cls.ls)
    picks = {richest}
    for _ in range(20 * n):
        if len(picks) >= n:
            break
        picks.add(tuple(int(rng.choice(by_l[l])) for l in cls.ls))
    return sorted(picks, key=lambda q: q != richest)


def verify_class(
    mol,
    cls: QuartetClass,
    quartets: Sequence[tuple[int, int, int, int]],
    backend: str = "reference",
    variant: str | KernelOptions = "full",
    tol: Tolerance = Tolerance(),
) -> ClassErrors:
    mine = engine_values(mol, quartets, cls.deriv, backend, variant)
    max_abs = max_err = max_rel = 0.0
    worst = (-1.0, quartets[0], (0, 0, 0, 0))
    relative = (-1.0, None, None)
    n_values = 0
    for idx, value in zip(quartets, mine):
        ref = reference_eri(mol, idx, cls.deriv)
        if value.shape != ref.shape:
            raise AssertionError(f"{cls} {idx}: shape {value.shape} != PySCF {ref.shape}")
        err = np.abs(value - ref)
        norm = tol.normalized(err, ref)
        big = np.abs(ref) > tol.rel_floor
        max_abs = max(max_abs, float(np.abs(ref).max()))
        max_err = max(max_err, float(err.max()))
        if big.any():
            rel = np.where(big, err / np.where(big, np.abs(ref), 1.0), -1.0)
            at = np.unravel_index(int(rel.argmax()), rel.shape)
            max_rel = max(max_rel, float(rel[at]))
            if rel[at] > relative[0]:
                relative = (float(rel[at]), tuple(idx), tuple(int(i) for i in at))
        at = np.unravel_index(int(norm.argmax()), norm.shape)
        if norm[at] > worst[0]:
            worst = (float(norm[at]), tuple(idx), tuple(int(i) for i in at))
        n_values += ref.size
    return ClassErrors(
        cls=str(cls),
        n_quartets=len(quartets),
        n_values=n_values,
        max_abs_value=max_abs,
        max_abs_error=max_err,
        max_rel_error=max_rel,
        max_normalized_error=worst[0],
        max_primitives=max(mol.bas_nprim(s) for q in quartets for s in q),
        max_contractions=max(mol.bas_nctr(s) for q in quartets for s in q),
        worst_quartet=worst[1],
        worst_element=worst[2],
        relative_quartet=relative[1],
        relative_element=relative[2],
    )


@lru_cache(maxsize=64)
def exact_element(
    mol,
    quartet: tuple[int, int, int, int],
    element: tuple[int, ...],
    variant: str,
    centre: int | None = None,
) -> float:
    """40-digit value of one element of a shell quartet (with ``centre``, of its gradient on
    that position: the element leads with the component), rounded to double. Cached per
    process (``mol`` by identity): every backend that misses on an element adjudicates the same
    one, and the 40-digit evaluation of a deeply contracted quartet takes tens of seconds."""
    from fusionrcg.engine import canonical_permutation
    from fusionrcg.reference.exact import exact_eri

    shells = shell_quartet(mol, quartet)
    spherical = not mol.cart
    sizes = [shell_size(s.l, spherical) for s in shells]
    lead, element = element[: len(element) - 4], element[len(element) - 4 :]
    # keep only the contraction column each index of the element belongs to
    single = tuple(
        Shell(s.l, s.center, s.exponents, s.coefficients[:, [i // n]])
        for s, i, n in zip(shells, element, sizes)
    )
    comp = tuple(i % n for i, n in zip(element, sizes))
    if centre is not None:  # the graph of the class as requested, gradient on ``centre``
        cls = QuartetClass(*(s.l for s in single), deriv=centre)
        plan = plan_class(cls, get_variant(variant), spherical)
        return float(exact_eri(plan, single)[(*lead, *comp)])
    perm = canonical_permutation([s.l for s in single])
    canon = tuple(single[i] for i in perm)
    plan = plan_class(QuartetClass(*(s.l for s in canon)), get_variant(variant), spherical)
    return float(exact_eri(plan, canon)[tuple(comp[i] for i in perm)])


def adjudicate(
    mol,
    quartet: tuple[int, int, int, int],
    element: tuple[int, ...],
    variant: str | KernelOptions = "full",
    tol: Tolerance = Tolerance(),
    backend: str = "reference",
    centre: int | None = None,
) -> Adjudication:
    """Exact value of one element of a shell quartet (of its gradient on ``centre``) and both
    codes' errors against it; the engine's value comes from ``backend``, the one whose
    comparison failed."""
    element = tuple(element)
    # the graph, and so the exact value, is the variant's whatever the kernel options
    name = variant if isinstance(variant, str) else kernel_options(variant).variant.name
    exact = exact_element(mol, tuple(quartet), element, name, centre)
    mine = float(engine_values(mol, [quartet], centre, backend, variant)[0][element])
    ref = float(reference_eri(mol, quartet, centre)[element])
    engine_err = mine - exact
    return Adjudication(
        exact=exact,
        engine_error=engine_err,
        pyscf_error=ref - exact,
        engine_normalized=float(tol.normalized(np.abs(engine_err), np.array(exact))),
    )


def verify_molecule(
    mol,
    lmax: int,
    per_class: int,
    seed: int = 0,
    backend: str = "reference",
    variant: str = "full",
    max_total: int | None = None,
    tol: Tolerance = Tolerance(),
    classes: Sequence[QuartetClass] | None = None,
) -> list[ClassErrors]:
    """Every canonical class up to ``lmax`` (and ``max_total``), or only ``classes``, checked
    on ``per_class`` sampled shell quartets each; a class without shells in ``mol`` is left
    out. Every class is sampled, checked or not, so that a class's quartets do not depend on
    which classes are checked."""
    rng = np.random.default_rng(seed)
    rows = []
    for cls in canonical_classes(lmax):
        if max_total is not None and cls.total > max_total:
            continue
        quartets = sample_quartets(mol, cls, per_class, rng)
        if classes is not None and cls not in classes:
            continue
        if quartets:
            rows.append(verify_class(mol, cls, quartets, backend, variant, tol))
    return rows


DERIV_TOLERANCE = Tolerance(abs=1e-11, rel=1e-9, rel_floor=1e-8)
"""The first-derivative integrals' bounds (each a sum of two shifted classes)."""


def verify_engine_deriv(
    mol,
    lmax: int,
    backend: str = "gpu",
    block_min_total: int | None = None,
    per_class: int = 2,
    seed: int = 5,
    tol: Tolerance = DERIV_TOLERANCE,
    max_total: int | None = None,
) -> list[dict]:
    """PySCF's ``int2e_ip1`` (the gradient on the first position) of every canonical class up
    to ``lmax`` (and ``max_total``) with shells in ``mol``, each class through the kernels the
    J/K engine runs for it (``fusionrcg.jk.kernels.deriv_options``: the straight-line forms, or
    the block form where ``block_only`` says so; ``block_min_total`` as the engine's); a
    sampled quartet whose first pair is ordered tighter shell first runs position B's kernel.
    One row per class (``ClassErrors.row`` with the kernel's threads per item), adjudicated in
    40 digits where it misses the tolerance; where the relative error against PySCF exceeds
    ``tol.rel`` (an element above ``tol.rel_floor``, within the absolute bound), that element
    too, with both codes' relative errors against the exact value (``relative_*``)."""
    from fusionrcg.jk.kernels import deriv_options

    rng = np.random.default_rng(seed)
    rows = []
    for cls in canonical_classes(lmax):
        quartets = sample_quartets(mol, cls, per_class, rng)
        if not quartets or (max_total is not None and cls.total > max_total):
            continue
        options = deriv_options(cls, kernel_options("full"), block_min_total)
        errors = verify_class(mol, cls.with_deriv(0), quartets, backend, options, tol)
        row = errors.row() | {"item_threads": options.item_threads}
        if not errors.passed:
            a = adjudicate(mol, errors.worst_quartet, errors.worst_element, options, tol,
                           backend, 0)  # fmt: skip
            row |= {"exact": a.exact, "engine_error": a.engine_error,
                    "pyscf_error": a.pyscf_error, "engine_right": a.engine_right}  # fmt: skip
        if errors.max_rel_error > tol.rel:
            a = adjudicate(mol, errors.relative_quartet, errors.relative_element, options, tol,
                           backend, 0)  # fmt: skip
            row |= {"relative_exact": a.exact,
                    "relative_engine_error": abs(a.engine_error) / abs(a.exact),
                    "relative_pyscf_error": abs(a.pyscf_error) / abs(a.exact)}  # fmt: skip
        rows.append(row)
    return rows
