"""The generated C++ kernels (backend='cpu') against PySCF, and the J/K epilogues.

Same tolerance and adjudication as the reference evaluator (see test_reference.py). The kernels
are compiled on first use into a per-session directory.
"""

import shutil

import numpy as np
import pytest
from pyscf import scf

import fusionrcg
from fusionrcg import QuartetClass, canonical_classes
from fusionrcg.jk import get_jk, unique_segment_quartets
from fusionrcg.runtime.basis import segment_basis
from fusionrcg.runtime.pairs import primitive_pairs
from qcbench.eri.verify import (
    Tolerance,
    adjudicate,
    reference_eri,
    sample_quartets,
    verify_molecule,
)

TOL = Tolerance(abs=1e-12, rel=1e-10, rel_floor=1e-8)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")


@pytest.fixture(scope="module", autouse=True)
def kernel_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FUSIONRCG_KERNEL_DIR", str(tmp_path_factory.mktemp("kernels")))
    yield
    mp.undo()


def _check_classes(mol, classes) -> None:
    rows = verify_molecule(mol, lmax=4, per_class=2, seed=3, backend="cpu", max_total=8,
                           tol=TOL, classes=classes)  # fmt: skip
    assert {r.cls for r in rows} == {str(q) for q in classes}
    for row in rows:
        if not row.passed:
            verdict = adjudicate(mol, row.worst_quartet, row.worst_element, tol=TOL, backend="cpu")
            assert verdict.engine_right, f"{row} / {verdict}"


def family_representatives(max_total: int = 8) -> list[QuartetClass]:
    """The first canonical class of every family up to ``max_total``: a family is a total
    angular momentum with a highest shell l, so that every total, every l from s to g at every
    total where it occurs, Tier 1 without and with shared-memory slots and Tier 1 with spills
    above total 6 are each run."""
    first: dict[tuple[int, int], QuartetClass] = {}
    for cls in canonical_classes():
        if cls.total <= max_total:
            first.setdefault((cls.total, max(cls.ls)), cls)
    return list(first.values())


def test_a_class_of_every_family_up_to_total_8(get_molecule):
    """Spherical output on every family, Cartesian on one class of every total; every class
    up to total 8 in both runs in the slow sweep below and in the pipeline's verification."""
    _check_classes(get_molecule("water_clusters/002", "ano"), family_representatives())
    per_total = list({c.total: c for c in reversed(family_representatives())}.values())
    _check_classes(get_molecule("water_clusters/002", "ano", True), per_total)


@pytest.mark.slow
@pytest.mark.parametrize("cart", [False, True], ids=["spherical", "cartesian"])
def test_every_class_up_to_total_8(get_molecule, cart):
    classes = [q for q in canonical_classes() if q.total <= 8]
    _check_classes(get_molecule("water_clusters/002", "ano", cart), classes)


def test_variants_agree_on_a_tier2_class(get_molecule):
    mol = get_molecule("organic/020_Vitamin_C", "cc-pvtz")
    by_l = {}
    for s in range(mol.nbas):
        by_l.setdefault(mol.bas_angular(s), []).append(s)
    quartet = (by_l[3][0], by_l[1][2], by_l[2][1], by_l[0][4])
    ref = reference_eri(mol, quartet)
    for variant in fusionrcg.VARIANTS:
        value = fusionrcg.shell_quartet_eri(mol, quartet, backend="cpu", variant=variant)
        assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0, variant


