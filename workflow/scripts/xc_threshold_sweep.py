"""Error of the XC engine against the block-pair threshold t_d for one molecule (Fig. 3)."""

import argparse

from kerneldi.settings import Settings
from qcbench.xc.experiments import threshold_sweep


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--molecule", required=True)
    p.add_argument("--basis", required=True)
    p.add_argument("--grid-level", type=int, required=True)
    p.add_argument("--xc", required=True)
    p.add_argument("--t-d", nargs="+", type=float, required=True)
    p.add_argument("--block-size", type=int, required=True)
    p.add_argument("--t-b", type=float, required=True)
    p.add_argument("--molecules-dir", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    settings = Settings(block_size=a.block_size, t_b=a.t_b)
    df = threshold_sweep(a.molecule, a.basis, a.grid_level, a.xc, a.t_d, settings, a.molecules_dir)
    df.to_csv(a.out, index=False)
    print(df.to_string())


if __name__ == "__main__":
    main()
