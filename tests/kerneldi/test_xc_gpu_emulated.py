"""The GPU backend's host code and the CUDA source of its kernels, run on the CPU.

``kernels.cu`` is built for the host against ``emu_shim.h`` (one thread per CUDA thread), and
the GPU engine runs on it with NumPy arrays and PySCF's AO values. Checked: agreement with
PySCF's NumInt, and the same executed block pairs as the CPU backend. Problems are small (a
subset of a real grid): 256 host threads per block are slow.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from xc_cases import EXC_TOL, VXC_TOL, orbital_system, subgrid

import kerneldi
from kerneldi.numint import CPUNumInt


def cxx20() -> bool:
    """g++ with the C++20 pieces the emulation uses (std::barrier, atomic_ref<double>)."""
    if shutil.which("g++") is None:
        return False
    code = (
        "#include <barrier>\n#include <atomic>\n"
        "int main() { std::barrier<> b(1); double x = 0; "
        "std::atomic_ref<double>(x).fetch_add(1.0); b.arrive_and_wait(); }\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.cpp"
        src.write_text(code)
        res = subprocess.run(
            ["g++", "-std=c++20", "-pthread", "-o", str(Path(tmp) / "t"), str(src)],
            capture_output=True,
        )
    return res.returncode == 0


pytestmark = pytest.mark.skipif(not cxx20(), reason="needs g++ with C++20 (std::barrier)")
SLOW = pytest.mark.slow


def some_slow(*cases, fast):
    """Parameter sets, those not in ``fast`` marked slow: every kernel and every functional
    kind stays in the default run, not every pairing of them."""
    return [c if c in fast else pytest.param(*c, marks=SLOW) for c in cases]


class EmulatedNumInt(CPUNumInt):
    """The CPU NumInt API in front of the GPU engine on the emulated device."""

    def __init__(self, engine_options=None, **options):
        super().__init__(**options)
        self.engine_options = engine_options or {}

    def _new_engine(self, mol, layout, xctype):
        from kerneldi.gpu.device import EmulatedDevice
        from kerneldi.gpu.engine import make_engine

        return make_engine(
            self.engine_kind, mol, layout, self.settings, xctype, EmulatedDevice(),
            **self.engine_options,
        )  # fmt: skip


@pytest.fixture(scope="module")
def small(get_system):
    # 65 AOs: three basis blocks of 32 (five of 16), 700 points of a real grid
    mol, grids, dm = get_system("water_clusters/003", "6-31g", 0)
    return mol, subgrid(grids, 700), dm


def compare(mol, grids, dm, xc, kind, **options):
    from pyscf import dft

    ref = getattr(dft.numint.NumInt(), f"nr_{kind}")(mol, grids, xc, dm)
    emu = EmulatedNumInt(**options)
    got = getattr(emu, f"nr_{kind}")(mol, grids, xc, dm)
    cpu = kerneldi.NumInt(**{k: v for k, v in options.items() if k != "engine_options"})
    getattr(cpu, f"nr_{kind}")(mol, grids, xc, dm)
    return ref, got, emu.stats(), cpu.stats()


@pytest.mark.parametrize("xc", ["lda,vwn", "pbe", "m062x"])
def test_fp64_kernels_match_pyscf_and_execute_the_cpu_pairs(small, xc):
    mol, grids, dm = small
    (n0, e0, v0), (n, e, v), emu, cpu = compare(mol, grids, dm, xc, "rks", t_d=1e-7)
    assert abs(e - e0) <= 1e-6 and np.abs(v - v0).max() <= 1e-5  # loose t_d: pairs dropped
    for kind in ("density", "potential"):
        assert emu[f"{kind}_pair_fraction"] == cpu[f"{kind}_pair_fraction"]
    assert emu["potential_pair_fraction"] < 1.0
    (n0, e0, v0), (n, e, v), _, _ = compare(mol, grids, dm, xc, "rks")
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL


def test_unrestricted_meta_gga(get_system):
    mol, grids, dm = get_system("water_clusters/002", "def2-svp", 1, charge=1, spin=1)
    (n0, e0, v0), (n, e, v), _, _ = compare(mol, subgrid(grids, 500), dm, "m062x", "uks")
    assert np.abs(np.asarray(n) - n0).max() <= 1e-9
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL


@pytest.mark.parametrize(
    "options",
    [
        {"mma": "fp64-tc"},
        {"block_size": 16},
        {"ao_cache": "never", "engine_options": {"batch_bytes": 300_000}},
        {"engine_options": {"segment_blocks": 4}},
    ],
    ids=["fp64-tensor-cores", "d16", "recompute-per-batch", "tiles-split-over-blocks"],
)
def test_kernel_variants(small, options):
    mol, grids, dm = small
    (n0, e0, v0), (n, e, v), emu, _ = compare(mol, grids, dm, "pbe", "rks", **options)
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL
    if options.get("ao_cache") == "never":
        assert not emu["ao_cached"] and emu["grid_batches"] > 1


@pytest.mark.parametrize(
    "xc", ["pbe", pytest.param("lda,vwn", marks=SLOW), pytest.param("m062x", marks=SLOW)]
)
def test_warp_tiled_potential_matches_pyscf_and_executes_the_cpu_pairs(small, xc):
    mol, grids, dm = small
    opts = {"mma": "fp64-tc", "tiling": "warp"}
    (n0, e0, v0), (n, e, v), emu, cpu = compare(mol, grids, dm, xc, "rks", **opts)
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL
    assert emu["potential_pair_fraction"] == cpu["potential_pair_fraction"]
    # tiles split over several thread blocks (atomic updates), and a loose t_d
    split = {"engine_options": {"segment_blocks": 4}, "t_d": 1e-7}
    (n0, e0, v0), (n, e, v), emu, cpu = compare(mol, grids, dm, xc, "rks", **opts, **split)
    assert abs(e - e0) <= 1e-6 and np.abs(v - v0).max() <= 1e-5
    assert emu["potential_pair_fraction"] == cpu["potential_pair_fraction"] < 1.0


@pytest.mark.parametrize(
    ("xc", "tiles"),
    some_slow(
        *((xc, tiles) for xc in ("lda,vwn", "pbe", "m062x") for tiles in ("2x2", "4x4")),
        fast={("lda,vwn", "4x4"), ("pbe", "2x2")},
    ),
)
def test_grouped_potential_tiles_match_pyscf(small, xc, tiles):
    """Groups of 2 x 2 and 4 x 4 output tiles (three basis blocks: groups with missing rows and
    columns): PySCF's result and the CPU's products, also at a loose t_d that drops some of a
    group's pairs, split over several thread blocks (atomic updates)."""
    mol, grids, dm = small
    opts = {"mma": "fp64-tc", "potential_tiles": tiles}
    (n0, e0, v0), (n, e, v), emu, cpu = compare(mol, grids, dm, xc, "rks", **opts)
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL
    assert emu["potential_tiles"] == tiles
    assert emu["potential_pair_fraction"] == cpu["potential_pair_fraction"]
    split = {"engine_options": {"segment_blocks": 4}, "t_d": 1e-7}
    (n0, e0, v0), (n, e, v), emu, cpu = compare(mol, grids, dm, xc, "rks", **opts, **split)
    assert abs(e - e0) <= 1e-6 and np.abs(v - v0).max() <= 1e-5
    assert emu["potential_pair_fraction"] == cpu["potential_pair_fraction"] < 1.0


