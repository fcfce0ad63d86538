"""What every result file records about how it was made."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from importlib import metadata
from pathlib import Path

_PACKAGES = ("numpy", "scipy", "pyscf", "cupy-cuda13x", "gpu4pyscf-cuda13x", "snakemake")


def git_commit(root: Path | None = None, outputs: tuple[str, ...] = ()) -> str:
    """HEAD, with "+dirty" where a tracked file differs from it; ``outputs`` are tracked
    folders the caller is writing (left out of the check)."""
    root = root or Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "."]
            + [f":(exclude){path}" for path in _inside(root, outputs)],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _inside(root: Path, paths: tuple[str, ...]) -> list[str]:
    """``paths`` inside ``root``, relative to it (others cannot change its checkout)."""
    root = root.resolve()
    resolved = [Path(path).resolve() for path in paths]
    return [p.relative_to(root).as_posix() for p in resolved if p.is_relative_to(root)]


def versions() -> dict[str, str]:
    found = {}
    for name in _PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def provenance(outputs: tuple[str, ...] = (), **extra) -> dict:
    """Commit, package versions, host and time, plus anything the caller adds; ``outputs`` as
    in :func:`git_commit`."""
    return {
        "commit": git_commit(outputs=outputs),
        "versions": versions(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }


def gpu_info(cp) -> dict:
    """The GPU and CUDA stack a measurement ran on (``cp`` is the cupy module)."""
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"]
    return {
        "gpu": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": dev.compute_capability,
        "multiprocessors": dev.attributes["MultiProcessorCount"],
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cuda_driver": cp.cuda.runtime.driverGetVersion(),
        "cupy": cp.__version__,
    }
