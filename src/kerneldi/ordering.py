"""Locality-preserving orders of the two operand axes (paper Sec. III-B2, Appendix A-B).

Grid points: grouped by the atom whose Becke cell holds them, then by the 60-bit Morton
(Z-order) code of their coordinates on a lattice of ``resolution`` points per Bohr, stable sort.
Basis functions: average-linkage agglomerative clustering, leaves read off in an order that keeps
similar signatures adjacent. The paper's signatures are the rows of the overlap matrix under
cosine distance ("cluster"). Overlap rows say where a function lies, not how far it reaches: a
block of 32 functions holding one diffuse function is kept wherever that one is, so far more
blocks are kept than functions reach t_b. The default ("support") clusters on what the block
structure depends on: the grid blocks (a sample spread over the ordered grid) where each
function or a first derivative reaches t_b, under Jaccard distance, so that a block's
functions reach the same grid blocks and fewer blocks and block pairs are kept.
"""

from __future__ import annotations

import numpy as np
from pyscf.dft import numint
from scipy.cluster import hierarchy
from scipy.spatial import cKDTree
from scipy.spatial.distance import squareform

from .errors import SettingsError

MORTON_BITS = 20  # per axis: 3 x 20 = 60-bit codes
# grid blocks sampled for the support signatures: enough that the kept fraction no longer
# depends on the sample, few enough that the signatures stay cheap
SUPPORT_SAMPLES = 512
SUPPORT_CHUNK = 32  # sampled blocks per AO evaluation (bounds its memory)

_SPREAD = (
    (32, 0x001F00000000FFFF),
    (16, 0x001F0000FF0000FF),
    (8, 0x100F00F00F00F00F),
    (4, 0x10C30C30C30C30C3),
    (2, 0x1249249249249249),
)
_HALF_BITS = MORTON_BITS // 2


def _spread_by_shifts(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.uint64) & np.uint64((1 << MORTON_BITS) - 1)
    for shift, mask in _SPREAD:
        v = (v | (v << np.uint64(shift))) & np.uint64(mask)
    return v


# bit k of a 10-bit integer moved to bit 3k, for every such integer: two lookups spread a
# 20-bit coordinate with a fraction of the five shift-and-mask passes' memory traffic
_SPREAD_TABLE = _spread_by_shifts(np.arange(1 << _HALF_BITS, dtype=np.uint64))


def _interleave(table, x, y, z):
    """Eq. 20's codes from 20-bit lattice coordinates (uint64 arrays of NumPy or CuPy, with
    ``table`` the spread table in the same library): bit k of each moved to bit 3k by two
    table lookups, then interleaved."""

    def spread(v):
        low = v & np.uint64((1 << _HALF_BITS) - 1)
        return table[low] | (table[v >> np.uint64(_HALF_BITS)] << np.uint64(3 * _HALF_BITS))

    return spread(z) | (spread(y) << np.uint64(1)) | (spread(x) << np.uint64(2))


def lattice(coords: np.ndarray, resolution: float) -> np.ndarray:
    """Coordinates scaled by ``resolution``, shifted to start at 0, truncated to 20-bit integers."""
    coords = np.asarray(coords, dtype=np.float64)
    return _lattice(np, coords, coords.min(axis=0), resolution)


def _lattice(xp, coords, origin, resolution: float):
    scaled = (coords - origin) * resolution
    xp.floor(scaled, out=scaled)
    xp.clip(scaled, 0, (1 << MORTON_BITS) - 1, out=scaled)
    # through int64 (NumPy's float-to-uint64 cast is not vectorized); the values are >= 0
    return scaled.astype(xp.int64).view(xp.uint64)


_CODE_CHUNK = 1 << 16  # points per pass: the temporaries stay in cache


def morton_codes(coords: np.ndarray, resolution: float = 128.0) -> np.ndarray:
    """Eq. 20: m = sum_k z_k 2^(3k) + y_k 2^(3k+1) + x_k 2^(3k+2) on the scaled lattice."""
    coords = np.asarray(coords, dtype=np.float64)
    codes = np.empty(len(coords), dtype=np.uint64)
    if len(coords) == 0:
        return codes
    origin = coords.min(axis=0)
    for lo in range(0, len(coords), _CODE_CHUNK):
        part = coords[lo : lo + _CODE_CHUNK]
        x, y, z = np.ascontiguousarray(_lattice(np, part, origin, resolution).T)
        codes[lo : lo + len(part)] = _interleave(_SPREAD_TABLE, x, y, z)
    return codes


