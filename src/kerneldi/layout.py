"""The reordered, padded index spaces of one geometry and grid (built once, reused)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import ordering
from .blocks import nblocks
from .errors import GridError
from .settings import Settings


@dataclass
class Layout:
    """Basis and grid permutations and the block counts that follow from them.

    ``basis_perm[k]`` is the PySCF AO index at position k; ``grid_perm[k]`` the input grid
    point at position k. Points of zero weight contribute nothing and are left out.
    """

    d: int
    nao: int
    basis_perm: np.ndarray
    grid_perm: np.ndarray
    coords: np.ndarray
    weights: np.ndarray

    @property
    def npts(self) -> int:
        return len(self.grid_perm)

    @property
    def nbb(self) -> int:
        return nblocks(self.nao, self.d)

    @property
    def ngb(self) -> int:
        return nblocks(self.npts, self.d)

    @property
    def nao_pad(self) -> int:
        return self.nbb * self.d

    @property
    def npts_pad(self) -> int:
        return self.ngb * self.d


def make_layout(mol, coords, weights, atom_index, settings: Settings, basis_perm=None) -> Layout:
    """Orders of one molecule and grid (host arrays in, host arrays out). ``basis_perm``: a
    basis order to keep (a nearby geometry's, for an MD step) instead of making one; the grid
    order, cheap beside it, is always made for the grid given."""
    coords = np.asarray(coords, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if coords.ndim != 2 or coords.shape[1] != 3 or coords.shape[0] != weights.shape[0]:
        raise GridError(
            f"grid coords must be (n, 3) and weights (n,); got {coords.shape} and {weights.shape}"
        )
    if not (np.all(np.isfinite(coords)) and np.all(np.isfinite(weights))):
        raise GridError("grid coords or weights contain NaN or inf")
    kept = np.flatnonzero(weights != 0)
    if kept.size == 0:
        raise GridError("the grid has no points of nonzero weight")
    every = kept.size == weights.size  # the usual grid: no copies of the kept points
    if settings.grid_order == "morton":
        points = coords if every else coords[kept]
        if atom_index is None or len(atom_index) != len(weights):
            atoms = ordering.nearest_atom(points, mol.atom_coords())
        else:
            atoms = np.asarray(atom_index) if every else np.asarray(atom_index)[kept]
        order = ordering.grid_order(points, atoms, settings.morton_resolution)
        grid_perm = order if every else kept[order]
    else:
        grid_perm = kept
    ordered = np.ascontiguousarray(coords[grid_perm])
    if basis_perm is None:
        basis_perm = ordering.basis_order(
            mol,
            settings.basis_order,
            settings.leaf_order,
            settings.optimal_leaf_max,
            coords=ordered,
            block_size=settings.block_size,
            threshold=settings.t_b,
        )
    elif sorted(basis_perm) != list(range(mol.nao_nr())):
        raise GridError(f"basis_perm is not a permutation of the molecule's {mol.nao_nr()} AOs")
    return Layout(
        d=settings.block_size,
        nao=mol.nao_nr(),
        basis_perm=np.asarray(basis_perm, dtype=np.int64),
        grid_perm=grid_perm,
        coords=ordered,
        weights=np.ascontiguousarray(weights[grid_perm]),
    )
