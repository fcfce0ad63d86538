"""Derivative J/K of the engine (``JK.get_jk_deriv``, ``JK.jk_energy_per_atom``) and the analytic
gradients of ``fusionrcg.apply``'d SCF objects, against PySCF.

Tolerances: the derivative matrices agree with ``pyscf.grad.rhf.get_jk`` to 1e-10 absolute at a
screening threshold of 1e-14 (sums of many derivative integrals, each within 1e-11); per-atom
energy gradients with PySCF's contraction of the same matrices to 1e-10 Eh/Bohr; whole analytic
gradients with PySCF's (its own J/K derivatives) to 1e-7 Eh/Bohr at conv_tol 1e-11, the
issue's bound for gradients against GPU4PySCF's.

The default run keeps to s and p shells (6-31G and the s and p shells of cc-pVDZ, whose
general contractions the engine keeps or expands): each canonical class needs three
derivative kernels, and those of d shells take minutes to compile for the CPU; the slow run
adds cc-pVDZ with its d shells, spherical and Cartesian.
"""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft, gto, scf
from pyscf.grad import rhf as rhf_grad

import fusionrcg
import qcscf
from fusionrcg.jk import JK, JKInputError
from fusionrcg.jk.grad import FusionGradMixin
from fusionrcg.lowering.target import Epilogue

DERIV_TOL = 1e-10
GRADIENT_TOL = 1e-7

BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]

WATER = "O 0 0 0.1; H 0 0.75 -0.45; H 0.1 -0.7 -0.5"


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request) -> str:
    return request.param


def _sp_of_cc_pvdz():
    """cc-pVDZ without its d (O) and p (H) shells: O keeps its generally contracted s shell."""
    return {el: [s for s in gto.load("cc-pvdz", el) if s[0] <= 1] for el in ("O", "H")}


@pytest.fixture(scope="module")
def water():
    return gto.M(atom=WATER, basis="6-31g", verbose=0)


@pytest.fixture(scope="module")
def water_cation():
    return gto.M(atom=WATER, basis="6-31g", charge=1, spin=1, verbose=0)


def _per_atom_reference(mol, dms, j_factor, k_factor) -> np.ndarray:
    """j dE_J/dR - k dE_K/dR per atom from PySCF's derivative matrices, as PySCF's RHF and
    UHF gradients contract them (one total density, or two spin densities)."""
    de = np.zeros((mol.natm, 3))
    rj, _ = rhf_grad.get_jk(mol, dms.sum(axis=0))
    spin_factor = 1.0 if len(dms) == 1 else 2.0
    for a, (p0, p1) in enumerate(mol.aoslice_by_atom()[:, 2:4]):
        total = dms.sum(axis=0)
        de[a] += 2 * j_factor * np.einsum("xij,ij->x", rj[:, p0:p1], total[p0:p1])
        for d in dms:
            rk = rhf_grad.get_jk(mol, d)[1]
            de[a] -= spin_factor * k_factor * np.einsum("xij,ij->x", rk[:, p0:p1], d[p0:p1])
    return de


def _check_matrices(engine: JK, mol, dm) -> None:
    vj, vk = engine.get_jk_deriv(dm)
    rj, rk = rhf_grad.get_jk(mol, dm)
    assert vj.shape == rj.shape and vk.shape == rk.shape
    assert np.abs(vj - rj).max() <= DERIV_TOL
    assert np.abs(vk - rk).max() <= DERIV_TOL


def test_converged_rhf_density(water, backend):
    dm = scf.RHF(water).run().make_rdm1()
    _check_matrices(JK(water, backend=backend, tol=1e-14), water, dm)


def test_spin_densities_and_a_general_density(water_cation, backend):
    engine = JK(water_cation, backend=backend, tol=1e-14)
    dms = scf.UHF(water_cation).run().make_rdm1()
    _check_matrices(engine, water_cation, dms)
    general = np.random.default_rng(1).standard_normal(dms.shape[1:]) / dms.shape[-1]
    _check_matrices(engine, water_cation, general)


@pytest.mark.parametrize("decontract", [False, True])
def test_general_contractions(decontract, backend):
    mol = gto.M(atom=WATER, basis=_sp_of_cc_pvdz(), verbose=0)
    dm = scf.RHF(mol).run().make_rdm1()
    _check_matrices(JK(mol, backend=backend, tol=1e-14, decontract=decontract), mol, dm)