def test_interpreted_phase2_matches_compiled(get_molecule):
    """Long Phase 2 programs are interpreted, short ones compiled: both agree with PySCF."""
    from fusionrcg.library.store import get_kernel

    mol = get_molecule("organic/020_Vitamin_C", "cc-pvtz")
    d_shells = [s for s in range(mol.nbas) if mol.bas_angular(s) == 2]
    quartet = (d_shells[0], d_shells[1], d_shells[2], d_shells[0])  # (2,2|2,2)
    ref = reference_eri(mol, quartet)
    compiled = fusionrcg.shell_quartet_eri(mol, quartet, backend="cpu", variant="tier2-only")
    interpreting = fusionrcg.PRESETS["tier2-only"].replace(phase2_compiled_max=0)
    kernel_2222 = get_kernel(QuartetClass(2, 2, 2, 2), interpreting, target="cpp")
    assert "p2_len; ++i" in kernel_2222.binary.with_suffix(".cpp").read_text()
    interpreted = fusionrcg.shell_quartet_eri(mol, quartet, backend="cpu", variant=interpreting)
    for value in (compiled, interpreted):
        assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0
    assert np.abs(compiled - interpreted).max() <= 1e-13


def test_unique_quartets_cover_all_with_weights():
    basis = segment_basis(fusionrcg_mol())
    quartets, weight = unique_segment_quartets(basis)
    n = basis.l.size
    npair = n * (n + 1) // 2
    assert len(quartets) == npair * (npair + 1) // 2
    # the weighted images of the unique quartets count every ordered quartet once
    assert np.isclose((8 * weight).sum(), n**4)


def test_launch_order_groups_equal_patterns(get_molecule):
    """The GPU launch order: a stable permutation of the items after which every (bra rows, ket
    rows) pattern is one contiguous run (so warps are uniform), in the caller's order within
    each run, the runs by descending primitive-quartet count."""
    basis = segment_basis(get_molecule("water_clusters/002", "cc-pvdz"))
    quartets, _ = unique_segment_quartets(basis)
    pairs = primitive_pairs(basis, quartets)
    order = pairs.launch_order()
    assert np.array_equal(np.sort(order), np.arange(len(quartets)))
    rows = pairs.prim[pairs.index[order], 1]
    changes = np.flatnonzero(np.any(rows[1:] != rows[:-1], axis=1))
    assert len(changes) + 1 == len({tuple(r) for r in rows}) > 1
    starts = np.concatenate([[0], changes + 1, [len(order)]])
    for lo, hi in zip(starts[:-1], starts[1:]):
        assert np.all(np.diff(order[lo:hi]) > 0)
    assert np.all(np.diff(rows.prod(axis=1)) <= 0)  # most primitive quartets first


def test_split_quartets_cover_their_primitive_quartets(get_molecule):
    """With max_work each quartet's items partition its bra x ket primitive pairs, and no item
    exceeds max_work primitive quartets."""
    basis = segment_basis(get_molecule("water_clusters/002", "cc-pvdz"))
    quartets, _ = unique_segment_quartets(basis)
    whole = primitive_pairs(basis, quartets)
    split = primitive_pairs(basis, quartets, max_work=5)
    assert split.split and not whole.split
    rows = split.prim[split.index]  # (items, 2 sides, first/count)
    assert rows[:, :, 1].prod(axis=1).max() <= 5
    for q in np.unique(split.quartet)[::41]:
        covered = set()
        for (b0, nb), (k0, nk) in rows[split.quartet == q]:
            cells = {(i, j) for i in range(b0, b0 + nb) for j in range(k0, k0 + nk)}
            assert not covered & cells
            covered |= cells
        (b0, nb), (k0, nk) = whole.prim[whole.index[q]]
        assert covered == {(i, j) for i in range(b0, b0 + nb) for j in range(k0, k0 + nk)}


def test_item_sums_add_each_split_quartets_items_into_its_first(get_molecule):
    """What a store launch of split quartets adds where (``PrimitivePairs.item_sums``): every
    quartet's first launched item collects the others, so per-item values sum per quartet."""
    basis = segment_basis(get_molecule("water_clusters/002", "cc-pvdz"))
    quartets, _ = unique_segment_quartets(basis)
    split = primitive_pairs(basis, quartets, max_work=5)
    order = split.launch_order()
    items = split.quartet[order]
    first, sources, targets = split.item_sums(order)
    assert np.array_equal(items[first], np.arange(len(quartets)))
    assert len(sources) == len(items) - len(quartets) > 0
    assert np.array_equal(np.sort(np.concatenate([first, sources])), np.arange(len(items)))
    assert np.all(first[items] <= np.arange(len(items)))  # the first of each quartet's items
    values = np.random.default_rng(4).standard_normal(len(items))
    summed = values.copy()
    np.add.at(summed, targets, values[sources])
    expected = np.zeros(len(quartets))
    np.add.at(expected, items, values)
    np.testing.assert_allclose(summed[first], expected, rtol=1e-13, atol=1e-13)
    whole = primitive_pairs(basis, quartets)
    first, sources, _ = whole.item_sums(whole.launch_order())
    assert len(sources) == 0 and np.array_equal(np.sort(first), np.arange(len(quartets)))


