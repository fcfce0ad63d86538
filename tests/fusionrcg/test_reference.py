"""The reference evaluator against PySCF (libcint), element by element.

Tolerance (see README, "Accuracy"): |mine - pyscf| <= max(1e-12, 1e-10 |pyscf|). Where libcint's
own rounding exceeds that (deep ANO general contractions), the worst element is evaluated in
40-digit arithmetic and the engine must be within tolerance of it and closer than libcint.
"""

import numpy as np
import pytest

import fusionrcg
from fusionrcg import QuartetClass, canonical_classes
from fusionrcg.orchestration.plan import plan_class
from fusionrcg.reference.exact import exact_eri
from fusionrcg.shells import shell_quartet
from qcbench.eri.verify import Tolerance, adjudicate, reference_eri, verify_class, verify_molecule

TOL = Tolerance(abs=1e-12, rel=1e-10, rel_floor=1e-8)

# (molecule, basis): ANO-RCC gives water multi-primitive, generally contracted s..g shells;
# cc-pVQZ gives Vitamin C s..g shells on carbon and oxygen.
SETS = [("water_clusters/002", "ano"), ("organic/020_Vitamin_C", "cc-pvqz")]


def _assert_verified(mol, rows):
    for row in rows:
        if row.passed:
            continue
        verdict = adjudicate(mol, row.worst_quartet, row.worst_element, tol=TOL)
        assert verdict.engine_right, f"{row.cls}: {row} / {verdict}"


@pytest.mark.parametrize("cart", [False, True], ids=["spherical", "cartesian"])
@pytest.mark.parametrize("name, basis", SETS)
def test_every_class_up_to_total_8(get_molecule, name, basis, cart):
    mol = get_molecule(name, basis, cart)
    rows = verify_molecule(mol, lmax=4, per_class=2, seed=3, max_total=8, tol=TOL)
    expected = {str(q) for q in canonical_classes() if q.total <= 8}
    assert {r.cls for r in rows} == expected
    assert any(r.max_primitives > 1 for r in rows)
    _assert_verified(mol, rows)


@pytest.mark.parametrize("ls", [(3, 3, 2, 1), (4, 2, 3, 1), (4, 4, 2, 2), (4, 4, 4, 4)], ids=str)
def test_sample_of_classes_above_total_8(get_molecule, ls):
    mol = get_molecule("water_clusters/002", "ano")
    cls = QuartetClass(*ls)
    rng = np.random.default_rng(11)
    from qcbench.eri.verify import sample_quartets

    rows = [verify_class(mol, cls, sample_quartets(mol, cls, 2, rng), tol=TOL)]
    assert rows[0].max_primitives > 1
    _assert_verified(mol, rows)


def test_non_canonical_orders_and_variants(get_molecule):
    mol = get_molecule("water_clusters/002", "cc-pvtz")
    by_l = {}
    for s in range(mol.nbas):
        by_l.setdefault(mol.bas_angular(s), []).append(s)
    quartets = [
        (by_l[0][0], by_l[2][0], by_l[1][1], by_l[3][0]),  # (s d|p f) -> canonical (f p|d s)
        (by_l[1][0], by_l[1][1], by_l[2][1], by_l[0][2]),
        (by_l[0][1], by_l[0][0], by_l[0][3], by_l[1][0]),
    ]
    for variant in fusionrcg.VARIANTS:
        for q, value in zip(quartets, fusionrcg.eri_quartets(mol, quartets, variant=variant)):
            ref = reference_eri(mol, q)
            assert value.shape == ref.shape
            assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0, (variant, q)


def test_equal_l_pairs_put_the_tighter_shell_first():
    from fusionrcg.engine import oriented_permutation

    # (s d|f f) -> canonical (f f|d s): the f pair ordered by its largest exponents
    assert oriented_permutation([0, 2, 3, 3], [1.0, 1.0, 0.5, 2.0]) == (3, 2, 1, 0)
    assert oriented_permutation([0, 2, 3, 3], [1.0, 1.0, 2.0, 0.5]) == (2, 3, 1, 0)
    assert oriented_permutation([1, 1, 1, 1], [1.0, 2.0, 3.0, 4.0]) == (1, 0, 3, 2)
    # a pair of unequal l keeps the higher l first, whatever its exponents
    assert oriented_permutation([1, 2, 0, 0], [9.0, 1.0, 1.0, 1.0])[:2] == (1, 0)


