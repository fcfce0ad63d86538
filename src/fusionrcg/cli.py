"""``fusionrcg`` command line."""

from __future__ import annotations

import argparse
import json
import sys

from .angmom import ClassError, QuartetClass
from .stats import graph_summary
from .variants import VARIANTS, VariantError


def _print_text(summary: dict) -> None:
    print(f"class {summary['class']}  variant {summary['variant']}")
    for key in ("nodes", "edges", "accumulators", "registers", "tier", "buffer_slots", "flops"):
        inner = ", ".join(f"{k}={v}" for k, v in summary[key].items())
        print(f"  {key:13s} {inner}")
    print("  peak_live")
    for axis, orders in summary["peak_live"].items():
        print(f"    {axis:13s} {orders}")


def _graph(args: argparse.Namespace) -> int:
    summary = graph_summary(QuartetClass.parse(args.quartet), args.variant, not args.cartesian)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        _print_text(summary)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fusionrcg", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("graph", help="recurrence graph and orchestration statistics of a class")
    g.add_argument("--quartet", required=True, help="angular momenta la,lb,lc,ld, e.g. 2,2,1,1")
    g.add_argument("--variant", default="full", help=f"one of: {', '.join(VARIANTS)}")
    g.add_argument("--cartesian", action="store_true", help="Cartesian output (mol.cart bases)")
    g.add_argument("--json", action="store_true", help="print JSON")
    g.set_defaults(run=_graph)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ClassError, VariantError) as exc:
        print(f"fusionrcg: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