def nearest_atom(coords: np.ndarray, atom_coords: np.ndarray) -> np.ndarray:
    """Index of the closest nucleus of each point (when a grid does not record its atoms)."""
    return cKDTree(np.asarray(atom_coords)).query(np.asarray(coords))[1].astype(np.int64)


def grid_order(
    coords: np.ndarray, atom_index: np.ndarray | None, resolution: float = 128.0
) -> np.ndarray:
    """Permutation of the points: by atom, then by Morton code; ties keep their input order.
    Each atom's points are sorted on their own (a grid lists them atom by atom, so the atoms'
    runs are found without a sort), far faster than one sort on the pair of keys."""
    codes = morton_codes(coords, resolution)
    if atom_index is None:
        return np.argsort(codes, kind="stable")
    atoms = np.asarray(atom_index)
    perm = np.empty(atoms.size, dtype=np.int64)
    if atoms.size < 2 or bool(np.all(atoms[1:] >= atoms[:-1])):  # runs as listed: slices
        for a, b in _runs(atoms):
            perm[a:b] = a + np.argsort(codes[a:b], kind="stable")
        return perm
    by_atom = np.argsort(atoms, kind="stable")
    for a, b in _runs(atoms[by_atom]):
        run = by_atom[a:b]
        perm[a:b] = run[np.argsort(codes[run], kind="stable")]
    return perm


def lattice_codes(xp, coords, resolution: float = 128.0):
    """``morton_codes`` with the array module ``xp`` (NumPy, or CuPy for device arrays), in one
    pass over the points: the same codes."""
    coords = xp.asarray(coords, dtype=xp.float64)
    if coords.shape[0] == 0:
        return xp.empty(0, dtype=xp.uint64)
    points = _lattice(xp, coords, coords.min(axis=0), resolution)
    return _interleave(xp.asarray(_SPREAD_TABLE), points[:, 0], points[:, 1], points[:, 2])


def order_by_atom_then_code(xp, codes, atom_index):
    """The permutation of ``grid_order`` from the points' codes and atoms (or codes only),
    with the array module ``xp``: a stable sort by code, then a stable sort of that order by
    atom (two sorts of the whole grid, which a GPU does at once; the host's per-atom sorts are
    faster on a CPU)."""
    by_code = _stable_argsort(xp, codes)
    if atom_index is None:
        return by_code
    return by_code[_stable_argsort(xp, xp.asarray(atom_index)[by_code])]


def _stable_argsort(xp, values):
    # CuPy's sorts are stable and take no ``kind``
    return values.argsort(kind="stable") if xp is np else values.argsort()


