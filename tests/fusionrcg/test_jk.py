"""The J/K engine (``fusionrcg.JK``, ``fusionrcg.apply``) against PySCF, on the CPU backend and,
where a GPU is present, the GPU backend (its kernels from the library: ``FUSIONRCG_KERNEL_DIR``).

Tolerances: J and K agree with ``pyscf.scf.hf.get_jk`` to 1e-10 absolute at a screening
threshold of 1e-14 (sums of many integrals, each within 1e-12); SCF energies to 1e-8 Eh at
conv_tol = 1e-10 with iteration counts within one.
"""

from __future__ import annotations

import numpy as np
import pytest
from pyscf import dft, gto, scf

import fusionrcg
from fusionrcg.jk import JK, JKInputError

JK_TOL = 1e-10
ENERGY_TOL = 1e-8


def _random_density(nao: int, n: int = 1, seed: int = 0, symmetric: bool = True) -> np.ndarray:
    a = np.random.default_rng(seed).standard_normal((n, nao, nao)) / nao
    return a + a.transpose(0, 2, 1) if symmetric else a


BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def water_dz(get_molecule):
    return get_molecule("water_clusters/002", "cc-pvdz")


@pytest.fixture(scope="module")
def engine_dz(water_dz, backend):
    return JK(water_dz, backend=backend, tol=1e-14)


def _check(engine: JK, mol, dm, hermi=1, **flags):
    vj, vk = engine.get_jk(dm, hermi, **flags)
    rj, rk = scf.hf.get_jk(mol, dm, hermi=hermi)
    if flags.get("with_j", True):
        assert vj.shape == np.shape(dm)
        assert np.abs(vj - rj).max() <= JK_TOL
    else:
        assert vj is None
    if flags.get("with_k", True):
        assert vk.shape == np.shape(dm)
        assert np.abs(vk - rk).max() <= JK_TOL
    else:
        assert vk is None


def test_converged_rhf_density(engine_dz, water_dz):
    dm = scf.RHF(water_dz).run(conv_tol=1e-9).make_rdm1()
    _check(engine_dz, water_dz, dm)
    _check(engine_dz, water_dz, dm, with_k=False)
    _check(engine_dz, water_dz, dm, with_j=False)


def test_uhf_pair_and_general_densities(engine_dz, water_dz):
    """Two spin densities in one build; general (hermi=0) densities: K = Kh(D) + Kh(D^T)^T."""
    _check(engine_dz, water_dz, _random_density(water_dz.nao, 2, seed=1))
    _check(engine_dz, water_dz, _random_density(water_dz.nao, 2, seed=2, symmetric=False), 0)


def test_decontracted_general_contractions(water_dz, backend):
    """Generally contracted shells as their primitives, J and K contracted back."""
    dm = _random_density(water_dz.nao, seed=4)[0]
    _check(JK(water_dz, backend=backend, tol=1e-14, decontract=True), water_dz, dm)


def test_split_items_add_up(water_dz, backend):
    """Quartets of more than max_work primitive quartets run as several items."""
    dm = _random_density(water_dz.nao, seed=7)[0]
    engine = JK(water_dz, backend=backend, tol=1e-14, max_work=5, profile=True)
    _check(engine, water_dz, dm)
    prof = engine.last_profile
    assert sum(prof.items.values()) > sum(prof.quartets.values())


def test_fused_threshold_picks_the_contraction_path(water_dz, backend):
    """(pp|pp)'s 81 integrals: contracted in its own epilogue by default, stored for Kernel 2
    at a lower threshold, through Kernel 2 for every class at 0; the same J and K each way."""
    from fusionrcg.angmom import QuartetClass

    dm = _random_density(water_dz.nao, 2, seed=8)
    pp = QuartetClass(1, 1, 1, 1)
    for limit, fused in ((81, True), (63, False), (0, False)):
        engine = JK(water_dz, backend=backend, tol=1e-14, fused_max_outputs=limit)
        assert (engine.kernels(pp).fused is not None) is fused
        assert any(k.fused is not None for k, _ in engine.classes) is (limit > 0)
        _check(engine, water_dz, dm)
    with pytest.raises(JKInputError, match="fused_max_outputs"):
        JK(water_dz, backend=backend, fused_max_outputs=-1)


