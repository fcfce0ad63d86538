"""Concatenate per-molecule CSV rows into one table (CSV and Markdown)."""

import argparse

import pandas as pd

from qcbench.tables import write_table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--out", nargs=2, required=True, metavar=("CSV", "MD"))
    a = p.parse_args()
    write_table(pd.concat([pd.read_csv(f) for f in a.inputs], ignore_index=True), *a.out)


if __name__ == "__main__":
    main()
