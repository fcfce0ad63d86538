"""``python -m qcbench.dist COMMAND``:

* ``measure``: per-task costs of the J/K and XC builds on one device (one process), JSON.
* ``comm``: broadcast and reduction seconds between the ranks (under mpiexec), JSON.
* ``ablation``: pull against static on the ranks it runs on (under mpiexec), JSON rows.
* ``overhead``: one rank of the distributed path against the single-process engines, JSON;
  ``overhead-table`` makes its markdown table.
* ``device``: the provenance of a GPU run (commit, versions, device, the command given), JSON,
  for its ``dist`` record (``qcbench.dist.records``).
* ``model``: predicted speedup and efficiency on 8-64 devices from ``measure`` (and ``comm``)
  output, beside the papers' numbers: CSV and markdown tables and a plot.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _molecule(name: str, basis: str):
    from ..molecules import load

    return load(name, basis)


def _grid(mol, level: int):
    from pyscf import dft

    g = dft.gen_grid.Grids(mol)
    g.level = level
    return g.build()


def measure_command(a) -> int:
    from .measure import measure

    jk_mol = _molecule(a.molecule, a.jk_basis)
    xc_mol = _molecule(a.molecule, a.xc_basis)
    out = {"molecule": a.molecule, "jk_basis": a.jk_basis, "xc_basis": a.xc_basis,
           "grid_level": a.grid_level, "backend": a.backend}  # fmt: skip
    jk = measure(jk_mol, a.xc, a.grid_level, a.backend, a.task_pairs, a.repeats)
    xc = measure(xc_mol, a.xc, a.grid_level, a.backend, a.task_pairs, a.repeats)
    out |= {"provenance": jk["provenance"], "jk_nao": jk["nao"], "xc_nao": xc["nao"],
            "jk": jk["jk"], "xc": xc["xc"]}  # fmt: skip
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def comm_command(a) -> int:
    import qcdist

    from .measure import communication

    ctx = qcdist.init(backend=a.backend)
    found = communication(ctx, a.sizes, a.repeats)
    if ctx.root:
        Path(a.out).write_text(json.dumps(found, indent=1) + "\n")
    return 0


def ablation_command(a) -> int:
    import qcdist
    from pyscf import dft

    from ..provenance import provenance
    from .ablation import run

    ctx = qcdist.init(backend=a.backend)
    mol = _molecule(a.molecule, a.basis)
    grids = _grid(mol, a.grid_level)
    dm = dft.RKS(mol).get_init_guess()
    rows = run(ctx, mol, grids, a.xc, dm, a.repeats, a.task_pairs)
    if ctx.root:
        meta = {"molecule": a.molecule, "basis": a.basis, "xc": a.xc, "grid_level": a.grid_level}
        out = {"provenance": provenance(), **meta, "rows": rows}
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def overhead_command(a) -> int:
    import qcdist

    from ..provenance import provenance
    from .overhead import mid_scf_density, one_rank_overhead

    ctx = qcdist.init(backend=a.backend)
    mol = _molecule(a.molecule, a.basis)
    grids = _grid(mol, a.grid_level)
    rows = one_rank_overhead(ctx, mol, grids, a.xc, mid_scf_density(mol), a.repeats)
    meta = {"molecule": a.molecule, "basis": a.basis, "xc": a.xc, "grid_level": a.grid_level}
    found = {"provenance": provenance(), **meta, "repeats": a.repeats, "rows": rows}
    Path(a.out).write_text(json.dumps(found, indent=1) + "\n")
    return 0


def overhead_table_command(a) -> int:
    from .overhead import overhead_markdown

    Path(a.out).write_text(overhead_markdown(json.loads(Path(a.json).read_text())))
    return 0


def device_command(a) -> int:
    from ..provenance import gpu_info, provenance

    import cupy

    Path(a.out).write_text(json.dumps(provenance(command=a.made_by, **gpu_info(cupy)), indent=1))
    return 0


def model_command(a) -> int:
    from .report import model_report

    model_report(a)
    return 0


def _build_arguments(p: argparse.ArgumentParser, grid_level: int, repeats: int):
    """The molecule, basis, functional, grid, backend and repeats of a timed build."""
    p.add_argument("--molecule", required=True, help="a name under molecules/ or an XYZ path")
    p.add_argument("--basis", default="cc-pvdz")
    p.add_argument("--xc", default="b3lyp")
    p.add_argument("--grid-level", type=int, default=grid_level)
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "gpu"))
    p.add_argument("--repeats", type=int, default=repeats)
    return p


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m qcbench.dist", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--molecule", required=True, help="a name under molecules/ or an XYZ path")
    m.add_argument("--jk-basis", default="cc-pvdz")
    m.add_argument("--xc-basis", default="def2-svp")
    m.add_argument("--xc", default="b3lyp")
    m.add_argument("--grid-level", type=int, default=1)
    m.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    m.add_argument("--task-pairs", type=int, default=None)
    m.add_argument("--repeats", type=int, default=3)
    m.add_argument("--out", required=True)
    c = sub.add_parser("comm")
    c.add_argument("--sizes", type=int, nargs="+", default=[128, 512, 2048])
    c.add_argument("--backend", default="auto", choices=("auto", "cpu", "gpu"))
    c.add_argument("--repeats", type=int, default=5)
    c.add_argument("--out", required=True)
    b = _build_arguments(sub.add_parser("ablation"), grid_level=1, repeats=3)
    b.add_argument("--task-pairs", type=int, default=None)
    b.add_argument("--out", required=True)
    o = _build_arguments(sub.add_parser("overhead"), grid_level=3, repeats=5)
    o.add_argument("--out", required=True, help="JSON")
    t = sub.add_parser("overhead-table")
    t.add_argument("--json", required=True, help="overhead's JSON")
    t.add_argument("--out", required=True, help="markdown")
    d = sub.add_parser("device")
    d.add_argument(
        "--command", dest="made_by", required=True, help="the command that made the run's files"
    )
    d.add_argument("--out", required=True)
    r = sub.add_parser("model")
    r.add_argument("--costs", required=True, help="measure's JSON")
    r.add_argument("--comm", help="comm's JSON (its latency replaces --latency-s)")
    r.add_argument("--formula", default="C378H629N105O118S1", help="the target's composition")
    r.add_argument("--target", default="ubiquitin")
    r.add_argument("--jk-basis", default="cc-pvtz")
    r.add_argument("--xc-basis", default="def2-tzvp")
    r.add_argument("--ranks", type=int, nargs="+", default=[1, 8, 16, 32, 64])
    r.add_argument("--gpus-per-node", type=int, default=4)
    r.add_argument("--nvlink-gbs", type=float, default=200.0)
    r.add_argument("--infiniband-gbs", type=float, default=25.0)
    r.add_argument("--latency-s", type=float, default=5e-6)
    r.add_argument("--fetch-s", type=float, default=5e-6)
    r.add_argument("--device-gbs", type=float, default=1500.0, help="device memory bandwidth")
    r.add_argument("--matrix-passes", type=int, default=8)
    r.add_argument("--jk-work-exponent", type=float, default=2.0)
    r.add_argument("--xc-work-exponent", type=float, default=1.0)
    r.add_argument("--task-exponent", type=float, default=1.0)
    r.add_argument("--out-table", nargs=2, required=True, metavar=("CSV", "MD"))
    r.add_argument("--out-figure", required=True)
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    commands = {"measure": measure_command, "comm": comm_command,
                "ablation": ablation_command, "overhead": overhead_command,
                "overhead-table": overhead_table_command,
                "device": device_command, "model": model_command}  # fmt: skip
    if a.command not in ("comm", "ablation", "overhead"):
        return commands[a.command](a)
    try:
        return commands[a.command](a)
    except Exception:
        # under MPI one failing rank leaves the others in a collective: end the whole job
        import traceback

        from qcdist.comm import mpi

        traceback.print_exc()
        sys.stderr.flush()
        mpi().COMM_WORLD.Abort(1)
        return 1


if __name__ == "__main__":
    sys.exit(main())