def test_cartesian_basis(get_molecule, backend):
    mol = get_molecule("water_clusters/002", "cc-pvdz", cart=True)
    _check(JK(mol, backend=backend, tol=1e-14), mol, _random_density(mol.nao)[0])


def test_device_arrays_in_device_arrays_out(engine_dz, water_dz, backend):
    if backend != "gpu":
        pytest.skip("CuPy densities go to the GPU backend")
    import cupy

    dm = _random_density(water_dz.nao, seed=6)[0]
    vj, vk = engine_dz.get_jk(cupy.asarray(dm))
    assert isinstance(vj, cupy.ndarray) and isinstance(vk, cupy.ndarray)
    rj, rk = scf.hf.get_jk(water_dz, dm)
    assert np.abs(vj.get() - rj).max() <= JK_TOL and np.abs(vk.get() - rk).max() <= JK_TOL


@pytest.mark.slow
def test_general_contraction_and_f_shells(backend):
    """ANO contractions (several columns over shared primitives) with f shells: Tier 2 classes
    whose Kernel 2 contracts stored integrals."""
    mol = gto.M(
        atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59",
        basis={"O": "ano@3s2p1d1f", "H": "ano@2s1p"},
        verbose=0,
    )
    _check(JK(mol, backend=backend, tol=1e-14), mol, _random_density(mol.nao)[0])


@pytest.mark.parametrize("basis", ["cc-pvtz", "def2-tzvp"])
def test_triple_zeta_on_hydrogen(basis, backend):
    """cc-pVTZ and def2-TZVP in the default run: on hydrogen their shells stop at d, whose classes
    the cc-pVDZ tests compiled already (the water versions with f and g run as slow tests)."""
    mol = gto.M(atom="H 0 0 0; H 0 0 0.74; H 1.9 0.3 0; H 1.9 0.3 0.74", basis=basis, verbose=0)
    dm = scf.RHF(mol).run(max_cycle=3).make_rdm1()
    engine = JK(mol, backend=backend, tol=1e-14)
    _check(engine, mol, dm)
    _check(engine, mol, np.stack([0.6 * dm, 0.4 * dm]))


@pytest.mark.slow
@pytest.mark.parametrize("basis", ["cc-pvtz", "def2-tzvp", "cc-pvqz"])
def test_triple_and_quadruple_zeta(get_molecule, basis, backend):
    """Every class up to (gg|gg) in cc-pVQZ; RHF and UHF (two spins) densities."""
    mol = get_molecule("water_clusters/002", basis)
    dm = scf.RHF(mol).run(max_cycle=3).make_rdm1()
    engine = JK(mol, backend=backend, tol=1e-14)
    _check(engine, mol, dm)
    _check(engine, mol, np.stack([0.6 * dm, 0.4 * dm]))


@pytest.mark.gpu
def test_block_form_on_the_gpu(get_molecule):
    """cc-pVQZ's g classes with every Tier 2 launch in the block form (a thread block per
    item, ``lowering.block``) and with none, against PySCF."""
    mol = get_molecule("water_clusters/002", "cc-pvqz")
    dm = scf.RHF(mol).run(max_cycle=3).make_rdm1()
    for block_items in (10**9, 0):
        engine = JK(mol, backend="gpu", tol=1e-14, block_items=block_items)
        assert any(k.block is not None for k, _ in engine.classes) == bool(block_items)
        _check(engine, mol, dm)


