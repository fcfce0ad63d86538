"""Tier 2's block form (``lowering.levels``, ``lowering.block``): the level program, its C++
kernel against PySCF (integrals, derivative integrals, J and K through the engine) and its
CUDA source run by the host emulation of a GPU (threads and barriers) against the C++ kernel.

Tolerances: integrals as test_generated_cpu (|err| <= 1e-12 + 1e-10 |ref| above 1e-8 of the
class's largest), derivative integrals as test_deriv, J and K within 1e-10 of PySCF's get_jk
at screening threshold 1e-14; the program's level-parallel and sequential runs agree exactly.
"""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from cuda_emulation import emulated_kernel
from pyscf import gto, scf
from test_deriv import check as check_deriv
from test_generated_cpu import TOL

import fusionrcg
from fusionrcg import QuartetClass
from fusionrcg.errors import OptionsError
from fusionrcg.jk import JK
from fusionrcg.library.store import get_kernel
from fusionrcg.lowering.block import block_shared_bank, lower_block
from fusionrcg.lowering.boys import boys_table
from fusionrcg.lowering.levels import BLOCK_SYMBOLS, level_program
from fusionrcg.lowering.target import CUDA, tiled_output_size, untile_outputs
from fusionrcg.runtime.basis import segment_basis
from fusionrcg.runtime.launch import CpuExecutor
from fusionrcg.runtime.pairs import primitive_pairs
from qcbench.eri.verify import reference_eri

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")

BLOCK = fusionrcg.PRESETS["tier2-only"].replace(item_threads=64)


@pytest.fixture(scope="module", autouse=True)
def kernel_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FUSIONRCG_KERNEL_DIR", str(tmp_path_factory.mktemp("kernels")))
    yield
    mp.undo()


def _run_program(lp, n_acc, leaves, sym1, sym2, order: str) -> np.ndarray:
    """The outputs of the level program ``lp`` over primitive quartets whose Boys leaves are
    the rows of ``leaves``: each level's statements in ``order`` "forward", "reverse", or
    "snapshot" (all reading the slots as the level found them, as threads of a block may)."""
    p = lp.program
    bank = np.full(lp.n_slots, np.nan)
    bank[lp.acc_base : lp.acc_base + n_acc] = 0.0
    out = {}

    def level(i: int, sym) -> None:
        lo, hi = lp.level_start[i], lp.level_start[i + 1]
        todo = range(lo, hi) if order != "reverse" else range(hi - 1, lo - 1, -1)
        seen = bank.copy()
        for s in todo:
            terms = range(p.start[s], p.start[s + 1])
            src = seen if order == "snapshot" else bank
            value = 0.0
            for t in terms:
                value += p.coef[t] * sym[p.code[t]] * src[p.src[t]]
            if p.dst[s] >= 0:
                bank[p.dst[s]] = value
            else:
                out[-p.dst[s] - 1] = value

    for row in leaves:
        bank[: len(row)] = row
        for i in range(lp.phase1_levels):
            level(i, sym1)
    for i in range(lp.phase1_levels, lp.n_levels):
        level(i, sym2)
    return np.array([out[k] for k in range(len(out))])


@pytest.mark.parametrize("tag", ["1010", "2110", "2211", "3100"])
def test_levels_are_free_of_hazards(tag):
    """Running each level's statements forward, backward or all from the slots as the level
    found them gives the same outputs: no statement reads what its own level writes, and no
    slot is rewritten in the level that reads it. Every output position is written."""
    plan = BLOCK.plan(QuartetClass(*map(int, tag)))
    lp = level_program(plan)
    rng = np.random.default_rng(7)
    leaves = rng.uniform(-1, 1, (2, plan.cls.boys_order + 1))
    sym1 = np.r_[1.0, rng.uniform(-1, 1, len(BLOCK_SYMBOLS) - 1)]
    sym2 = np.r_[1.0, rng.uniform(-1, 1, len(BLOCK_SYMBOLS) - 1)]
    n_acc = plan.n_accumulators
    orders = ("forward", "reverse", "snapshot")
    runs = [_run_program(lp, n_acc, leaves, sym1, sym2, o) for o in orders]
    assert runs[0].shape == (np.prod(plan.graph.output_shape),)
    assert np.isfinite(runs[0]).all() and np.abs(runs[0]).max() > 0
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])
    assert lp.level_start[0] == 0 and list(lp.level_start) == sorted(lp.level_start)


