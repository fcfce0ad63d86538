"""Benchmark of the XC engine: one command on the GPU machine, JSON into a directory.

    python -m qcbench.xc.bench --out DIR [--budget SECONDS] [--sections a,b,...] [--modes m,...]
                             [--molecules name,...] [--skip-recompute] [--resume]
    python -m qcbench.xc.bench --merge DIR PART [PART ...]

Sections, in this order (every record is written as soon as it is measured; what the budget
leaves out is recorded as skipped):

  accuracy  GPU backend (FP64, FP64 tensor cores, FP16 tensor cores) against PySCF's NumInt on
            the CPU and GPU4PySCF's nr_rks, on the same grid, LDA/PBE/M06-2X, RKS and UKS,
            with converged densities
  scf       M06-2X SCF energy of GPU4PySCF's RKS with and without the engine
  sweep     KerneLDI Fig. 4: EXC energy time against size (water clusters, glycine chains,
            def2-SVP, grid level 4): ours, EXC-cuBLAS, GPU4PySCF nr_rks; then def2-TZVP at
            >= 100 atoms (file tzvp.json) against GPU4PySCF nr_rks
  madft     KerneLDI Fig. 2: speedup over EXC-cuBLAS against the energy difference
  gradient  KerneLDI Fig. 4b: the XC nuclear gradient (no grid response, M06-2X): ours, the
            dense path (EXC-cuBLAS products on the same code) and GPU4PySCF's
            ``grad.rks.get_exc``, on GRADIENT's molecules (def2-SVP, grid level 4)
  madft_gradient
            KerneLDI Fig. 2 (right): the same on the MADFT molecules, def2-TZVP

Timings: a warm-up call, then the median of synchronized wall times; the engine's setup
(orders, blocks, AO cache) is reported apart. Densities come from SCF cycles (converged for
the small systems, two PBE cycles for the large ones), never from an initial guess.
``--resume`` continues a run cut short: molecules already measured in DIR are kept, those
recorded as skipped are measured now. ``--molecules`` restricts the size sections to some
molecules, so that parts of a run can go to several GPUs at once; ``--merge`` joins the parts'
directories into DIR (a molecule's measured record wins over a skipped one).
``compare_sizes`` also runs on the CPU (``Env("cpu")``: ours against EXC-OpenBLAS and PySCF).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from kerneldi.grad import per_atom_gradient, xc_gradient
from kerneldi.numint import KEEPS_BLOCKS, NumInt
from kerneldi.settings import Settings
from qcbench.molecules import load, read_xyz, resolve
from qcbench.provenance import provenance

FUNCTIONALS = ("lda,vwn", "pbe", "m062x")
MMA = ("fp64", "fp64-tc", "fp16-tc")
# ours with one setting changed (bench --variants), and the record each writes
VARIANT_RECORDS = {
    "warp": "ours_fp64-tc_warp",
    "sync": "ours_fp64-tc_sync",
    "1x1": "ours_fp64-tc_1x1",
    "2x2": "ours_fp64-tc_2x2",
    "4x4": "ours_fp64-tc_4x4",
    "matrix-form": "ours_matrix_form",
    "unrotated": "ours_unrotated_orbitals",
    "cluster-order": "ours_cluster_order",
}
VARIANTS = tuple(VARIANT_RECORDS)
# the sweep in priority order: the ends of the size range first (the def2-TZVP system runs
# after the first two)
SWEEP = (
    "water_clusters/005",
    "gly/gly60",
    "water_clusters/010",
    "gly/gly30",
    "water_clusters/007",
    "water_clusters/008",
    "gly/gly40",
    "water_clusters/009",
    "gly/gly50",
    "water_clusters/006",
)
TZVP = ("organic/113_Taxol", "madft/130282525")
MADFT = (
    "madft/ethanol",
    "madft/rev_xx11177",
    "madft/rev_xx11190",
    "madft/c60a",
    "madft/rev_xx11165",
    "madft/123584765",
    "madft/10417264",
    "madft/11331174",
    "madft/101281668",
    "madft/10770743",
    "madft/167142588",
    "madft/143801180",
    "madft/16690938",
    "madft/130282525",
)
# the gradient section's molecules (KerneLDI Fig. 4b: def2-SVP, grid level 4), smallest first,
# 60 to 642 atoms
GRADIENT = (
    "water_clusters/005", "gly/gly30", "water_clusters/010", "gly/gly60", "proteins/1CRN",
)  # fmt: skip
# what the paper's text states about its single-V100 runs (Sec. IV), for the plots
PAPER_V100 = {
    "gpu": "Tesla V100-PCIE-16GB, CUDA 12.2, FP16-input / FP32-accumulate tensor cores",
    "max_speedup_over_exc_cublas": 10.0,
    "energy_mae_range_hartree": [1e-11, 1e-9],
    "crossover_atoms": [200, 300],
    "scf_speedup_over_gpu4pyscf_def2tzvp": {
        "porphy (85)": 2.70,
        "taxol (110)": 2.47,
        "chignolin (166)": 1.52,
        "trapcage (272)": 1.65,
        "olestra (453)": 1.89,
        "crambin (642)": 2.57,
    },
}


class Env:
    """Where a benchmark runs: the GPU (CuPy, GPU4PySCF) or the CPU (NumPy, PySCF)."""

    def __init__(
        self,
        device: str,
        modes: tuple[str, ...] = MMA,
        recompute: bool = True,
        molecules: frozenset[str] | None = None,
        variants: tuple[str, ...] = VARIANTS,
    ):
        self.device = device
        self.variants = variants  # the one-setting variants of ours to time as well
        self.recompute = recompute
        self.molecules = molecules  # the size sections' molecules to run (None: all)
        if device == "gpu":
            import cupy
            from gpu4pyscf import dft as scf_dft
            from gpu4pyscf.dft import numint as reference

            self.cupy = cupy
        else:
            from pyscf import dft as scf_dft
            from pyscf.dft import numint as reference

            self.cupy = None
        self.dft, self.reference = scf_dft, reference
        self.modes = modes if device == "gpu" else ("fp64",)
        self.baseline = "exc_cublas" if device == "gpu" else "exc_openblas"
        self.library = "gpu4pyscf" if device == "gpu" else "pyscf"

    def numint(self, **options):
        return NumInt(backend=self.device, **options)

    def sync(self) -> None:
        if self.cupy is not None:
            self.cupy.cuda.Device().synchronize()

    def free(self) -> None:
        if self.cupy is not None:
            self.sync()
            self.cupy.get_default_memory_pool().free_all_blocks()

    def memory_fraction(self) -> Settings:
        # benchmarks run alone on the GPU: let the AO cache take most of it
        return Settings(gpu_memory_fraction=0.85) if self.device == "gpu" else Settings()


class Budget:
    def __init__(self, seconds: float):
        self.end = time.perf_counter() + seconds

    def left(self) -> float:
        return self.end - time.perf_counter()


class Out:
    """Result files under the output directory, rewritten after every record; with ``resume``
    the files already there are read first."""

    def __init__(self, root: Path, resume: bool = False):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.data: dict[str, list] = {}
        if resume:
            for path in root.glob("*.json"):
                if isinstance(obj := json.loads(path.read_text()), list):
                    self.data[path.stem] = obj

    def add(self, section: str, record: dict) -> None:
        self.data.setdefault(section, []).append(record)
        self.write(section, self.data[section])

    def measured(self, section: str, molecule: str) -> bool:
        """Whether ``molecule`` has a record in ``section`` that is neither skipped nor failed."""
        return _measured(self.data.get(section, []), molecule)

    def put(self, section: str, record: dict) -> None:
        """Add ``record``, replacing an earlier record of the same molecule."""
        rows = self.data.setdefault(section, [])
        rows[:] = [r for r in rows if r.get("molecule") != record.get("molecule")]
        self.add(section, record)

    def write(self, name: str, obj) -> None:
        path = self.root / f"{name}.json"
        path.write_text(json.dumps(obj, indent=2, default=_jsonable) + "\n")


def _measured(rows: list[dict], molecule: str) -> bool:
    return any(
        r.get("molecule") == molecule and "skipped" not in r and "error" not in r for r in rows
    )


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def log(*args) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def natoms(name: str) -> int:
    return len(read_xyz(resolve(name)))


def timed(env: Env, fn, reps: int = 3, warmup: int = 1) -> dict:
    """Median of ``reps`` synchronized calls after ``warmup`` calls, and the last result."""
    out = None
    for _ in range(warmup):
        out = fn()
    env.sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        env.sync()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "times_s": times, "result": out}


def errors(got, ref) -> dict:
    """|dN|, |dExc| and max |dVxc| of (nelec, exc, vmat) against a reference."""
    n, e, v = got
    n0, e0, v0 = ref
    return {
        "d_nelec": float(np.max(np.abs(np.asarray(n, dtype=float) - np.asarray(n0, dtype=float)))),
        "d_exc": float(abs(e - e0)),
        "max_d_vxc": float(np.abs(_host(v) - _host(v0)).max()),
    }


def pyscf_grid(mol, grids):
    """A PySCF Grids holding exactly the points of ``grids`` (GPU4PySCF's or PySCF's)."""
    from pyscf.dft import gen_grid

    g = gen_grid.Grids(mol)
    g.coords, g.weights = _host(grids.coords), _host(grids.weights)
    atoms = getattr(grids, "atm_idx", None)
    g.atm_idx = None if atoms is None else _host(atoms)
    return g


def device_info(env: Env) -> dict:
    cupy = env.cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    _, total = cupy.cuda.runtime.memGetInfo()
    name = props["name"]
    return {
        "gpu": name.decode() if isinstance(name, bytes) else name,
        "compute_capability": f"{props['major']}.{props['minor']}",
        "sms": props["multiProcessorCount"],
        "memory_gib": total / 2**30,
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
    }


def dgemm_peak(env: Env) -> float:
    """FP64 TFLOP/s of an 8192^3 cuBLAS DGEMM: the dense baseline's ceiling on this GPU."""
    n = 8192
    a = env.cupy.random.random((n, n))
    b = env.cupy.random.random((n, n))
    seconds = timed(env, lambda: a @ b)["median_s"]
    return 2 * n**3 / seconds / 1e12