def test_only_what_is_asked(water, backend):
    engine = JK(water, backend=backend, tol=1e-14)
    dm = scf.RHF(water).run().make_rdm1()
    vj, vk = engine.get_jk_deriv(dm, with_k=False)
    assert vk is None and np.abs(vj - rhf_grad.get_jk(water, dm)[0]).max() <= DERIV_TOL
    vj, vk = engine.get_jk_deriv(dm, with_j=False)
    assert vj is None and np.abs(vk - rhf_grad.get_jk(water, dm)[1]).max() <= DERIV_TOL
    with pytest.raises(JKInputError, match="nothing to build"):
        engine.get_jk_deriv(dm, with_j=False, with_k=False)


@pytest.mark.parametrize("factors", [(1.0, 1.0), (1.0, 0.2), (0.0, 0.7), (1.0, 0.0)])
def test_energy_per_atom(water, water_cation, factors, backend):
    for mol, mf in ((water, scf.RHF(water)), (water_cation, scf.UHF(water_cation))):
        dms = np.asarray(mf.run().make_rdm1()).reshape(-1, mol.nao, mol.nao)
        engine = JK(mol, backend=backend, tol=1e-14)
        de = engine.jk_energy_per_atom(dms if len(dms) == 2 else dms[0], *factors)
        assert de.shape == (mol.natm, 3)
        assert np.abs(de - _per_atom_reference(mol, dms, *factors)).max() <= DERIV_TOL


def test_a_profiled_energy_gradient_says_where_its_time_went(water, backend):
    """``profile``: the gradient is the same, and the profile has the screening and each
    class's gradient kernels with the work items that survived and their graph FLOPs (each
    item through the kernels of positions A, B and C, so more than one position's)."""
    engine = JK(water, backend=backend, tol=1e-14)
    dm = scf.RHF(water).run().make_rdm1()
    plain = engine.jk_energy_per_atom(dm)
    engine.profile = True
    profiled = engine.jk_energy_per_atom(dm)
    prof = engine.last_profile
    assert np.abs(profiled - plain).max() <= 1e-12
    classes = {str(kernels.cls) for kernels, _ in engine.classes}
    assert set(prof.items) == classes and all(n > 0 for n in prof.items.values())
    assert {f"gradient {name}" for name in classes} <= set(prof.seconds)
    assert "screening" in prof.seconds and "densities" in prof.seconds
    assert set(prof.flops) == classes
    for kernels, _ in engine.classes:
        name = str(kernels.cls)
        deriv = engine.deriv_kernels(kernels.cls, Epilogue.GRAD)
        per_item = min(k.flops.hrr_per_contracted + k.flops.vrr_per_primitive for k in deriv)
        assert prof.flops[name] >= len(deriv) * per_item * prof.items[name] > 0


def test_the_energy_gradient_screens_density_products(backend):
    """The energy gradient keeps a quartet when Q_ab Q_cd times a product of two density blocks
    passes (its integrals meet two density elements): fewer work items than the one-block test
    of the Fock builds at the same threshold, and the gradient within what the dropped
    quartets can hold (tol 1e-10, four waters apart: many small density blocks)."""
    from fusionrcg.jk.arrays import HostArrays
    from fusionrcg.jk.tasks import HostScreener, Screen

    mol = gto.M(atom=[[el, (x + 3.1 * i, y + 0.4 * i, z)] for i in range(4)
                      for el, (x, y, z) in (("O", (0, 0, 0.1)), ("H", (0, 0.75, -0.45)),
                                            ("H", (0.1, -0.7, -0.5)))],
                basis="6-31g", verbose=0)  # fmt: skip
    dm = scf.RHF(mol).run().make_rdm1()
    engine = JK(mol, backend=backend, tol=1e-10, profile=True)
    de = engine.jk_energy_per_atom(dm, 1.0, 0.5)
    kept = sum(engine.last_profile.items.values())
    assert np.abs(de - _per_atom_reference(mol, dm[None], 1.0, 0.5)).max() <= 1e3 * 1e-10
    host = JK(mol, backend="cpu", tol=1e-10)
    blocks = HostArrays().block_absmax(dm[None], host.basis.ao, None)
    one_block = Screen(1e-10, blocks, float(blocks.max()), True, True)
    screener = HostScreener(HostArrays())
    fock_items = sum(
        items.size
        for _, class_blocks in host.classes
        for _, items in screener.class_items(host.pairs, class_blocks, one_block)
    )
    assert kept < fock_items