def test_screening_skips_far_quartets_and_small_density_changes(backend):
    """Two waters 12 Angstrom apart: K needs no quartet coupling the molecules' pairs, so
    density screening drops work that Schwarz alone keeps; a density change of 1e-12 drops
    most of the rest, and what is kept still gives J and K of that change."""
    mol = gto.M(
        atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59; O 12 0 0; H 12 0.76 0.59; H 12 -0.76 0.59",
        basis="cc-pvdz",
        verbose=0,
    )
    engine = JK(mol, backend=backend, profile=True)
    dm = scf.RHF(mol).run(conv_tol=1e-9).make_rdm1()
    engine.get_jk(dm, with_j=False)
    k_only = sum(engine.last_profile.quartets.values())
    engine.get_jk(dm)
    both = sum(engine.last_profile.quartets.values())
    assert k_only < 0.6 * both
    ddm = 1e-12 * _random_density(mol.nao, seed=3)[0]
    vj, vk = engine.get_jk(ddm)
    small = sum(engine.last_profile.quartets.values())
    assert small < 0.5 * both
    rj, rk = scf.hf.get_jk(mol, ddm)
    # each quartet left out is below the threshold (1e-13): their sum stays within JK_TOL
    assert np.abs(vj - rj).max() <= JK_TOL and np.abs(vk - rk).max() <= JK_TOL


@pytest.mark.parametrize(
    "make",
    [
        lambda m: scf.RHF(m),
        lambda m: scf.UHF(m),
        lambda m: dft.RKS(m, xc="b3lyp"),
        lambda m: dft.RKS(m, xc="m062x"),
        lambda m: dft.UKS(m, xc="pbe"),
    ],
    ids=["rhf", "uhf", "b3lyp", "m062x", "uks-pbe"],
)
def test_scf_energies_match_pyscf(water_dz, make, backend):
    ref = make(water_dz)
    ref.conv_tol = 1e-10
    ref.kernel()
    ours = fusionrcg.apply(make(water_dz), backend=backend)
    ours.conv_tol = 1e-10
    ours.kernel()
    assert ours.converged and ref.converged
    assert abs(ours.e_tot - ref.e_tot) <= ENERGY_TOL
    assert abs(ours.cycles - ref.cycles) <= 1


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["rhf", "uhf", "b3lyp"])
def test_gpu4pyscf_scf_objects(water_dz, method, gpu_present):
    """GPU4PySCF's SCF objects hand over CuPy subclasses (tagged densities) and add the
    results to CuPy arrays: the engine's results must be CuPy arrays too."""
    if not gpu_present:
        pytest.skip("needs a CUDA GPU with CuPy; none here")
    pytest.importorskip("gpu4pyscf", reason="GPU4PySCF is not installed")
    from gpu4pyscf import dft as gdft
    from gpu4pyscf import scf as gscf

    def make():
        if method == "b3lyp":
            return gdft.RKS(water_dz, xc="b3lyp")
        return gscf.RHF(water_dz) if method == "rhf" else gscf.UHF(water_dz)

    ref, ours = make(), fusionrcg.apply(make(), backend="gpu")
    for mf in (ref, ours):
        mf.conv_tol = 1e-10
        mf.kernel()
    assert ours.converged and ref.converged
    assert abs(ours.e_tot - ref.e_tot) <= ENERGY_TOL
    assert abs(ours.cycles - ref.cycles) <= 1


def test_second_scf_reuses_the_engine(water_dz):
    mf = fusionrcg.apply(scf.RHF(water_dz), backend="cpu")
    mf.kernel()
    engine = mf.fusion_engine()
    e = mf.e_tot
    mf.kernel()
    assert mf.fusion_engine() is engine and abs(mf.e_tot - e) < 1e-9


def test_time_builds_books_each_scf_build(water_dz):
    mf = fusionrcg.apply(scf.RHF(water_dz), backend="cpu", time_builds=True)
    mf.kernel()
    builds = mf.fusion_engine().build_seconds
    # one J/K build per cycle at least (the first Fock matrix's build before the cycles)
    assert len(builds) >= mf.cycles and all(t > 0.0 for t in builds)


def test_bad_input_is_named(engine_dz, water_dz):
    nao = water_dz.nao
    with pytest.raises(JKInputError, match="shape"):
        engine_dz.get_jk(np.eye(nao + 1))
    with pytest.raises(JKInputError, match="symmetric"):
        engine_dz.get_jk(_random_density(nao, symmetric=False)[0])
    nan = np.eye(nao)
    nan[0, 1] = nan[1, 0] = np.nan
    with pytest.raises(JKInputError, match="not finite"):
        engine_dz.get_jk(nan)
    with pytest.raises(JKInputError, match="hermi"):
        engine_dz.get_jk(np.eye(nao), hermi=2)
    with pytest.raises(JKInputError, match="backend"):
        JK(water_dz, backend="tpu")


