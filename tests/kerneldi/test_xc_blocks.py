"""Block summaries, BCS(R)/BCS(C) layouts, prefix-sum compaction and block-pair screening."""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft, gto

from kerneldi import blocks
from kerneldi.layout import make_layout
from kerneldi.settings import Settings


def local_matrix(m: int, n: int, width: float, seed: int) -> np.ndarray:
    """A matrix whose entries decay away from the diagonal, like AO values on sorted grids."""
    rng = np.random.default_rng(seed)
    i = np.arange(m)[:, None] / m
    j = np.arange(n)[None, :] / n
    return rng.standard_normal((m, n)) * np.exp(-(((i - j) / width) ** 2))


@pytest.mark.parametrize("d", [1, 7, 32])
def test_bcs_layouts_round_trip_to_the_dense_matrix(d):
    a = local_matrix(45, 70, 0.3, 0)
    for layout in (blocks.BCSR, blocks.BCSC):
        np.testing.assert_array_equal(layout.from_dense(a, d).to_dense(), a)


def test_retention_drops_exactly_the_blocks_below_t_b():
    a = local_matrix(64, 96, 0.15, 1)
    d, t_b = 8, 1e-6
    norms = blocks.block_maxnorm(a, d)
    kept = blocks.BCSR.from_dense(a, d, t_b)
    assert len(kept.col_idx) == np.count_nonzero(norms >= t_b) < norms.size
    expect = blocks.tiles(a, d).copy()
    expect[norms < t_b] = 0
    dense = expect.transpose(0, 2, 1, 3).reshape(64, 96)
    np.testing.assert_array_equal(kept.to_dense(), dense)
    col = blocks.BCSC.from_dense(a, d, t_b)
    np.testing.assert_array_equal(col.to_dense(), dense)
    # BCS(R): row_ptr delimits each block row, columns ascending within a row
    for p in range(len(kept.row_ptr) - 1):
        cols = kept.col_idx[kept.row_ptr[p] : kept.row_ptr[p + 1]]
        assert np.all(np.diff(cols) > 0)


def test_compact_is_an_exclusive_prefix_sum():
    mask = np.random.default_rng(4).random(300) < 0.3
    p = blocks.exclusive_scan(mask)
    assert p[0] == 0 and p[-1] == mask.sum()
    np.testing.assert_array_equal(p[1:] - p[:-1], mask)
    count, idx = blocks.compact(mask)
    assert count == mask.sum()
    np.testing.assert_array_equal(idx, np.flatnonzero(mask))


def test_block_pair_product_is_exact_without_screening_and_bounded_with_it():
    a = local_matrix(96, 128, 0.1, 2)
    b = local_matrix(128, 80, 0.1, 3)
    d = 16
    ra, cb = blocks.BCSR.from_dense(a, d), blocks.BCSC.from_dense(b, d)
    exact = a @ b
    c0, n0 = blocks.block_sparse_matmul(ra, cb, 0.0)
    np.testing.assert_allclose(c0, exact, atol=1e-12)
    assert n0 == (96 // d) * (128 // d) * (80 // d)
    previous = n0
    for t_d in (1e-12, 1e-8, 1e-4, 1e-2):
        c, n = blocks.block_sparse_matmul(ra, cb, t_d)
        assert n <= previous  # fewer executed pairs as t_d grows
        previous = n
        # every skipped pair contributes at most d * a_pq * b_qr < d * t_d to an entry
        skipped = n0 - n
        assert np.abs(c - exact).max() <= d * t_d * max(skipped, 1)
    assert previous < n0


def test_block_pattern_mirror_and_output_tiles():
    rng = np.random.default_rng(6)
    keep = rng.random((40, 9)) < 0.35  # (grid block, basis block)
    g, p = np.nonzero(keep)
    pat = blocks.BlockPattern.from_blocks(9, 40, p, g)
    assert pat.nblk == keep.sum()
    cols = pat.block_cols()
    for row in range(9):
        entries = slice(pat.row_ptr[row], pat.row_ptr[row + 1])
        np.testing.assert_array_equal(pat.col_idx[entries], np.flatnonzero(keep[:, row]))
        np.testing.assert_array_equal(pat.row_idx[pat.row_blk[entries]], row)
        np.testing.assert_array_equal(cols[pat.row_blk[entries]], pat.col_idx[entries])
    expect = {(a, b) for a in range(9) for b in range(a, 9) if (keep[:, a] & keep[:, b]).any()}
    assert set(map(tuple, pat.tile_pairs().tolist())) == expect


def water_chain(n: int, spacing: float = 5.0):
    """n water molecules along x: an extended system with block sparsity at t_b = 1e-12."""
    w = (("O", 0.0, 0.0, 0.0), ("H", 0.0, 0.76, 0.59), ("H", 0.0, -0.76, 0.59))
    atoms = [(a, (x + spacing * k, y, z)) for k in range(n) for a, x, y, z in w]
    mol = gto.M(atom=atoms, basis="6-31g", verbose=0)
    grids = dft.gen_grid.Grids(mol)
    grids.level = 0
    return mol, grids.build()


def test_reordering_makes_the_ao_operand_block_sparser():
    from kerneldi.cpu import CPUBlockEngine

    mol, grids = water_chain(8)
    settings = Settings(block_size=16)
    lay = make_layout(mol, grids.coords, grids.weights, grids.atm_idx, settings)
    ordered = CPUBlockEngine(mol, lay, settings, 0).pattern.retained_fraction()
    rng = np.random.default_rng(0)
    lay.basis_perm = rng.permutation(lay.basis_perm)
    p = rng.permutation(lay.npts)
    lay.grid_perm, lay.coords, lay.weights = lay.grid_perm[p], lay.coords[p], lay.weights[p]
    shuffled = CPUBlockEngine(mol, lay, settings, 0).pattern.retained_fraction()
    assert ordered < 0.7 * shuffled
