"""The pipeline's CPU experiments: accuracy against PySCF, block and pair fractions, the
threshold sweep of KerneLDI Fig. 3, the basis orders compared, and CPU timings against
EXC-OpenBLAS."""

from __future__ import annotations

import dataclasses
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd
from pyscf import dft

from kerneldi.numint import NumInt
from kerneldi.settings import Settings
from qcbench.molecules import load

KINDS = {"rks": (0, None), "uks": (1, 1)}  # uks: the singly charged doublet


def system(
    molecule: str,
    basis: str,
    grid_level: int,
    kind: str = "rks",
    molecules_dir=None,
    orbitals: bool = False,
):
    """(mol, grids, dm): PySCF grid of the level, Hueckel-guess density (delocalized, cheap).
    With ``orbitals`` the density keeps PySCF's ``mo_coeff``/``mo_occ`` tags where the guess
    has them (the restricted one)."""
    kw = {} if molecules_dir is None else {"root": Path(molecules_dir)}
    mol = load(molecule, basis, **kw)
    charge, spin = KINDS[kind]
    if charge:
        mol.charge, mol.spin = charge, spin
        mol.build()
    grids = dft.gen_grid.Grids(mol)
    grids.level = grid_level
    grids.build()
    scf = dft.RKS(mol) if kind == "rks" else dft.UKS(mol)
    dm = scf.get_init_guess(key="huckel")
    return mol, grids, dm if orbitals else np.asarray(dm)


def _errors(got, ref) -> dict:
    n, e, v = got
    n0, e0, v0 = ref
    return {
        "d_nelec": float(np.max(np.abs(np.asarray(n) - np.asarray(n0)))),
        "d_exc": float(abs(e - e0)),
        "max_d_vxc": float(np.abs(np.asarray(v) - np.asarray(v0)).max()),
    }


def _fractions(stats: dict) -> dict:
    """The kept blocks and executed pair fractions of an engine's ``stats()``."""
    keys = ("retained_fraction", "density_pair_fraction", "potential_pair_fraction")
    return {k: stats[k] for k in keys}


def accuracy(
    name: str,
    molecule: str,
    basis: str,
    grid_level: int,
    kinds,
    functionals,
    settings: Settings,
    tolerance: dict,
    molecules_dir=None,
    density_forms=("matrix",),
) -> pd.DataFrame:
    """One row per (kind, functional, density form): errors against PySCF's NumInt on the
    same grid (given the plain density matrix), the block and pair fractions, and whether the
    row meets the tolerance. The orbital form runs where the density carries its orbitals."""
    rows = []
    for kind in kinds:
        mol, grids, dm = system(molecule, basis, grid_level, kind, molecules_dir, orbitals=True)
        forms = [f for f in density_forms if f == "matrix" or hasattr(dm, "mo_coeff")]
        refs = {
            xc: getattr(dft.numint.NumInt(), f"nr_{kind}")(mol, grids, xc, np.asarray(dm))
            for xc in functionals
        }
        for xc, form in itertools.product(functionals, forms):
            ref = refs[xc]
            ni = NumInt(backend="cpu", settings=dataclasses.replace(settings, density_form=form))
            err = _errors(getattr(ni, f"nr_{kind}")(mol, grids, xc, dm), ref)
            stats = ni.stats()
            rows.append(
                {
                    "set": name,
                    "molecule": molecule,
                    "natm": mol.natm,
                    "basis": basis,
                    "nao": mol.nao,
                    "grid_level": grid_level,
                    "npoints": grids.size,
                    "kind": kind.upper(),
                    "xc": xc,
                    "density_form": stats["density_form"],
                    **err,
                    **_fractions(stats),
                    "pass": err["d_exc"] <= tolerance["exc"]
                    and err["max_d_vxc"] <= tolerance["vxc"]
                    and err["d_nelec"] <= tolerance["exc"],
                }
            )
    return pd.DataFrame(rows)


