"""The XC engine's block structure under each basis order for one molecule (CPU backend)."""

import argparse

from kerneldi.settings import BASIS_ORDERS, Settings
from qcbench.xc.experiments import basis_orders


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--molecule", required=True)
    p.add_argument("--basis", required=True)
    p.add_argument("--grid-level", type=int, required=True)
    p.add_argument("--xc", required=True)
    p.add_argument("--orders", nargs="+", required=True, choices=BASIS_ORDERS)
    p.add_argument("--block-size", type=int, required=True)
    p.add_argument("--thresholds", nargs=2, type=float, required=True, metavar=("T_B", "T_D"))
    p.add_argument("--molecules-dir", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    settings = Settings(block_size=a.block_size, t_b=a.thresholds[0], t_d=a.thresholds[1])
    df = basis_orders(a.molecule, a.basis, a.grid_level, a.xc, a.orders, settings, a.molecules_dir)
    df.to_csv(a.out, index=False)
    print(df.to_string())


if __name__ == "__main__":
    main()
