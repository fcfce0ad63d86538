"""Coulomb and exchange matrices from the generated kernels' J/K epilogues.

Every symmetry-unique segment quartet (i >= j, k >= l, (i, j) >= (k, l)) is evaluated once and
weighted by 1 / ((1 + d_ij)(1 + d_kl)(1 + d_ij,kl)), so that the half matrices the kernels
accumulate give J = Jh + Jh^T and K = Kh + Kh^T. No screening: this is the exact builder that
the SCF integration (screening, batching, multi-GPU) will refine.
"""

from __future__ import annotations

import numpy as np

from .angmom import QuartetClass
from .engine import _check_backend, oriented_permutations
from .runtime.basis import SegmentedBasis, segment_basis
from .shells import check_mole
from .variants import get_variant


def unique_segment_quartets(basis: SegmentedBasis) -> tuple[np.ndarray, np.ndarray]:
    """All symmetry-unique segment quartets and their weights."""
    n = basis.l.size
    i, j = np.tril_indices(n)
    pair = np.arange(i.size)
    p, r = np.tril_indices(pair.size)
    quartets = np.stack([i[p], j[p], i[r], j[r]], axis=1).astype(np.int32)
    a, b, c, d = quartets.T
    weight = 1.0 / ((1 + (a == b)) * (1 + (c == d)) * (1 + (p == r)))
    return quartets, weight


def _check_density(dm: np.ndarray, nao: int) -> np.ndarray:
    dm = np.asarray(dm, dtype=float)
    if dm.shape != (nao, nao):
        raise ValueError(f"density matrix shape {dm.shape} does not match nao = {nao}")
    if not np.allclose(dm, dm.T, atol=1e-12 * max(1.0, np.abs(dm).max())):
        raise ValueError("the J/K builder needs a symmetric density matrix")
    return dm


def get_jk(mol, dm, backend: str = "cpu", variant="full") -> tuple[np.ndarray, np.ndarray]:
    """J and K of a symmetric density ``dm`` (nao x nao), all quartets, no screening."""
    from .runtime.launch import executor

    _check_backend(backend)
    if backend == "reference":
        raise ValueError("get_jk runs generated kernels: use backend 'cpu' or 'gpu'")
    check_mole(mol)
    v = get_variant(variant)
    basis = segment_basis(mol)
    dm = _check_density(dm, basis.nao)
    run = executor(backend)
    quartets, weight = unique_segment_quartets(basis)
    tightest = np.maximum.reduceat(basis.exponents, basis.prim[:, 0])
    perms = oriented_permutations(basis.l[quartets], tightest[quartets])
    canon = np.take_along_axis(quartets, perms, axis=1)
    classes, inverse = np.unique(basis.l[canon], axis=0, return_inverse=True)
    vj = np.zeros((basis.nao, basis.nao))
    vk = np.zeros_like(vj)
    for k, ls in enumerate(classes):
        rows = np.flatnonzero(inverse.ravel() == k)
        cls = QuartetClass(*(int(l) for l in ls))
        hj, hk = run.jk(cls, v, not mol.cart, canon[rows], weight[rows], basis, dm)
        vj += hj
        vk += hk
    return vj + vj.T, vk + vk.T