# -- the size comparison shared by the sweep, the def2-TZVP runs and Fig. 2 -----------------


def realistic(env: Env, mol, level: int):
    """A density from two PBE cycles (J from GPU4PySCF's J engine on the GPU, density fitting
    on the CPU), and the grid those cycles pruned."""
    mf = env.dft.RKS(mol, xc="pbe")
    if env.device == "cpu":
        mf = mf.density_fit()
    mf.grids.level = level
    mf.max_cycle = 2
    mf.verbose = 0
    t0 = time.perf_counter()
    mf.kernel()
    dm = mf.make_rdm1()
    env.sync()
    return dm, mf.grids, time.perf_counter() - t0


def _failed(err: Exception) -> dict:
    return {"error": repr(err), "traceback": traceback.format_exc()}


def compare_sizes(
    env: Env, name: str, basis: str, level: int, budget: Budget, dense: bool, xc: str = "m062x"
) -> dict:
    """Ours (every product mode on cached AO blocks, and recomputed per batch), the dense
    baseline and the library's nr_rks on one molecule: same grid, density and functional.
    A failing method is recorded as such and the others are still measured."""
    mol = load(name, basis)
    dm, grids, t_density = realistic(env, mol, level)
    rec = {
        "molecule": name,
        "natm": mol.natm,
        "nao": mol.nao,
        "basis": basis,
        "grid_level": level,
        "npoints": int(grids.size),
        "xc": xc,
        "density": "2 PBE cycles" + (" (density fitting)" if env.device == "cpu" else ""),
        "density_s": t_density,
    }
    # the library as an SCF runs it: one NumInt for every call, on a freed memory pool, five
    # calls (one call's time depends on the state of the pool and of the NumInt)
    env.free()
    library_ni = env.reference.NumInt()
    lib = timed(env, lambda: library_ni.nr_rks(mol, grids, xc, dm), reps=5)
    library_ni = None
    env.free()
    rec[env.library] = {"median_s": lib["median_s"], "times_s": lib["times_s"]}
    log(name, env.library, round(lib["median_s"], 4))
    ref = lib.pop("result")

    exact = None  # (mode, result) of the first FP64 mode, for its error against the dense run
    try:
        ni = env.numint(settings=env.memory_fraction())
        env.sync()
        t0 = time.perf_counter()
        ni.nr_rks(mol, grids, xc, dm)
        env.sync()
        rec["ours_first_call_s"] = time.perf_counter() - t0
        rec["ours_stats"] = ni.stats()
        for mma in env.modes:
            try:
                ni.set_mma(mma)
                t = timed(env, lambda ni=ni: ni.nr_rks(mol, grids, xc, dm))
            except Exception as err:
                rec[f"ours_{mma}"] = _failed(err)
                log(name, mma, "error", repr(err))
                continue
            rec[f"ours_{mma}"] = {
                "median_s": t["median_s"],
                "times_s": t["times_s"],
                f"vs_{env.library}": errors(t["result"], ref),
                "pair_fractions": {
                    k: v
                    for k, v in ni.stats().items()
                    if k.endswith("pair_fraction")
                    or k in ("density_form", "staging", "potential_tiles")
                },
            }
            if mma in ("fp64", "fp64-tc") and exact is None:
                exact = (mma, t["result"])
            log(name, mma, round(t["median_s"], 4), rec[f"ours_{mma}"][f"vs_{env.library}"])
        # where the time goes, in the last mode: AO values (when recomputed), density, potential
        phases = ni.phase_seconds(lambda ni=ni: ni.nr_rks(mol, grids, xc, dm))
        if phases:  # engines with phase timers (the GPU's)
            rec["ours_phases_s"] = {"mode": mma} | phases
            log(name, "phases", rec["ours_phases_s"])
        orbitals = ni.stats().get("density_form") == "orbitals"
        # the same call with one setting changed: what the option or default buys here
        variants = {
            # the warp-tiled kernels (potential, orbital density)
            "warp": {"mma": "fp64-tc", "tiling": "warp"} if "fp64-tc" in env.modes else None,
            # the density kernels staging their operands through registers, not asynchronously
            "sync": {"mma": "fp64-tc", "staging": "sync"} if "fp64-tc" in env.modes else None,
            # the potential's output tiles per thread block fixed, not chosen on the kept blocks
            **{
                tiles: {"mma": "fp64-tc", "potential_tiles": tiles}
                if "fp64-tc" in env.modes
                else None
                for tiles in ("1x1", "2x2", "4x4")
            },
            # the paper's R = D Phi where the orbitals ran
            "matrix-form": {"density_form": "matrix"} if orbitals else None,
            # the orbitals as the SCF gave them, not rotated into Cholesky orbitals
            "unrotated": {"orbital_rotation": "none"}
            if orbitals and ni.settings.orbital_rotation == "cholesky"
            else None,
            # the paper's basis order (clustered overlap rows): new blocks, built on the call
            # that the timing's warm-up makes
            "cluster-order": {"basis_order": "cluster"}
            if ni.settings.basis_order != "cluster"
            else None,
        }
        kept = KEEPS_BLOCKS - {"mma"} | {"basis_order"}
        base = {"mma": mma} | {k: getattr(ni.settings, k) for k in kept}
        for variant, changes in variants.items():
            if changes is None or variant not in env.variants:
                continue
            key = VARIANT_RECORDS[variant]
            ni.update_settings(**(base | changes))
            t = timed(env, lambda ni=ni: ni.nr_rks(mol, grids, xc, dm))
            rec[key] = {
                "mode": ni.settings.mma,
                "median_s": t["median_s"],
                f"vs_{env.library}": errors(t["result"], ref),
                "retained_fraction": ni.stats().get("retained_fraction"),
                "density_pair_fraction": ni.stats().get("density_pair_fraction"),
                "potential_pair_fraction": ni.stats().get("potential_pair_fraction"),
                "phases_s": ni.phase_seconds(lambda ni=ni: ni.nr_rks(mol, grids, xc, dm)),
            }
            log(name, key, rec[key])
        ni.update_settings(**base)
    except Exception as err:  # the engine could not be built
        rec["ours_error"] = _failed(err)
        log(name, "ours", "error", repr(err))
    ni = t = None
    env.free()

    if env.recompute and budget.left() > 60:
        try:
            ni = env.numint(ao_cache="never")
            t = timed(env, lambda: ni.nr_rks(mol, grids, xc, dm), reps=2)
            rec["ours_fp64_recompute"] = {
                "median_s": t["median_s"],
                "times_s": t["times_s"],
                "grid_batches": ni.stats().get("grid_batches"),
            }
            log(name, "recompute", round(t["median_s"], 4))
        except Exception as err:
            rec["ours_fp64_recompute"] = _failed(err)
        ni = t = None
        env.free()

    rec[env.baseline] = {"skipped": "budget"}
    if dense:
        try:
            ni = env.numint(engine="dense", settings=env.memory_fraction())
            # the largest dense runs take tens of seconds: one run (its kernels are loaded)
            big = mol.nao**2 * grids.size > 2e13
            runs = {"reps": 1, "warmup": 0} if big else {"reps": 3, "warmup": 1}
            t = timed(env, lambda: ni.nr_rks(mol, grids, xc, dm), **runs)
            rec[env.baseline] = {
                "median_s": t["median_s"],
                "times_s": t["times_s"],
                "ao_cached": ni.stats()["ao_cached"],
            }
            if exact is not None:
                # the dense products skip nothing: this is our screening error at this size
                mode, result = exact
                rec[f"ours_{mode}"][f"vs_{env.baseline}"] = errors(result, t["result"])
            log(name, env.baseline, round(t["median_s"], 4))
        except Exception as err:
            rec[env.baseline] = _failed(err)
        ni = t = None
        env.free()
    for mma in env.modes:
        ours = rec.get(f"ours_{mma}", {})
        if "median_s" not in ours:
            continue
        ours[f"speedup_vs_{env.library}"] = rec[env.library]["median_s"] / ours["median_s"]
        if "median_s" in rec[env.baseline]:
            ours[f"speedup_vs_{env.baseline}"] = rec[env.baseline]["median_s"] / ours["median_s"]
    return rec


