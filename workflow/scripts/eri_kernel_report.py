"""Merge the kernel build records into the ptxas table, draw the figure, write SUMMARY.md; fail
if a model Tier 1 kernel with small total spills or did not compile."""

import argparse
import sys
from pathlib import Path

import pandas as pd

from qcbench.eri.reporting.kernel_builds import sorted_records, spill_violations
from qcbench.eri.reporting.kernel_figures import ptxas_figure
from qcbench.eri.reporting.kernel_summary import summary_markdown
from qcbench.tables import write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", nargs="+", required=True, help="group CSVs")
    parser.add_argument("--spill-free-max-total", type=int, required=True)
    parser.add_argument("--arch", required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--out-table", nargs=2, required=True, metavar=("CSV", "MD"))
    parser.add_argument("--out-figure", required=True)
    parser.add_argument("--out-summary", required=True)
    args = parser.parse_args()
    records = sorted_records(pd.concat([pd.read_csv(p) for p in args.records], ignore_index=True))
    write_table(records, *args.out_table)
    ptxas_figure(records, args.out_figure)
    limit = args.spill_free_max_total
    text = summary_markdown(records, limit, args.arch, args.timeout)
    Path(args.out_summary).write_text(text + "\n")
    bad = spill_violations(records, limit)
    if not bad.empty:
        sys.exit(
            f"acceptance check failed: Tier 1 kernels (variant full) with total <= {limit} that "
            "spill or did not compile: "
            + ", ".join(f"{r['class']} ({r['epilogue']})" for _, r in bad.iterrows())
        )


if __name__ == "__main__":
    main()
