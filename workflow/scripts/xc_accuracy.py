"""XC engine (CPU backend) against PySCF's NumInt on the same grid for one molecule set."""

import argparse

from kerneldi.settings import Settings
from qcbench.xc.experiments import accuracy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--name", required=True)
    p.add_argument("--molecule", required=True)
    p.add_argument("--basis", required=True)
    p.add_argument("--grid-level", type=int, required=True)
    p.add_argument("--kinds", nargs="+", required=True, choices=["rks", "uks"])
    p.add_argument("--functionals", nargs="+", required=True)
    p.add_argument("--density-forms", nargs="+", default=["matrix"], choices=["matrix", "orbitals"])
    p.add_argument("--block-size", type=int, required=True)
    p.add_argument("--thresholds", nargs=2, type=float, required=True, metavar=("T_B", "T_D"))
    p.add_argument("--tolerance", nargs=2, type=float, required=True, metavar=("EXC", "VXC"))
    p.add_argument("--molecules-dir", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    settings = Settings(block_size=a.block_size, t_b=a.thresholds[0], t_d=a.thresholds[1])
    df = accuracy(
        a.name,
        a.molecule,
        a.basis,
        a.grid_level,
        a.kinds,
        a.functionals,
        settings,
        {"exc": a.tolerance[0], "vxc": a.tolerance[1]},
        a.molecules_dir,
        a.density_forms,
    )
    df.to_csv(a.out, index=False)
    print(df.to_string())


if __name__ == "__main__":
    main()
