"""Live values over the schedule steps of one class, per phase and orchestration."""

import argparse

from fusionrcg import QuartetClass
from qcbench.eri.reporting.graph_tables import profile_rows
from qcbench.tables import write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quartet", required=True, help="la,lb,lc,ld")
    parser.add_argument("--out", required=True, help="CSV (long format)")
    args = parser.parse_args()
    write_table(profile_rows(QuartetClass.parse(args.quartet)), args.out)


if __name__ == "__main__":
    main()
