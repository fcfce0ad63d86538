"""``python -m kerneldi``: KerneLDI is used from Python; this says how.

It has no command line of its own beyond the benchmark (``python -m kerneldi.bench``): the
engine is a drop-in ``NumInt`` that an SCF object takes, so a command line would only wrap a
PySCF calculation.
"""

from __future__ import annotations

import argparse
import sys

USE = """\
KerneLDI is a library, used from Python as a drop-in NumInt for PySCF or GPU4PySCF:

    from pyscf import dft
    import kerneldi

    mf = dft.RKS(mol, xc="m062x")
    mf._numint = kerneldi.NumInt(backend="cpu")   # or backend="gpu"
    mf.kernel()

The benchmark of the engine is a command: python -m kerneldi.bench --help
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kerneldi",
        description=USE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.parse_args(argv)  # --help, or an error for anything else
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