def _runs(values: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of equal neighbours."""
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]]) if values.size else []
    ends = [*list(starts[1:]), values.size]
    return list(zip(map(int, starts), map(int, ends)))


def cosine_distances(signatures: np.ndarray) -> np.ndarray:
    """Eq. 21: d(i, j) = 1 - s_i.s_j / (|s_i| |s_j|), symmetric with a zero diagonal."""
    s = np.asarray(signatures, dtype=np.float64)
    s = s / np.linalg.norm(s, axis=1)[:, None]
    dist = 1.0 - s @ s.T
    dist = np.clip(0.5 * (dist + dist.T), 0.0, 2.0)
    np.fill_diagonal(dist, 0.0)
    return dist


def orient_merges(linkage: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Leaf order of a dendrogram whose two sub-trees are oriented at each merge so that
    their mutually closest end leaves meet (Appendix A-B2), in one pass over the merges."""
    n = linkage.shape[0] + 1
    leaves: dict[int, list[int]] = {i: [i] for i in range(n)}
    for k, (a, b) in enumerate(linkage[:, :2].astype(np.int64)):
        la, lb = leaves.pop(int(a)), leaves.pop(int(b))
        options = (
            (dist[la[-1], lb[0]], False, False),
            (dist[la[-1], lb[-1]], False, True),
            (dist[la[0], lb[0]], True, False),
            (dist[la[0], lb[-1]], True, True),
        )
        _, rev_a, rev_b = min(options, key=lambda o: o[0])
        leaves[n + k] = (la[::-1] if rev_a else la) + (lb[::-1] if rev_b else lb)
    (order,) = leaves.values()
    return np.asarray(order, dtype=np.int64)


def jaccard_distances(kept: np.ndarray) -> np.ndarray:
    """d(i, j) = 1 - |K_i & K_j| / |K_i | K_j| of boolean rows K (0 between two empty rows)."""
    k = np.asarray(kept, dtype=np.float64)
    common = k @ k.T
    size = k.sum(axis=1)
    union = size[:, None] + size[None, :] - common
    dist = np.where(union > 0, 1.0 - common / np.maximum(union, 1.0), 0.0)
    dist = 0.5 * (dist + dist.T)
    np.fill_diagonal(dist, 0.0)
    return dist


def linkage_order(dist: np.ndarray, leaf_order: str = "auto", optimal_max: int = 1500):
    """Leaf order of the average-linkage dendrogram of a distance matrix."""
    n = dist.shape[0]
    if n <= 2:
        return np.arange(n)
    condensed = squareform(dist, checks=False)
    tree = hierarchy.linkage(condensed, method="average")
    if leaf_order == "optimal" or (leaf_order == "auto" and n <= optimal_max):
        return hierarchy.leaves_list(hierarchy.optimal_leaf_ordering(tree, condensed))
    return orient_merges(tree, dist)


def cluster_order(overlap: np.ndarray, leaf_order: str = "auto", optimal_max: int = 1500):
    """Basis permutation from average-linkage clustering of overlap-row signatures."""
    return linkage_order(cosine_distances(overlap), leaf_order, optimal_max)


def sampled_support(
    mol, coords: np.ndarray, block_size: int, threshold: float, samples: int = SUPPORT_SAMPLES
) -> np.ndarray:
    """(nao, nsampled) booleans: whether basis function i or one of its first derivatives
    reaches ``threshold`` in absolute value on sampled grid block j (``samples`` blocks of
    ``block_size`` consecutive points spread evenly over ``coords``, the ordered grid)."""
    npts = len(coords)
    nblk = -(-npts // block_size)
    picks = np.unique(np.linspace(0, nblk - 1, min(samples, nblk)).round().astype(np.int64))
    out = []
    for c0 in range(0, len(picks), SUPPORT_CHUNK):
        blocks = picks[c0 : c0 + SUPPORT_CHUNK]
        pts = (blocks[:, None] * block_size + np.arange(block_size)).ravel()
        pts = pts[pts < npts]
        value = np.abs(numint.eval_ao(mol, coords[pts], deriv=1)).max(axis=0)  # (pts, nao)
        starts = np.flatnonzero(np.r_[True, np.diff(pts // block_size) != 0])
        out.append(np.maximum.reduceat(value, starts, axis=0) >= threshold)
    return np.concatenate(out).T


def support_order(kept: np.ndarray, leaf_order: str = "auto", optimal_max: int = 1500):
    """Basis permutation from average-linkage clustering of grid-support signatures (rows of
    ``kept``, as ``sampled_support`` gives them) under Jaccard distance."""
    return linkage_order(jaccard_distances(kept), leaf_order, optimal_max)


def basis_order(
    mol,
    method: str = "support",
    leaf_order: str = "auto",
    optimal_max: int = 1500,
    coords: np.ndarray | None = None,
    block_size: int = 32,
    threshold: float = 1e-12,
):
    """The basis permutation of a PySCF molecule: "support" clusters grid-support signatures on
    the ordered grid ``coords`` (blocks of ``block_size`` points, functions kept at
    ``threshold``), "cluster" overlap rows (the paper's), "input" keeps PySCF's order."""
    if method == "input":
        return np.arange(mol.nao_nr())
    if method == "support":
        if coords is None:
            raise SettingsError("the support basis order needs the ordered grid coordinates")
        kept = sampled_support(mol, np.asarray(coords), block_size, threshold)
        return support_order(kept, leaf_order, optimal_max)
    return cluster_order(mol.intor_symmetric("int1e_ovlp"), leaf_order, optimal_max)