def threshold_sweep(
    molecule: str,
    basis: str,
    grid_level: int,
    xc: str,
    t_ds,
    settings: Settings,
    molecules_dir=None,
) -> pd.DataFrame:
    """KerneLDI Fig. 3: the error of Exc (and Vxc) against the pair threshold t_d, t_b fixed,
    measured against PySCF's NumInt and against this engine without any screening."""
    mol, grids, dm = system(molecule, basis, grid_level, "rks", molecules_dir)
    ref = dft.numint.NumInt().nr_rks(mol, grids, xc, dm)
    unscreened = NumInt(settings=Settings(t_b=0.0, t_d=0.0)).nr_rks(mol, grids, xc, dm)
    ni = NumInt(settings=settings)
    rows = []
    for t_d in sorted(t_ds):
        ni.update_settings(t_d=t_d)  # same blocks, new pair screening
        got = ni.nr_rks(mol, grids, xc, dm)
        stats = ni.stats()
        rows.append(
            {
                "molecule": molecule,
                "natm": mol.natm,
                "nao": mol.nao,
                "basis": basis,
                "xc": xc,
                "t_b": settings.t_b,
                "t_d": t_d,
                **{f"{k}_vs_pyscf": v for k, v in _errors(got, ref).items()},
                **{f"{k}_vs_unscreened": v for k, v in _errors(got, unscreened).items()},
                **_fractions(stats),
            }
        )
    return pd.DataFrame(rows)


def basis_orders(
    molecule: str,
    basis: str,
    grid_level: int,
    xc: str,
    orders,
    settings: Settings,
    molecules_dir=None,
) -> pd.DataFrame:
    """The block structure under each basis order (``Settings.basis_order``): kept blocks,
    executed pairs, the layout's seconds, the first call (layout and blocks) and a second one,
    and the error against PySCF's NumInt on the same grid."""
    mol, grids, dm = system(molecule, basis, grid_level, "rks", molecules_dir)
    ref = dft.numint.NumInt().nr_rks(mol, grids, xc, dm)
    rows = []
    for order in orders:
        ni = NumInt(settings=dataclasses.replace(settings, basis_order=order))
        seconds = []
        for _ in range(2):
            t0 = time.perf_counter()
            got = ni.nr_rks(mol, grids, xc, dm)
            seconds.append(time.perf_counter() - t0)
        stats = ni.stats()
        rows.append(
            {
                "molecule": molecule,
                "natm": mol.natm,
                "nao": mol.nao,
                "basis": basis,
                "xc": xc,
                "basis_order": order,
                **_fractions(stats),
                "layout_s": stats["layout_seconds"],
                "first_call_s": seconds[0],
                "call_s": seconds[1],
                **{f"{k}_vs_pyscf": v for k, v in _errors(got, ref).items()},
            }
        )
    return pd.DataFrame(rows)


def cpu_timing(molecule: str, basis: str, grid_level: int, xc: str) -> dict:
    """Ours against EXC-OpenBLAS and PySCF's nr_rks on one molecule (``bench.compare_sizes``
    on the CPU: same grid, same density from two PBE cycles)."""
    from .bench import Budget, Env, compare_sizes

    rec = compare_sizes(
        Env("cpu", variants=("matrix-form",)), molecule, basis, grid_level, Budget(1e9), True, xc
    )
    ours = rec["ours_fp64"]
    return {
        "molecule": molecule,
        "natm": rec["natm"],
        "nao": rec["nao"],
        "basis": basis,
        "npoints": rec["npoints"],
        "xc": xc,
        "ours_s": ours["median_s"],
        "ours_first_call_s": rec["ours_first_call_s"],
        "ours_recompute_s": rec["ours_fp64_recompute"]["median_s"],
        "exc_openblas_s": rec["exc_openblas"]["median_s"],
        "pyscf_s": rec["pyscf"]["median_s"],
        "speedup_vs_exc_openblas": ours["speedup_vs_exc_openblas"],
        "speedup_vs_pyscf": ours["speedup_vs_pyscf"],
        "d_exc_vs_pyscf": ours["vs_pyscf"]["d_exc"],
        "retained_fraction": rec["ours_stats"]["retained_fraction"],
        "density_pair_fraction": ours["pair_fractions"]["density_pair_fraction"],
        "potential_pair_fraction": ours["pair_fractions"]["potential_pair_fraction"],
    }
