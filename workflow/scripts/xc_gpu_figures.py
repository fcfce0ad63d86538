"""KerneLDI Figs. 2 and 4 (the energy, and the nuclear gradient's right panel of Fig. 2 and
Fig. 4b) and a summary from the GPU benchmark's records (xc-bench records under each root,
qcbench.records)."""

import argparse

from qcbench.records import discover
from qcbench.tables import write_table
from qcbench.xc.figures import (
    fig2,
    fig2_gradient,
    fig4,
    fig4_gradient,
    gpu_summary,
    gradient_table,
    load_gpu,
    sweep_table,
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--records", nargs="+", required=True, help="record roots, e.g. records")
    p.add_argument("--fig2", required=True)
    p.add_argument("--fig4", required=True)
    p.add_argument("--fig2-gradient", required=True)
    p.add_argument("--fig4-gradient", required=True)
    p.add_argument("--table", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--gradient-table", nargs=2, required=True, metavar=("CSV", "MD"))
    p.add_argument("--summary", required=True)
    a = p.parse_args()
    results = load_gpu(discover(a.records, "xc-bench"))
    table = sweep_table(results)
    write_table(table, *a.table)
    paper = results["provenance"]["paper_v100"]
    fig4(table, a.fig4, paper)
    fig2(table, a.fig2, paper)
    gradients = gradient_table(results)
    write_table(gradients, *a.gradient_table)
    fig4_gradient(gradients, a.fig4_gradient)
    fig2_gradient(gradients, a.fig2_gradient)
    with open(a.summary, "w") as f:
        f.write(gpu_summary(results, table))


if __name__ == "__main__":
    main()
