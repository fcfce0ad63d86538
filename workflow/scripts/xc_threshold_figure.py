"""KerneLDI Fig. 3 from the per-molecule threshold sweeps: plot and table."""

import argparse

import pandas as pd

from qcbench.tables import write_table
from qcbench.xc.figures import threshold_sweep_figure


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--default-t-d", type=float, required=True)
    p.add_argument("--plot", required=True)
    p.add_argument("--table", nargs=2, required=True, metavar=("CSV", "MD"))
    a = p.parse_args()
    df = pd.concat([pd.read_csv(f) for f in a.inputs], ignore_index=True)
    write_table(df, *a.table)
    threshold_sweep_figure(df, a.plot, a.default_t_d)


if __name__ == "__main__":
    main()