def test_high_l_keeps_the_objects_own_jk():
    h = gto.M(atom="Ne 0 0 0", basis="cc-pv5z", verbose=0)  # h functions (l = 5)
    with pytest.warns(UserWarning, match="keeps its own J/K"):
        kept = fusionrcg.apply(scf.RHF(h))
    assert not isinstance(kept, fusionrcg.jk.FusionJKMixin)


def test_gpu_backend_without_gpu_says_so(water_dz, gpu_present):
    if gpu_present:
        pytest.skip("a GPU is present")
    from fusionrcg.errors import DeviceError

    with pytest.raises(DeviceError, match="GPU"):
        JK(water_dz, backend="gpu")


def test_j_then_k_of_one_density_is_one_build(water_dz, backend):
    """GPU4PySCF's restricted Fock build asks for J, then for K of the same density with its
    hybrid factors (lr_factor = sr_factor, omega = 0): one build serves both."""
    mf = fusionrcg.apply(scf.RHF(water_dz), backend=backend)
    engine = mf.fusion_engine()
    engine.profile = True
    dm = _random_density(water_dz.nao, seed=5)[0]
    rj, rk = scf.hf.get_jk(water_dz, dm)
    vj = mf.get_j(water_dz, dm)
    build = engine.last_profile
    vk = mf.get_k(water_dz, dm, 1, None, 0.2, 0.2)
    assert engine.last_profile is build
    assert np.abs(vj - rj).max() <= JK_TOL and np.abs(vk - 0.2 * rk).max() <= JK_TOL
    vk = mf.get_k(water_dz, dm)  # nothing pending: a K-only build
    assert engine.last_profile is not build and np.abs(vk - rk).max() <= JK_TOL
    with pytest.raises(JKInputError, match="without an omega"):
        mf.get_k(water_dz, dm, 1, None, 1.0, 0.5)


def test_prebuild_command_fills_the_library(tmp_path, capsys):
    """``fusionrcg prebuild`` builds every class's J/K kernels; a second run finds them."""
    from fusionrcg.cli import main

    args = ["prebuild", "--lmax", "0", "--target", "cpp", "--kernel-dir", str(tmp_path)]
    assert main(args) == 0
    assert "[1/1] (00|00) built" in capsys.readouterr().err
    assert main(args) == 0
    assert "[1/1] (00|00) in the library" in capsys.readouterr().err


def test_prebuild_omega_builds_the_long_range_kernels(tmp_path, capsys):
    """``fusionrcg prebuild --omega`` builds the erf(omega r)/r kernels, which are not the
    Coulomb ones: a Coulomb prebuild afterwards builds again, a second --omega run finds them;
    a negative omega is refused."""
    from fusionrcg.cli import main

    args = ["prebuild", "--lmax", "0", "--target", "cpp", "--kernel-dir", str(tmp_path)]
    assert main([*args, "--omega", "0.3"]) == 0
    assert "[1/1] (00|00) built" in capsys.readouterr().err
    assert main([*args, "--omega", "0.3"]) == 0
    assert "[1/1] (00|00) in the library" in capsys.readouterr().err
    assert main(args) == 0
    assert "[1/1] (00|00) built" in capsys.readouterr().err
    assert main([*args, "--omega", "-0.3"]) == 2
    assert "omega must be a finite number >= 0" in capsys.readouterr().err


def test_round_items_cut_the_build_into_rounds(water_dz):
    """``round_items``: rounds of a few candidates (the CPU backend's unit) give PySCF's J and
    K as one round does; a count below one is refused."""
    dm = scf.RHF(water_dz).run(max_cycle=2).make_rdm1()
    rj, rk = scf.hf.get_jk(water_dz, dm)
    engine = JK(water_dz, backend="cpu", tol=1e-14, round_items=50)
    vj, vk = engine.get_jk(dm)
    assert np.abs(vj - rj).max() <= JK_TOL and np.abs(vk - rk).max() <= JK_TOL
    with pytest.raises(JKInputError, match="round_items"):
        JK(water_dz, backend="cpu", round_items=0)
