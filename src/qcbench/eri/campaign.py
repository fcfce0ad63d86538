"""The GPU campaign: verification and benchmarks in one process on the GPU machine.

``python -m qcbench.eri.campaign prepare --out DIR`` (here, with PySCF) writes the measurement
plan, the segmented bases and the expected kernel list; the pipeline prebuilds the kernels.
``python -m qcbench.eri.campaign bench --inputs DIR --out OUT`` (on the GPU, no PySCF needed)
measures; ``python -m qcbench.eri.campaign verify --out OUT`` (on the GPU, with PySCF) checks
every class against PySCF. Results are JSON lines written as they come, so a run cut short by
its time limit still returns what it measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from fusionrcg.angmom import QuartetClass, canonical_classes
from fusionrcg.lowering.target import Epilogue
from fusionrcg.runtime.basis import SegmentedBasis
from fusionrcg.runtime.gpu import MAX_WORK
from qctoolchain import PTXAS_DEFAULT_LEVEL, PTXAS_LEVELS

# cc-pVXZ for the highest l a class needs: realistic primitive counts per angular momentum
BASIS_FOR_LMAX = {0: "cc-pvdz", 1: "cc-pvdz", 2: "cc-pvdz", 3: "cc-pvtz", 4: "cc-pvqz"}
BENCH_MOLECULE = "water_clusters/005"  # (H2O)20


def _shared_bank(cls: QuartetClass) -> bool:
    """Whether the Tier 2 kernel of ``cls`` keeps its slot bank in shared memory by default."""
    from fusionrcg.lowering.kernel import shared_bank
    from fusionrcg.lowering.layout import tier2_layout
    from fusionrcg.lowering.target import CUDA
    from fusionrcg.orchestration.plan import plan_class

    return shared_bank(tier2_layout(plan_class(cls, "tier2-only")).n_slots, CUDA)


def measurement_plan(paper_quartets: list[str], tier_max_total: int) -> list[dict]:
    """Ablations on the paper's quartets (every variant, store), and both tiers with the J/K
    epilogue on every class up to ``tier_max_total`` (the tier comparison) with every form of
    Tier 2's Kernel 2, plus Tier 2 with its slot bank forced to global memory where it would be
    in shared memory (bank ablation)."""
    plan = []
    for text in paper_quartets:
        cls = QuartetClass.parse(text).canonical()
        for variant in ("full", "no-axis", "no-dsa", "no-spherical", "tier1-only", "tier2-only"):
            plan.append({"class": cls.tag, "variant": variant, "epilogue": "store"})
    for cls in canonical_classes():
        if cls.total <= tier_max_total:
            plan.append({"class": cls.tag, "variant": "tier1-only", "epilogue": "jk"})
            for form in ("generated", "block", "thread"):
                plan.append(
                    {"class": cls.tag, "variant": "tier2-only", "epilogue": "jk", "kernel2": form}
                )
            if _shared_bank(cls):
                plan.append(
                    {"class": cls.tag, "variant": "tier2-only", "epilogue": "jk", "bank": "global"}
                )
    return plan


def _command() -> str:
    """This run's command line as the module invocation (no path of the machine it ran on)."""
    return " ".join(["python -m qcbench.eri.campaign", *sys.argv[1:]])


def _jsonl(path: Path, record: dict) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(record) + "\n")


def prepare(args) -> int:
    from fusionrcg.runtime.basis import segment_basis
    from qcbench.molecules import load

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted(set(BASIS_FOR_LMAX.values())):
        segment_basis(load(BENCH_MOLECULE, name)).save(out / f"{name}.npz")
    plan = measurement_plan(args.paper_quartets.split(";"), args.tier_max_total)
    if args.variants:  # a re-measurement of some variants only
        plan = [item for item in plan if item["variant"] in args.variants.split(",")]
    if args.max_total is not None:
        plan = [item for item in plan if sum(map(int, item["class"])) <= args.max_total]
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    print(f"{len(plan)} measurements planned in {out}")
    return 0