def compare_gradient(
    env: Env, name: str, basis: str, level: int, dense: bool, xc: str = "m062x"
) -> dict:
    """The XC part of the nuclear gradient of one molecule ((natm, 3), Eh/Bohr, no grid
    response) by the library, ours and the dense path: same grid, density and functional;
    max |d grad| of ours and the dense path against the library. The library's is PySCF's
    ``grad.rks.get_vxc`` summed per atom as ``grad_elec`` does, on the GPU GPU4PySCF's
    ``grad.rks.get_exc`` (which returns the per-atom sum, halved). A failing method is
    recorded as such and the others are still measured."""
    mol = load(name, basis)
    dm, grids, t_density = realistic(env, mol, level)
    rec = {"molecule": name, "natm": mol.natm, "nao": mol.nao, "basis": basis, "xc": xc,
           "grid_level": level, "npoints": int(grids.size), "density_s": t_density}  # fmt: skip
    env.free()
    library_ni = env.reference.NumInt()
    lib = timed(env, lambda: _library_xc_gradient(env, library_ni, mol, grids, xc, dm), reps=3)
    ref = _host(lib.pop("result"))
    rec[env.library] = lib
    log(name, "gradient", env.library, round(lib["median_s"], 4))
    library_ni = None
    env.free()
    methods = [("ours", {})] + ([(env.baseline, {"engine": "dense"})] if dense else [])
    for label, options in methods:
        try:
            ni = env.numint(settings=env.memory_fraction(), **options)
            t0 = time.perf_counter()
            xc_gradient(ni, mol, grids, xc, dm)
            env.sync()
            first = time.perf_counter() - t0
            t = timed(env, lambda ni=ni: xc_gradient(ni, mol, grids, xc, dm), warmup=0)
            got = _host(t.pop("result"))
            stats = ni.grad_stats()
            rec[label] = t | {
                "first_call_s": first,
                "setup_s": stats.get("setup_seconds"),
                "max_d_grad": float(np.abs(got - ref).max()),
                "stats": stats,
            }
        except Exception as err:
            rec[label] = _failed(err)
        log(name, "gradient", label, {k: v for k, v in rec[label].items() if k != "traceback"})
        ni = None
        env.free()
    return rec


