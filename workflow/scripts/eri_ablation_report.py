"""One ablation of the design: the full kernel against one variant on the ablation's quartets,
both measured in one eri-bench record (table and figure)."""

import argparse

from qcbench.eri.reporting import gpu_figures, gpu_results
from qcbench.records import read_record
from qcbench.tables import write_table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--record", required=True, help="the ablation's eri-bench record folder")
    p.add_argument("--variant", required=True, help="the ablated variant, e.g. no-dsa")
    p.add_argument("--quartets", nargs="+", required=True, help="la,lb,lc,ld per quartet")
    p.add_argument("--out-table", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--out-figure", required=True)
    a = p.parse_args()
    record = read_record(a.record)
    results = gpu_results.load_results([record], [])
    throughput = gpu_results.throughput_table(results.measurements, results.device["fp64_fma_peak"])
    table = gpu_results.paired_table(throughput, a.quartets, "full", a.variant)
    write_table(table, *a.out_table)
    title = f"Full kernel against {a.variant} (record {record.id})"
    gpu_figures.ablation_figure(table, title, a.out_figure)
    print(table.to_string())


if __name__ == "__main__":
    main()
