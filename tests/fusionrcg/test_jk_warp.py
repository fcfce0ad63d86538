"""The GPU's fused J/K kernel (``warp_bra_j``: a warp on one bra pair sums its J_ab updates
before adding them), built for the host by the CUDA emulation, against the host's J/K kernel
of the same class over the same items in the screening's order."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emulation import emulated_kernel
from pyscf import gto, scf

from fusionrcg.jk import JK
from fusionrcg.jk.arrays import HostArrays
from fusionrcg.jk.tasks import HostScreener, Screen
from fusionrcg.lowering.boys import boys_table
from fusionrcg.lowering.kernel import lower
from fusionrcg.runtime.items import ItemBatch

WARP = 32


def _whole_warps(items: ItemBatch) -> ItemBatch:
    """``items`` padded to whole warps with copies of the last item of weight 0 (the emulation
    runs whole warps; a zero weight adds nothing)."""
    pad = -items.size % WARP
    if not pad:
        return items
    last = items.slice(items.size - 1, items.size)
    return ItemBatch(
        np.concatenate([items.quartets, np.repeat(last.quartets, pad, axis=0)]),
        np.concatenate([items.scales, np.zeros(pad)]),
        np.concatenate([items.ranges, np.tile(last.ranges, (pad, 1))]),
    )


@pytest.fixture(scope="module")
def two_waters():
    """(mol, CPU engine, mid-SCF density (1, nao, nao), its screening at 1e-11): two waters in
    cc-pVDZ, whose bra pairs' surviving kets fill whole warps and span warps both."""
    mol = gto.M(
        atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59; O 3 0 0; H 3 0.76 0.59; H 3 -0.76 0.59",
        basis="cc-pvdz",
        verbose=0,
    )
    engine = JK(mol, backend="cpu")
    dm = scf.RHF(mol).run(max_cycle=2).make_rdm1()[None]
    sizes = np.diff([*engine.basis.ao, engine.basis.nao])
    blocks = HostArrays().block_absmax(dm, engine.basis.ao, sizes)
    return mol, engine, dm, Screen(1e-11, blocks, float(blocks.max()), True, True)


