"""First-derivative classes against PySCF's int2e_ip1 / int2e_ip2, element by element.

Tolerance: |mine - pyscf| <= 1e-11 everywhere, and |mine - pyscf| <= 1e-9 |pyscf| where
|pyscf| > 1e-8. Where libcint's own rounding exceeds the relative bound (elements cancelling
to a small fraction of their class's largest), those elements are evaluated in 40-digit
arithmetic and the engine must be within the bounds of that and closer to it than libcint.
The C++ kernels compile on first use into a per-module directory; the default
run keeps to a few classes, the slow sweep takes every class up to total 8.
"""

import shutil

import numpy as np
import pytest

import fusionrcg
from fusionrcg import QuartetClass, canonical_classes
from fusionrcg.graph import AxisPolicy, NodeKind, build_class_graph
from fusionrcg.lowering.kernel import lower
from fusionrcg.reference.exact import exact_eri
from fusionrcg.shells import shell_quartet
from qcbench.eri.verify import reference_eri

ABS_TOL = 1e-11
REL_TOL = 1e-9
REL_FLOOR = 1e-8

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")


@pytest.fixture(scope="module", autouse=True)
def kernel_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FUSIONRCG_KERNEL_DIR", str(tmp_path_factory.mktemp("kernels")))
    yield
    mp.undo()


def pyscf_deriv(mol, q: tuple[int, int, int, int], centre: int) -> np.ndarray:
    """PySCF's gradient on the shell at position ``centre``, shaped (3, ni, nj, nk, nl)
    (``qcbench.eri.verify.reference_eri``: int2e_ip1 / int2e_ip2, centres 1 and 3 through the
    same integrals with the pair swapped)."""
    return reference_eri(mol, q, centre)


def _beyond(got: np.ndarray, ref: np.ndarray, rel: float = REL_TOL) -> np.ndarray:
    """Where ``got`` misses ``ref`` by more than the relative bound (|ref| > REL_FLOOR)."""
    big = np.abs(ref) > REL_FLOOR
    return big & (np.abs(got - ref) > rel * np.abs(ref))


def assert_close(
    got: np.ndarray, ref: np.ndarray, what: str, exact=None, rel_tol: float = REL_TOL
) -> None:
    """``got`` against PySCF's ``ref``; ``exact()`` gives the 40-digit values that decide
    the elements beyond the relative bound."""
    assert got.shape == ref.shape, what
    err = np.abs(got - ref)
    assert err.max() <= ABS_TOL, f"{what}: max abs error {err.max():.2e}"
    assert np.abs(ref).max() > 1e-9, f"{what}: a vanishing reference tests nothing"
    off = _beyond(got, ref, rel_tol)
    if not off.any():
        return
    rel = (err[off] / np.abs(ref[off])).max()
    assert exact is not None, f"{what}: max relative error {rel:.2e}"
    x = exact()
    assert not _beyond(got, x, rel_tol)[off].any(), f"{what}: {rel:.2e} from PySCF and exact"
    assert (np.abs(got - x)[off] <= np.abs(ref - x)[off]).all(), f"{what}: libcint is closer"


def quartets_of(mol, ls, n: int, seed: int = 5) -> list[tuple[int, int, int, int]]:
    """Up to ``n`` quartets of shells with angular momenta ``ls`` (in this order), spread over
    atoms: the first puts the four shells on the most different atoms of 200 draws."""
    by_l: dict[int, list[int]] = {}
    for s in range(mol.nbas):
        by_l.setdefault(int(mol.bas_angular(s)), []).append(s)
    assert all(l in by_l for l in ls), f"no shells for {ls}"
    rng = np.random.default_rng(seed)
    draws = [tuple(int(rng.choice(by_l[l])) for l in ls) for _ in range(200)]
    first = max(draws, key=lambda q: len({mol.bas_atom(s) for s in q}))
    picks = [first] + [q for q in dict.fromkeys(draws) if q != first]
    return picks[:n]


def exact_deriv(mol, q: tuple[int, int, int, int], centre: int) -> np.ndarray:
    """40-digit values in ``pyscf_deriv``'s layout: the graph of the quartet's class as
    requested (not canonical), the gradient on ``centre``."""
    ls = tuple(int(mol.bas_angular(s)) for s in q)
    plan = fusionrcg.plan_class(QuartetClass(*ls, deriv=centre), spherical=not mol.cart)
    return exact_eri(plan, shell_quartet(mol, q))