def test_engine_matches_exact_evaluation(get_molecule):
    """Independent of libcint: a 40-digit evaluation of the same graph."""
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    quartet = (4, 3, 7, 2)  # (d p|p p) over three centres
    shells = shell_quartet(mol, quartet)
    cls = QuartetClass(*(s.l for s in shells))
    assert cls.is_canonical()
    exact = exact_eri(plan_class(cls), shells)
    mine = fusionrcg.shell_quartet_eri(mol, quartet)
    assert np.abs(mine - exact).max() <= 1e-14 * max(1.0, np.abs(exact).max())


def test_far_from_origin_one_centre_quartet_is_exactly_zero_by_symmetry(get_molecule):
    """(p s|s s) on one atom 100 Angstrom from the origin vanishes; absolute-coordinate
    arithmetic would leave rounding noise of 1e-9 here."""
    mol = get_molecule("water_clusters/002", "ano")
    assert np.abs(mol.atom_coords()).max() > 150  # bohr
    value = fusionrcg.shell_quartet_eri(mol, (1, 0, 0, 0))
    assert np.abs(value).max() == 0.0


def test_bad_input_gets_clear_errors(get_molecule):
    from pyscf import gto

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    with pytest.raises(fusionrcg.ShellError, match="out of range"):
        fusionrcg.shell_quartet_eri(mol, (0, 0, 0, mol.nbas))
    with pytest.raises(fusionrcg.ShellError, match="four shell indices"):
        fusionrcg.shell_quartet_eri(mol, (0, 0, 0))
    with pytest.raises(fusionrcg.ShellError, match="integer"):
        fusionrcg.shell_quartet_eri(mol, (0, 0, 0, "1"))
    with pytest.raises(fusionrcg.VariantError, match="known variants"):
        fusionrcg.shell_quartet_eri(mol, (0, 0, 0, 0), variant="fast")
    with pytest.raises(fusionrcg.BackendError, match="available"):
        fusionrcg.shell_quartet_eri(mol, (0, 0, 0, 0), backend="tpu")
    with pytest.raises(fusionrcg.ShellError, match="build"):
        fusionrcg.shell_quartet_eri(gto.Mole(), (0, 0, 0, 0))
    h_mol = get_molecule("water_clusters/002", "cc-pv5z")
    h_shell = next(s for s in range(h_mol.nbas) if h_mol.bas_angular(s) == 5)
    with pytest.raises(fusionrcg.ClassError, match="l <= 4"):
        fusionrcg.shell_quartet_eri(h_mol, (h_shell, 0, 0, 0))


@pytest.mark.parametrize("centre", [0, 1, 2, 3])
def test_derivative_classes_verify_and_adjudicate(get_molecule, centre):
    """``verify_class`` of a first-derivative class compares against int2e_ip1 / int2e_ip2
    (``reference_eri`` with a centre); its adjudication evaluates the element of the gradient
    in 40-digit arithmetic: both codes are within the derivative tolerance of it."""
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    cls = QuartetClass(1, 0, 1, 0, deriv=centre)
    from qcbench.eri.verify import sample_quartets

    deriv_tol = Tolerance(abs=1e-11, rel=1e-9, rel_floor=1e-8)
    quartets = sample_quartets(mol, cls, 2, np.random.default_rng(5))
    row = verify_class(mol, cls, quartets, tol=deriv_tol)
    assert row.passed and row.max_abs_value > 1e-3 and len(row.worst_element) == 5
    verdict = adjudicate(mol, row.worst_quartet, row.worst_element, tol=deriv_tol, centre=centre)
    assert abs(verdict.engine_error) <= 1e-11 and abs(verdict.pyscf_error) <= 1e-11
