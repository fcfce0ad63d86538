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


def comment_state(path: str | Path) -> tuple[int | None, int | None]:
    """``charge=`` and ``multiplicity=`` from an XYZ file's comment line (None where absent)."""
    lines = Path(path).read_text().splitlines()
    found: dict[str, int] = {}
    for word in (lines[1] if len(lines) > 1 else "").replace(";", " ").split():
        key, sep, value = word.partition("=")
        if sep and key in ("charge", "multiplicity"):
            try:
                found[key] = int(value)
            except ValueError:
                raise GeometryError(f"{path}: {key}= must be an integer, got {value!r}") from None
    return found.get("charge"), found.get("multiplicity")


def load(name: str, basis: str, cart: bool = False, root: Path = ROOT, **kwargs):
    """A built PySCF ``Mole``: the charge and multiplicity the file's comment line states
    (``charge=``, ``multiplicity=``), else neutral with the lowest spin consistent with the
    electron count; ``charge``/``spin`` keywords override the file."""
    from pyscf import gto

    path = resolve(name, root)
    atoms = read_xyz(path)
    charge, multiplicity = comment_state(path)
    kwargs.setdefault("charge", charge or 0)
    mol = gto.Mole(atom=atoms, basis=basis, cart=cart, unit="Angstrom", verbose=0, **kwargs)
    if "spin" not in kwargs:
        electrons = sum(gto.charge(a[0]) for a in atoms) - mol.charge
        mol.spin = multiplicity - 1 if multiplicity is not None else electrons % 2
    return mol.build()
