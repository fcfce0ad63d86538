"""``fusionrcg`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .angmom import CENTRES, QuartetClass
from .errors import FusionRCGError, OptionsError
from .options import KernelOptions, kernel_options
from .stats import graph_summary
from .variants import VARIANTS


def _print_text(summary: dict) -> None:
    print(f"class {summary['class']}  variant {summary['variant']}")
    for key in ("nodes", "edges", "accumulators", "registers", "tier", "buffer_slots", "flops"):
        inner = ", ".join(f"{k}={v}" for k, v in summary[key].items())
        print(f"  {key:13s} {inner}")
    print("  peak_live")
    for axis, orders in summary["peak_live"].items():
        print(f"    {axis:13s} {orders}")


def _class(args: argparse.Namespace) -> QuartetClass:
    """``--quartet``, a first-derivative class on ``--centre`` with ``--deriv 1``."""
    cls = QuartetClass.parse(args.quartet)
    if args.deriv == 0:
        return cls
    return cls.with_deriv(CENTRES.index(args.centre))


def _add_class_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quartet", required=True, help="angular momenta la,lb,lc,ld, e.g. 2,2,1,1"
    )
    parser.add_argument(
        "--deriv", type=int, default=0, choices=(0, 1),
        help="derivative order: 1 for the first-derivative class (gradient on --centre)",
    )  # fmt: skip
    parser.add_argument(
        "--centre", default="A", choices=tuple(CENTRES),
        help="with --deriv 1: the centre whose functions are differentiated (default A, "
        "PySCF's int2e_ip1; C is int2e_ip2)",
    )  # fmt: skip


def _graph(args: argparse.Namespace) -> int:
    summary = graph_summary(_class(args), args.variant, not args.cartesian)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        _print_text(summary)
    return 0


def _print(summary: dict, as_json: bool) -> None:
    if as_json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        for k, v in summary.items():
            print(f"{k:18s} {v}")


def _options(args: argparse.Namespace) -> KernelOptions:
    """The preset of ``--variant``, or the options of the ``--options`` JSON file."""
    if args.options is None:
        return kernel_options(args.variant)
    try:
        data = json.loads(Path(args.options).read_text())
    except (OSError, ValueError) as exc:
        raise OptionsError(f"cannot read kernel options from {args.options}: {exc}") from None
    return KernelOptions.from_json(data)


def _build(args: argparse.Namespace) -> int:
    from .library.store import get_kernel, locate_kernel_dir

    cls = _class(args)
    options = _options(args)
    built = get_kernel(
        cls, options, not args.cartesian, args.epilogue, "cuda", args.arch, args.kernel_dir
    )
    directory, chosen_by = locate_kernel_dir(args.kernel_dir)
    report = built.report
    summary = {
        "class": str(cls),
        "variant": options.variant.name,
        "kernel": built.name,
        "tier": int(built.tier),
        "arch": args.arch,
        "registers": report.registers,
        "spill_store_bytes": report.spill_store_bytes,
        "spill_load_bytes": report.spill_load_bytes,
        "stack_bytes": report.stack_bytes,
        "ptxas_level": report.ptxas_level,  # below 3 where the library's build fell back
        "slots_per_quartet": built.n_slots,
        # Tier 2: where its slot bank lives, and its generated Kernel 2
        "slot_bank": built.slot_bank,
        "kernel2": built.jk_kernel,
        "compile_seconds": round(report.compile_seconds, 2),
        "cached": built.cached,
        # "index": the library answered the request; "binary": generated, and that source's
        # binary was in the library; "built": compiled now
        "origin": built.origin,
        "kernel_dir": str(directory.resolve()),
        "kernel_dir_from": KERNEL_DIR_FROM[chosen_by],
        "cubin": str(built.binary),
        "options": options.to_json(),
    }
    _print(summary, args.json)
    return 0


def _prebuild(args: argparse.Namespace) -> int:
    from .jk.kernels import prebuild

    prebuild(
        args.lmax, not args.cartesian, args.variant, args.target, args.arch, args.kernel_dir,
        args.jobs, deriv_lmax=args.deriv_lmax, omega=args.omega,
        memory=None if args.memory_gb is None else int(args.memory_gb * 2**30),
    )  # fmt: skip
    return 0


def _cache(args: argparse.Namespace) -> int:
    from .library.store import clear_library, library_files, locate_kernel_dir

    directory, chosen_by = locate_kernel_dir(args.kernel_dir)
    files = library_files(directory)
    summary = {
        "kernel_dir": str(directory.resolve()),
        "kernel_dir_from": KERNEL_DIR_FROM[chosen_by],
        "index_entries": len(files["index"]),
        "binaries": len(files["binaries"]),
        "other_files": len(files["other"]),
        "bytes": sum(f.stat().st_size for group in files.values() for f in group),
    }
    if args.clear:
        summary["removed_files"] = clear_library(directory)
    _print(summary, args.json)
    return 0


KERNEL_DIR_FROM = {
    "argument": "--kernel-dir",
    "environment": "$FUSIONRCG_KERNEL_DIR",
    "default": "default (~/.cache/fusionrcg/kernels)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fusionrcg", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("graph", help="recurrence graph and orchestration statistics of a class")
    _add_class_arguments(g)
    g.add_argument("--variant", default="full", help=f"one of: {', '.join(VARIANTS)}")
    g.add_argument("--cartesian", action="store_true", help="Cartesian output (mol.cart bases)")
    g.add_argument("--json", action="store_true", help="print JSON")
    g.set_defaults(run=_graph)
    b = sub.add_parser("build", help="generate and compile a class's CUDA kernel (needs nvcc)")
    _add_class_arguments(b)
    b.add_argument("--variant", default="full", help=f"one of: {', '.join(VARIANTS)}")
    b.add_argument(
        "--options", default=None, help="JSON file of kernel options (KernelOptions.to_json); "
        "replaces --variant",
    )  # fmt: skip
    b.add_argument("--arch", default="sm_90", help="GPU architecture, e.g. sm_90")
    b.add_argument(
        "--epilogue", default="store", choices=("store", "jk", "grad"),
        help="store the integrals, fold them into J and K, or (a derivative class) into "
        "per-atom energy gradients",
    )  # fmt: skip
    b.add_argument("--cartesian", action="store_true", help="Cartesian output")
    b.add_argument("--kernel-dir", default=None, help="kernel library directory")
    b.add_argument("--json", action="store_true", help="print JSON")
    b.set_defaults(run=_build)
    p = sub.add_parser(
        "prebuild", help="build the J/K engine's kernels of every class up to l = --lmax ahead"
    )
    p.add_argument("--lmax", type=int, default=4, help="highest l of the basis (default 4)")
    p.add_argument("--variant", default="full", help=f"one of: {', '.join(VARIANTS)}")
    p.add_argument("--target", default="cuda", choices=("cuda", "cpp"), help="GPU or CPU kernels")
    p.add_argument("--arch", default="sm_90", help="GPU architecture, e.g. sm_90")
    p.add_argument("--cartesian", action="store_true", help="Cartesian output")
    p.add_argument("--kernel-dir", default=None, help="kernel library directory")
    p.add_argument("--jobs", type=int, default=1, help="kernels built at once")
    p.add_argument(
        "--memory-gb", type=float, default=None,
        help="host memory (GB) the heavy builds may take together (the straight-line "
        "derivative kernels, up to about 19 GB of ptxas each); default: what the host has "
        "available",
    )  # fmt: skip
    p.add_argument(
        "--deriv-lmax", type=int, default=None,
        help="also the first-derivative kernels (analytic gradients) of every class up to this l",
    )  # fmt: skip
    p.add_argument(
        "--omega", type=float, default=0.0,
        help="the long-range erf(omega r)/r kernels of a range-separated functional "
        "(e.g. 0.3 for wB97X); default 0, the Coulomb kernels",
    )  # fmt: skip
    p.set_defaults(run=_prebuild)
    c = sub.add_parser(
        "cache",
        help="where the kernel library is and what it holds; --clear empties it",
        description="The kernel library that `build` and the Python API use: --kernel-dir, "
        "else $FUSIONRCG_KERNEL_DIR, else ~/.cache/fusionrcg/kernels (docs/kernel-cache.md).",
    )
    c.add_argument("--kernel-dir", default=None, help="kernel library directory")
    action = c.add_mutually_exclusive_group()
    action.add_argument("--info", action="store_true", help="show the library (the default)")
    action.add_argument(
        "--clear", action="store_true", help="remove the library's files (kernels rebuild on use)"
    )
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(run=_cache)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except FusionRCGError as exc:
        print(f"fusionrcg: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