def bench(args) -> int:
    from fusionrcg.runtime.gpu import GpuExecutor
    from qcbench.provenance import gpu_info, provenance

    from . import bench as B

    inputs, out = Path(args.inputs), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ex = GpuExecutor(
        kernel_dir=args.kernel_dir,
        uniform_warps=args.quartet_order == "primitive",
        max_work=args.max_work or None,
    )
    cp = ex.cp
    peak = B.fp64_peak(cp)
    info = provenance(**gpu_info(cp), fp64_fma_peak=peak, command=_command())
    (out / "device.json").write_text(json.dumps(info, indent=1))
    bases = {p.stem: SegmentedBasis.load(p) for p in inputs.glob("*.npz")}
    rng = np.random.default_rng(1)
    dms = {}
    start = time.perf_counter()
    results = out / "measurements.jsonl"
    plan = json.loads((inputs / "plan.json").read_text())
    for i, item in enumerate(plan, 1):
        if time.perf_counter() - start > args.budget:
            print("time budget reached; stopping", flush=True)
            break
        cls = QuartetClass(*map(int, item["class"]))
        name = BASIS_FOR_LMAX[max(cls.ls)]
        basis = bases[name]
        if name not in dms:
            a = rng.standard_normal((basis.nao, basis.nao)) * 0.01
            dms[name] = cp.asarray(a + a.T)
        try:
            bank, form = item.get("bank", "auto"), item.get("kernel2", "auto")
            m = B.measure(ex, cls, item["variant"], basis, name, Epilogue(item["epilogue"]),
                          peak, dm=dms[name], bank=bank, kernel2=form)  # fmt: skip
            _jsonl(results, m.row() | {"bank_request": bank, "kernel2_request": form})
            rate = f"{m.quartets_per_second:10.3e} q/s {m.fraction_of_peak:6.1%}"
            what = f"{m.cls:10s} {m.variant:12s} {m.epilogue:5s} T{m.tier}"
            print(f"[{i}/{len(plan)}] {what} {rate}", flush=True)
        except Exception as exc:  # record and go on: one failing kernel must not stop the run
            _jsonl(results, item | {"error": f"{type(exc).__name__}: {exc}"[:500]})
            print(f"[{i}/{len(plan)}] {item}: {exc}", flush=True)
    return 0


def verify(args) -> int:
    import cupy

    from qcbench.molecules import load
    from qcbench.provenance import gpu_info, provenance

    from .verify import Tolerance, adjudicate, verify_engine_deriv, verify_molecule

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = provenance(**gpu_info(cupy), command=_command())
    (out / "verify_device.json").write_text(json.dumps(info, indent=1))
    results = out / "verify_gpu.jsonl"
    tol = Tolerance()
    plain = (
        ()
        if args.deriv_only
        else (("water_clusters/002", "cc-pvqz"), ("water_clusters/002", "ano"))
    )
    for name, basis in plain:
        for cart in (False, True):
            mol = load(name, basis, cart=cart)
            rows = verify_molecule(mol, 4, 2, seed=5, backend="gpu", tol=tol)
            for row in rows:
                rec = row.row() | {"molecule": name, "basis": basis, "cartesian": cart}
                if not row.passed:
                    a = adjudicate(
                        mol, row.worst_quartet, row.worst_element, tol=tol, backend="gpu"
                    )
                    rec |= {
                        "exact": a.exact,
                        "engine_error": a.engine_error,
                        "pyscf_error": a.pyscf_error,
                        "engine_right": a.engine_right,
                    }
                _jsonl(results, rec)
            worst = max(r.max_normalized_error for r in rows)
            print(f"{name} {basis} cart={cart}: {len(rows)} classes, worst {worst:.3g}", flush=True)
    if args.deriv_lmax is not None:
        name, basis = "water_clusters/002", "cc-pvqz"
        rows = verify_engine_deriv(load(name, basis), args.deriv_lmax, "gpu")
        for row in rows:
            _jsonl(
                out / "verify_deriv_gpu.jsonl",
                row | {"molecule": name, "basis": basis, "cartesian": False},
            )
        worst = max(r["max_normalized_error"] for r in rows)
        failed = sum(not (r["passed"] or r.get("engine_right")) for r in rows)
        print(f"derivative classes (int2e_ip1): {len(rows)}, worst {worst:.3g}, {failed} failed",
              flush=True)  # fmt: skip
    return 0


def _kernel_jobs(plan: list[dict], verify: bool) -> list[tuple[str, str, bool, str, str]]:
    """(class tag, variant, spherical, epilogue, bank) of every kernel the benchmarks run, and
    with ``verify`` those of the verification too."""
    jobs = set()
    for item in plan:
        # J/K through Kernel 2 runs the store kernel (Tier 1's larger classes; all of Tier 2,
        # whose J/K kernel is its store kernel)
        epilogues = {item["epilogue"], "store"}
        if item["variant"] == "tier2-only":
            epilogues = {"store"}
        for epilogue in epilogues:
            jobs.add((item["class"], item["variant"], True, epilogue, item.get("bank", "auto")))
    for cls in canonical_classes() if verify else []:
        for spherical in (True, False):
            jobs.add((cls.tag, "full", spherical, "store", "auto"))
    return sorted(jobs, key=lambda j: (sum(map(int, j[0])), j))