@pytest.mark.parametrize("options", ["full", "tier2-only"])
def test_energy_per_atom_fused_and_stored(options, backend):
    """Tier 1 derivative classes weigh their integrals in the kernel (the gradient epilogue),
    Tier 2 ones store them for the host or device to weigh: both give the same gradient. (H3+
    in 6-31G: s shells only, so that the forced Tier 2 kernels are few to compile.)"""
    mol = gto.M(atom="H 0 0 0; H 0 0.9 0.1; H 0.8 0.4 0", basis="6-31g", charge=1, verbose=0)
    engine = JK(mol, backend=backend, tol=1e-14, options=options)
    expected = Epilogue.GRAD if options == "full" else Epilogue.STORE
    for kernels, _ in engine.classes:
        assert {k.epilogue for k in engine.deriv_kernels(kernels.cls, Epilogue.GRAD)} == {expected}
    dms = np.asarray(scf.UHF(mol).run().make_rdm1())
    de = engine.jk_energy_per_atom(dms, 0.8, 0.6)
    assert np.abs(de).max() > 1e-3  # a gradient that tests something
    assert np.abs(de - _per_atom_reference(mol, dms, 0.8, 0.6)).max() <= DERIV_TOL


def test_block_only_derivative_classes(water, water_cation, backend):
    """From ``deriv_block_min_total`` on, every position of a derivative class runs Tier 2's
    block form at any launch size (here every class: threshold 0), with the same matrices and
    energy gradients as PySCF's."""
    engine = JK(water, backend=backend, tol=1e-14, deriv_block_min_total=0, block_items=0)
    dm = scf.RHF(water).run().make_rdm1()
    _check_matrices(engine, water, dm)
    for kernels, _ in engine.classes:
        for epilogue in (Epilogue.STORE, Epilogue.GRAD):
            for kernel in engine.deriv_kernels(kernels.cls, epilogue):
                assert kernel.options.item_threads > 1 and kernel.epilogue is Epilogue.STORE
    dms = np.asarray(scf.UHF(water_cation).run().make_rdm1())
    engine = JK(water_cation, backend=backend, tol=1e-14, deriv_block_min_total=0)
    de = engine.jk_energy_per_atom(dms, 1.0, 0.4)
    assert np.abs(de - _per_atom_reference(water_cation, dms, 1.0, 0.4)).max() <= DERIV_TOL


def test_which_derivative_classes_are_block_only():
    """By default the f and g classes from total 6 on; with a total, every class from it on;
    never under a variant that forces Tier 1."""
    from fusionrcg.jk.kernels import DERIV_BLOCK_MIN_TOTAL, block_only
    from fusionrcg.options import kernel_options

    full, forced_tier1 = kernel_options("full"), kernel_options("tier1-only")
    d_class, f_below, f_at = (fusionrcg.QuartetClass(*ls) for ls in
                              ((2, 2, 2, 2), (3, 1, 1, 0), (3, 1, 1, 1)))  # fmt: skip
    assert f_below.total < DERIV_BLOCK_MIN_TOTAL <= f_at.total
    assert not block_only(d_class, full) and not block_only(f_below, full)
    assert block_only(f_at, full) and block_only(f_at, kernel_options("tier2-only"))
    assert block_only(d_class, full, 6) and not block_only(f_at, full, 7)
    assert not block_only(f_at, forced_tier1)  # the ablation's tier holds
    with pytest.raises(JKInputError, match="deriv_block_min_total"):
        JK(gto.M(atom="He 0 0 0", basis="sto-3g", verbose=0), backend="cpu",
           deriv_block_min_total=-1)  # fmt: skip


def test_gradient_epilogue_is_for_tier1_derivative_classes():
    from fusionrcg.errors import OptionsError
    from fusionrcg.lowering.kernel import lower
    from fusionrcg.options import kernel_options

    plan = kernel_options("full").plan(fusionrcg.QuartetClass(1, 0, 0, 0), True)
    with pytest.raises(OptionsError, match="Tier 1 derivative classes"):
        lower(plan, "cpp", Epilogue.GRAD)
    plan = kernel_options("tier2-only").plan(fusionrcg.QuartetClass(1, 0, 0, 0, deriv=0), True)
    with pytest.raises(OptionsError, match="Tier 1 derivative classes"):
        lower(plan, "cpp", Epilogue.GRAD)


