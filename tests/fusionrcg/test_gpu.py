"""GPU backend against PySCF (run on the GPU machine; skipped without a GPU)."""

import numpy as np
import pytest

import fusionrcg
from fusionrcg.errors import DeviceError
from qcbench.eri.verify import Tolerance, reference_eri, sample_quartets

TOL = Tolerance()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "ls", [(0, 0, 0, 0), (2, 0, 2, 0), (2, 2, 1, 1), (3, 3, 2, 2), (4, 4, 4, 4)]
)
def test_gpu_matches_pyscf(get_molecule, ls):
    mol = get_molecule("water_clusters/002", "cc-pvqz")
    cls = fusionrcg.QuartetClass(*ls)
    quartets = sample_quartets(mol, cls, 3, np.random.default_rng(5))
    for q, value in zip(quartets, fusionrcg.eri_quartets(mol, quartets, backend="gpu")):
        ref = reference_eri(mol, q)
        assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0


@pytest.mark.gpu
def test_gpu_launch_order_returns_callers_order(get_molecule):
    """Quartets of mixed primitive counts run grouped by pattern; each integral still comes back
    in the row of its quartet."""
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    cls = fusionrcg.QuartetClass(2, 0, 1, 0)
    quartets = sample_quartets(mol, cls, 24, np.random.default_rng(7))
    assert len({tuple(mol.bas_nprim(s) for s in q) for q in quartets}) > 2
    for q, value in zip(quartets, fusionrcg.eri_quartets(mol, quartets, backend="gpu")):
        ref = reference_eri(mol, q)
        assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0


@pytest.mark.gpu
def test_gpu_split_store_launch_sums_its_items(get_molecule):
    """A store launch whose quartets run as several items adds them up on the GPU: the same
    integrals as one item per quartet, and PySCF's."""
    from fusionrcg.runtime.basis import segment_basis
    from fusionrcg.runtime.gpu import GpuExecutor
    from fusionrcg.variants import get_variant

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    basis = segment_basis(mol)
    cls = fusionrcg.QuartetClass(2, 0, 1, 0)
    shells = sample_quartets(mol, cls, 24, np.random.default_rng(3))
    segs = np.array([basis.segment_quartets(q)[0] for q in shells], dtype=np.int32)
    split = GpuExecutor(max_work=3)
    kernel = split.kernel(cls, get_variant("full"), True)
    launch = split.prepare(kernel, segs, basis)
    assert launch.add_items is not None  # some quartets run as several items
    launch()
    whole = GpuExecutor(max_work=None).integrals(kernel, segs, basis)
    np.testing.assert_allclose(launch.integrals(), whole, rtol=0, atol=1e-13)
    first = tuple(slice(0, n) for n in kernel.output_shape)  # segment_quartets(q)[0]
    for q, value in zip(shells, launch.integrals()):
        ref = reference_eri(mol, q)[first]
        assert TOL.normalized(np.abs(value.reshape(ref.shape) - ref), ref).max() <= 1.0


def test_gpu_backend_without_gpu_says_so(get_molecule, gpu_present):
    if gpu_present:
        pytest.skip("a GPU is present")
    mol = get_molecule("water_clusters/002", "sto-3g")
    with pytest.raises(DeviceError, match="GPU backend needs"):
        fusionrcg.shell_quartet_eri(mol, (0, 0, 0, 0), backend="gpu")


@pytest.mark.gpu
def test_gpu_jk_matches_pyscf(get_molecule):
    """J and K over every class of cc-pVDZ water (Tier 1 and Tier 2 kernels, Kernel 2)."""
    from pyscf import scf

    from fusionrcg.jk import get_jk

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((mol.nao, mol.nao))
    dm = (a + a.T) / mol.nao
    vj, vk = get_jk(mol, dm, backend="gpu")
    rj, rk = scf.hf.get_jk(mol, dm)
    # sums of about nao^2 integrals: 1e-11 absolute
    assert np.abs(vj - rj).max() <= 1e-11
    assert np.abs(vk - rk).max() <= 1e-11


@pytest.mark.gpu
@pytest.mark.parametrize("shared", [True, False], ids=["shared-bank", "global-bank"])
def test_gpu_tier2_bank_placements_match_pyscf(get_molecule, monkeypatch, tmp_path, shared):
    """Tier 2 with its slot bank in shared memory (the default where it fits) and in global
    memory (forced by a zero shared-memory allowance)."""
    from fusionrcg.library.store import get_kernel
    from fusionrcg.lowering import kernel as lowering

    monkeypatch.setenv("FUSIONRCG_KERNEL_DIR", str(tmp_path))
    if not shared:
        monkeypatch.setattr(lowering, "SHARED_BANK_MAX_BYTES", 0)
    mol = get_molecule("water_clusters/002", "cc-pvqz")
    for ls in [(1, 1, 1, 1), (2, 1, 1, 1), (2, 2, 1, 1)]:
        cls = fusionrcg.QuartetClass(*ls)
        assert bool(get_kernel(cls, "tier2-only").bank_threads) == shared
        quartets = sample_quartets(mol, cls, 3, np.random.default_rng(7))
        values = fusionrcg.eri_quartets(mol, quartets, backend="gpu", variant="tier2-only")
        for q, value in zip(quartets, values):
            ref = reference_eri(mol, q)
            assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0


@pytest.mark.gpu
def test_gpu_tier1_shared_slots_match_pyscf(get_molecule):
    """Tier 1 kernels whose values beyond the register budget live in shared-memory slots."""
    from fusionrcg.library.store import get_kernel

    mol = get_molecule("water_clusters/002", "cc-pvqz")
    for ls in [(1, 1, 1, 1), (3, 0, 2, 1), (3, 3, 0, 0)]:
        cls = fusionrcg.QuartetClass(*ls)
        kernel = get_kernel(cls, "tier1-only")
        assert kernel.slot_bank == "shared" and kernel.report.spill_store_bytes == 0
        quartets = sample_quartets(mol, cls, 3, np.random.default_rng(11))
        values = fusionrcg.eri_quartets(mol, quartets, backend="gpu", variant="tier1-only")
        for q, value in zip(quartets, values):
            ref = reference_eri(mol, q)
            assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0