def _library_xc_gradient(env: Env, ni, mol, grids, xc: str, dm) -> np.ndarray:
    if env.device == "gpu":
        from gpu4pyscf.grad import rks as library_grad

        return 2 * _host(library_grad.get_exc(ni, mol, grids, xc, dm)[1])
    from pyscf.grad import rks as library_grad

    return per_atom_gradient(mol, library_grad.get_vxc(ni, mol, grids, xc, dm)[1], dm)


def run_gradients(env: Env, out: Out, budget: Budget, section: str, names, basis: str) -> None:
    """compare_gradient over molecules (grid level 4) while the budget lasts; the dense path
    where twice the estimate is left."""
    for name in names:
        if env.molecules is not None and name not in env.molecules:
            continue
        if out.measured(section, name):
            continue
        est = 30.0 + 0.3 * natoms(name)
        if budget.left() < est:
            out.put(section, {"molecule": name, "natm": natoms(name), "skipped": "budget"})
            continue
        t0 = time.perf_counter()
        try:
            rec = compare_gradient(env, name, basis, 4, dense=budget.left() > 2 * est)
        except Exception as err:
            rec = {"molecule": name, "natm": natoms(name), "error": repr(err)}
            rec["traceback"] = traceback.format_exc()
        env.free()
        rec["wall_s"] = time.perf_counter() - t0
        out.put(section, rec)


