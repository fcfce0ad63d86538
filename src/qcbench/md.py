"""``python -m qcbench.md``: ab initio MD runs with ``qcscf`` and their report.

- ``run``: one trajectory of a molecule of ``molecules/`` with ``qcscf.Calculator`` (ours or
  the baseline SCF objects, CPU or GPU) under ``qcscf.MDSettings``; writes the trajectory, the
  per-step log and ``run.json`` (settings, provenance, seconds per step after the first).
- ``report``: a table over runs (seconds per step and against the baseline's, the simulated
  picoseconds an 800 h budget reaches at that step time, total-energy drift per picosecond
  from a least-squares line in NVE, temperature) and a figure of total energy and
  temperature.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from qcscf.calculator import ENGINES

from .molecules import read_xyz, resolve
from .provenance import provenance

BUDGET_HOURS = 800  # the wall-clock budget of the KerneLDI paper's Fig. 7


def _atoms(name: str):
    from ase import Atoms

    atoms = read_xyz(resolve(name))
    return Atoms([s for s, _ in atoms], positions=[xyz for _, xyz in atoms])


def run(args) -> int:
    import qcscf

    settings = qcscf.MDSettings(args.ensemble, args.timestep_fs, args.steps,
                                args.temperature_k, args.friction_per_fs, args.seed)  # fmt: skip
    calc = qcscf.Calculator(xc=args.xc, basis=args.basis, charge=args.charge, spin=args.spin,
                            backend=args.backend, engines=args.engines,
                            grid_level=args.grid_level, conv_tol=args.conv_tol)  # fmt: skip
    out = Path(args.out)
    log = qcscf.run_md(_atoms(args.molecule), calc, settings, out,
                       progress=lambda line: print(line, flush=True))  # fmt: skip
    walls = [float(r["wall_s"]) for r in csv.DictReader(log.open())]
    steps = np.diff(walls)
    info = provenance(command="python -m qcbench.md " + " ".join(sys.argv[1:]))
    info |= {
        "molecule": args.molecule, "xc": args.xc, "basis": args.basis, "charge": args.charge,
        "spin": args.spin, "backend": args.backend, "engines": args.engines,
        "grid_level": args.grid_level, "conv_tol": args.conv_tol,
        "settings": dataclasses.asdict(settings),
        "first_step_s": walls[0],
        "step_s": float(statistics.median(steps)) if len(steps) else float("nan"),
    }  # fmt: skip
    (out / "run.json").write_text(json.dumps(info, indent=1) + "\n")
    return 0


def summarize(folder: Path) -> dict:
    """One row of the report: the run's settings, seconds per step and energy behaviour."""
    info = json.loads((folder / "run.json").read_text())
    rows = list(csv.DictReader((folder / "log.csv").open()))
    t = np.array([float(r["time_fs"]) for r in rows])
    etot = np.array([float(r["etot_ev"]) for r in rows])
    temp = np.array([float(r["temperature_k"]) for r in rows])
    drift = np.polyfit(t / 1000.0, etot, 1)[0] if len(t) > 1 else float("nan")  # eV/ps
    return {
        "run": folder.parent.name,
        "molecule": info["molecule"],
        "method": f"{info['xc']}/{info['basis']}",
        "backend": info["backend"],
        "engines": info["engines"],
        "ensemble": info["settings"]["ensemble"],
        "steps": len(rows) - 1,
        "timestep fs": info["settings"]["timestep_fs"],
        "first step s": info["first_step_s"],
        "s/step": info["step_s"],
        "Etot drift eV/ps": drift if info["settings"]["ensemble"] == "nve" else float("nan"),
        "Etot spread eV": float(etot.max() - etot.min()),
        "T mean K": float(temp.mean()),
        # the KerneLDI paper's Fig. 7 budget, extrapolated from the measured step
        f"ps in {BUDGET_HOURS} h (extrapolated)": BUDGET_HOURS
        * 3600.0
        / info["step_s"]
        * info["settings"]["timestep_fs"]
        / 1000.0,
    }


def with_speedups(table):
    """``table`` (``summarize`` rows) with each run's step time against its baseline row's."""
    base = table[table["engines"] == "baseline"].set_index("run")["s/step"]
    table["step speedup vs baseline"] = table["run"].map(base) / table["s/step"]
    return table


def report(args) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from .tables import write_table

    folders = [Path(f) for f in args.runs]
    table = with_speedups(pd.DataFrame([summarize(f) for f in folders]))
    write_table(table, args.table, args.table_md)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    for folder in folders:
        rows = list(csv.DictReader((folder / "log.csv").open()))
        t = [float(r["time_fs"]) for r in rows]
        etot = np.array([float(r["etot_ev"]) for r in rows])
        label = f"{folder.parent.name} ({folder.name})"
        top.plot(t, (etot - etot[0]) * 1000, label=label)
        bottom.plot(t, [float(r["temperature_k"]) for r in rows], label=label)
    top.set_ylabel("Etot - Etot(0) (meV)")
    bottom.set_ylabel("temperature (K)")
    bottom.set_xlabel("time (fs)")
    top.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.figure, dpi=130)
    plt.close(fig)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qcbench.md", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="one MD trajectory")
    r.add_argument(
        "--molecule", required=True, help="a geometry of molecules/, e.g. water_clusters/002"
    )
    r.add_argument("--xc", default="b3lyp", help="functional, or hf")
    r.add_argument("--basis", default="def2-svp")
    r.add_argument("--charge", type=int, default=0)
    r.add_argument("--spin", type=int, default=0, help="unpaired electrons")
    r.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    r.add_argument("--engines", default="ours", choices=ENGINES,
                   help="ours (both engines), dense (our J/K, KerneLDI's dense XC baseline: "
                   "EXC-cuBLAS on the GPU) or baseline (the SCF objects as they come)")  # fmt: skip
    r.add_argument("--grid-level", type=int, default=3)
    r.add_argument("--conv-tol", type=float, default=1e-9)
    r.add_argument("--ensemble", default="nve", choices=("nve", "nvt"))
    r.add_argument("--timestep-fs", type=float, default=0.5)
    r.add_argument("--steps", type=int, default=10)
    r.add_argument("--temperature-k", type=float, default=300.0)
    r.add_argument("--friction-per-fs", type=float, default=0.01)
    r.add_argument("--seed", type=int, default=7)
    r.add_argument("--out", required=True)
    r.set_defaults(func=run)
    p = sub.add_parser("report", help="table and figure over runs")
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--table-md", required=True)
    p.add_argument("--figure", required=True)
    p.set_defaults(func=report)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
