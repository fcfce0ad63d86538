"""``python -m qcdist scf molecule.xyz --basis cc-pvdz --xc b3lyp``, under ``mpirun -n N`` or
``srun``: the SCF on rank 0 with J/K and XC over every rank; rank 0 prints the energy and, with
``--output``, writes a JSON summary (energy, convergence, ranks, schedule, per-rank tasks)."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from .comm import BACKENDS, init
from .scf import ScfOptions, run_scf
from .schedule import SCHEDULES


def molecule(path: str, basis: str, charge: int = 0, spin: int = 0, verbose: int = 0):
    """The molecule of an XYZ file (count line, comment line, then one atom a line; Angstrom)."""
    import pyscf

    lines = Path(path).read_text().splitlines()
    count = int(lines[0].split()[0])
    atoms = "\n".join(" ".join(line.split()[:4]) for line in lines[2 : 2 + count])
    return pyscf.M(atom=atoms, basis=basis, charge=charge, spin=spin, verbose=verbose)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m qcdist", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("scf", help="an SCF with J/K and XC over the MPI ranks")
    s.add_argument("xyz")
    s.add_argument("--basis", default="cc-pvdz")
    s.add_argument("--xc", default="hf", help='"hf" or a functional (e.g. b3lyp)')
    s.add_argument("--charge", type=int, default=0)
    s.add_argument("--spin", type=int, default=0, help="2S (unrestricted when not zero)")
    s.add_argument("--unrestricted", action="store_true")
    s.add_argument("--grid-level", type=int, default=3)
    s.add_argument("--conv-tol", type=float, default=1e-10)
    s.add_argument("--schedule", choices=SCHEDULES, default="pull")
    s.add_argument("--backend", choices=BACKENDS, default="auto")
    s.add_argument("--verbose", type=int, default=0, help="PySCF's verbosity on rank 0")
    s.add_argument("--output", help="a JSON summary, written by rank 0")
    return p


def scf_command(args) -> int:
    ctx = init(backend=args.backend)
    mol = molecule(args.xyz, args.basis, args.charge, args.spin,
                   args.verbose if ctx.root else 0)  # fmt: skip
    opts = ScfOptions(
        basis=args.basis, xc=args.xc, unrestricted=args.unrestricted or args.spin != 0,
        grid_level=args.grid_level, conv_tol=args.conv_tol, schedule=args.schedule,
    )  # fmt: skip
    mf = run_scf(ctx, mol, opts)
    if not ctx.root:
        return 0
    summary = {
        "molecule": args.xyz, "basis": args.basis, "xc": args.xc, "energy": float(mf.e_tot),
        "converged": bool(mf.converged), "ranks": ctx.size, "backend": ctx.backend,
        "schedule": args.schedule, "reduction": mf.dist_jk.reducer.via,
    }  # fmt: skip
    print(f"E = {mf.e_tot:.12f} Eh  converged={mf.converged}  ranks={ctx.size} "
          f"backend={ctx.backend} schedule={args.schedule}")  # fmt: skip
    if args.output:
        Path(args.output).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if mf.converged else 1


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return scf_command(args)
    except Exception:
        # one rank failing leaves the others in a collective: end the whole job
        traceback.print_exc()
        sys.stderr.flush()
        from .comm import mpi

        mpi().COMM_WORLD.Abort(1)
        return 1


if __name__ == "__main__":
    sys.exit(main())