def test_launch_batches_are_sized_by_items(get_molecule):
    """GPU launches size their buffers by items: ``items_per_quartet`` counts what
    ``primitive_pairs`` makes, and no batch of several quartets exceeds the budget."""
    from fusionrcg.runtime.launch import _item_batches
    from fusionrcg.runtime.pairs import items_per_quartet

    basis = segment_basis(get_molecule("water_clusters/002", "cc-pvdz"))
    quartets, _ = unique_segment_quartets(basis)
    for max_work in (None, 5, 64):
        counts = items_per_quartet(basis, quartets, max_work)
        made = np.bincount(primitive_pairs(basis, quartets, max_work).quartet)
        assert np.array_equal(counts, made)
    counts = items_per_quartet(basis, quartets, 5)
    budget = 8 * 7 * 40  # 40 items of 7 doubles
    batches = list(_item_batches(counts, 7, budget))
    assert batches[0][0] == 0 and batches[-1][1] == len(quartets)
    assert all(a[1] == b[0] for a, b in zip(batches, batches[1:]))
    assert all(hi - lo == 1 or counts[lo:hi].sum() * 7 * 8 <= budget for lo, hi in batches)
    assert list(_item_batches(counts[:0], 7)) == []


def test_split_quartets_match_pyscf(get_molecule):
    """Integrals and J/K from split quartets (items summed) agree with PySCF."""
    from fusionrcg.runtime.launch import CpuExecutor
    from fusionrcg.variants import get_variant

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    basis = segment_basis(mol)
    cls = QuartetClass(2, 0, 1, 0)
    ex = CpuExecutor(max_work=3)
    kernel = ex.kernel(cls, get_variant("full"), True)
    shells = sample_quartets(mol, cls, 6, np.random.default_rng(2))
    segs = np.array([basis.segment_quartets(q)[0] for q in shells], dtype=np.int32)
    assert primitive_pairs(basis, segs, 3).split
    first_columns = tuple(slice(0, n) for n in kernel.output_shape)  # segment_quartets(q)[0]
    for q, value in zip(shells, ex.integrals(kernel, segs, basis)):
        ref = reference_eri(mol, q)[first_columns]
        assert TOL.normalized(np.abs(value.reshape(ref.shape) - ref), ref).max() <= 1.0
    quartets, scales = unique_segment_quartets(basis)
    dm = np.random.default_rng(0).standard_normal((basis.nao,) * 2)
    dm = dm + dm.T
    keep = np.all(basis.l[quartets] == np.array(cls.ls), axis=1)
    jk_split = ex.jk(cls, get_variant("full"), True, quartets[keep], scales[keep], basis, dm)
    jk_whole = CpuExecutor().jk(
        cls, get_variant("full"), True, quartets[keep], scales[keep], basis, dm
    )
    for a, b in zip(jk_split, jk_whole):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * np.abs(b).max())