def test_grouped_potential_tiles_need_the_block_tiling_and_fp64_tensor_cores(small):
    from kerneldi.errors import SettingsError

    mol, grids, dm = small
    for opts in ({"mma": "fp64"}, {"mma": "fp64-tc", "tiling": "warp"}):
        with pytest.raises(SettingsError, match="potential_tiles='2x2'"):
            EmulatedNumInt(potential_tiles="2x2", **opts).nr_rks(mol, grids, "pbe", dm)
    with pytest.raises(SettingsError, match="potential_tiles"):
        kerneldi.Settings(potential_tiles="8x8")


@pytest.mark.parametrize(
    ("xc", "form"),
    some_slow(
        *((xc, form) for xc in ("lda,vwn", "pbe", "m062x") for form in ("matrix", "orbitals")),
        fast={("pbe", "matrix"), ("m062x", "orbitals")},
    ),
)
def test_async_staging_matches_pyscf_and_executes_the_cpu_pairs(xc, form):
    """Density operands copied into two alternating buffers: several products per row (both
    buffers in turn) and off-diagonal D tiles scaled by two give PySCF's result and the CPU's
    products."""
    mol, grids, dm = orbital_system("water_clusters/003", "6-31g", 0)
    grids = subgrid(grids, 700)
    opts = {"mma": "fp64-tc", "staging": "async", "density_form": form}
    (n0, e0, v0), (n, e, v), emu, cpu = compare(mol, grids, dm, xc, "rks", **opts)
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL
    assert emu["density_form"] == form
    assert emu["density_pair_fraction"] == cpu["density_pair_fraction"]


