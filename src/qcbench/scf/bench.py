"""``python -m qcbench.scf.bench``: SCF and J/K timings of the J/K engine against GPU4PySCF in
one process, and the checks that go with them.

Subcommands (each appends JSON lines to ``--out``/records.jsonl; ``device.json`` beside them
holds the run's commit, device, software and first command):

- ``scf``: per system, an RHF SCF with GPU4PySCF's J/K and one with ``fusionrcg.apply``, same
  molecule, basis, thresholds, guess and cycles; time per iteration (median over the cycles
  after the first; setup apart), J/K build times at a mid-SCF (third cycle) and the converged
  density, J/K agreement, and where the engine's time goes per class (a profiled build:
  quartets, graph FLOPs, kernel seconds, FP64 rate against the peak measured in the run);
  with ``--engine-options``, the engine's own choices each set the other way and timed.
- ``energies``: converged energies (RHF, UHF, B3LYP, M06-2X) and iteration counts, both ways.
- ``memory``: one J/K build of a large molecule at its initial-guess density (time, memory).
- ``host-share``: the host's share of a J/K build: process CPU time with blocking device
  synchronization (the host sleeps while it waits) over the wall time, the calling thread's
  apart, and a profile of the builds' host time by function (``host_profile``).
- ``dft``: KerneLDI Fig. 5: per system, the whole DFT SCF (``--xc``, ``--grid-level``) three
  ways in one process: GPU4PySCF as it comes, with KerneLDI's XC only, and with both engines
  (``qcscf.apply``); wall time, cycles, energies, and the one-time setups (XC layout, J/K
  engine) reported apart.
- ``gradient``: per system, a converged SCF (``--method``) as GPU4PySCF runs it and one with
  both engines (``qcscf.apply``), then the whole analytic gradient and its J/K part
  (``jk_energy_per_atom``) timed after the SCF, and the largest gradient difference; ours
  with one profiled J/K gradient (seconds per phase and per class, each class's graph FLOPs
  and their FP64 rate against the peak measured first in the same process).
- ``accuracy``: J and K of the engine (``--backend cpu`` or ``gpu``, tight screening) against
  PySCF's ``get_jk`` at a mid-SCF RHF density and at UHF's two spin densities, element by
  element (``--deriv``: also the derivative J and K against PySCF's gradient ``get_jk``);
  ``MOLECULE:BASIS:cart`` asks for Cartesian functions. Runs without a GPU on the CPU.

``--engine-option NAME=VALUE`` (repeatable) sets a ``fusionrcg.JK`` argument for every engine
of the run (``scf``, ``energies``, ``memory``, ``host-share``, ``accuracy``, and ours in
``dft`` and ``gradient``); ``--xc-setting NAME=VALUE`` a ``kerneldi.Settings`` field of the
``dft`` runs' KerneLDI NumInt.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from ..molecules import load
from ..provenance import gpu_info, provenance
from .records import DFT_WAYS

FP64_PEAK_KERNEL = r"""
extern "C" __global__ void fma_peak(double* out, const int iters) {
    double a = threadIdx.x * 1e-9, b = blockIdx.x * 1e-9, c = 1.0 + a, d = 1.0 - b;
    double e = a + b, f = a - b, g = 0.5 + a, h = 0.5 - b;
    for (int i = 0; i < iters; ++i) {
        a = fma(a, 0.999999, 1e-9); b = fma(b, 0.999999, 1e-9); c = fma(c, 0.999999, 1e-9);
        d = fma(d, 0.999999, 1e-9); e = fma(e, 0.999999, 1e-9); f = fma(f, 0.999999, 1e-9);
        g = fma(g, 0.999999, 1e-9); h = fma(h, 0.999999, 1e-9);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d + e + f + g + h;
}
"""


def _cupy():
    import cupy

    return cupy


def _sync() -> None:
    _cupy().cuda.Device().synchronize()


def fp64_peak() -> float:
    """FP64 FLOP/s of independent FMA chains on the CUDA cores, measured in this process."""
    cp = _cupy()
    fn = cp.RawKernel(FP64_PEAK_KERNEL, "fma_peak")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks, threads, iters = sms * 16, 256, 4096
    out = cp.empty(blocks * threads)
    seconds = median_seconds(lambda: fn((blocks,), (threads,), (out, np.int32(iters))), 5)
    return 2.0 * 8 * iters * blocks * threads / seconds


def median_seconds(run, repeats: int) -> float:
    """Median wall seconds of ``run()`` over ``repeats`` calls after one warm-up call, the
    device synchronized around each."""
    run()
    _sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        _sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _system(spec: str) -> tuple[str, str]:
    """``water_clusters/005:cc-pvdz`` -> (molecule, basis)."""
    name, sep, basis = spec.partition(":")
    if not sep or not name or not basis or ":" in basis:
        raise SystemExit(f"bad system {spec!r}: expected MOLECULE:BASIS")
    return name, basis


def _make(method: str, mol, gpu: bool):
    """An SCF object of ``method`` (rhf, uhf, or an RKS functional such as b3lyp)."""
    if gpu:
        from gpu4pyscf import dft, scf
    else:
        from pyscf import dft, scf
    if method == "rhf":
        return scf.RHF(mol)
    if method == "uhf":
        return scf.UHF(mol)
    return dft.RKS(mol, xc=method)


def timed_scf(mf, conv_tol: float, direct_scf_tol: float, max_cycle: int, keep_cycle=None):
    """Run ``mf`` and time it: total, each cycle's end, and the density of cycle
    ``keep_cycle`` (0-based) if asked."""
    mf.conv_tol = conv_tol
    mf.direct_scf_tol = direct_scf_tol
    mf.max_cycle = max_cycle
    mf.verbose = 0
    stamps, kept = [], {}

    def callback(envs) -> None:
        _sync()
        stamps.append(time.perf_counter())
        if keep_cycle is not None and envs["cycle"] == keep_cycle:
            kept["dm"] = envs["dm"].copy()

    mf.callback = callback
    _sync()
    start = time.perf_counter()
    mf.kernel()
    _sync()
    total = time.perf_counter() - start
    ends = np.array([start, *stamps])
    per_cycle = np.diff(ends)
    per_iter = float(np.median(per_cycle[1:])) if len(per_cycle) > 1 else float("nan")
    return {
        "e_tot": float(mf.e_tot),
        "converged": bool(mf.converged),
        "cycles": len(stamps),
        "total_s": total,
        "per_iteration_s": per_iter,
        "cycle_s": [float(x) for x in per_cycle],
        # the guess, one-time setup and the first (full) Fock build, less one iteration
        "setup_s": float(per_cycle[0] - per_iter) if len(per_cycle) > 1 else total,
    }, kept.get("dm")


def engine_profile(engine, dm, peak: float) -> dict:
    """One profiled build: seconds per phase and per class, surviving quartets, graph FLOPs and
    the integral kernels' FP64 rate against ``peak``."""
    prof = _profiled(engine, lambda: engine.get_jk(dm))
    classes = []
    for name in sorted(prof.quartets, key=lambda n: -prof.flops[n]):
        seconds = prof.seconds.get(f"integrals {name}", 0.0)
        classes.append(
            {
                "class": name,
                "quartets": prof.quartets[name],
                "items": prof.items[name],
                "flops": prof.flops[name],
                "integrals_s": seconds,
                "kernel2_s": prof.seconds.get(f"kernel 2 {name}", 0.0),
                **_fp64_rate(prof.flops[name], seconds, peak),
            }
        )
    phases = _phase_totals(prof, ("densities", "screening", "integrals", "kernel 2"))
    return {"phases_s": phases, "classes": classes}


def _fp64_rate(flops: float, seconds: float, peak: float) -> dict:
    """``flop_rate`` of ``flops`` in ``seconds`` (0 without time) and its ``fraction_of_peak``
    (0 without a peak)."""
    rate = flops / seconds if seconds > 0 else 0.0
    return {"flop_rate": rate, "fraction_of_peak": rate / peak if peak else 0.0}


def _profiled(engine, call):
    """The engine's ``BuildProfile`` of ``call`` made with profiling on: the second of two
    such calls, so that a one-time cost of the first profiled call lands in no class."""
    engine.profile = True
    try:
        call()
        call()
        return engine.last_profile
    finally:
        engine.profile = False


def _phase_totals(prof, phases: tuple[str, ...]) -> dict[str, float]:
    """Seconds per phase: each booked key under the first of ``phases`` it starts with (a
    class's "integrals (1,0|0,0)" under "integrals"), else under itself."""
    totals = dict.fromkeys(phases, 0.0)
    for key, seconds in prof.seconds.items():
        phase = next((p for p in phases if key.startswith(p)), key)
        totals[phase] = totals.get(phase, 0.0) + seconds
    return totals


def _host(a) -> np.ndarray:
    """``a`` as a plain NumPy array (CuPy arrays and GPU4PySCF's tagged subclasses copied)."""
    cupy = sys.modules.get("cupy")
    return cupy.asnumpy(a) if cupy is not None and isinstance(a, cupy.ndarray) else np.asarray(a)


def _max_diff(a, b) -> float:
    """Largest element difference, on the host, so that neither array's subclass decides
    the arithmetic."""
    return float(np.abs(_host(a) - _host(b)).max())


def _jk_timings(base, engine, mol, dm, repeats: int) -> dict:
    """Median seconds of GPU4PySCF's J and K as its SCF asks for them (get_j, then get_k), of
    its get_jk, and of the engine's get_jk at ``dm``; the largest differences of J and K."""
    timings = {
        "baseline_get_j_get_k_s": median_seconds(
            lambda: (base.get_j(mol, dm), base.get_k(mol, dm)), repeats
        ),
        "baseline_get_jk_s": median_seconds(lambda: base.get_jk(mol, dm), repeats),
        "ours_s": median_seconds(lambda: engine.get_jk(dm), repeats),
    }
    rj, rk = base.get_jk(mol, dm)
    vj, vk = engine.get_jk(dm)
    timings["max_dj"], timings["max_dk"] = _max_diff(vj, rj), _max_diff(vk, rk)
    timings["max_j"], timings["max_k"] = (float(np.abs(_host(v)).max()) for v in (rj, rk))
    return timings


def _scf_system(args, name: str, basis: str, peak: float) -> dict:
    import fusionrcg

    mol = load(name, basis)
    row = {"kind": "scf", "molecule": name, "basis": basis, "natm": mol.natm, "nao": mol.nao,
           "method": args.method, "conv_tol": args.conv_tol,
           "direct_scf_tol": args.direct_scf_tol, "max_cycle": args.max_cycle}  # fmt: skip
    print(f"{name} {basis}: {mol.natm} atoms, {mol.nao} AOs", file=sys.stderr, flush=True)
    base = _make(args.method, mol, gpu=True)
    row["baseline"], mid = timed_scf(
        base, args.conv_tol, args.direct_scf_tol, args.max_cycle, keep_cycle=2
    )
    # time_builds: each J/K build of our SCF timed, for its J/K and non-J/K shares per cycle
    ours = fusionrcg.apply(
        _make(args.method, mol, gpu=True), "gpu", kernel_dir=args.kernel_dir,
        **{**args.engine, "time_builds": True},
    )  # fmt: skip
    row["ours"], _ = timed_scf(ours, args.conv_tol, args.direct_scf_tol, args.max_cycle)
    engine = ours.fusion_engine()
    row["ours"]["jk_build_s"] = list(engine.build_seconds)
    engine.time_builds = False
    row["ours"]["engine_setup_s"] = engine.setup_seconds
    row["engine"] = {"max_work": engine.max_work, "streams": engine.streams.count,
                     "block_items": engine.block_items}  # fmt: skip
    row["delta_e"] = row["ours"]["e_tot"] - row["baseline"]["e_tot"]
    converged = base.make_rdm1()
    row["jk"] = {
        label: _jk_timings(base, engine, mol, dm, args.repeats)
        for label, dm in (("mid", mid), ("converged", converged))
        if dm is not None
    }
    row["profile"] = engine_profile(engine, converged, peak)
    if args.engine_options:
        row["engine_options"] = {
            name: _option_timing(mol, args, converged, **option)
            for name, option in ENGINE_OPTIONS.items()
        }
    return row


ENGINE_OPTIONS = {
    "decontract": {"decontract": True},
    "spread order": {"spread_items": True},
    "max_work 64": {"max_work": 64},
    "one stream": {"streams": 1},
    "no block form": {"block_items": 0},
    "fused up to 63 integrals": {"fused_max_outputs": 63},
    "rounds of 16 M items": {"round_items": 1 << 24},
    "J_ab atomics per thread": {"kernel_options": {"warp_bra_j": False}},
}
"""The engine's own choices, each set the other way, timed on the converged density
(``kernel_options``: fields of the kernels' ``KernelOptions`` changed from the run's)."""


def _option_timing(mol, args, dm, **option) -> dict:
    """Setup and median build time of an engine with ``option`` set, at ``dm``."""
    import fusionrcg

    start = time.perf_counter()
    settings = {**args.engine, **option}
    if "kernel_options" in settings:
        changes = settings.pop("kernel_options")
        settings["options"] = fusionrcg.kernel_options(settings.get("options", "full"))
        settings["options"] = settings["options"].replace(**changes)
    engine = fusionrcg.JK(mol, "gpu", args.direct_scf_tol, kernel_dir=args.kernel_dir, **settings)
    return {
        "options": option,
        "setup_s": time.perf_counter() - start,
        "converged_s": median_seconds(lambda: engine.get_jk(dm), args.repeats),
    }


def run_scf(args, out) -> None:
    peak = fp64_peak()
    out({"kind": "fp64_peak", "flop_rate": peak})
    for spec in args.systems:
        out(_scf_system(args, *_system(spec), peak))
        _cupy().get_default_memory_pool().free_all_blocks()


def _energy(args, mol, method: str, how: str) -> dict:
    import fusionrcg

    mf = _make(method, mol, gpu=how != "pyscf")
    if how == "ours":
        mf = fusionrcg.apply(mf, "gpu", kernel_dir=args.kernel_dir, **args.engine)
    result, _ = timed_scf(mf, args.conv_tol, 1e-13, 100)
    return {k: result[k] for k in ("e_tot", "converged", "cycles")}


def run_energies(args, out) -> None:
    for spec in args.systems:
        name, basis = _system(spec)
        mol = load(name, basis)
        for method in args.methods:
            row = {"kind": "energy", "molecule": name, "basis": basis, "method": method,
                   "conv_tol": args.conv_tol}  # fmt: skip
            for how in ("gpu4pyscf", "pyscf", "ours"):
                row[how] = _energy(args, mol, method, how)
            out(row)


def _progress(what: str, seconds: float) -> None:
    """One line on standard error as each step of a long run ends."""
    print(f"  {what}: {seconds:.1f} s", file=sys.stderr, flush=True)


def _dft_run(args, mol, way: str) -> dict:
    import kerneldi
    import qcscf

    mf = _make(args.xc, mol, gpu=True)
    mf.grids.level = args.grid_level
    if way == "xc only":
        mf._numint = kerneldi.NumInt(backend="gpu", **args.xc_settings)
    elif way == "both":
        mf = qcscf.apply(mf, kernel_dir=args.kernel_dir, jk_options=args.engine, **args.xc_settings)
    result, _ = timed_scf(mf, args.conv_tol, args.direct_scf_tol, args.max_cycle)
    _progress(f"{way}: SCF of {result['cycles']} cycles", result["total_s"])
    # one XC call (energy and potential) at the converged density, beside the layout it reuses
    dm = mf.make_rdm1()
    result["xc_call_s"] = median_seconds(
        lambda: mf._numint.nr_rks(mol, mf.grids, mf.xc, dm), max(1, args.repeats)
    )
    _progress(f"{way}: one XC call at the converged density", result["xc_call_s"])
    if way != "gpu4pyscf":
        result["xc_layout_s"] = mf._numint.layout_seconds
        _progress(f"{way}: its XC layout", result["xc_layout_s"])
        # the XC engine's blocks and how much of its AO values it holds on the device
        # between calls (up to gpu_memory_fraction of the free memory: room the J/K build
        # beside it no longer has)
        result["xc_stats"] = {k: v.item() if hasattr(v, "item") else v
                              for k, v in mf._numint.stats().items()}  # fmt: skip
    free, total = _cupy().cuda.runtime.memGetInfo()
    result["device_free_bytes"], result["device_total_bytes"] = int(free), int(total)
    result["pool_bytes"] = int(_cupy().get_default_memory_pool().total_bytes())
    if way == "both":
        result["jk_setup_s"] = mf.fusion_engine().setup_seconds
    return result


def run_dft(args, out) -> None:
    for spec in args.systems:
        name, basis = _system(spec)
        mol = load(name, basis)
        print(f"{name} {basis}: {mol.natm} atoms, {mol.nao} AOs", file=sys.stderr, flush=True)
        row = {"kind": "dft", "molecule": name, "basis": basis, "method": args.xc,
               "natm": mol.natm, "nao": mol.nao, "grid_level": args.grid_level,
               "conv_tol": args.conv_tol, "direct_scf_tol": args.direct_scf_tol,
               "xc_settings": args.xc_settings}  # fmt: skip
        for way in args.ways:
            row[way] = _dft_run(args, mol, way)
            _cupy().get_default_memory_pool().free_all_blocks()
        out(row)


def _converged(args, mol, how: str) -> tuple[object, dict]:
    """A converged SCF of ``args.method``: GPU4PySCF as it comes (``how`` "gpu4pyscf") or with
    both engines (``qcscf.apply``, so a DFT gradient's XC part is KerneLDI's and its J/K part
    FusionRCG's)."""
    import qcscf

    mf = _make(args.method, mol, gpu=True)
    if how == "ours":
        mf = qcscf.apply(mf, kernel_dir=args.kernel_dir, jk_options=args.engine)
    scf_result, _ = timed_scf(mf, args.conv_tol, args.direct_scf_tol, args.max_cycle)
    _progress(f"{how}: SCF of {scf_result['cycles']} cycles", scf_result["total_s"])
    return mf, scf_result


def _timed_gradient(args, mf, how: str, peak: float) -> tuple[dict, np.ndarray]:
    """The analytic gradient of the converged ``mf`` and the J/K part of it
    (``jk_energy_per_atom`` at full J and K) timed: medians over ``args.repeats`` after one
    warm-up (which holds the engines' one-time setup)."""
    grad = mf.nuc_grad_method()
    grad.verbose = 0
    found = {}
    seconds = median_seconds(lambda: found.update(de=grad.kernel()), args.repeats)
    _progress(f"{how}: gradient (median)", seconds)
    dm = mf.make_rdm1()
    jk_seconds = median_seconds(lambda: grad.jk_energy_per_atom(dm), args.repeats)
    result = {"gradient_s": seconds, "jk_gradient_s": jk_seconds}
    if how == "ours":
        result["jk_gradient_profile"] = gradient_profile(mf.fusion_engine(), grad, dm, peak)
    return result, _host(found["de"])


def _scf_fields(scf_result: dict) -> dict:
    return {key: scf_result[key] for key in ("e_tot", "converged", "cycles")}


def gradient_profile(engine, grad, dm, peak: float) -> dict:
    """One profiled J/K energy gradient (``jk_energy_per_atom``): seconds per phase
    (densities, screening, the classes' gradient kernels) and per class with its surviving
    work items, the graph FLOPs of its three positions' kernels and their FP64 rate against
    ``peak`` (the gradient phase of a class also holds its Tier 2 weighting)."""
    prof = _profiled(engine, lambda: grad.jk_energy_per_atom(dm))
    classes = []
    for name in sorted(prof.items, key=lambda n: -prof.seconds.get(f"gradient {n}", 0.0)):
        seconds = prof.seconds.get(f"gradient {name}", 0.0)
        classes.append({"class": name, "items": prof.items[name], "gradient_s": seconds,
                        "flops": prof.flops[name],
                        **_fp64_rate(prof.flops[name], seconds, peak)})  # fmt: skip
    phases = _phase_totals(prof, ("densities", "screening", "gradient"))
    return {"phases_s": phases, "classes": classes, "fp64_peak": peak}


CONVERGED_STATE = ("mo_coeff", "mo_occ", "mo_energy", "e_tot", "converged")
"""What an analytic gradient reads of a converged SCF object."""


def _shared_scf(args, mol, peak: float) -> tuple[dict, dict]:
    """Both gradients of one converged SCF, converged by ``args.shared_scf`` ("gpu4pyscf" or
    "ours"); the other way's object takes its converged state (``CONVERGED_STATE``), so the
    two gradients differ by the engines alone. GPU4PySCF's gradient is timed first."""
    import qcscf

    mf, scf_result = _converged(args, mol, args.shared_scf)
    plain = mf
    if args.shared_scf == "ours":
        plain = _make(args.method, mol, gpu=True)
        plain.direct_scf_tol = args.direct_scf_tol
        if hasattr(plain, "grids"):
            plain.grids.level = mf.grids.level
        for name in CONVERGED_STATE:
            setattr(plain, name, getattr(mf, name))
    row, grads = {}, {}
    row["gpu4pyscf"], grads["gpu4pyscf"] = _timed_gradient(args, plain, "gpu4pyscf", peak)
    # switched on in GPU4PySCF's own object only after its gradient was timed
    ours = (
        mf
        if args.shared_scf == "ours"
        else qcscf.apply(mf, kernel_dir=args.kernel_dir, jk_options=args.engine)
    )
    row["ours"], grads["ours"] = _timed_gradient(args, ours, "ours", peak)
    for how in ("gpu4pyscf", "ours"):
        row[how].update(_scf_fields(scf_result))
    return row, grads


def run_gradient(args, out) -> None:
    """Each system's analytic gradient, GPU4PySCF's and ours: each after its own converged
    SCF, or with ``args.shared_scf`` both of one (``_shared_scf``), which converges one SCF
    instead of two."""
    peak = fp64_peak()
    out({"kind": "fp64_peak", "flop_rate": peak})
    for spec in args.systems:
        name, basis = _system(spec)
        mol = load(name, basis)
        print(f"{name} {basis}: {mol.natm} atoms, {mol.nao} AOs", file=sys.stderr, flush=True)
        row = {"kind": "gradient", "molecule": name, "basis": basis, "method": args.method,
               "natm": mol.natm, "nao": mol.nao, "conv_tol": args.conv_tol,
               "direct_scf_tol": args.direct_scf_tol,
               "scf": f"shared ({args.shared_scf})" if args.shared_scf else "each"}  # fmt: skip
        gradients = {}
        if args.shared_scf:
            parts, gradients = _shared_scf(args, mol, peak)
            row.update(parts)
        else:
            for how in ("gpu4pyscf", "ours"):
                mf, scf_result = _converged(args, mol, how)
                row[how], gradients[how] = _timed_gradient(args, mf, how, peak)
                row[how].update(_scf_fields(scf_result))
                del mf
                _cupy().get_default_memory_pool().free_all_blocks()
        row["max_d_grad"] = float(np.abs(gradients["ours"] - gradients["gpu4pyscf"]).max())
        out(row)


def run_memory(args, out) -> None:
    import fusionrcg

    cp = _cupy()
    for spec in args.systems:
        name, basis = _system(spec)
        mol = load(name, basis)
        pool = cp.get_default_memory_pool()
        pool.free_all_blocks()
        start = time.perf_counter()
        engine = fusionrcg.JK(mol, backend="gpu", kernel_dir=args.kernel_dir, **args.engine)
        setup = time.perf_counter() - start
        dm = cp.asarray(_make("rhf", mol, gpu=False).get_init_guess())
        start = time.perf_counter()
        vj, vk = engine.get_jk(dm)
        _sync()
        seconds = time.perf_counter() - start
        held = engine.workspace_bytes
        engine.release_workspace()
        out({"kind": "memory", "molecule": name, "basis": basis, "natm": mol.natm,
             "nao": mol.nao, "setup_s": setup, "jk_s": seconds,
             "pool_bytes": int(pool.total_bytes()), "workspace_bytes": held,
             "free_after_release_bytes": int(cp.cuda.Device().mem_info[0]),
             "pairs": engine.pairs.size,
             "finite": bool(cp.isfinite(vj).all() and cp.isfinite(vk).all())})  # fmt: skip


def blocking_sync(device: int = 0) -> None:
    """Make the host sleep rather than spin while it waits for the device, so that its CPU
    time is the work it does: the primary context's CU_CTX_SCHED_BLOCKING_SYNC flag, set
    through the CUDA driver before CuPy makes the context (CuPy has no call for it)."""
    import ctypes

    cuda = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    for name, call in (
        ("cuInit", lambda: cuda.cuInit(0)),
        ("cuDeviceGet", lambda: cuda.cuDeviceGet(ctypes.byref(dev), device)),
        ("cuDevicePrimaryCtxSetFlags", lambda: cuda.cuDevicePrimaryCtxSetFlags_v2(dev, 0x04)),
    ):
        code = call()
        if code != 0:
            raise RuntimeError(f"{name} failed with CUDA driver error {code}")


def run_host_share(args, out) -> None:
    """Run in a process of its own: blocking synchronization is a device flag set before the
    context exists."""
    blocking_sync()
    cp = _cupy()
    import fusionrcg

    for spec in args.systems:
        name, basis = _system(spec)
        mol = load(name, basis)
        base = _make("rhf", mol, gpu=True)
        base.max_cycle, base.verbose = 4, 0
        base.kernel()  # a mid-SCF density
        engine = fusionrcg.JK(mol, backend="gpu", kernel_dir=args.kernel_dir, **args.engine)
        dm = cp.asarray(base.make_rdm1())
        engine.get_jk(dm)
        _sync()
        walls, cpus, mains = [], [], []
        for _ in range(args.repeats):
            w, c, m = time.perf_counter(), time.process_time(), time.thread_time()
            engine.get_jk(dm)
            _sync()
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
            mains.append(time.thread_time() - m)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        profile = host_profile(lambda e=engine, d=dm: (e.get_jk(d), _sync()), args.repeats)
        # the calling thread's share apart: the engine's own host work (Python, launches)
        # against the process's other threads (the CUDA driver's, BLAS pools)
        out({"kind": "host_share", "molecule": name, "basis": basis, "nao": mol.nao,
             "wall_s": wall, "host_cpu_s": cpu, "host_share": cpu / wall,
             "calling_thread_cpu_s": statistics.median(mains),
             "host_profile": profile})  # fmt: skip


HOST_PROFILE_ROWS = 25


def host_profile(build, repeats: int) -> list[dict]:
    """Where the host's time in ``build()`` (one build, the device synchronized) goes:
    Python's profiler over ``repeats`` builds (after the timed ones: it slows the host down),
    the functions of most own time, each with its calls and seconds per build (own, and with
    what it calls), named from the package folder on (``cupy/...``, ``fusionrcg/...``)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeats):
        build()
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    rows = sorted(stats.items(), key=lambda item: -item[1][2])[:HOST_PROFILE_ROWS]
    return [
        {"function": f"{_package_path(path)}:{line}({name})", "calls": calls / repeats,
         "own_s": own / repeats, "cumulative_s": cumulative / repeats}
        for (path, line, name), (_, calls, own, cumulative, _) in rows
    ]  # fmt: skip


def _package_path(path: str) -> str:
    """``path`` from its package folder on (``cupy/...``, ``fusionrcg/...``): less the
    longest entry of ``sys.path`` it lies under; built-ins keep their names."""
    roots = [r for r in sys.path if r and path.startswith(r.rstrip("/") + "/")]
    return path[len(max(roots, key=len).rstrip("/")) + 1 :] if roots else path


def _mid_scf_densities(mol) -> dict:
    """An RHF density after three cycles and UHF's two spin densities after three cycles, from
    PySCF on the CPU: realistic densities, neither a guess nor converged."""
    from pyscf import scf

    found = {}
    for label, mf in (("rhf", scf.RHF(mol)), ("uhf", scf.UHF(mol))):
        mf.max_cycle, mf.verbose = 3, 0
        mf.kernel()
        found[label] = np.asarray(mf.make_rdm1())
    return found


def _deriv_accuracy(engine, mol, dm, dm_in) -> dict:
    """The engine's derivative J and K (``JK.get_jk_deriv``) against PySCF's gradient
    ``get_jk`` of the same density."""
    from pyscf.grad import rhf as rhf_grad

    ref_j, ref_k = rhf_grad.get_jk(mol, dm)
    start = time.perf_counter()
    vj, vk = (_host(v) for v in engine.get_jk_deriv(dm_in))
    return {"jk_deriv_s": time.perf_counter() - start,
            "max_dj_deriv": float(np.abs(vj - ref_j).max()),
            "max_dk_deriv": float(np.abs(vk - ref_k).max()),
            "max_j_deriv": float(np.abs(ref_j).max()),
            "max_k_deriv": float(np.abs(ref_k).max())}  # fmt: skip


def run_accuracy(args, out) -> None:
    from pyscf import scf

    import fusionrcg

    for spec in args.systems:
        name, _, rest = spec.partition(":")
        basis, _, form = rest.partition(":")
        if not name or not basis or form not in ("", "cart"):
            raise SystemExit(f"bad system {spec!r}: expected MOLECULE:BASIS[:cart]")
        mol = load(name, basis, cart=form == "cart")
        print(f"{spec}: {mol.natm} atoms, {mol.nao} AOs", file=sys.stderr, flush=True)
        start = time.perf_counter()
        engine = fusionrcg.JK(mol, args.backend, tol=args.direct_scf_tol,
                              kernel_dir=args.kernel_dir, **args.engine)  # fmt: skip
        setup = time.perf_counter() - start
        for label, dm in _mid_scf_densities(mol).items():
            ref_j, ref_k = scf.hf.get_jk(mol, dm, hermi=1)
            dm_in = dm if args.backend == "cpu" else _cupy().asarray(dm)
            start = time.perf_counter()
            vj, vk = engine.get_jk(dm_in)
            seconds = time.perf_counter() - start
            vj, vk = (np.asarray(v) if args.backend == "cpu" else v.get() for v in (vj, vk))
            row = {"kind": "accuracy", "molecule": name, "basis": basis, "method": label,
                   "cartesian": mol.cart, "backend": args.backend, "nao": mol.nao,
                   "tol": args.direct_scf_tol, "setup_s": setup, "jk_s": seconds,
                   "max_dj": float(np.abs(vj - ref_j).max()),
                   "max_dk": float(np.abs(vk - ref_k).max()),
                   "max_j": float(np.abs(ref_j).max()),
                   "max_k": float(np.abs(ref_k).max())}  # fmt: skip
            if args.deriv:
                row.update(_deriv_accuracy(engine, mol, dm, dm_in))
            out(row)


def _name_value(text: str, allowed, what: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or name not in allowed:
        raise argparse.ArgumentTypeError(
            f"expected NAME=VALUE with NAME one of {', '.join(sorted(allowed))} ({what}), "
            f"got {text!r}"
        )
    return name, value


def _scalar(value: str) -> int | float | bool | None:
    """An integer, float or true/false written as text; None for anything else."""
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    for number in (int, float):
        try:
            return number(value)
        except ValueError:
            pass
    return None


def engine_option(text: str) -> tuple[str, int | float | bool]:
    """``NAME=VALUE`` of ``--engine-option``: a ``fusionrcg.JK`` argument with an integer,
    float or true/false value."""
    from fusionrcg.jk import engine_option_names

    name, value = _name_value(text, engine_option_names(), "fusionrcg.JK arguments")
    found = _scalar(value)
    if found is None:
        raise argparse.ArgumentTypeError(f"{name}: not a number or true/false: {value!r}")
    return name, found


def xc_setting(text: str) -> tuple[str, int | float | bool | str]:
    """``NAME=VALUE`` of ``--xc-setting``: a ``kerneldi.Settings`` field (a number, true/false
    or a word)."""
    from dataclasses import fields

    from kerneldi.settings import Settings

    name, value = _name_value(text, {f.name for f in fields(Settings)}, "kerneldi settings")
    found = _scalar(value)
    return name, value if found is None else found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qcbench.scf.bench", description=__doc__)
    commands = ("scf", "energies", "memory", "host-share", "accuracy", "dft", "gradient")
    parser.add_argument("command", choices=commands)
    parser.add_argument("--systems", nargs="+", required=True, help="MOLECULE:BASIS ...")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--method", default="rhf")
    parser.add_argument("--methods", nargs="+", default=["rhf", "uhf", "b3lyp", "m062x"])
    parser.add_argument("--conv-tol", type=float, default=1e-8)
    parser.add_argument("--direct-scf-tol", type=float, default=1e-13)
    parser.add_argument("--max-cycle", type=int, default=50)
    parser.add_argument("--xc", default="m062x", help="dft: the functional")
    parser.add_argument("--grid-level", type=int, default=4, help="dft: the grid level")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kernel-dir", default=None)
    parser.add_argument("--engine-option", dest="engine", action="append", default=[],
                        metavar="NAME=VALUE", type=engine_option,
                        help="a fusionrcg.JK argument for every engine of the run "
                        "(e.g. block_items=0; repeatable)")  # fmt: skip
    parser.add_argument("--xc-setting", dest="xc_settings", action="append", default=[],
                        metavar="NAME=VALUE", type=xc_setting,
                        help="dft: a kerneldi setting of KerneLDI's NumInt in both ways that "
                        "use it (e.g. grid_order_on_device=true; repeatable)")  # fmt: skip
    parser.add_argument("--engine-options", action="store_true",
                        help="scf: also time the engine's choices set the other way")  # fmt: skip
    parser.add_argument("--backend", default="gpu", choices=("cpu", "gpu"),
                        help="backend of accuracy (the rest run on the GPU)")  # fmt: skip
    parser.add_argument("--ways", nargs="+", choices=DFT_WAYS, default=list(DFT_WAYS),
                        help="dft: the SCF runs to make (rows of separate runs are joined by "
                        "the report)")  # fmt: skip
    parser.add_argument("--shared-scf", choices=("gpu4pyscf", "ours"), default=None,
                        help="gradient: both gradients of one SCF, converged this way")  # fmt: skip
    parser.add_argument("--deriv", action="store_true",
                        help="accuracy: also the derivative J and K (gradients)")  # fmt: skip
    args = parser.parse_args(argv)
    args.engine = dict(args.engine)
    args.xc_settings = dict(args.xc_settings)
    gpu = args.command != "accuracy" or args.backend == "gpu"
    args.out.mkdir(parents=True, exist_ok=True)
    records = args.out / "records.jsonl"
    device = args.out / "device.json"
    if not device.exists():  # the run's provenance (qcbench.runs makes the manifest from it)
        device_info = gpu_info(_cupy()) if gpu else {}
        info = provenance(**device_info, command="python -m qcbench.scf.bench "
                          + " ".join(argv if argv is not None else sys.argv[1:]))  # fmt: skip
        device.write_text(json.dumps(info, indent=1) + "\n")

    def out(row: dict) -> None:
        row = {"command": " ".join(["qcbench.scf.bench", *(argv or sys.argv[1:])]), **row}
        with records.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps({k: v for k, v in row.items() if k != "profile"}), flush=True)

    run = {"scf": run_scf, "energies": run_energies, "memory": run_memory,
           "host-share": run_host_share, "accuracy": run_accuracy,
           "dft": run_dft, "gradient": run_gradient}[args.command]  # fmt: skip
    run(args, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