@pytest.mark.parametrize("cls", ["(1,0|0,0)", "(1,1|1,0)"])
def test_gpu_jk_epilogue_sums_a_warps_j_ab_as_the_host_adds_each(cls, two_waters):
    """Two waters: each bra pair's surviving kets come one after another, so most warps share
    their bra pair (the warp sum) and some span two (each thread's atomic update); J and K
    agree with the host kernel's to 1e-12."""
    _, engine, dm, screen = two_waters
    kernels, class_blocks = next((k, b) for k, b in engine.classes if str(k.cls) == cls)
    assert kernels.fused is not None
    source = lower(engine.options.plan(kernels.cls), "cuda", "jk", **engine.options.lowering())
    assert "frcg_warp_bra" in source.source
    gpu_kernel = emulated_kernel(source.source, source.name)
    nao = engine.basis.nao
    host_j, host_k = np.zeros((1, nao, nao)), np.zeros((1, nao, nao))
    gpu_j, gpu_k = np.zeros((1, nao, nao)), np.zeros((1, nao, nao))
    uniform = mixed = 0
    for _, items in HostScreener(HostArrays()).class_items(engine.pairs, class_blocks, screen):
        engine.executor.run_items(
            kernels.fused, items, engine.basis, engine.pairs.data, dm, host_j, host_k
        )
        items = _whole_warps(items)
        n = items.size
        bras = items.quartets[:, :2].reshape(-1, WARP, 2)
        same = (bras == bras[:, :1]).all(axis=(1, 2))
        uniform, mixed = uniform + int(same.sum()), mixed + int((~same).sum())
        empty_i = np.zeros(1, dtype=np.int32)
        args = (
            np.int32(n), items.quartets, items.scales, engine.basis.xyz,
            np.arange(2 * n, dtype=np.int32), engine.basis.ao, items.ranges, engine.pairs.data,
            boys_table(), np.zeros(1), np.zeros(1), np.int64(n), empty_i,
            np.zeros(2, dtype=np.int32), empty_i, np.zeros(1), empty_i, np.int32(0),
            np.int32(nao), dm, gpu_j, gpu_k, np.int32(1),
        )  # fmt: skip
        gpu_kernel((-(-n // 256),), (256,), args)  # warps past n return together
    assert uniform > 0 and mixed > 0
    assert np.abs(host_j).max() > 1e-3
    np.testing.assert_allclose(gpu_j, host_j, rtol=0, atol=1e-12)
    np.testing.assert_allclose(gpu_k, host_k, rtol=0, atol=1e-12)


@pytest.mark.parametrize("cls, position", [("(1,0|0,0)", 0), ("(1,0|1,0)", 2)])
def test_gpu_gradient_epilogue_sums_a_warps_atom_as_the_host_adds_each(cls, position, two_waters):
    """The gradient epilogue's kernel of one derivative position: a full warp's items on lane
    0's atom add one warp sum (``frcg_atom_add``), the others each their own; the per-atom
    gradient agrees with the host kernel's to 1e-12, with lanes of both kinds among the
    items (the differentiated centre's atom: A's follows the bra pair, C's the kets)."""
    from fusionrcg.jk.deriv import DERIV_POSITIONS
    from fusionrcg.lowering.target import Epilogue
    from fusionrcg.runtime.launch import GradientTarget

    mol, engine, dm, screen = two_waters
    kernels, class_blocks = next((k, b) for k, b in engine.classes if str(k.cls) == cls)
    host_kernel = engine.deriv_kernels(kernels.cls, Epilogue.GRAD)[position]
    assert host_kernel.epilogue is Epilogue.GRAD and position in DERIV_POSITIONS
    plan = engine.options.plan(kernels.cls.with_deriv(position))
    source = lower(plan, "cuda", "grad", **engine.options.lowering())
    assert "frcg_atom_add" in source.source
    gpu_kernel = emulated_kernel(source.source, source.name)
    deriv_data = engine.pairs.deriv_data(np)
    seg_atom = np.repeat(np.asarray(mol._bas[:, 0], dtype=np.int32), engine.basis.nctr)
    host_grad, gpu_grad = np.zeros(3 * mol.natm), np.zeros(3 * mol.natm)
    centre = ("a", "b", "c")[position]
    summed = own = 0  # warps whose lanes on lane 0's atom add a sum; lanes adding their own
    for _, items in HostScreener(HostArrays()).class_items(engine.pairs, class_blocks, screen):
        target = GradientTarget(seg_atom, host_grad, 1.0, 0.6)
        engine.executor.run_items(host_kernel, items, engine.basis, deriv_data, dm, gradient=target)
        items = _whole_warps(items)
        n = items.size
        atoms = seg_atom[items.quartets[:, "abc".index(centre)]].reshape(-1, WARP)
        with_lane0 = atoms == atoms[:, :1]
        summed += int((with_lane0.sum(axis=1) > 1).sum())
        own += int((~with_lane0).sum())
        empty_i = np.zeros(1, dtype=np.int32)
        args = (
            np.int32(n), items.quartets, items.scales, engine.basis.xyz,
            np.arange(2 * n, dtype=np.int32), engine.basis.ao, items.ranges, deriv_data,
            boys_table(), np.zeros(1), np.zeros(1), np.int64(n), empty_i,
            np.zeros(2, dtype=np.int32), empty_i, np.zeros(1), empty_i, np.int32(0),
            np.int32(engine.basis.nao), dm, np.zeros(1), np.zeros(1), np.int32(1),
            seg_atom, gpu_grad, np.float64(1.0), np.float64(0.6),
        )  # fmt: skip
        gpu_kernel((-(-n // 256),), (256,), args)  # warps past n return together
    assert summed > 0 and own > 0
    assert np.abs(host_grad).max() > 1e-3
    np.testing.assert_allclose(gpu_grad, host_grad, rtol=0, atol=1e-12)