D16 = ("water_clusters/004", {"mma": "fp64", "block_size": 16})
ASYNC = ("water_clusters/007", {"mma": "fp64-tc", "staging": "async"})
WARP = ("water_clusters/007", {"mma": "fp64-tc", "tiling": "warp"})  # its own orbital kernel


@pytest.mark.parametrize(
    "case, form",
    [
        (D16, "matrix"),
        (D16, "orbitals"),
        pytest.param(ASYNC, "matrix", marks=SLOW),
        pytest.param(ASYNC, "orbitals", marks=SLOW),
        pytest.param(WARP, "orbitals", marks=SLOW),
    ],
    ids=["d16-matrix", "d16-orbitals", "async-matrix", "async-orbitals", "warp-orbitals"],
)
def test_density_rows_split_over_thread_blocks(case, form):
    """Several orbital (or basis) block rows per grid block, dealt to 2 and 8 thread blocks
    that add their shares of rho: PySCF's result (M06-2X: rho, gradient, tau); one thread block
    per grid block is the other tests' case (their single orbital block). The tensor-core
    kernels need a larger system for several rows of 32 orbitals: slow."""
    name, opts = case
    mol, grids, dm = orbital_system(name, "6-31g", 0)
    grids = subgrid(grids, 128)
    rows = mol.nelectron // 2 // opts.get("block_size", 32) + 1
    assert rows >= 2  # the orbital form has several rows to share
    for groups in (2, 8):
        options = opts | {"density_form": form, "engine_options": {"density_row_groups": groups}}
        (n0, e0, v0), (n, e, v), emu, _ = compare(mol, grids, dm, "m062x", "rks", **options)
        assert emu["density_form"] == form
        assert abs(n - n0) <= 1e-9 and abs(e - e0) <= EXC_TOL
        assert np.abs(v - v0).max() <= VXC_TOL


def test_async_staging_needs_the_fp64_tensor_cores(small):
    from kerneldi.errors import SettingsError

    mol, grids, dm = small
    with pytest.raises(SettingsError, match="staging='async'"):
        EmulatedNumInt(mma="fp64", staging="async").nr_rks(mol, grids, "pbe", dm)
    with pytest.raises(SettingsError, match="staging"):
        kerneldi.Settings(staging="prefetch")