def check(
    mol, ls, centre: int, backend: str, n: int = 2, variant: str = "full", rel_tol=REL_TOL
) -> None:
    quartets = quartets_of(mol, ls, n)
    values = fusionrcg.eri_deriv_quartets(mol, quartets, centre, backend, variant)
    for q, value in zip(quartets, values):
        assert_close(
            value,
            pyscf_deriv(mol, q, centre),
            f"{ls} centre {centre} {q} {backend}",
            lambda q=q: exact_deriv(mol, q, centre),
            rel_tol,
        )


# ------------------------------------------------------------------------------------------
# the graph


@pytest.mark.parametrize("deriv", [0, 1, 2, 3])
@pytest.mark.parametrize("spherical, fused", [(True, True), (True, False), (False, False)])
def test_derivative_graph_shape_and_leaves(deriv, spherical, fused):
    cls = QuartetClass(2, 1, 1, 0, deriv=deriv)
    g = build_class_graph(cls, AxisPolicy.PRIORITY, spherical, fused)
    n = (5, 3, 3, 1) if spherical else (6, 3, 3, 1)
    assert g.output_shape == (3, *n)
    assert len(g.hrr.outputs) == 3 * np.prod(n)
    assert g.hrr.count(NodeKind.DERIV) > 0
    # Phase 1 gives the raised class's [e0|f0] with the weight of the centre's exponent
    weighted = [v for v in g.vrr.outputs if g.vrr.nodes[v].terms and len(g.vrr.nodes[v].terms) == 1]
    assert {g.vrr.nodes[v].terms[0].symbol for v in weighted} == {f"two_e{'abcd'[deriv]}"}
    assert sum(w for _, _, w in g.accumulators) == len(weighted)
    plain = build_class_graph(QuartetClass(2, 1, 1, 0), AxisPolicy.PRIORITY, spherical, fused)
    assert plain.hrr.count(NodeKind.DERIV) == 0 and plain.output_shape == n


def test_boys_order_and_tags():
    cls = QuartetClass(4, 4, 4, 4, deriv=2)
    assert cls.boys_order == 17 and QuartetClass(4, 4, 4, 4).boys_order == 16
    assert cls.tag == "4444_dC" and str(cls) == "(4,4|4,4) nabla_C"
    assert cls != QuartetClass(4, 4, 4, 4) and cls.is_canonical()


def test_bad_input_is_an_input_error(get_molecule):
    with pytest.raises(fusionrcg.ClassError):
        QuartetClass(1, 0, 0, 0, deriv=4)
    with pytest.raises(fusionrcg.ClassError, match="l <= 4"):
        QuartetClass(5, 0, 0, 0, deriv=0)  # h shells: the derivative would need l = 6
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    with pytest.raises(fusionrcg.InputError, match="centre"):
        fusionrcg.eri_deriv_quartets(mol, [(0, 0, 0, 0)], centre=4)
    with pytest.raises(fusionrcg.InputError):
        fusionrcg.eri_deriv_quartets(mol, [(0, 0, 0, mol.nbas)])
    with pytest.raises(fusionrcg.OptionsError, match="store"):
        lower(fusionrcg.plan_class(QuartetClass(1, 0, 0, 0, deriv=0)), "cpp", "jk")


def test_h_shells_are_refused_with_an_input_error():
    from pyscf import gto

    mol = gto.M(atom="Ne 0 0 0", basis={"Ne": gto.basis.parse("Ne H\n 1.0 1.0")}, verbose=0)
    with pytest.raises(fusionrcg.InputError, match="l <= 4"):
        fusionrcg.eri_deriv_quartets(mol, [(0, 0, 0, 0)])


# ------------------------------------------------------------------------------------------
# the reference evaluator

REFERENCE_CLASSES = [(1, 1, 1, 1), (2, 1, 0, 2), (2, 2, 2, 2), (3, 2, 1, 1), (0, 1, 3, 2)]