def section_gradient(env: Env, out: Out, budget: Budget) -> None:
    run_gradients(env, out, budget, "gradient", GRADIENT, "def2-svp")


def section_madft_gradient(env: Env, out: Out, budget: Budget) -> None:
    run_gradients(env, out, budget, "madft_gradient", MADFT, "def2-tzvp")


def run_sizes(
    env: Env, out: Out, budget: Budget, section: str, names, basis: str, level: int, reserve: float
) -> None:
    """compare_sizes over molecules while the budget (less ``reserve``) lasts."""
    last = None
    for name in names:
        if env.molecules is not None and name not in env.molecules:
            continue
        if out.measured(section, name):
            log(section, name, "measured before (resume)")
            continue
        natm = natoms(name)
        # expected wall time (a rough bound for a current GPU), refined by the last system
        # measured (about linear in the atoms)
        est = 20.0 + 0.2 * natm
        if last is not None and "error" not in last:
            est = max(est, last["wall_s"] * natm / last["natm"])
        if budget.left() - reserve < est:
            out.put(section, {"molecule": name, "natm": natm, "skipped": "budget"})
            log(section, name, "skipped (budget)")
            continue
        t0 = time.perf_counter()
        try:
            # the dense baseline costs up to ~30 s at 400 atoms
            dense = budget.left() - reserve > est + 30.0
            rec = compare_sizes(env, name, basis, level, budget, dense)
        except Exception as err:  # record it and go on: one failure must not lose the run
            rec = {"molecule": name, "natm": natm, "basis": basis, "error": repr(err)}
            rec["traceback"] = traceback.format_exc()
            log(section, name, "error", repr(err))
        env.free()
        rec["wall_s"] = time.perf_counter() - t0
        last = rec
        out.put(section, rec)


