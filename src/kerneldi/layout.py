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


def _cupy_of(a):
    """CuPy where ``a`` is one of its arrays, else None."""
    if type(a).__module__.split(".")[0] != "cupy":
        return None
    import cupy

    return cupy


def _checked_grid(xp, coords, weights):
    """(coords, weights, indices of the points of nonzero weight) as float64 arrays of the
    array module ``xp``; a malformed grid raises ``GridError``."""
    coords = xp.asarray(coords, dtype=xp.float64)
    weights = xp.asarray(weights, dtype=xp.float64)
    if coords.ndim != 2 or coords.shape[1] != 3 or coords.shape[0] != weights.shape[0]:
        raise GridError(
            f"grid coords must be (n, 3) and weights (n,); got {coords.shape} and {weights.shape}"
        )
    if not (bool(xp.isfinite(coords).all()) and bool(xp.isfinite(weights).all())):
        raise GridError("grid coords or weights contain NaN or inf")
    kept = xp.flatnonzero(weights != 0)
    if kept.size == 0:
        raise GridError("the grid has no points of nonzero weight")
    return coords, weights, kept


def _grid_on_device(cp, mol, coords, weights, atom_index, resolution: float):
    """(grid_perm, ordered coords, ordered weights) on the host, made on the device from the
    grid's device arrays: the same permutation as the host's (``ordering.grid_order``)."""
    coords, weights, kept = _checked_grid(cp, coords, weights)
    points = coords[kept]
    if atom_index is None or len(atom_index) != weights.shape[0]:
        atoms = cp.asarray(ordering.nearest_atom(points.get(), mol.atom_coords()))
    else:
        atoms = cp.asarray(atom_index)[kept]
    codes = ordering.lattice_codes(cp, points, resolution)
    grid_perm = kept[ordering.order_by_atom_then_code(cp, codes, atoms)]
    return grid_perm.get(), coords[grid_perm].get(), weights[grid_perm].get()


def kept_grid_order(coords, weights, previous: Layout, limit_bohr: float):
    """(``previous``'s grid order, the grid's coords and weights in it) where that order
    orders this grid too, else None: the grid has the same points of nonzero weight, in the
    same places of its arrays, each within ``limit_bohr`` of where it was (a nearby
    geometry's grid, whose atom-centred points moved with their atoms; a grid whose points
    were listed in another order fails the test). Any order gives the same integrals; this
    one keeps the blocks as compact as they were."""
    perm = previous.grid_perm
    if limit_bohr <= 0 or perm.size == 0 or int(perm.max()) >= weights.shape[0]:
        return None
    if np.count_nonzero(weights) != perm.size:
        return None
    kept_weights = weights[perm]
    if not bool(np.all(kept_weights != 0)):
        return None
    ordered = coords[perm]
    if np.abs(ordered - previous.coords).max() >= limit_bohr:
        return None
    return perm, ordered, kept_weights


def make_layout(
    mol, coords, weights, atom_index, settings: Settings, basis_perm=None,
    previous: Layout | None = None,
) -> Layout:  # fmt: skip
    """Orders of one molecule and grid (host arrays in, host arrays out; with
    ``settings.grid_order_on_device`` the grid may come as CuPy arrays, and its Morton order
    is made there). ``basis_perm``: a basis order to keep (a nearby geometry's, for an MD
    step) instead of making one. ``previous``: a nearby geometry's layout (or this grid's),
    whose grid order is kept where ``kept_grid_order`` allows (host grids)."""
    cp = _cupy_of(coords) if settings.grid_order_on_device else None
    if cp is not None and settings.grid_order == "morton":
        grid_perm, ordered, kept_weights = _grid_on_device(
            cp, mol, coords, weights, atom_index, settings.morton_resolution
        )
        return _with_basis_order(mol, settings, basis_perm, grid_perm, ordered, kept_weights)
    if cp is not None:
        coords, weights = coords.get(), weights.get()
        atom_index = None if atom_index is None else cp.asnumpy(atom_index)
    coords, weights, kept = _checked_grid(np, coords, weights)
    kept_order = None
    if previous is not None:
        kept_order = kept_grid_order(coords, weights, previous, settings.reuse_orders_bohr)
    if kept_order is not None:
        return _with_basis_order(mol, settings, basis_perm, *kept_order)
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
    return _with_basis_order(
        mol, settings, basis_perm, grid_perm, coords[grid_perm], weights[grid_perm]
    )


def _with_basis_order(mol, settings: Settings, basis_perm, grid_perm, ordered, weights) -> Layout:
    """The layout of the ordered grid with ``basis_perm``, or a basis order made for it."""
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
        coords=np.ascontiguousarray(ordered),
        weights=np.ascontiguousarray(weights),
    )
