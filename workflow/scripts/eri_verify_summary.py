"""Per-set error tables, per-class coverage and SUMMARY.md of one backend's verification; exit
non-zero if some class is verified on too few molecules."""

import argparse
import sys
from pathlib import Path

import pandas as pd

from qcbench.eri.reporting.verification import (
    coverage,
    summary_markdown,
    uncovered,
    verified_classes,
)
from qcbench.eri.verify import Tolerance
from qcbench.tables import write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--errors", nargs="+", required=True, help="CSVs of the group jobs")
    parser.add_argument("--backend", required=True)
    parser.add_argument("--lmax", type=int, required=True)
    parser.add_argument("--max-total", type=int, required=True)
    parser.add_argument(
        "--deriv-max-total", type=int, default=-1,
        help="first-derivative classes verified up to this total (-1: none)",
    )  # fmt: skip
    parser.add_argument("--min-molecules", type=int, required=True)
    parser.add_argument(
        "--tolerance", nargs=3, type=float, required=True, metavar=("ABS", "REL", "REL_FLOOR")
    )
    parser.add_argument(
        "--deriv-tolerance", nargs=3, type=float, default=None,
        metavar=("ABS", "REL", "REL_FLOOR"), help="the tolerance of the derivative classes",
    )  # fmt: skip
    parser.add_argument("--out-dir", required=True, help="gets <set>/errors.{csv,md}")
    parser.add_argument("--out-coverage", nargs=2, required=True, metavar=("CSV", "MD"))
    parser.add_argument("--out-summary", required=True)
    args = parser.parse_args()
    classes = verified_classes(args.lmax, args.max_total, args.deriv_max_total)
    order = {str(c): i for i, c in enumerate(classes)}
    errors = pd.concat([pd.read_csv(p) for p in args.errors], ignore_index=True)
    errors = errors[errors["backend"] == args.backend]
    # per set: spherical rows then Cartesian ones, classes in canonical order whatever job
    # computed them, bases in the set's order (the jobs' order, kept by the stable sort)
    keys = {
        "_f": errors["form"].map({"spherical": 0, "cartesian": 1}),
        "_c": errors["cls"].map(order),
    }
    errors = errors.assign(**keys).sort_values(["_f", "_c"], kind="stable")
    errors = errors.drop(columns=["_f", "_c"]).reset_index(drop=True)
    for name, rows in errors.groupby("set", sort=False):
        out = Path(args.out_dir) / str(name)
        write_table(rows, out / "errors.csv", out / "errors.md")
    cov = coverage(errors, classes)
    write_table(cov, *args.out_coverage)
    tol = Tolerance(*args.tolerance)
    deriv_tol = Tolerance(*args.deriv_tolerance) if args.deriv_tolerance else None
    text = summary_markdown(errors, cov, classes, args.backend, args.min_molecules, tol, deriv_tol)
    Path(args.out_summary).write_text(text + "\n")
    short = uncovered(cov, args.min_molecules)
    if not short.empty:
        sys.exit(
            f"{args.backend}: classes verified on fewer than {args.min_molecules} molecules: "
            + ", ".join(short["class"])
        )


if __name__ == "__main__":
    main()
