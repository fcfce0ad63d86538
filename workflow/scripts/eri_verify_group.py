"""Verify a group of classes on every set, basis and output form against PySCF with every
backend that covers them; exit non-zero if a class fails both the comparison and the 40-digit
adjudication."""

import argparse
import sys
import time

import pandas as pd

from fusionrcg import QuartetClass
from qcbench.eri.reporting.verification import VerifySet, class_rows, failures, load_sets
from qcbench.eri.verify import Tolerance
from qcbench.tables import write_table


def parse_set(words: list[str]) -> VerifySet:
    name, molecule, forms, *bases = words
    cartesian = tuple(f == "cartesian" for f in forms.split(","))
    return VerifySet(name, molecule, tuple(bases), cartesian)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--classes", nargs="+", required=True,
        help="class tags: 2211, or 2211_dA for the gradient on position A",
    )  # fmt: skip
    parser.add_argument(
        "--set",
        nargs="+",
        action="append",
        required=True,
        dest="sets",
        metavar="WORD",
        help="name, geometry under the molecules dir, forms (spherical,cartesian), bases...",
    )
    parser.add_argument(
        "--backends",
        nargs="+",
        required=True,
        metavar="BACKEND:MAX_TOTAL",
        help="a backend (reference, cpu) and the largest total it verifies",
    )
    parser.add_argument("--molecules-dir", required=True)
    parser.add_argument("--per-class", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument(
        "--tolerance", nargs=3, type=float, required=True, metavar=("ABS", "REL", "REL_FLOOR")
    )
    parser.add_argument(
        "--deriv-tolerance", nargs=3, type=float, required=True,
        metavar=("ABS", "REL", "REL_FLOOR"), help="the tolerance of the derivative classes",
    )  # fmt: skip
    parser.add_argument("--out", required=True, help="CSV of per-class errors")
    args = parser.parse_args()
    sets = [parse_set(words) for words in args.sets]
    mols = load_sets(sets, args.molecules_dir)
    tol = Tolerance(*args.tolerance)
    deriv_tol = Tolerance(*args.deriv_tolerance)
    limits = {b: int(t) for b, t in (text.split(":") for text in args.backends)}
    rows = []
    for i, text in enumerate(args.classes, 1):
        cls = QuartetClass.from_tag(text)
        backends = [b for b, top in limits.items() if cls.total <= top]
        start = time.perf_counter()
        rows += class_rows(cls, sets, mols, backends, args.per_class, args.seed, tol, deriv_tol)
        seconds = time.perf_counter() - start
        done = f"[{i}/{len(args.classes)}]"
        print(f"{done} {cls} ({', '.join(backends)}): {seconds:.1f} s", flush=True)
    errors = pd.DataFrame(rows)
    write_table(errors, args.out)
    bad = failures(errors)
    if not bad.empty:
        listed = "; ".join(
            f"{r.cls} {r.set} {r.basis} {r.form} ({r.backend})" for r in bad.itertuples()
        )
        sys.exit(f"classes wrong against PySCF and the exact value: {listed}")


if __name__ == "__main__":
    main()