# -- sections -------------------------------------------------------------------------------


def converged(env: Env, mol, xc: str, level: int, kind: str):
    mf = getattr(env.dft, kind)(mol, xc=xc)
    mf.grids.level = level
    mf.conv_tol = 1e-10
    mf.verbose = 0
    mf.kernel()
    return mf


def section_accuracy(env: Env, out: Out, budget: Budget) -> None:
    from pyscf.dft import numint as pyscf_numint

    cases = [
        ("water_clusters/003", "def2-svp", 3, "RKS", 0, 0),
        ("organic/020_Vitamin_C", "def2-svp", 3, "RKS", 0, 0),
        ("water_clusters/003", "def2-svp", 3, "UKS", 1, 1),
    ]
    for name, basis, level, kind, charge, spin in cases:
        if budget.left() < 30:
            out.add("accuracy", {"molecule": name, "kind": kind, "skipped": "budget"})
            continue
        mol = load(name, basis)
        mol.charge, mol.spin = charge, spin
        mol.build()
        mf = converged(env, mol, "m062x", level, kind)
        dm, grids = mf.make_rdm1(), mf.grids
        same_grid = pyscf_grid(mol, grids)
        method = f"nr_{kind.lower()}"
        for xc in FUNCTIONALS:
            ref = getattr(pyscf_numint.NumInt(), method)(mol, same_grid, xc, _host(dm))
            lib = getattr(env.reference.NumInt(), method)(mol, grids, xc, dm)
            ni = env.numint()
            for mma in env.modes:
                try:
                    ni.set_mma(mma)
                    got = getattr(ni, method)(mol, grids, xc, dm)
                except Exception as err:
                    out.add("accuracy", {"molecule": name, "kind": kind, "xc": xc, "mma": mma,
                                         **_failed(err)})  # fmt: skip
                    log("accuracy", name, kind, xc, mma, "error", repr(err))
                    continue
                rec = {
                    "molecule": name,
                    "natm": mol.natm,
                    "nao": mol.nao,
                    "basis": basis,
                    "grid_level": level,
                    "npoints": int(grids.size),
                    "kind": kind,
                    "xc": xc,
                    "mma": mma,
                    "vs_pyscf": errors(got, ref),
                    f"vs_{env.library}": errors(got, lib),
                    f"{env.library}_vs_pyscf": errors(lib, ref),
                    "stats": ni.stats(),
                }
                e = rec["vs_pyscf"]
                rec["pass"] = e["d_exc"] <= 1e-9 and e["max_d_vxc"] <= 1e-8
                out.add("accuracy", rec)
                log("accuracy", name, kind, xc, mma, e)
            del ni
            env.free()


