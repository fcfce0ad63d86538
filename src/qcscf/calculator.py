"""An ASE calculator: energies and forces of HF or Kohn-Sham DFT through PySCF or GPU4PySCF,
with both engines (``engines="ours"``), with FusionRCG's J/K and KerneLDI's dense XC baseline
(``engines="dense"``: EXC-cuBLAS on the GPU, EXC-OpenBLAS on the CPU), or the SCF object's own
code (``engines="baseline"``, the comparison calculator under the same settings)."""

from __future__ import annotations

import numpy as np
from ase.calculators.calculator import CalculationFailed, all_changes
from ase.calculators.calculator import Calculator as ASECalculator
from ase.units import Bohr, Hartree

import kerneldi

from .switch import apply

# nuclei closer than this (Angstrom) are a broken geometry, not a molecule
MIN_DISTANCE = 0.4
ENGINES = ("ours", "dense", "baseline")
BACKENDS = ("cpu", "gpu")


class SCFNotConverged(CalculationFailed):
    """The SCF of a geometry did not converge: its energy and forces would be wrong."""


class GeometryError(CalculationFailed, ValueError):
    """Atoms too close to be a molecule (a failed MD step or a malformed structure)."""


class UnsupportedBasis(ValueError):
    """A basis the engines do not handle (effective core potentials) or that has no functions
    for an element of the molecule."""


class Calculator(ASECalculator):
    """``Calculator(xc="b3lyp", basis="def2-svp", charge=0, spin=0, backend="cpu",
    engines="ours")``: ``xc`` a functional (Kohn-Sham) or ``"hf"``; ``spin`` the number of
    unpaired electrons (restricted when 0, unrestricted otherwise); ``backend`` ``"cpu"``
    (PySCF) or ``"gpu"`` (GPU4PySCF); ``engines`` ``"ours"`` (FusionRCG's J/K and KerneLDI's
    XC through ``qcscf.apply``), ``"dense"`` (the same with KerneLDI's dense products, the
    paper's EXC-cuBLAS / EXC-OpenBLAS baselines) or ``"baseline"`` (the SCF object as it comes).

    Each geometry starts from the previous geometry's density, and with KerneLDI's XC from
    its NumInt, one per calculator: a geometry whose atoms all moved less than
    ``reuse_orders_bohr`` (KerneLDI's setting) keeps the previous one's basis order instead of
    clustering the basis again (an MD step). An SCF that does not converge
    raises ``SCFNotConverged``; atoms closer than ``MIN_DISTANCE`` raise ``GeometryError``.
    Forces come from the SCF object's analytic gradient (``nuc_grad_method``; with our engines
    its XC part from KerneLDI, see ``qcscf.apply``), for DFT with
    the derivative of the grid weights (``grid_response=True``), so that they are the
    derivative of the energy the calculator returns (as MD's energy conservation needs).
    """

    implemented_properties = ["energy", "forces"]
    default_parameters = {
        "xc": "b3lyp",
        "basis": "def2-svp",
        "charge": 0,
        "spin": 0,
        "backend": "cpu",
        "engines": "ours",
        "grid_level": 3,
        "conv_tol": 1e-9,
        "max_cycle": 100,
        "grid_response": True,
    }

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        p = self.parameters
        if p["engines"] not in ENGINES:
            raise ValueError(f"engines must be one of {ENGINES}, got {p['engines']!r}")
        if p["backend"] not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {p['backend']!r}")
        self._dm = None
        self._numint = None
        self.scf_cycles: list[int] = []

    def reset(self):
        super().reset()
        self._dm = None
        self._numint = None

    def _molecule(self, atoms):
        from pyscf import gto

        p = self.parameters
        positions = atoms.get_positions()
        if len(atoms) > 1:
            dist = np.linalg.norm(positions[:, None] - positions[None], axis=2)
            i, j = np.triu_indices(len(atoms), 1)
            k = int(np.argmin(dist[i, j]))
            if dist[i[k], j[k]] < MIN_DISTANCE:
                raise GeometryError(
                    f"atoms {i[k]} and {j[k]} are {dist[i[k], j[k]]:.3f} Angstrom apart (below "
                    f"{MIN_DISTANCE}): not a molecule"
                )
        symbols = atoms.get_chemical_symbols()
        mol = gto.Mole(
            atom=list(zip(symbols, positions.tolist())),
            basis=p["basis"],
            charge=p["charge"],
            spin=p["spin"],
            unit="Angstrom",
            verbose=0,
        )
        try:
            mol.build()
        except (KeyError, RuntimeError, ValueError) as exc:
            elements = sorted(set(symbols))
            raise UnsupportedBasis(f"basis {p['basis']!r} for {elements}: {exc}") from exc
        if mol.has_ecp():
            raise UnsupportedBasis(
                f"basis {p['basis']!r} has effective core potentials for "
                f"{sorted(mol._ecp)}; the engines integrate all-electron bases only"
            )
        missing = sorted({mol.atom_symbol(a) for a in range(mol.natm)} - set(mol._basis))
        if missing:
            raise UnsupportedBasis(f"basis {p['basis']!r} has no functions for {missing}")
        return mol

    def _scf(self, mol):
        p = self.parameters
        if p["backend"] == "gpu":
            from gpu4pyscf import dft, scf
        else:
            from pyscf import dft, scf
        restricted = mol.spin == 0
        if str(p["xc"]).lower() == "hf":
            mf = scf.RHF(mol) if restricted else scf.UHF(mol)
        else:
            mf = dft.RKS(mol, xc=p["xc"]) if restricted else dft.UKS(mol, xc=p["xc"])
            mf.grids.level = p["grid_level"]
        mf.conv_tol = p["conv_tol"]
        mf.max_cycle = p["max_cycle"]
        mf.verbose = 0
        if p["engines"] == "baseline":
            return mf
        if not hasattr(mf, "xc"):  # Hartree-Fock: no XC
            return apply(mf)
        if self._numint is None:
            engine = "dense" if p["engines"] == "dense" else "block"
            self._numint = kerneldi.NumInt(backend=p["backend"], engine=engine)
        return apply(mf, numint=self._numint)

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        mol = self._molecule(self.atoms)
        mf = self._scf(mol)
        dm0 = self._dm if self._dm is not None and self._fits(self._dm, mol) else None
        mf.kernel(dm0=dm0)
        if not mf.converged:
            raise SCFNotConverged(
                f"SCF ({self.parameters['xc']}/{self.parameters['basis']}) did not converge in "
                f"{mf.max_cycle} cycles (conv_tol {mf.conv_tol}); energy {mf.e_tot:.10f} Eh"
            )
        self.scf_cycles.append(int(getattr(mf, "cycles", -1)))
        self._dm = mf.make_rdm1()
        self.results["energy"] = float(mf.e_tot) * Hartree
        if "forces" in properties:
            grad = mf.nuc_grad_method()
            grad.verbose = 0
            if hasattr(grad, "grid_response"):  # DFT: the grid moves with the atoms
                grad.grid_response = self.parameters["grid_response"]
            gradient = grad.kernel()
            gradient = gradient.get() if hasattr(gradient, "get") else np.asarray(gradient)
            self.results["forces"] = -gradient * Hartree / Bohr

    @staticmethod
    def _fits(dm, mol) -> bool:
        return tuple(np.shape(dm))[-2:] == (mol.nao, mol.nao)
