"""Morton grid order (Eq. 20, Appendix A-B1) and clustered basis order (Appendix A-B2)."""

from __future__ import annotations

import numpy as np
import pytest

from kerneldi import ordering


def morton_reference(q: np.ndarray) -> np.ndarray:
    """Eq. 20 bit by bit: m = sum_k z_k 2^(3k) + y_k 2^(3k+1) + x_k 2^(3k+2)."""
    out = np.zeros(len(q), dtype=object)
    for n, (x, y, z) in enumerate(q.tolist()):
        m = 0
        for k in range(20):
            m |= ((z >> k) & 1) << (3 * k) | ((y >> k) & 1) << (3 * k + 1)
            m |= ((x >> k) & 1) << (3 * k + 2)
        out[n] = m
    return out


def test_morton_codes_interleave_20_bit_coordinates():
    rng = np.random.default_rng(1)
    q = rng.integers(0, 1 << 20, size=(200, 3))
    q[0] = (1 << 20) - 1  # all 60 bits set
    q[1] = 0  # the lattice starts at the smallest coordinate
    codes = ordering.morton_codes(q.astype(float), resolution=1.0)
    assert [int(c) for c in codes] == list(morton_reference(q))
    assert int(codes[0]) == (1 << 60) - 1


def test_lattice_scales_shifts_and_truncates():
    coords = np.array([[-1.0, 0.0, 2.0], [-0.99, 0.5, 2.0], [3.0, 1.0, 2.0078125]])
    q = ordering.lattice(coords, 128.0)
    np.testing.assert_array_equal(q[0], [0, 0, 0])
    np.testing.assert_array_equal(q[1], [1, 64, 0])  # 0.01 * 128 = 1.28 -> 1
    np.testing.assert_array_equal(q[2], [512, 128, 1])


def test_grid_order_groups_by_atom_then_morton_stably(get_system):
    _, grids, _ = get_system("water_clusters/002", "sto-3g", 1)
    coords, atoms = grids.coords, grids.atm_idx
    perm = ordering.grid_order(coords, atoms, 128.0)
    assert sorted(perm.tolist()) == list(range(len(coords)))
    a = atoms[perm]
    assert np.all(np.diff(a) >= 0)
    codes = ordering.morton_codes(coords, 128.0)[perm]
    for atom in np.unique(a):
        c = codes[a == atom]
        assert np.all(c[1:] >= c[:-1])
    # equal codes keep their input order (stable sort)
    dup = np.concatenate([coords, coords[:50]])
    p = ordering.grid_order(dup, np.concatenate([atoms, atoms[:50]]), 128.0)
    pos = np.argsort(p)
    assert np.all(pos[:50] < pos[len(coords) : len(coords) + 50])


def test_morton_order_keeps_neighbours_close(get_system):
    _, grids, _ = get_system("water_clusters/003", "sto-3g", 1)
    c = grids.coords
    perm = ordering.grid_order(c, grids.atm_idx, 128.0)
    step = lambda x: np.linalg.norm(np.diff(x, axis=0), axis=1).mean()  # noqa: E731
    shuffled = c[np.random.default_rng(0).permutation(len(c))]
    assert step(c[perm]) < 0.25 * step(shuffled)


def adjacent_cost(dist: np.ndarray, order: np.ndarray) -> float:
    return float(dist[order[:-1], order[1:]].sum())


def test_cluster_order_puts_similar_functions_next_to_each_other(get_system):
    mol, _, _ = get_system("water_clusters/003", "6-31g", 0)
    s = mol.intor("int1e_ovlp")
    dist = ordering.cosine_distances(s)
    shuffled = np.random.default_rng(3).permutation(mol.nao)
    optimal = ordering.cluster_order(s, "optimal")
    greedy = ordering.cluster_order(s, "greedy")
    for order in (optimal, greedy):
        assert sorted(order.tolist()) == list(range(mol.nao))
    for order in (optimal, greedy):
        assert adjacent_cost(dist, order) < 0.5 * adjacent_cost(dist, shuffled)


def test_cluster_order_follows_a_chain():
    # overlap of Gaussians along a line: the best order walks the line
    x = np.random.default_rng(5).permutation(np.arange(40.0))
    s = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2)
    for leaf_order in ("optimal", "greedy"):
        walk = x[ordering.cluster_order(s, leaf_order)]
        steps = np.abs(np.diff(walk))
        assert steps.max() == 1.0, leaf_order


def test_cosine_distances_match_eq21():
    s = np.random.default_rng(2).random((6, 6))
    dist = ordering.cosine_distances(s)
    i, j = 1, 4
    expect = 1 - s[i] @ s[j] / np.linalg.norm(s[i]) / np.linalg.norm(s[j])
    assert dist[i, j] == pytest.approx(expect, abs=1e-14)
    assert np.all(np.diag(dist) == 0)
    np.testing.assert_array_equal(dist, dist.T)


def test_jaccard_distances_match_the_definition():
    kept = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    dist = ordering.jaccard_distances(kept)
    assert dist[0, 1] == pytest.approx(1 - 1 / 3, abs=1e-15)  # one shared of three
    assert dist[0, 2] == 1.0  # nothing shared with an empty row
    assert dist[2, 3] == 0.0  # two empty rows
    assert np.all(np.diag(dist) == 0)
    np.testing.assert_array_equal(dist, dist.T)