def test_warp_tiled_potential_needs_the_fp64_tensor_cores(small):
    from kerneldi.errors import SettingsError

    mol, grids, dm = small
    with pytest.raises(SettingsError, match="tiling='warp'"):
        EmulatedNumInt(mma="fp64", tiling="warp").nr_rks(mol, grids, "pbe", dm)
    ni = EmulatedNumInt(mma="fp64-tc", tiling="warp")
    ref = ni.nr_rks(mol, grids, "pbe", dm)
    with pytest.raises(SettingsError, match="tiling='warp'"):
        ni.set_mma("fp64")
    assert ni.settings.mma == "fp64-tc"  # the failed switch changed nothing
    ni.update_settings(tiling="block")  # same blocks, the block-tile kernel
    got = ni.nr_rks(mol, grids, "pbe", dm)
    assert abs(got[1] - ref[1]) <= 1e-12 and np.abs(got[2] - ref[2]).max() <= 1e-12


def test_fp16_tensor_core_error_is_measured(small):
    mol, grids, dm = small
    (n0, e0, v0), (n, e, v), _, _ = compare(mol, grids, dm, "lda,vwn", "rks", mma="fp16-tc")
    # FP16 inputs carry 11 significant bits: the error is real but bounded
    rel = abs(e - e0) / abs(e0)
    assert 1e-9 < rel < 1e-2
    assert np.abs(v - v0).max() < 1e-1 * np.abs(v0).max()


def test_phase_seconds_of_a_recomputing_engine(small):
    mol, grids, dm = small
    emu = EmulatedNumInt(ao_cache="never")
    first = emu.nr_rks(mol, grids, "pbe", dm)
    phases = emu.phase_seconds(lambda: emu.nr_rks(mol, grids, "pbe", dm))
    assert set(phases) == {"ao", "density", "potential", "call"}
    assert sum(v for k, v in phases.items() if k != "call") <= phases["call"]
    again = emu.nr_rks(mol, grids, "pbe", dm)  # the timers are off again, results unchanged
    assert again[1] == first[1] and not emu._engine.timer.enabled


def test_batches_evaluate_only_the_shells_of_their_kept_blocks(small):
    """A grid batch evaluates the shells of its kept basis blocks: the gathered blocks equal
    those gathered from every AO, also for a subset that leaves most shells out."""
    from kerneldi.gpu.device import EmulatedDevice
    from kerneldi.gpu.engine import GPUBlockEngine
    from kerneldi.layout import make_layout
    from kerneldi.settings import Settings

    mol, grids, _ = small
    settings = Settings(ao_cache="never")
    layout = make_layout(mol, grids.coords, grids.weights, None, settings)
    d = layout.d
    # four grid blocks per batch
    eng = GPUBlockEngine(mol, layout, settings, 1, EmulatedDevice(), batch_bytes=4 * 4 * 65 * d * 8)
    assert len(eng.batches) > 1
    for g0, g1 in eng.batches:
        b0, b1 = eng.col_ptr_host[g0], eng.col_ptr_host[g1]
        full = eng._gather(eng._ao(g0, g1), g0, b0, np.empty((b1 - b0, 4, d, d)), eng.rows)
        assert np.array_equal(eng._batch_data(g0, g1), full)
    # one basis block's rows: whole shells, fewer than all
    sub = eng.ao.subset(eng.rows_host[:d])
    assert d <= len(sub.rows) < mol.nao
    ao = eng.ao(grids.coords[:50], 1)
    assert np.array_equal(eng.ao(grids.coords[:50], 1, sub), ao[:, sub.rows])
    assert np.array_equal(sub.position[sub.rows], np.arange(len(sub.rows)))


@pytest.mark.parametrize(
    ("tensor_cores", "block_size", "mode", "staging"),
    [(True, 32, "fp64-tc", "async"), (False, 32, "fp64", "sync"), (True, 16, "fp64", "sync")],
)
def test_auto_product_mode(small, tensor_cores, block_size, mode, staging):
    """The default mode: FP64 tensor cores where the GPU has them and d = 32, there with the
    asynchronous density staging."""
    from kerneldi.gpu.device import EmulatedDevice
    from kerneldi.gpu.engine import GPUBlockEngine
    from kerneldi.layout import make_layout
    from kerneldi.settings import Settings

    mol, grids, _ = small
    settings = Settings(block_size=block_size)
    assert settings.mma == settings.staging == "auto"
    layout = make_layout(mol, grids.coords, grids.weights, None, settings)
    eng = GPUBlockEngine(mol, layout, settings, 0, EmulatedDevice(tensor_cores=tensor_cores))
    assert eng.settings.mma == mode and eng.stats()["mma"] == mode
    assert eng.settings.staging == staging and eng.stats()["staging"] == staging


