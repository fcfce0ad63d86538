"""The project's geometries (``molecules/``) as PySCF molecules."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "molecules"


class GeometryError(ValueError):
    """A geometry file that is missing or malformed."""


def read_xyz(path: str | Path) -> list[tuple[str, tuple[float, float, float]]]:
    """Atoms of a plain XYZ file (count line, comment line, one atom a line; Angstrom)."""
    path = Path(path)
    if not path.is_file():
        raise GeometryError(f"{path}: no such geometry file")
    lines = path.read_text().splitlines()
    try:
        count = int(lines[0].split()[0])
    except (IndexError, ValueError):
        raise GeometryError(f"{path}: the first line must be the atom count") from None
    body = [ln for ln in lines[2:] if ln.strip()]
    if len(body) != count:
        raise GeometryError(f"{path}: says {count} atoms but lists {len(body)}")
    atoms = []
    for n, line in enumerate(body, start=3):
        parts = line.split()
        try:
            symbol, x, y, z = parts[0], *map(float, parts[1:4])
        except (IndexError, ValueError):
            raise GeometryError(f"{path}:{n}: expected 'symbol x y z', got {line!r}") from None
        atoms.append((symbol, (x, y, z)))
    return atoms


def resolve(name: str, root: Path = ROOT) -> Path:
    """``water_clusters/003`` or ``water_clusters/003.xyz`` -> the file under ``molecules/``."""
    path = root / name
    return path if path.suffix == ".xyz" else path.with_suffix(".xyz")


def load(name: str, basis: str, cart: bool = False, root: Path = ROOT, **kwargs):
    """A built PySCF ``Mole`` (neutral, lowest spin consistent with the electron count)."""
    from pyscf import gto

    atoms = read_xyz(resolve(name, root))
    mol = gto.Mole(atom=atoms, basis=basis, cart=cart, unit="Angstrom", verbose=0, **kwargs)
    mol.spin = sum(gto.charge(a[0]) for a in atoms) % 2
    return mol.build()
