"""Accuracy and block/pair fraction tables of all sets; exit non-zero if a row misses the
tolerance."""

import argparse
import sys

import pandas as pd

from qcbench.tables import write_table

FRACTIONS = ["retained_fraction", "density_pair_fraction", "potential_pair_fraction"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--accuracy", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--fractions", nargs=2, required=True, metavar=("CSV", "MD"))
    a = p.parse_args()
    df = pd.concat([pd.read_csv(f) for f in a.inputs], ignore_index=True)
    write_table(df.drop(columns=FRACTIONS), *a.accuracy)
    keys = [
        "set", "molecule", "natm", "basis", "nao", "grid_level", "npoints", "kind", "xc",
        "density_form",
    ]  # fmt: skip
    write_table(df[keys + FRACTIONS], *a.fractions)
    failed = df[~df["pass"]]
    if not failed.empty:
        sys.exit("rows beyond the tolerance:\n" + failed.to_string())


if __name__ == "__main__":
    main()