def test_dense_baseline_on_the_emulated_device(small):
    mol, grids, dm = small
    (n0, e0, v0), (n, e, v), _, _ = compare(mol, grids, dm, "m062x", "rks", engine="dense")
    assert abs(e - e0) <= EXC_TOL and np.abs(v - v0).max() <= VXC_TOL


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_every_kernel_instantiation_compiles_for_sm90():
    from kerneldi.gpu import kernels

    report = kernels.nvcc_check("sm_90")
    expected = {
        name
        for mma, code in kernels.MMA_CODES.items()
        for d in ((16, 32, 64) if mma == "fp64" else (32,))
        for name in kernels.names(d, code)
    }
    assert report.count("Compiling entry function") == len(expected)


def test_every_kernel_instantiation_has_its_shared_memory_size():
    """The launch sizes of every instantiation (the warp-tiled kernels' names start like the
    block-tiled ones), within the 227 KB a Hopper thread block may take."""
    from kerneldi.gpu import kernels

    for mma, code in kernels.MMA_CODES.items():
        for d in (16, 32, 64) if mma == "fp64" else (32,):
            for name in kernels.names(d, code):
                smem = kernels.smem_bytes(name, d, code)
                assert 0 <= smem <= 227 * 1024, name
                if name.startswith("kd_density_orb_warp"):
                    assert smem == kernels.DENSITY_WARP_SMEM
                elif name.startswith("kd_potential_warp"):
                    assert smem == kernels.POTENTIAL_WARP_SMEM
                elif name.startswith(("kd_density", "kd_potential")):
                    assert smem > 0, name


@pytest.mark.parametrize("engine", ["block", "dense"])
@pytest.mark.parametrize(("xc", "kind"), [("lda,vwn", "rks"), ("m062x", "rks"), ("m062x", "uks")])
def test_batch_by_batch_pass_matches_pyscf(get_system, engine, xc, kind):
    """AO values not cached: each grid batch runs densities, functional and potentials in turn
    (its AO values made once per call), for both spins, on several batches."""
    mol, grids, dm = get_system("water_clusters/002", "def2-svp", 1, charge=1, spin=1)
    grids = subgrid(grids, 500)
    if kind == "rks":
        dm = dm[0] + dm[1]
    options = {"ao_cache": "never", "engine": engine, "engine_options": {"batch_bytes": 60_000}}
    (n0, e0, v0), (n, e, v), emu, _ = compare(mol, grids, dm, xc, kind, **options)
    assert np.abs(np.asarray(n) - np.asarray(n0)).max() <= 1e-9
    assert abs(e - e0) <= EXC_TOL and np.abs(np.asarray(v) - np.asarray(v0)).max() <= VXC_TOL
    assert not emu["ao_cached"] and (engine == "dense" or emu["grid_batches"] > 1)