@pytest.mark.parametrize("cart", [False, True], ids=["spherical", "cartesian"])
@pytest.mark.parametrize("ls", REFERENCE_CLASSES, ids=str)
def test_reference_matches_int2e_ip1_and_ip2(get_molecule, ls, cart):
    mol = get_molecule("water_clusters/002", "cc-pvtz", cart)
    for centre in (0, 2):
        check(mol, ls, centre, "reference")


def test_every_centre_and_translational_invariance(get_molecule):
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    quartets = quartets_of(mol, (2, 1, 1, 0), 3)
    by_centre = [fusionrcg.eri_deriv_quartets(mol, quartets, c) for c in range(4)]
    for k, q in enumerate(quartets):
        for c in range(4):
            assert_close(by_centre[c][k], pyscf_deriv(mol, q, c), f"{q} centre {c}")
        total = sum(by_centre[c][k] for c in range(4))
        assert np.abs(total).max() <= ABS_TOL


@pytest.mark.parametrize("variant", list(fusionrcg.VARIANTS))
def test_variants_apply_to_derivative_classes(get_molecule, variant):
    """Every ablation variant orchestrates derivative classes; the reference evaluator runs
    exactly its plan (axis policy, order, spherical fusion or not)."""
    mol = get_molecule("water_clusters/002", "cc-pvtz")
    check(mol, (2, 2, 1, 1), 0, "reference", n=1, variant=variant)


# With g shells the HRR runs on l = 5 of the raised class, and elements five orders below
# their block's largest lose more digits to its cancellation than libcint's: they stay far
# within the absolute bound, and the slow g test holds them to 1e-8 relative instead of 1e-9.
G_REL_TOL = 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("ls", [(4, 4, 4, 4), (4, 3, 4, 2), (4, 4, 2, 2)], ids=str)
def test_reference_g_classes(ls):
    from pyscf import gto

    # two oxygens, so that g shells sit on two centres
    mol = gto.M(atom="O 0 0 0; O 0 0.4 2.4; H 0.9 0 -0.4", basis="cc-pvqz", spin=1, verbose=0)
    check(mol, ls, 0, "reference", n=1, rel_tol=G_REL_TOL)


# ------------------------------------------------------------------------------------------
# the generated C++ kernels

CPU_CLASSES = [
    ((1, 1, 1, 1), False),
    ((2, 1, 0, 2), False),
    ((3, 2, 1, 1), False),
    ((2, 2, 2, 2), False),
    ((1, 1, 1, 1), True),
    ((2, 1, 0, 2), True),
]


@needs_cxx
@pytest.mark.parametrize("ls, cart", CPU_CLASSES, ids=str)
def test_cpu_matches_int2e_ip1(get_molecule, ls, cart):
    mol = get_molecule("water_clusters/002", "cc-pvtz", cart)
    check(mol, ls, 0, "cpu", n=1)


@needs_cxx
@pytest.mark.parametrize("variant", ["tier2-only", "no-spherical"])
def test_cpu_variants_on_a_derivative_class(get_molecule, variant):
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    check(mol, (1, 0, 1, 1), 2, "cpu", n=2, variant=variant)


@needs_cxx
@pytest.mark.slow
@pytest.mark.parametrize("cart", [False, True], ids=["spherical", "cartesian"])
def test_cpu_every_derivative_class_up_to_total_8(get_molecule, cart):
    """Every canonical class up to total 8 with the gradient on each of its four centres."""
    mol = get_molecule("water_clusters/002", "cc-pvqz", cart)
    for cls in canonical_classes():
        if cls.total <= 8:
            for centre in range(4):
                check(mol, cls.ls, centre, "cpu", n=1)


# ------------------------------------------------------------------------------------------
# the CUDA kernels (run where a GPU is)


