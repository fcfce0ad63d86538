"""Per-set error tables, per-class coverage and the combined SUMMARY.md of the verification;
exit non-zero if some class is verified on too few molecules."""

import argparse
import sys
from pathlib import Path

import pandas as pd

from fusionrcg.reporting.verification import coverage, summary_markdown, uncovered
from fusionrcg.verify import Tolerance
from qcbench.tables import write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--errors", nargs="+", required=True, help="CSVs of the set jobs")
    parser.add_argument("--lmax", type=int, required=True)
    parser.add_argument("--min-molecules", type=int, required=True)
    parser.add_argument(
        "--tolerance", nargs=3, type=float, required=True, metavar=("ABS", "REL", "REL_FLOOR")
    )
    parser.add_argument("--out-dir", required=True, help="gets <set>/errors.{csv,md}")
    parser.add_argument("--out-coverage", nargs=2, required=True, metavar=("CSV", "MD"))
    parser.add_argument("--out-summary", required=True)
    args = parser.parse_args()
    errors = pd.concat([pd.read_csv(p) for p in args.errors], ignore_index=True)
    for name, rows in errors.groupby("set", sort=False):
        out = Path(args.out_dir) / str(name)
        write_table(rows, out / "errors.csv", out / "errors.md")
    cov = coverage(errors, args.lmax)
    write_table(cov, *args.out_coverage)
    text = summary_markdown(errors, cov, args.lmax, args.min_molecules, Tolerance(*args.tolerance))
    Path(args.out_summary).write_text(text + "\n")
    short = uncovered(cov, args.min_molecules)
    if not short.empty:
        sys.exit(
            f"classes verified on fewer than {args.min_molecules} molecules: "
            + ", ".join(short["class"])
        )


if __name__ == "__main__":
    main()
