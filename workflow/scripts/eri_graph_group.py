"""Orchestrate a group of classes: per-variant plan records and the liveness row of each."""

import argparse
import time

import pandas as pd

from fusionrcg import QuartetClass
from qcbench.eri.reporting.graph_tables import liveness_row, plan_rows
from qcbench.tables import write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--classes", nargs="+", required=True, help="la,lb,lc,ld per class")
    parser.add_argument("--variants", nargs="+", required=True)
    parser.add_argument("--plans", required=True, help="CSV of plan records (canonical classes)")
    parser.add_argument("--liveness", required=True, help="CSV of liveness rows")
    args = parser.parse_args()
    plans, liveness = [], []
    for i, text in enumerate(args.classes, 1):
        cls = QuartetClass.parse(text)
        start = time.perf_counter()
        # non-canonical classes are only the paper's quartets as written: liveness only
        if cls.is_canonical():
            plans += plan_rows(cls, args.variants)
        liveness.append(liveness_row(cls))
        seconds = time.perf_counter() - start
        print(f"[{i}/{len(args.classes)}] {cls}: {seconds:.1f} s", flush=True)
    write_table(pd.DataFrame(plans), args.plans)
    write_table(pd.DataFrame(liveness), args.liveness)


if __name__ == "__main__":
    main()