@pytest.mark.parametrize("decontract", [False, True])
def test_energy_per_atom_with_general_contractions(decontract, backend):
    mol = gto.M(atom=WATER, basis=_sp_of_cc_pvdz(), charge=1, spin=1, verbose=0)
    dms = np.asarray(scf.UHF(mol).run().make_rdm1())
    engine = JK(mol, backend=backend, tol=1e-14, decontract=decontract)
    de = engine.jk_energy_per_atom(dms, 1.0, 0.25)
    assert np.abs(de - _per_atom_reference(mol, dms, 1.0, 0.25)).max() <= DERIV_TOL


def test_energy_per_atom_refuses_what_it_cannot_take(water):
    engine = JK(water, backend="cpu")
    with pytest.raises(JKInputError, match="3 densities"):
        engine.jk_energy_per_atom(np.zeros((3, water.nao, water.nao)))
    with pytest.raises(JKInputError, match="symmetric density"):
        engine.jk_energy_per_atom(np.triu(np.ones((water.nao, water.nao))))
    assert not engine.jk_energy_per_atom(np.eye(water.nao), 0.0, 0.0).any()


@pytest.mark.parametrize(
    "make",
    [
        lambda m: scf.RHF(m),
        lambda m: scf.UHF(m),
        lambda m: dft.RKS(m, xc="b3lyp"),
        lambda m: dft.UKS(m, xc="pbe0"),
        lambda m: dft.RKS(m, xc="pbe"),
    ],
    ids=["rhf", "uhf", "b3lyp", "uks-pbe0", "pbe"],
)
def test_analytic_gradients_match_pyscf(make):
    mol = gto.M(atom=WATER, basis="6-31g", charge=1, spin=1, verbose=0)
    if type(make(mol)).__name__.startswith("R"):
        mol = gto.M(atom=WATER, basis="6-31g", verbose=0)
    ref = make(mol)
    ref.conv_tol = 1e-11
    ref.kernel()
    ours = fusionrcg.apply(make(mol), backend="cpu")
    ours.conv_tol = 1e-11
    ours.direct_scf_tol = 1e-14
    ours.kernel()
    grad = ours.nuc_grad_method()
    assert type(grad).get_jk is FusionGradMixin.get_jk
    assert np.abs(grad.kernel() - ref.nuc_grad_method().kernel()).max() <= GRADIENT_TOL
    assert isinstance(ours.Gradients(), FusionGradMixin)


def test_both_engines_in_one_gradient(water):
    """``qcscf.apply``: the XC part from KerneLDI, the J/K derivatives from the engine."""
    ref = dft.RKS(water, xc="b3lyp")
    ref.conv_tol = 1e-11
    ref.kernel()
    ours = qcscf.apply(dft.RKS(water, xc="b3lyp"))
    ours.conv_tol = 1e-11
    ours.direct_scf_tol = 1e-14
    ours.kernel()
    grad = ours.nuc_grad_method()
    assert isinstance(grad, FusionGradMixin)
    assert np.abs(grad.kernel() - ref.nuc_grad_method().kernel()).max() <= GRADIENT_TOL


def test_gradient_objects_without_the_engine_are_refused_or_kept(water):
    from fusionrcg.jk.grad import apply_grad

    plain = apply_grad(scf.RHF(water).run().nuc_grad_method())  # no engine: PySCF's own J/K
    assert np.abs(plain.kernel() - scf.RHF(water).run().nuc_grad_method().kernel()).max() < 1e-12
    with pytest.raises(fusionrcg.InputError, match="density-fitted"):
        apply_grad(scf.RHF(water).density_fit().run().nuc_grad_method())