def _scf(env: Env, mol, level: int, numint) -> dict:
    """An M06-2X SCF with ``numint`` (the library's own when None), nr_rks calls timed."""
    mf = env.dft.RKS(mol, xc="m062x")
    mf.grids.level = level
    mf.conv_tol = 1e-10
    mf.verbose = 0
    if numint is not None:
        mf._numint = numint
    calls: list[float] = []
    inner = mf._numint.nr_rks

    def timed_nr_rks(*args, **kwargs):
        env.sync()
        t0 = time.perf_counter()
        res = inner(*args, **kwargs)
        env.sync()
        calls.append(time.perf_counter() - t0)
        return res

    mf._numint.nr_rks = timed_nr_rks
    t0 = time.perf_counter()
    energy = mf.kernel()
    env.sync()
    out = {
        "energy": float(energy),
        "converged": bool(mf.converged),
        "cycles": getattr(mf, "cycles", None),
        "total_s": time.perf_counter() - t0,
        "nr_rks_calls": len(calls),
        "nr_rks_first_s": calls[0] if calls else None,
        "nr_rks_median_after_first_s": statistics.median(calls[1:]) if len(calls) > 1 else None,
    }
    if numint is not None:
        out["stats"] = numint.stats()
    return out


def section_scf(env: Env, out: Out, budget: Budget) -> None:
    name, basis, level = "water_clusters/004", "def2-svp", 4
    mol = load(name, basis)
    rec = {"molecule": name, "natm": mol.natm, "nao": mol.nao, "basis": basis, "xc": "m062x"}
    rec["grid_level"] = level
    labels = (env.library, *(f"kerneldi-{m}" for m in env.modes if m != "fp16-tc"))
    for label in labels:
        if budget.left() < 40:
            rec[label] = {"skipped": "budget"}
            continue
        try:
            numint = None if label == env.library else env.numint(mma=label[len("kerneldi-") :])
            rec[label] = _scf(env, mol, level, numint)
        except Exception as err:
            rec[label] = _failed(err)
        log("scf", label, {k: v for k, v in rec[label].items() if k != "traceback"})
        env.free()
    if "energy" in rec.get(env.library, {}):
        for label in labels[1:]:
            if "energy" in rec[label]:
                rec[label]["d_energy"] = abs(rec[label]["energy"] - rec[env.library]["energy"])
                rec[label]["pass"] = rec[label]["d_energy"] <= 1e-7
    out.add("scf", rec)


def section_sweep(env: Env, out: Out, budget: Budget) -> None:
    run_sizes(env, out, budget, "sweep", SWEEP[:2], "def2-svp", 4, reserve=60)
    run_sizes(env, out, budget, "tzvp", TZVP, "def2-tzvp", 4, reserve=0)
    run_sizes(env, out, budget, "sweep", SWEEP[2:], "def2-svp", 4, reserve=0)


def section_madft(env: Env, out: Out, budget: Budget) -> None:
    run_sizes(env, out, budget, "madft", MADFT, "def2-svp", 4, reserve=5)


SECTIONS = {
    "accuracy": section_accuracy,
    "scf": section_scf,
    "sweep": section_sweep,
    "madft": section_madft,
    "gradient": section_gradient,
    "madft_gradient": section_madft_gradient,
}