@needs_cxx
@pytest.mark.parametrize("ls", [(1, 0, 1, 0), (2, 1, 1, 1), (3, 2, 2, 0), (3, 3, 3, 1)], ids=str)
def test_cpu_block_form_matches_pyscf(get_molecule, ls):
    """(3,3|3,1) is a Tier 2 class of the full variant; the others are forced to Tier 2."""
    mol = get_molecule("organic/020_Vitamin_C", "cc-pvtz")
    by_l = {}
    for s in range(mol.nbas):
        by_l.setdefault(mol.bas_angular(s), []).append(s)
    quartet = tuple(by_l[l][i] for i, l in enumerate(ls))
    options = BLOCK if sum(ls) < 10 else fusionrcg.PRESETS["full"].replace(item_threads=64)
    assert options.plan(QuartetClass(*ls)).tier == fusionrcg.Tier.BUFFERED
    value = fusionrcg.shell_quartet_eri(mol, quartet, backend="cpu", variant=options)
    ref = reference_eri(mol, quartet)
    assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0


@needs_cxx
@pytest.mark.slow
@pytest.mark.parametrize("ls", [(4, 4, 4, 4), (4, 4, 3, 3)], ids=str)
def test_cpu_block_form_of_the_g_classes(get_molecule, ls):
    """The largest level programs ((gg|gg): 29 levels, 415 k statements, 114 k slots)."""
    mol = get_molecule("water_clusters/002", "cc-pvqz")
    by_l = {}
    for s in range(mol.nbas):
        by_l.setdefault(mol.bas_angular(s), []).append(s)
    quartet = (by_l[4][0], by_l[4][-1], by_l[ls[2]][0], by_l[ls[3]][-1])
    options = fusionrcg.PRESETS["full"].replace(item_threads=256)
    value = fusionrcg.shell_quartet_eri(mol, quartet, backend="cpu", variant=options)
    ref = reference_eri(mol, quartet)
    assert TOL.normalized(np.abs(value - ref), ref).max() <= 1.0


@needs_cxx
@pytest.mark.parametrize("centre", [0, 2])
def test_cpu_block_form_of_a_derivative_class(get_molecule, centre):
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    check_deriv(mol, (1, 0, 1, 1), centre, "cpu", n=2, variant=BLOCK)


@needs_cxx
@pytest.mark.parametrize("bank", ["shared", "global"])
def test_cuda_source_runs_as_the_cpu_kernel(get_molecule, bank):
    """The block form's CUDA source, run by the host emulation (a std::thread per CUDA thread,
    a barrier per __syncthreads) with the executor's arguments, gives the C++ kernel's
    integrals: the levels are shared out over 64 threads as on the GPU."""
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    basis = segment_basis(mol)
    cls = QuartetClass(2, 1, 1, 1)
    by_l = {l: np.flatnonzero(basis.l == l) for l in (1, 2)}
    d, p = by_l[2], by_l[1]
    rows = [[d[i % len(d)], p[i], p[i + 1], p[-1 - i]] for i in range(3)]
    quartets = np.array(rows, dtype=np.int32)
    cpu = get_kernel(cls, BLOCK, target="cpp")
    expected = CpuExecutor().integrals(cpu, quartets, basis)
    plan = BLOCK.plan(cls)
    source = lower_block(plan, "cuda", 64, bank)
    assert ("frcg_bank" in source.source) == (bank == "shared")
    kernel = emulated_kernel(source.source, source.name)
    pairs = primitive_pairs(basis, quartets, None, False)
    n = len(pairs.quartet)
    out = np.zeros(tiled_output_size(n, source.n_outputs))
    buf = np.zeros(n * source.n_slots if bank == "global" else 1)
    p = source.program
    null = np.uint64(0)
    args = (
        np.int32(n), np.ascontiguousarray(quartets[pairs.quartet]), np.ones(n), basis.xyz,
        pairs.index, basis.ao, pairs.prim, pairs.data, boys_table(), out, buf, np.int64(n),
        p.dst, p.start, p.src, p.coef, p.code, np.int32(len(p)), np.int32(basis.nao),
        null, null, null, np.int32(0),
    )  # fmt: skip
    kernel((n,), (64,), args)
    got = untile_outputs(out, source.n_outputs)[:n]
    assert np.abs(expected).max() > 1e-6
    assert np.abs(got - expected).max() <= 1e-13 * np.abs(expected).max()


