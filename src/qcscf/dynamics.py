"""ASE-driven ab initio molecular dynamics with ``qcscf.Calculator``: NVE (velocity Verlet) or
NVT (Langevin), a trajectory and a per-step log (time, potential, kinetic and total energy,
temperature, SCF cycles, wall seconds)."""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ase import units
from ase.io import Trajectory
from ase.md.langevin import Langevin
from ase.md.velocitydistribution import MaxwellBoltzmannDistribution, Stationary, ZeroRotation
from ase.md.verlet import VelocityVerlet

ENSEMBLES = ("nve", "nvt")
LOG_FIELDS = ("step", "time_fs", "epot_ev", "ekin_ev", "etot_ev", "temperature_k",
              "scf_cycles", "wall_s")  # fmt: skip


@dataclass(frozen=True)
class MDSettings:
    """``ensemble`` "nve" (velocity Verlet) or "nvt" (Langevin at ``temperature_k`` with
    ``friction_per_fs``); initial velocities from a Maxwell-Boltzmann distribution at
    ``temperature_k`` (``seed``), without net translation or rotation."""

    ensemble: str = "nve"
    timestep_fs: float = 0.5
    steps: int = 10
    temperature_k: float = 300.0
    friction_per_fs: float = 0.01
    seed: int = 7

    def __post_init__(self) -> None:
        if self.ensemble not in ENSEMBLES:
            raise ValueError(f"ensemble must be one of {ENSEMBLES}, got {self.ensemble!r}")
        if not (self.timestep_fs > 0 and self.steps >= 1 and self.temperature_k >= 0):
            raise ValueError(f"timestep_fs > 0, steps >= 1 and temperature_k >= 0: {self}")


def run_md(atoms, calc, settings: MDSettings, out_dir: str | Path,
           progress: Callable[[str], None] | None = None) -> Path:  # fmt: skip
    """Run ``settings.steps`` MD steps of ``atoms`` with ``calc``; writes ``trajectory.traj``
    and ``log.csv`` (``LOG_FIELDS``, step 0 the start) into ``out_dir`` and returns the log's
    path. ``progress`` gets one line per step."""
    import numpy as np

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atoms = atoms.copy()
    atoms.calc = calc
    rng = np.random.default_rng(settings.seed)
    MaxwellBoltzmannDistribution(atoms, temperature_K=settings.temperature_k, rng=rng)
    Stationary(atoms)
    ZeroRotation(atoms)
    dt = settings.timestep_fs * units.fs
    if settings.ensemble == "nve":
        dyn = VelocityVerlet(atoms, timestep=dt)
    else:
        dyn = Langevin(atoms, timestep=dt, temperature_K=settings.temperature_k,
                       friction=settings.friction_per_fs / units.fs, rng=rng)  # fmt: skip
    log_path = out / "log.csv"
    traj = Trajectory(str(out / "trajectory.traj"), "w", atoms)
    start = time.perf_counter()
    with log_path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(LOG_FIELDS)

        def record() -> None:
            epot, ekin = atoms.get_potential_energy(), atoms.get_kinetic_energy()
            cycles = calc.scf_cycles[-1] if getattr(calc, "scf_cycles", None) else -1
            row = (dyn.nsteps, dyn.nsteps * settings.timestep_fs, epot, ekin, epot + ekin,
                   atoms.get_temperature(), cycles, time.perf_counter() - start)  # fmt: skip
            writer.writerow(row)
            f.flush()
            traj.write()
            if progress is not None:
                progress(f"[{dyn.nsteps}/{settings.steps}] Etot {epot + ekin:.6f} eV, "
                         f"T {row[5]:.1f} K, {row[7]:.1f} s")  # fmt: skip

        dyn.attach(record, interval=1)  # ASE calls it at the start too: step 0
        dyn.run(settings.steps)
    traj.close()
    return log_path