def test_primitive_pairs_are_the_gaussian_products(get_molecule):
    """The pair data the kernels loop over: one row per primitive pair of each distinct bra or
    ket segment pair, first segment's primitive outer, against the Gaussian product theorem."""
    basis = segment_basis(get_molecule("water_clusters/002", "cc-pvdz"))
    quartets, _ = unique_segment_quartets(basis)
    quartets = quartets[::97]
    pairs = primitive_pairs(basis, quartets)
    assert pairs.index.shape == (len(quartets), 2)
    for (a, b, c, d), (bra, ket) in zip(quartets, pairs.index):
        for (i, j), p in (((a, b), bra), ((c, d), ket)):
            first, count = pairs.prim[p]
            (fi, ni), (fj, nj) = basis.prim[i], basis.prim[j]
            assert count == ni * nj
            e1 = np.repeat(basis.exponents[fi : fi + ni], nj)
            e2 = np.tile(basis.exponents[fj : fj + nj], ni)
            c12 = np.outer(basis.coefficients[fi : fi + ni], basis.coefficients[fj : fj + nj])
            r = basis.xyz[j] - basis.xyz[i]
            zeta = e1 + e2
            kz = c12.ravel() * np.exp(-e1 * e2 / zeta * (r @ r)) / zeta
            expected = np.column_stack([zeta, 1 / zeta, kz, np.outer(e2 / zeta, r)])
            np.testing.assert_allclose(pairs.data[first : first + count], expected, rtol=1e-14)


def fusionrcg_mol():
    from qcbench.molecules import load

    return load("water_clusters/002", "sto-3g")


@pytest.mark.parametrize("basis", ["cc-pvdz", "ano"])
def test_jk_matches_pyscf(get_molecule, basis):
    """Tier 1 classes use the atomic J/K epilogue, Tier 2 ones Kernel 2."""
    mol = get_molecule("water_clusters/002", basis)
    if basis == "ano":  # keep the test short: the s, p, d shells only
        from pyscf import gto

        mol = gto.M(atom=mol.atom, unit="Angstrom", basis={"O": "ano@3s2p1d", "H": "ano@2s1p"})
    mf = scf.RHF(mol)
    mf.max_cycle = 2
    mf.kernel()
    dm = mf.make_rdm1()
    vj, vk = get_jk(mol, dm, backend="cpu")
    rj, rk = scf.hf.get_jk(mol, dm)
    assert np.abs(vj - rj).max() < 1e-11
    assert np.abs(vk - rk).max() < 1e-11


def test_jk_rejects_bad_density(get_molecule):
    mol = get_molecule("water_clusters/002", "sto-3g")
    with pytest.raises(ValueError, match="shape"):
        get_jk(mol, np.eye(3))
    bad = np.arange(49.0).reshape(7, 7)
    with pytest.raises(ValueError, match="symmetric"):
        get_jk(mol, bad)
    with pytest.raises(ValueError, match="generated kernels"):
        get_jk(mol, np.eye(7), backend="reference")


def test_high_class_sample(get_molecule):
    mol = get_molecule("water_clusters/002", "cc-pvqz")
    g = [s for s in range(mol.nbas) if mol.bas_angular(s) == 4][0]
    f = [s for s in range(mol.nbas) if mol.bas_angular(s) == 3][0]
    quartet = (g, f, g, 0)
    value = fusionrcg.shell_quartet_eri(mol, quartet, backend="cpu")
    ref = reference_eri(mol, quartet)
    assert QuartetClass(4, 3, 4, 0).total == 11
    assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0


def test_deeply_cancelling_element_is_oriented(get_molecule):
    """(3,3|0,0) in ANO-RCC, shells (12, 3, 0, 0): element (6, 20, 7, 6), -6.1e-4, is a sum of
    ket-pair contributions 11 in magnitude. Built on shell 12's centre the HRR left it 1.1e-12
    off, past the tolerance; the tighter shell 3 goes first and keeps it inside."""
    from fusionrcg.engine import oriented_permutation

    mol = get_molecule("water_clusters/002", "ano", False)
    quartet = (12, 3, 0, 0)
    tightest = [float(mol.bas_exp(s).max()) for s in quartet]
    assert oriented_permutation([3, 3, 0, 0], tightest)[:2] == (1, 0)
    ref = reference_eri(mol, quartet)
    for backend in ("reference", "cpu"):
        value = fusionrcg.shell_quartet_eri(mol, quartet, backend=backend)
        assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0, backend