@needs_cxx
def test_engine_block_form_matches_pyscf():
    """J and K with every Tier 2 launch in the block form against PySCF's get_jk."""
    mol = gto.M(
        atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59; O 2.6 0.1 0; H 3.1 0.8 0.4; H 3.1 -0.6 0.4",
        basis="cc-pvdz", verbose=0,
    )  # fmt: skip
    mf = scf.RHF(mol)
    mf.max_cycle = 4
    mf.kernel()
    dm = mf.make_rdm1()
    engine = JK(mol, backend="cpu", options="tier2-only", tol=1e-14, block_items=10**9)
    assert all(k.block is not None for k, _ in engine.classes)
    vj, vk = engine.get_jk(dm)
    vj0, vk0 = scf.hf.get_jk(mol, dm)
    assert np.abs(vj - vj0).max() <= 1e-10
    assert np.abs(vk - vk0).max() <= 1e-10


def test_bad_block_options_are_named():
    with pytest.raises(OptionsError, match="item_threads"):
        fusionrcg.PRESETS["full"].replace(item_threads=48)
    with pytest.raises(OptionsError, match="Tier 1"):
        lower_block(fusionrcg.PRESETS["full"].plan(QuartetClass(1, 0, 0, 0)), "cpp")
    with pytest.raises(OptionsError, match="shared memory"):
        block_shared_bank(50_000, CUDA, "shared")  # (4,4|4,2)'s bank
    assert not block_shared_bank(50_000, CUDA) and block_shared_bank(20_000, CUDA)
    assert not block_shared_bank(20_000, CUDA, "global")
    with pytest.raises(Exception, match="block_items"):
        JK(gto.M(atom="He 0 0 0", basis="sto-3g", verbose=0), backend="cpu", block_items=-1)


@needs_cxx
def test_engine_block_form_of_derivative_builds():
    """The derivative matrices and per-atom energy gradients with every Tier 2 derivative
    launch in the block form against PySCF's (H3+ in 6-31G, s shells, forced Tier 2)."""
    from pyscf.grad import rhf as rhf_grad

    mol = gto.M(atom="H 0 0 0; H 0 0.9 0.1; H 0.8 0.4 0", basis="6-31g", charge=1, verbose=0)
    engine = JK(mol, backend="cpu", tol=1e-14, options="tier2-only", block_items=10**9)
    library = Path(os.environ["FUSIONRCG_KERNEL_DIR"])
    before = set(library.glob("*_block-*.so"))
    dm = scf.RHF(mol).run().make_rdm1()
    vj, vk = engine.get_jk_deriv(dm)
    # the derivative classes (their tags name the centre) ran in the block form
    made = {"_".join(f.name.split("_")[1:3]) for f in set(library.glob("*_block-*.so")) - before}
    assert made == {"0000_dA", "0000_dB", "0000_dC"}
    rj, rk = rhf_grad.get_jk(mol, dm)
    assert np.abs(vj - rj).max() <= 1e-10 and np.abs(vk - rk).max() <= 1e-10
    de = engine.jk_energy_per_atom(dm, 1.0, 0.5)
    thread_form = JK(mol, backend="cpu", tol=1e-14, options="tier2-only")
    assert np.abs(de).max() > 1e-3
    assert np.abs(de - thread_form.jk_energy_per_atom(dm, 1.0, 0.5)).max() <= 1e-12


def test_apply_passes_engine_options_and_names_unknown_ones():
    mol = gto.M(atom="He 0 0 0; He 0 0 1.5", basis="6-31g", verbose=0)
    mf = fusionrcg.apply(scf.RHF(mol), "cpu", block_items=5, streams=1)
    assert mf.fusion_engine().block_items == 5
    assert abs(mf.kernel() - scf.RHF(mol).kernel()) <= 1e-9
    with pytest.raises(fusionrcg.jk.JKInputError, match="block_itmes"):
        fusionrcg.apply(scf.RHF(mol), "cpu", block_itmes=5)


def test_launch_shapes():
    """A block per item in the block form (its bank as the block's shared memory, or none
    with a global bank); otherwise an item per thread, blocks the kernel fixes where its
    slots are in shared memory (a lane per thread)."""
    from types import SimpleNamespace as Kernel

    from fusionrcg.runtime.gpu import THREADS, launch_shape

    assert launch_shape(Kernel(item_threads=256, bank_threads=256, n_slots=1000), 7) == (
        7, 256, 8000,
    )  # fmt: skip
    assert launch_shape(Kernel(item_threads=256, bank_threads=0, n_slots=99_000), 7) == (7, 256, 0)
    assert launch_shape(Kernel(item_threads=1, bank_threads=32, n_slots=10), 65) == (3, 32, 2560)
    assert launch_shape(Kernel(item_threads=1, bank_threads=0, n_slots=5), 300) == (
        -(-300 // THREADS), THREADS, 0,
    )  # fmt: skip