@pytest.mark.gpu
@pytest.mark.parametrize("ls", [(1, 1, 1, 1), (2, 1, 0, 2), (2, 2, 2, 2), (3, 2, 1, 1)], ids=str)
@pytest.mark.parametrize("centre", [0, 2])
def test_gpu_matches_int2e_ip1_and_ip2(get_molecule, ls, centre):
    mol = get_molecule("water_clusters/002", "cc-pvtz")
    check(mol, ls, centre, "gpu", n=3)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_derivative_kernel_builds_without_spills():
    """The library builds a derivative class's CUDA kernel as it does a plain class's (Tier 1
    up to a Boys order of 6 without spills, walking the placements until ptxas does not
    spill) and records its wider pair rows."""
    from fusionrcg.library.store import get_kernel

    cls = QuartetClass(1, 1, 1, 1, deriv=0)
    kernel = get_kernel(cls, "full", True, "store", "cuda", "sm_90")
    assert kernel.name.startswith("frcg_1111_dA_") and kernel.output_shape == (3, 3, 3, 3, 3)
    assert kernel.pair_width == 8 and kernel.pair_exponents
    assert not kernel.report.spills and kernel.report.registers > 0


@needs_cxx
def test_the_engines_route_matches_int2e_ip1(get_molecule):
    """``verify_engine_deriv``: each class through the kernels the J/K engine runs for it,
    the block form from ``block_min_total`` on (here 3), the straight-line forms below."""
    from qcbench.eri.verify import verify_engine_deriv

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    rows = verify_engine_deriv(mol, 1, "cpu", block_min_total=3)
    assert len(rows) == len(canonical_classes(1)) and all(r["passed"] for r in rows)
    for row in rows:
        cls = QuartetClass.parse(row["cls"].split()[0])  # "(l,l|l,l) nabla_A"
        assert (row["item_threads"] > 1) == (cls.total >= 3)


@needs_cxx
def test_relative_errors_above_the_tolerance_are_adjudicated(get_molecule):
    """Where a class's relative error against PySCF exceeds ``tol.rel`` (here a bound far
    below double rounding, so that some do), its largest one is settled in 40 digits: the
    engine's and PySCF's relative errors against the exact value, both at rounding level."""
    from qcbench.eri.verify import Tolerance, verify_engine_deriv

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    tol = Tolerance(abs=1e-11, rel=1e-15, rel_floor=1e-8)
    rows = verify_engine_deriv(mol, 1, "cpu", tol=tol, max_total=2)
    missed = [r for r in rows if r["max_rel_error"] > tol.rel]
    assert missed, "no class above 1e-15 relative: the check would test nothing"
    for row in rows:
        assert ("relative_exact" in row) == (row["max_rel_error"] > tol.rel)
    for row in missed:
        assert abs(row["relative_exact"]) > tol.rel_floor
        assert row["relative_engine_error"] < 1e-12 and row["relative_pyscf_error"] < 1e-12
        assert row["relative_quartet"] and len(row["relative_element"].split()) == 5


@needs_cxx
def test_cpu_every_derivative_class_up_to_total_8_in_the_block_form(get_molecule):
    """Every canonical class up to total 8, f and g shells included, through the block form
    of the C++ backend (what the J/K engine runs for the f and g classes), against PySCF's
    int2e_ip1 element by element (abs 1e-11, rel 1e-9), on the water dimer in cc-pVQZ."""
    from qcbench.eri.verify import verify_engine_deriv

    mol = get_molecule("water_clusters/002", "cc-pvqz")
    rows = verify_engine_deriv(mol, 4, "cpu", block_min_total=0, per_class=1, max_total=8)
    expected = [c for c in canonical_classes(4) if c.total <= 8]
    assert len(rows) == len(expected)
    assert all(r["passed"] and r["item_threads"] > 1 for r in rows), [
        (r["cls"], r["max_normalized_error"]) for r in rows if not r["passed"]
    ]


@pytest.mark.gpu
def test_gpu_every_derivative_class_through_the_engines_kernels(get_molecule):
    """Every canonical class up to (gg|gg) through the CUDA kernels the J/K engine runs for it
    (straight-line below total 6 and for the d classes, block form for the f and g classes
    from total 6 on) against PySCF's int2e_ip1 (abs 1e-11, rel 1e-9)."""
    from qcbench.eri.verify import verify_engine_deriv

    mol = get_molecule("water_clusters/002", "cc-pvqz")
    rows = verify_engine_deriv(mol, 4, "gpu")
    assert len(rows) == len(canonical_classes(4))
    assert all(r["passed"] or r.get("engine_right") for r in rows), [
        (r["cls"], r["max_normalized_error"]) for r in rows if not r["passed"]
    ]