def test_part_of_the_ao_blocks_stays_cached(small):
    """Too little memory for every AO block: those of the first batches stay on the device, the
    rest are evaluated per call, and the results equal those of an engine that caches none."""
    from kerneldi.gpu.device import EmulatedDevice
    from kerneldi.gpu.engine import GPUBlockEngine
    from kerneldi.layout import make_layout
    from kerneldi.settings import Settings

    mol, grids, dm = small
    settings = Settings(gpu_memory_fraction=0.5)
    layout = make_layout(mol, grids.coords, grids.weights, None, settings)
    d = layout.d
    batch = 4 * 4 * 65 * d * 8  # four grid blocks per batch
    every = GPUBlockEngine(mol, layout, settings, 1, EmulatedDevice(), batch_bytes=batch)
    nbytes = every.pattern.nblk * 5 * d * d * 8  # what the whole cache would take
    part = GPUBlockEngine(
        mol, layout, settings, 1, EmulatedDevice(memory_bytes=nbytes), batch_bytes=batch
    )
    held = part.stats()["ao_cached_fraction"]
    assert every.stats()["ao_cached_fraction"] == 1.0 and 0 < held < 1
    assert not part.stats()["ao_cached"] and len(part.batches) > 1
    cached = next(iter(part.batch_cache))
    assert part._batch_data(*cached) is part._batch_data(*cached)  # kept, not evaluated again
    ref = every.density(dm, "GGA"), every.potential(np.ones((4, layout.npts)), "GGA")
    got = part.density(dm, "GGA"), part.potential(np.ones((4, layout.npts)), "GGA")
    assert np.allclose(got[0], ref[0], rtol=0, atol=1e-14)
    assert np.allclose(got[1], ref[1], rtol=0, atol=1e-12)


def test_auto_potential_tiles_group_where_most_blocks_are_kept():
    from kerneldi.gpu import kernels

    tc = kerneldi.Settings(mma="fp64-tc")  # the support basis order
    assert kernels.potential_tiles(tc, 0.81) == "2x2"
    assert kernels.potential_tiles(tc, 0.25) == "2x2"
    assert kernels.potential_tiles(tc, 0.1) == "1x1"
    paper = kerneldi.Settings(mma="fp64-tc", basis_order="cluster")
    assert kernels.potential_tiles(paper, 0.81) == "2x2"
    assert kernels.potential_tiles(paper, 0.35) == "1x1"
    for other in (kerneldi.Settings(mma="fp64"), kerneldi.Settings(mma="fp64-tc", tiling="warp")):
        assert kernels.potential_tiles(other, 0.81) == "1x1"
    assert kernels.potential_tiles(kerneldi.Settings(potential_tiles="4x4"), 0.1) == "4x4"


def test_a_grouped_engine_is_released_with_its_numint(small):
    """Nothing outside the engine holds it after a grouped potential (its blocks are the
    device's memory)."""
    import gc
    import weakref

    mol, grids, dm = small
    ni = EmulatedNumInt(mma="fp64-tc", potential_tiles="2x2")
    ni.nr_rks(mol, grids, "lda,vwn", dm)
    engine = weakref.ref(ni._engine)
    del ni
    gc.collect()
    assert engine() is None


@pytest.mark.parametrize(
    ("engine_options", "ao_cache"),
    [({"task_blocks": 4}, "always"), ({"batch_bytes": 270_000}, "never")],  # 4 blocks a batch
    ids=["cached", "batched"],
)
def test_grid_tasks_of_a_partition_add_up_to_the_whole_grid(small, engine_options, ao_cache):
    """The tasks of a distributed XC build (``kerneldi.tasks``): integrals over a partition of
    the tasks, drawn as a collection or lazily, sum to the whole grid's (1e-12)."""
    mol, grids, dm = small
    emu = EmulatedNumInt(engine_options=engine_options, ao_cache=ao_cache)
    n0, e0, v0 = emu.nr_rks(mol, grids, "pbe", dm)
    tasks = emu.xc_tasks(mol, grids, "pbe")
    assert len(tasks) > 2
    parts = []
    for k, share in enumerate((tasks[0::2], tasks[1::2])):
        chosen = [t.index for t in share]
        emu.select_tasks(chosen if k == 0 else iter(chosen))
        parts.append(emu.nr_rks(mol, grids, "pbe", dm))
    emu.select_tasks(None)
    assert abs(sum(p[0] for p in parts) - n0) < 1e-12
    assert abs(sum(p[1] for p in parts) - e0) < 1e-12
    assert np.abs(sum(p[2] for p in parts) - v0).max() < 1e-12
