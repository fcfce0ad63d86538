"""Verify one set (molecule x bases, one output form) against PySCF; exit non-zero if a class
fails both the comparison and the 40-digit adjudication."""

import argparse
import sys

from fusionrcg.reporting.verification import failures, verify_set
from fusionrcg.verify import Tolerance
from qcbench.tables import write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", required=True, help="set name")
    parser.add_argument("--molecule", required=True, help="geometry under the molecules dir")
    parser.add_argument("--bases", nargs="+", required=True)
    parser.add_argument("--cartesian", action="store_true", help="Cartesian output (mol.cart)")
    parser.add_argument("--molecules-dir", required=True)
    parser.add_argument("--lmax", type=int, required=True)
    parser.add_argument("--per-class", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument(
        "--tolerance", nargs=3, type=float, required=True, metavar=("ABS", "REL", "REL_FLOOR")
    )
    parser.add_argument("--out", required=True, help="CSV of per-class errors")
    args = parser.parse_args()
    tol = Tolerance(*args.tolerance)
    errors = verify_set(
        args.name,
        args.molecule,
        args.bases,
        args.cartesian,
        args.lmax,
        args.per_class,
        args.seed,
        tol,
        args.molecules_dir,
    )
    write_table(errors, args.out)
    bad = failures(errors)
    if not bad.empty:
        rows = "; ".join(f"{r.cls} {r.basis} {r.form}" for r in bad.itertuples())
        sys.exit(f"{args.name}: classes wrong against PySCF and the exact value: {rows}")


if __name__ == "__main__":
    main()
