"""The J/K engine's workspace: the device memory of a build comes from the engine's own pool and
stays there for the next build, whatever allocator CuPy has (GPU4PySCF's sends large
allocations straight to the device); J and K come back in the caller's memory."""

from __future__ import annotations

import numpy as np
import pytest

from fusionrcg.jk import JK


def test_the_cpu_backend_keeps_no_device_memory(get_molecule):
    engine = JK(get_molecule("water_clusters/002", "sto-3g"), backend="cpu")
    assert engine.workspace_bytes == 0
    engine.release_workspace()  # nothing to give back: no error
    assert engine.workspace_bytes == 0


@pytest.mark.gpu
def test_builds_reuse_the_workspace_under_a_raw_device_allocator(get_molecule, gpu_present):
    """With every CuPy allocation sent straight to the device (no pool), a second build of the
    same density asks the caller's allocator only for J and K (two arrays and at most two
    temporaries, where every round, buffer and accumulator would be dozens); J and K equal the
    first build's (1e-11: atomics add in another order) and PySCF's (1e-10), and they are not
    workspace memory."""
    if not gpu_present:
        pytest.skip("needs a CUDA GPU")
    import cupy
    from pyscf import scf

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    dm = scf.RHF(mol).run(max_cycle=2).make_rdm1()
    ref_j, ref_k = scf.hf.get_jk(mol, dm)
    asked: list[int] = []

    def raw(size: int):
        asked.append(size)
        return cupy.cuda.memory._malloc(size)

    dm_device = cupy.asarray(dm)
    cupy.cuda.set_allocator(raw)
    try:
        engine = JK(mol, backend="gpu", tol=1e-14)
        first = engine.get_jk(dm_device)
        assert engine.workspace_bytes > 0
        asked.clear()
        second = engine.get_jk(dm_device)
        assert len(asked) <= 4, asked
        held = engine.workspace_bytes
        for v in (*first, *second):
            assert not isinstance(v.data.mem, cupy.cuda.memory.PooledMemory)
        for a, b, ref in zip(first, second, (ref_j, ref_k)):
            assert np.abs(a.get() - b.get()).max() <= 1e-11
            assert np.abs(b.get() - ref).max() <= 1e-10
        engine.release_workspace()  # the arrays the engine caches between builds stay
        assert engine.workspace_bytes < held
        small = get_molecule("water_clusters/002", "sto-3g")  # s and p: few derivative kernels
        small_dm = scf.RHF(small).run(max_cycle=2).make_rdm1()
        grad_j, _ = JK(small, backend="gpu", tol=1e-14).get_jk_deriv(cupy.asarray(small_dm))
        assert not isinstance(grad_j.data.mem, cupy.cuda.memory.PooledMemory)
    finally:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)


@pytest.mark.gpu
def test_a_build_gives_the_workspace_back_when_the_device_is_short(get_molecule, gpu_present):
    """With less device memory free after a build than a quarter of the device (another
    engine took it), the build gives its unused workspace back instead of keeping it; J and K
    match PySCF's (1e-10)."""
    if not gpu_present:
        pytest.skip("needs a CUDA GPU")
    import cupy
    from pyscf import scf

    mol = get_molecule("water_clusters/002", "cc-pvdz")
    dm = scf.RHF(mol).run(max_cycle=2).make_rdm1()
    ref = scf.hf.get_jk(mol, dm)
    engine = JK(mol, backend="gpu", tol=1e-14)
    engine.get_jk(cupy.asarray(dm))
    kept = engine.workspace_bytes
    assert kept > 0
    cupy.get_default_memory_pool().free_all_blocks()
    free, total = cupy.cuda.Device().mem_info
    taken = cupy.cuda.memory.Memory(free - total // 8)  # the device's memory but an eighth
    try:
        got = engine.get_jk(cupy.asarray(dm))
        assert engine.workspace_bytes < kept
    finally:
        del taken
    for v, r in zip(got, ref):
        assert np.abs(v.get() - r).max() <= 1e-10