def _build_one(
    job: tuple[str, str, bool, str, str], kernel_dir: str, timeout: float, fallback: int | None
) -> dict:
    from fusionrcg.errors import CompileError
    from fusionrcg.library.store import get_kernel

    tag, variant, spherical, epilogue, bank = job
    cls = QuartetClass(*map(int, tag))
    record = {"class": tag, "variant": variant, "spherical": spherical, "epilogue": epilogue,
              "bank": bank}  # fmt: skip
    try:
        k = get_kernel(cls, variant, spherical, epilogue, "cuda", "sm_90", kernel_dir,
                       timeout=timeout, bank=bank, fallback_ptxas_level=fallback)  # fmt: skip
    except CompileError as exc:
        return record | {"error": str(exc)[:300]}
    return (
        record
        | {"kernel": k.binary.name, "tier": int(k.tier), "options": k.options.to_json()}
        | k.report.as_dict()
    )


def kernels(args) -> int:
    """Build every kernel the campaign needs; failures (e.g. Tier 1 past its compile budget)
    are recorded, not fatal."""
    from concurrent.futures import ProcessPoolExecutor

    plan = json.loads((Path(args.inputs) / "plan.json").read_text())
    jobs = _kernel_jobs(plan, verify=not args.bench_only)
    out = Path(args.out)
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [
            pool.submit(_build_one, j, args.kernel_dir, args.timeout, args.fallback_ptxas_level)
            for j in jobs
        ]
        for i, fut in enumerate(futures, 1):
            rec = fut.result()
            _jsonl(out, rec)
            done = rec.get("kernel") or rec.get("error", "")[:100]
            print(f"[{i}/{len(jobs)}] {done}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qcbench.eri.campaign", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--paper-quartets", required=True, help="';'-separated la,lb,lc,ld")
    p.add_argument("--tier-max-total", type=int, default=8)
    p.add_argument("--variants", default="", help="','-separated: keep only these variants")
    p.add_argument("--max-total", type=int, default=None, help="keep only classes up to this")
    p.set_defaults(run=prepare)
    b = sub.add_parser("bench")
    b.add_argument("--inputs", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--kernel-dir", default=None)
    b.add_argument("--budget", type=float, default=400.0, help="seconds of measuring")
    b.add_argument(
        "--quartet-order", choices=("primitive", "given"), default="primitive",
        help="launch order: grouped by primitive counts (the runtime's) or as sampled",
    )  # fmt: skip
    b.add_argument(
        "--max-work", type=int, default=MAX_WORK,
        help="split quartets into items of at most this many primitive quartets (0: never)",
    )  # fmt: skip
    b.set_defaults(run=bench)
    k = sub.add_parser("kernels")
    k.add_argument("--inputs", required=True)
    k.add_argument("--kernel-dir", required=True)
    k.add_argument("--out", required=True, help="JSON-lines build log")
    k.add_argument("--timeout", type=float, default=300.0, help="seconds per kernel")
    k.add_argument(
        "--fallback-ptxas-level",
        type=int,
        choices=[lv for lv in PTXAS_LEVELS if lv != PTXAS_DEFAULT_LEVEL],
        default=None,
        help="build a kernel whose ptxas -O3 runs past the timeout once more at this level",
    )
    k.add_argument("--jobs", type=int, default=2)
    k.add_argument("--bench-only", action="store_true", help="not the verification's kernels")
    k.set_defaults(run=kernels)
    v = sub.add_parser("verify")
    v.add_argument("--out", required=True)
    v.add_argument("--deriv-lmax", type=int, default=None,
                   help="also the first-derivative classes (int2e_ip1) up to this l, through "
                   "the J/K engine's kernels of each")  # fmt: skip
    v.add_argument("--deriv-only", action="store_true",
                   help="with --deriv-lmax: the derivative classes only")  # fmt: skip
    v.set_defaults(run=verify)
    args = parser.parse_args(argv)
    if getattr(args, "deriv_only", False) and args.deriv_lmax is None:
        parser.error("--deriv-only needs --deriv-lmax")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
