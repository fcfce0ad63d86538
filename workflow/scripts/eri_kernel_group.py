"""Build the CUDA kernels of a group of jobs into the kernel library; one record per kernel
(ptxas report or compile error) in a CSV."""

import argparse
import time

import pandas as pd

from qcbench.eri.reporting.kernel_builds import BuildJob, build_record
from qcbench.tables import write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--jobs",
        nargs="+",
        required=True,
        help="class tag:variant:form:epilogue, e.g. 2211:full:spherical:store",
    )
    parser.add_argument("--kernel-dir", required=True)
    parser.add_argument("--arch", required=True)
    parser.add_argument("--timeout", type=float, required=True, help="seconds per kernel")
    parser.add_argument("--out", required=True, help="CSV of build records")
    args = parser.parse_args()
    records = []
    for i, text in enumerate(args.jobs, 1):
        start = time.perf_counter()
        record = build_record(BuildJob.parse(text), args.kernel_dir, args.timeout, args.arch)
        records.append(record)
        status = "error" if record["error"] else f"{record['registers']} registers"
        seconds = time.perf_counter() - start
        print(f"[{i}/{len(args.jobs)}] {text}: {status}, {seconds:.1f} s", flush=True)
    write_table(pd.DataFrame(records), args.out)


if __name__ == "__main__":
    main()