def test_support_order_keeps_functions_of_one_support_together():
    # three supports over 60 sampled blocks, 12 functions each, shuffled
    rng = np.random.default_rng(4)
    supports = np.zeros((3, 60), dtype=bool)
    supports[0, :20], supports[1, 15:45], supports[2, 40:] = True, True, True
    group = rng.permutation(np.repeat(np.arange(3), 12))
    kept = supports[group].copy()
    kept[rng.random(kept.shape) < 0.02] ^= True  # a little noise
    for leaf_order in ("optimal", "greedy"):
        walk = group[ordering.support_order(kept, leaf_order)]
        assert np.count_nonzero(np.diff(walk)) == 2, leaf_order  # three runs


def test_sampled_support_matches_ao_values_on_each_block(get_system):
    from pyscf.dft import numint

    mol, grids, _ = get_system("water_clusters/003", "def2-svp", 1)
    coords = grids.coords[ordering.grid_order(grids.coords, grids.atm_idx, 128.0)]
    d, t = 16, 1e-8
    kept = ordering.sampled_support(mol, coords, d, t, samples=40)
    nblk = -(-len(coords) // d)
    picks = np.unique(np.linspace(0, nblk - 1, 40).round().astype(int))
    assert kept.shape == (mol.nao, len(picks))
    for j in (0, 17, len(picks) - 1):
        pts = coords[picks[j] * d : (picks[j] + 1) * d]
        expect = np.abs(numint.eval_ao(mol, pts, deriv=1)).max(axis=(0, 1)) >= t
        np.testing.assert_array_equal(kept[:, j], expect)
    # diffuse and tight functions differ in reach: not every function is kept everywhere
    assert 0 < kept.mean() < 1


def test_support_order_keeps_fewer_blocks_than_overlap_clusters(get_system):
    from kerneldi import cpu
    from kerneldi.layout import make_layout
    from kerneldi.settings import Settings

    mol, grids, _ = get_system("water_clusters/004", "def2-svp", 0)
    kept = {}
    for order in ("support", "cluster"):
        settings = Settings(block_size=16, basis_order=order)
        lay = make_layout(mol, grids.coords, grids.weights, grids.atm_idx, settings)
        assert sorted(lay.basis_perm.tolist()) == list(range(mol.nao))
        kept[order] = cpu.CPUBlockEngine(mol, lay, settings, 1).pattern.retained_fraction()
    assert kept["support"] < 0.9 * kept["cluster"], kept


def test_support_order_needs_the_grid(get_system):
    mol, _, _ = get_system("water_clusters/002", "sto-3g", 1)
    with pytest.raises(ValueError, match="grid"):
        ordering.basis_order(mol, "support")


def test_basis_order_experiment_compares_the_orders_against_pyscf():
    from kerneldi.settings import Settings
    from qcbench.xc.experiments import basis_orders

    df = basis_orders(
        "water_clusters/003", "def2-svp", 0, "pbe", ["support", "cluster"], Settings(block_size=16)
    )
    assert df["basis_order"].tolist() == ["support", "cluster"]
    assert (df["d_exc_vs_pyscf"] <= 1e-9).all() and (df["max_d_vxc_vs_pyscf"] <= 1e-8).all()
    kept = df.set_index("basis_order")["retained_fraction"]
    assert kept["support"] < kept["cluster"] <= 1.0


def test_morton_codes_across_chunks_and_unsorted_atoms():
    """More points than one pass of ``morton_codes`` takes (the lattice's origin is the whole
    grid's), and atoms not listed in runs: the order is the two-key sort's."""
    rng = np.random.default_rng(3)
    n = 70_000
    coords = rng.normal(0.0, 3.0, size=(n, 3))
    codes = ordering.morton_codes(coords, 128.0)
    q = ordering.lattice(coords, 128.0).astype(np.int64)
    picked = rng.choice(n, 400, replace=False)
    picked[:2] = [0, n - 1]  # the first and last chunks
    assert [int(c) for c in codes[picked]] == list(morton_reference(q[picked]))
    atoms = rng.integers(0, 9, size=n)
    np.testing.assert_array_equal(
        ordering.grid_order(coords, atoms, 128.0), np.lexsort((codes, atoms))
    )
    grouped = np.sort(atoms)
    np.testing.assert_array_equal(
        ordering.grid_order(coords, grouped, 128.0), np.lexsort((codes, grouped))
    )


def test_the_devices_two_sorts_give_the_hosts_grid_order():
    """``lattice_codes`` and ``order_by_atom_then_code`` (what the GPU runs with CuPy for
    ``Settings.grid_order_on_device``), here with NumPy: the codes of ``morton_codes`` and the
    permutation of ``grid_order`` for atoms in runs, atoms in no order, repeated codes, and no
    atoms."""
    rng = np.random.default_rng(5)
    n = 70_000
    coords = rng.normal(0.0, 3.0, size=(n, 3))
    coords[-500:] = coords[:500]  # equal codes: the input order decides
    codes = ordering.lattice_codes(np, coords, 128.0)
    np.testing.assert_array_equal(codes, ordering.morton_codes(coords, 128.0))
    assert ordering.lattice_codes(np, np.zeros((0, 3))).shape == (0,)
    scattered = rng.integers(0, 9, size=n)
    for atoms in (scattered, np.sort(scattered), None):
        np.testing.assert_array_equal(
            ordering.order_by_atom_then_code(np, codes, atoms),
            ordering.grid_order(coords, atoms, 128.0),
        )
