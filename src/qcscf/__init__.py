"""DFT and HF end to end with both engines: one switch for an SCF object (``apply``), an ASE
calculator (``Calculator``) and ASE-driven molecular dynamics (``run_md``)."""

from .calculator import Calculator, GeometryError, SCFNotConverged, UnsupportedBasis
from .dynamics import MDSettings, run_md
from .switch import apply

__all__ = [
    "Calculator",
    "GeometryError",
    "MDSettings",
    "SCFNotConverged",
    "UnsupportedBasis",
    "apply",
    "run_md",
]