def joined(parts: list[tuple[str, dict[str, object]]]) -> dict[str, object]:
    """The section files of ``parts`` (a name and its files' contents by stem) joined: records
    in the parts' order, one per molecule in the size sections (a measured record replaces a
    skipped one, a later measured record an earlier one); the first part's provenance files
    keep their names, the others' become ``provenance_<name>*``."""
    out: dict[str, object] = {}
    for n, (name, files) in enumerate(parts):
        for stem, obj in sorted(files.items()):
            if stem.startswith("provenance"):
                suffix = stem.removeprefix("provenance")  # "" or "_resume"
                out[stem if n == 0 else f"provenance_{name}{suffix}"] = obj
                continue
            rows = out.setdefault(stem, [])
            for rec in obj:
                mol = rec.get("molecule")
                size_run = mol is not None and ("natm" in rec) and "kind" not in rec
                if size_run and "skipped" in rec and _measured(rows, mol):
                    continue
                if size_run:
                    rows[:] = [r for r in rows if r.get("molecule") != mol]
                rows.append(rec)
    return out


def merge(out: Path, parts: list[Path]) -> None:
    """The section files of the part directories ``parts`` joined into ``out`` (``joined``)."""
    files = [(p.name, {f.stem: json.loads(f.read_text()) for f in p.glob("*.json")}) for p in parts]
    target = Out(out)
    for name, obj in joined(files).items():
        target.write(name, obj)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", required=True, type=Path, help="directory for the JSON results")
    ap.add_argument("--budget", type=float, default=420.0, help="seconds for all sections")
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset")
    ap.add_argument("--modes", default=",".join(MMA), help="product modes of ours (subset)")
    ap.add_argument(
        "--variants", default=",".join(VARIANTS), help="one-setting variants of ours (subset)"
    )
    ap.add_argument(
        "--skip-recompute", action="store_true", help="no AO-recompute timing in size runs"
    )
    ap.add_argument("--resume", action="store_true", help="keep what DIR already holds")
    ap.add_argument("--molecules", default="", help="comma-separated: size runs of these only")
    ap.add_argument("--merge", nargs="+", type=Path, metavar="PART", help="join PART dirs")
    args = ap.parse_args(argv)
    if args.merge:
        merge(args.out, args.merge)
        return 0
    wanted = [s for s in args.sections.split(",") if s]
    unknown = set(wanted) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}; choose from {list(SECTIONS)}")
    modes = tuple(m for m in args.modes.split(",") if m)
    variants = tuple(v for v in args.variants.split(",") if v)
    if set(variants) - set(VARIANTS):
        ap.error(f"--variants takes a subset of {list(VARIANTS)}")
    if not modes or set(modes) - set(MMA):
        ap.error(f"--modes takes a subset of {list(MMA)}")
    budget = Budget(args.budget)
    out = Out(args.out, resume=args.resume)
    try:
        molecules = frozenset(m for m in args.molecules.split(",") if m) or None
        env = Env(
            "gpu",
            modes=modes,
            recompute=not args.skip_recompute,
            molecules=molecules,
            variants=variants,
        )
        import gpu4pyscf
    except Exception as err:
        print(f"the benchmark needs CuPy, GPU4PySCF and a GPU: {err}", file=sys.stderr)
        return 2
    info = {"command": " ".join(["python -m qcbench.xc.bench", *(argv or sys.argv[1:])])}
    info["gpu4pyscf"] = gpu4pyscf.__version__
    info.update(device_info(env))
    from kerneldi.gpu import kernels

    t0 = time.perf_counter()
    for mma in MMA:
        try:
            kernels.module(32, mma)
        except Exception as err:  # recorded; the sections record what fails with it
            info[f"kernel_compile_error_{mma}"] = repr(err)
    info["kernel_compile_s"] = time.perf_counter() - t0
    info["dgemm_fp64_tflops"] = dgemm_peak(env)
    env.free()
    info["paper_v100"] = PAPER_V100
    # a resumed run keeps the first run's provenance beside its own
    first = args.resume and (args.out / "provenance.json").exists()
    out.write("provenance_resume" if first else "provenance", provenance(**info))
    log("device", info)
    for name in wanted:
        try:
            SECTIONS[name](env, out, budget)
        except Exception as err:
            out.add("errors", {"section": name, "error": repr(err), "tb": traceback.format_exc()})
            log(name, "failed", repr(err))
            env.free()
    log("done; budget left", round(budget.left(), 1), "s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