@pytest.mark.slow
@pytest.mark.parametrize("cart", [False, True], ids=["spherical", "cartesian"])
def test_d_shells(get_molecule, cart, backend):
    mol = get_molecule("water_clusters/002", "cc-pvdz", cart=cart)
    dms = scf.UHF(mol).run().make_rdm1()
    _check_matrices(JK(mol, backend=backend, tol=1e-14), mol, dms)


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["rhf", "uhf", "b3lyp", "uks-pbe0", "wb97x"])
def test_gpu4pyscf_gradients(get_molecule, method, gpu_present):
    """GPU4PySCF's gradient objects take their J/K part through ``jk_energy_per_atom``."""
    if not gpu_present:
        pytest.skip("needs a CUDA GPU with CuPy; none here")
    pytest.importorskip("gpu4pyscf", reason="GPU4PySCF is not installed")
    from gpu4pyscf import dft as gdft
    from gpu4pyscf import scf as gscf

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    makers = {
        "rhf": lambda: gscf.RHF(mol),
        "uhf": lambda: gscf.UHF(mol),
        "b3lyp": lambda: gdft.RKS(mol, xc="b3lyp"),
        "uks-pbe0": lambda: gdft.UKS(mol, xc="pbe0"),
        "wb97x": lambda: gdft.RKS(mol, xc="wb97x"),  # range-separated: long-range kernels
    }
    ref, ours = makers[method](), fusionrcg.apply(makers[method](), backend="gpu")
    ours.direct_scf_tol = 1e-14
    for mf in (ref, ours):
        mf.conv_tol = 1e-11
        mf.kernel()
    grad = ours.nuc_grad_method()
    assert type(grad).__name__.startswith("FusionJK")
    assert np.abs(grad.kernel() - ref.nuc_grad_method().kernel()).max() <= GRADIENT_TOL


def test_prebuild_builds_the_derivative_kernels(tmp_path, capsys):
    """``fusionrcg prebuild --deriv-lmax`` adds the derivative kernels (each position's in a
    job of its own, two at a time here); an engine then finds them in the library."""
    from fusionrcg.cli import main

    args = ["prebuild", "--lmax", "0", "--deriv-lmax", "0", "--target", "cpp", "--jobs", "2",
            "--memory-gb", "1", "--kernel-dir", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "derivatives of (00|00) built" in err and "[2/2]" in err
    assert main(args) == 0
    assert "derivatives of (00|00) in the library" in capsys.readouterr().err
    mol = gto.M(atom="H 0 0 0; H 0 0 0.74", basis="sto-3g", verbose=0)
    engine = JK(mol, backend="cpu", kernel_dir=tmp_path)
    assert all(k.cached for k in engine.deriv_kernels(fusionrcg.QuartetClass(0, 0, 0, 0)))


def test_heavy_builds_are_the_straight_line_derivative_classes_from_total_6():
    """``prebuild`` bounds by memory the builds of the straight-line derivative kernels from
    total 6 on (ptxas takes gigabytes each); the block-only f classes and smaller classes
    are light."""
    from fusionrcg.jk.kernels import available_memory, heavy_build
    from fusionrcg.options import kernel_options

    full = kernel_options("full")
    assert heavy_build(fusionrcg.QuartetClass(2, 2, 2, 2), full)
    assert heavy_build(fusionrcg.QuartetClass(2, 2, 1, 1), full)
    assert not heavy_build(fusionrcg.QuartetClass(2, 1, 1, 1), full)  # total 5
    assert not heavy_build(fusionrcg.QuartetClass(3, 3, 0, 0), full)  # block form only
    assert available_memory() > 0


@pytest.mark.slow
def test_f_shells_in_the_block_form(backend):
    """cc-pVTZ water (f on O): every derivative class through the block form (threshold 0;
    by default the f classes from total 6 on), the matrices against PySCF's (about 10 minutes
    on one CPU core)."""
    mol = gto.M(atom=WATER, basis="cc-pvtz", verbose=0)
    dm = scf.RHF(mol).run().make_rdm1()
    _check_matrices(JK(mol, backend=backend, tol=1e-14, deriv_block_min_total=0), mol, dm)


def test_a_total_threshold_above_the_default_keeps_straight_line_forms(tmp_path):
    """``deriv_block_min_total`` above an f class's total gives that class its straight-line
    forms on every path, the block forms of launches of few items included (host target:
    Tier 1 has none)."""
    from fusionrcg.jk.kernels import deriv_block_kernels, deriv_kernels
    from fusionrcg.options import kernel_options

    cls, full = fusionrcg.QuartetClass(3, 1, 1, 1), kernel_options("full")  # total 6
    args = (cls, full, True, "cpp", "host", tmp_path)
    assert all(k.options.item_threads == 1 for k in deriv_kernels(*args, block_min_total=99))
    assert deriv_block_kernels(*args, block_min_total=99) == (None, None, None)
    assert all(k.options.item_threads > 1 for k in deriv_kernels(*args, block_min_total=0))
