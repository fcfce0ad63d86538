"""CPU timing of one molecule: the engine against EXC-OpenBLAS and PySCF's nr_rks."""

import argparse

import pandas as pd

from qcbench.xc.experiments import cpu_timing


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--molecule", required=True)
    p.add_argument("--basis", required=True)
    p.add_argument("--grid-level", type=int, required=True)
    p.add_argument("--xc", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    df = pd.DataFrame([cpu_timing(a.molecule, a.basis, a.grid_level, a.xc)])
    df.to_csv(a.out, index=False)
    print(df.to_string())


if __name__ == "__main__":
    main()
