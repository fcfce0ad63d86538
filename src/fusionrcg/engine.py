"""Public entry points: contracted shell-quartet ERIs in PySCF's layout."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import permutations

import numpy as np

from .angmom import QuartetClass, shell_size
from .errors import BackendError, InputError
from .options import KernelOptions, kernel_options
from .shells import Shell, check_mole, shell_quartet, shell_quartet_indices
from .variants import Variant

BACKENDS = ("reference", "cpu", "gpu")

# Axis permutations that preserve (ab|cd) under the 8-fold permutation symmetry.
_SYMMETRIES = tuple(
    p
    for p in permutations(range(4))
    if {frozenset(p[:2]), frozenset(p[2:])} == {frozenset((0, 1)), frozenset((2, 3))}
)


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")


def canonical_permutation(ls: Sequence[int]) -> tuple[int, ...]:
    """A symmetry permutation p with (ls[p0] ls[p1]|ls[p2] ls[p3]) canonical."""
    return _canonical_permutation(tuple(int(l) for l in ls))


@cache
def _canonical_permutation(ls: tuple[int, ...]) -> tuple[int, ...]:
    target = QuartetClass(*ls).canonical().ls
    for p in _SYMMETRIES:
        if tuple(ls[i] for i in p) == target:
            return p
    raise AssertionError(f"no symmetry maps {tuple(ls)} to {target}")


def oriented_permutations(ls: np.ndarray, tightest: np.ndarray) -> np.ndarray:
    """Per quartet (row of ``ls``, ``tightest``: angular momenta and largest exponents by
    position), the canonical permutation with each equal-l pair ordered so that the shell
    whose largest exponent is larger comes first: the HRR then builds on the tighter centre,
    whose terms cancel less, so the integrals carry less rounding (deeply contracted bases
    such as ANO-RCC need it to stay within the verification's tolerance)."""
    ls = np.asarray(ls).reshape(-1, 4)
    tightest = np.asarray(tightest, dtype=float).reshape(-1, 4)
    classes, inverse = np.unique(ls, axis=0, return_inverse=True)
    perms = np.array([canonical_permutation(c) for c in classes], dtype=np.intp)[inverse.ravel()]
    rows = np.arange(len(ls))[:, None]
    for first in (0, 2):
        pair = perms[:, first : first + 2]
        l, t = ls[rows, pair], tightest[rows, pair]
        swap = (l[:, 0] == l[:, 1]) & (t[:, 1] > t[:, 0])
        perms[swap, first : first + 2] = pair[swap, ::-1]
    return perms


def oriented_permutation(ls: Sequence[int], tightest: Sequence[float]) -> tuple[int, ...]:
    """``oriented_permutations`` of one quartet."""
    return tuple(int(i) for i in oriented_permutations(ls, tightest)[0])


def _tightest(shells: Sequence[Shell]) -> list[float]:
    return [float(s.exponents.max()) for s in shells]


def _inverse(perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(perm.index(j) for j in range(4))


def _restore(value: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """A canonical block (leading gradient component, if any, kept first) in the requested
    shell order."""
    lead = value.ndim - 4
    axes = (*range(lead), *(lead + i for i in _inverse(perm)))
    return np.ascontiguousarray(value.transpose(axes))


def _class_of(ls: Sequence[int], perm: Sequence[int], centre: int | None) -> QuartetClass:
    """The class a quartet runs as after ``perm``: the requested derivative centre follows
    the shell it belongs to to its canonical position."""
    return QuartetClass(*ls, deriv=None if centre is None else tuple(perm).index(centre))


def _reference(
    mol, requested, options: KernelOptions, centre: int | None = None
) -> list[np.ndarray]:
    """NumPy evaluation of the graph; general contractions are handled inside the evaluator."""
    from .reference.evaluator import evaluate_batch

    spherical = not mol.cart
    groups: dict[tuple, list[tuple[int, tuple[int, ...], tuple[Shell, ...]]]] = defaultdict(list)
    for n, idx in enumerate(requested):
        shells = shell_quartet(mol, idx)
        perm = oriented_permutation([s.l for s in shells], _tightest(shells))
        canon = tuple(shells[i] for i in perm)
        cls = _class_of([s.l for s in canon], perm, centre)
        groups[(cls, tuple(s.coefficients.shape for s in canon))].append((n, perm, canon))
    results: list[np.ndarray] = [np.empty(0)] * len(requested)
    for (cls, _), members in groups.items():
        plan = options.plan(cls, spherical)
        values = evaluate_batch(plan, [m[2] for m in members])
        for (n, perm, _), value in zip(members, values):
            results[n] = _restore(value, perm)
    return results


def _generated(
    mol, requested, options: KernelOptions, backend: str, centre: int | None = None
) -> list[np.ndarray]:
    """Generated kernels: segment quartets grouped by canonical class, one launch per class."""
    from .runtime.basis import segment_basis
    from .runtime.launch import executor

    basis = segment_basis(mol)
    run = executor(backend)
    spherical = not mol.cart
    groups: dict[QuartetClass, list[tuple[int, int, tuple[int, ...]]]] = defaultdict(list)
    layouts = []
    for n, idx in enumerate(requested):
        shells = shell_quartet(mol, idx)  # validates indices and l
        ls = [s.l for s in shells]
        perm = oriented_permutation(ls, _tightest(shells))
        segs = basis.segment_quartets(idx)
        layouts.append((perm, segs, ls))
        for k, seg in enumerate(segs):
            cls = _class_of([ls[i] for i in perm], perm, centre)
            groups[cls].append((n, k, tuple(seg[i] for i in perm)))
    blocks: dict[tuple[int, int], np.ndarray] = {}
    lead = () if centre is None else (3,)
    for cls, members in groups.items():
        kernel = run.kernel(cls, options, spherical)
        ints = run.integrals(kernel, np.array([m[2] for m in members]), basis)
        for (n, k, _), value in zip(members, ints.reshape(-1, *kernel.output_shape)):
            blocks[(n, k)] = value
    results = []
    for n, (perm, segs, ls) in enumerate(layouts):
        sizes = [shell_size(l, spherical) for l in ls]
        nctr = [int(basis.nctr[s]) for s in requested[n]]
        out = np.empty([*lead, *(c * f for c, f in zip(nctr, sizes))])
        for k, seg in enumerate(segs):
            ctr = [x - basis.first_segment[s] for x, s in zip(seg, requested[n])]
            where = tuple(slice(c * f, (c + 1) * f) for c, f in zip(ctr, sizes))
            out[(Ellipsis, *where)] = _restore(blocks[(n, k)], perm)
        results.append(out)
    return results


def eri_quartets(
    mol,
    quartets: Iterable[Sequence[int]],
    backend: str = "reference",
    variant: str | Variant | KernelOptions = "full",
) -> list[np.ndarray]:
    """Contracted ERIs of many shell quartets; each result is shaped and ordered like
    ``mol.intor('int2e_sph' | 'int2e_cart', shls_slice=...)`` for that quartet.

    ``backend``: ``reference`` (NumPy evaluation of the graph), ``cpu`` (the generated C++
    kernels, compiled on first use) or ``gpu`` (the generated CUDA kernels through CuPy).
    ``variant``: a variant's name, a ``Variant`` or ``KernelOptions`` (``options``).
    Quartets are mapped to their canonical class and evaluated class by class.
    """
    _check_backend(backend)
    check_mole(mol)
    options = kernel_options(variant)
    requested = [shell_quartet_indices(q) for q in quartets]
    if backend == "reference":
        return _reference(mol, requested, options)
    return _generated(mol, requested, options, backend)


def shell_quartet_eri(
    mol,
    shells: Sequence[int],
    backend: str = "reference",
    variant: str | Variant | KernelOptions = "full",
) -> np.ndarray:
    """(ab|cd) over shells (i, j, k, l) of ``mol``, equal in shape, order and value to
    ``mol.intor('int2e_sph', shls_slice=(i, i+1, j, j+1, k, k+1, l, l+1))``
    (``int2e_cart`` when ``mol.cart``)."""
    return eri_quartets(mol, [shells], backend, variant)[0]


def eri_deriv_quartets(
    mol,
    quartets: Iterable[Sequence[int]],
    centre: int = 0,
    backend: str = "reference",
    variant: str | Variant | KernelOptions = "full",
) -> list[np.ndarray]:
    """First-derivative ERIs of many shell quartets: the gradient of the basis functions of
    the quartet's shell at position ``centre`` (0..3), each result shaped (3, ni, nj, nk, nl)
    (x, y, z first) and equal to PySCF's

    * ``centre=0``: ``mol.intor('int2e_ip1_sph' | 'int2e_ip1_cart', comp=3, shls_slice=...)``,
      (nabla i j|k l);
    * ``centre=2``: ``int2e_ip2``, (i j|nabla k l);
    * ``centre=1`` and ``3``: (i nabla j|k l) and (i j|k nabla l), which PySCF gives as
      ``int2e_ip1`` / ``int2e_ip2`` of the quartet with the pair swapped.

    nabla acts on the function, so each is minus the derivative with respect to that
    centre's coordinates; by translational invariance the four centres' derivatives of a
    quartet sum to zero, so three of them give the fourth. Quartets run as canonical
    derivative classes (the centre follows its shell through the symmetry permutation), on
    any backend and under any variant, like ``eri_quartets``. Shells up to g are accepted;
    the graph then reaches l = 5 on the derivative centre internally.
    """
    _check_backend(backend)
    check_mole(mol)
    if isinstance(centre, bool) or centre not in (0, 1, 2, 3):
        raise InputError(f"centre must be 0, 1, 2 or 3 (the quartet position), got {centre!r}")
    options = kernel_options(variant)
    requested = [shell_quartet_indices(q) for q in quartets]
    if backend == "reference":
        return _reference(mol, requested, options, centre)
    return _generated(mol, requested, options, backend, centre)
