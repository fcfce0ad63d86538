"""qcscf: both engines in one SCF, the ASE calculator and MD, against PySCF's own SCF objects
(the same calculator with engines="baseline"). Energies to 1e-8 eV, forces to 1e-6 eV/A."""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest
from ase.build import molecule
from ase.optimize import BFGS
from pyscf import dft

import fusionrcg
import kerneldi
import qcscf

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
SETTINGS = {"basis": "sto-3g", "grid_level": 1}
ENERGY_TOL = 1e-8  # eV
FORCE_TOL = 1e-6  # eV/Angstrom


# the cation is open-shell (unrestricted) with a nondegenerate singly occupied orbital, so
# both SCFs reach the same state
@pytest.mark.parametrize("xc, charge, spin", [("b3lyp", 0, 0), ("hf", 0, 0), ("pbe", 1, 1)])
def test_ours_matches_pyscf(xc, charge, spin):
    atoms = molecule("H2O")
    found = {}
    for engines in ("baseline", "ours", "dense"):
        atoms.calc = qcscf.Calculator(xc=xc, charge=charge, spin=spin, engines=engines,
                                      **SETTINGS)  # fmt: skip
        found[engines] = atoms.get_potential_energy(), atoms.get_forces()
    for engines in ("ours", "dense"):  # KerneLDI's block products and its dense baseline
        assert abs(found[engines][0] - found["baseline"][0]) <= ENERGY_TOL
        assert np.abs(found[engines][1] - found["baseline"][1]).max() <= FORCE_TOL


def test_nearby_geometries_keep_the_basis_order():
    """An MD step (atoms moved 0.01 Angstrom) keeps the previous geometry's basis order in the
    calculator's one NumInt; energy and forces there match PySCF's (the baseline calculator
    taking the same two steps, so both SCFs start from their last density)."""
    found, numints = {}, {}
    for engines in ("ours", "baseline"):
        atoms = molecule("H2O")
        atoms.calc = calc = qcscf.Calculator(xc="pbe", basis="6-31g", grid_level=1,
                                             engines=engines)  # fmt: skip
        atoms.get_potential_energy()
        numints[engines] = calc._numint
        atoms.positions[0, 2] += 0.01
        found[engines] = atoms.get_potential_energy(), atoms.get_forces()
        assert calc._numint is numints[engines]
    assert numints["baseline"] is None  # the baseline keeps PySCF's own NumInt
    assert numints["ours"].orders_reused
    assert abs(found["ours"][0] - found["baseline"][0]) <= ENERGY_TOL
    assert np.abs(found["ours"][1] - found["baseline"][1]).max() <= FORCE_TOL


def test_forces_are_the_energy_gradient():
    """Hartree-Fock, so that no grid moves with the atoms: central differences of the energy
    (step 1e-3 Angstrom) give the force to the step's error."""
    atoms = molecule("H2O")
    atoms.calc = qcscf.Calculator(xc="hf", **SETTINGS)
    force = atoms.get_forces()[0, 2]
    h = 1e-3
    energies = []
    for step in (h, -h):
        moved = atoms.copy()
        moved.positions[0, 2] += step
        moved.calc = qcscf.Calculator(xc="hf", **SETTINGS)
        energies.append(moved.get_potential_energy())
    assert abs(force + (energies[0] - energies[1]) / (2 * h)) < 1e-4


def test_apply_puts_both_engines_in_a_dft_object():
    mf = qcscf.apply(dft.RKS(molecule_mol(), xc="pbe"))
    assert isinstance(mf._numint, kerneldi.NumInt)
    assert isinstance(mf, fusionrcg.jk.scf.FusionJKMixin)
    assert isinstance(mf.nuc_grad_method(), kerneldi.grad.KerneLDIGradMixin)
    assert isinstance(mf.Gradients(), kerneldi.grad.KerneLDIGradMixin)
    numint = kerneldi.NumInt(backend="cpu")
    assert qcscf.apply(dft.RKS(molecule_mol(), xc="pbe"), numint=numint)._numint is numint
    with pytest.raises(TypeError, match="with a given numint"):
        qcscf.apply(dft.RKS(molecule_mol(), xc="pbe"), numint=numint, block_size=16)


def molecule_mol():
    from pyscf import gto

    return gto.M(atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59", basis="sto-3g", verbose=0)


@pytest.mark.parametrize("ensemble", ["nve", "nvt"])
def test_md_writes_its_trajectory_and_log(tmp_path, ensemble):
    lines = []
    settings = qcscf.MDSettings(ensemble=ensemble, timestep_fs=0.5, steps=3)
    log = qcscf.run_md(molecule("H2O"), qcscf.Calculator(xc="hf", **SETTINGS), settings,
                       tmp_path, progress=lines.append)  # fmt: skip
    rows = list(csv.DictReader(log.open()))
    assert [int(r["step"]) for r in rows] == [0, 1, 2, 3]
    assert len(lines) == 4 and lines[-1].startswith("[3/3]")
    assert (tmp_path / "trajectory.traj").stat().st_size > 0
    if ensemble == "nve":  # velocity Verlet keeps the total energy (Hartree-Fock: no grid)
        etot = [float(r["etot_ev"]) for r in rows]
        assert max(etot) - min(etot) < 1e-3


def test_bfgs_lowers_the_forces():
    atoms = molecule("H2O")
    atoms.positions[1] += (0.0, 0.1, 0.05)
    atoms.calc = qcscf.Calculator(xc="hf", **SETTINGS)
    before = np.abs(atoms.get_forces()).max()
    BFGS(atoms, logfile=None).run(fmax=0.05, steps=20)
    assert np.abs(atoms.get_forces()).max() < min(0.05, before)


def test_each_geometry_starts_from_the_last_density():
    atoms = molecule("H2O")
    calc = qcscf.Calculator(xc="hf", basis="6-31g")
    atoms.calc = calc
    atoms.get_potential_energy()
    atoms.positions[0, 2] += 0.01
    atoms.get_potential_energy()
    assert calc.scf_cycles[1] < calc.scf_cycles[0]


def test_bad_input_is_named():
    atoms = molecule("H2O")
    atoms.positions[1] = atoms.positions[0] + 0.1
    atoms.calc = qcscf.Calculator(xc="hf", **SETTINGS)
    with pytest.raises(qcscf.GeometryError, match="Angstrom apart"):
        atoms.get_potential_energy()
    atoms = molecule("H2O")
    atoms.calc = qcscf.Calculator(xc="b3lyp", max_cycle=2, **SETTINGS)
    with pytest.raises(qcscf.SCFNotConverged, match="did not converge in 2 cycles"):
        atoms.get_potential_energy()
    uranium = molecule("H2O")
    uranium.set_chemical_symbols(["U", "H", "H"])
    uranium.calc = qcscf.Calculator(xc="hf", **SETTINGS)
    with pytest.raises(qcscf.UnsupportedBasis, match="U"):
        uranium.get_potential_energy()
    with pytest.raises(ValueError, match="engines"):
        qcscf.Calculator(engines="fast")
    with pytest.raises(ValueError, match="ensemble"):
        qcscf.MDSettings(ensemble="npt")
