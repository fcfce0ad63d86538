"""Verification of the engine against PySCF over molecule x basis x output form, with 40-digit
adjudication of every class that misses the tolerance, and the coverage that results."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from qcbench.molecules import load
from qcbench.tables import to_markdown

from ..angmom import canonical_classes
from ..verify import Tolerance, adjudicate, sample_quartets, verify_class

ADJUDICATION_COLUMNS = ("exact", "engine_error", "pyscf_error", "engine_normalized", "engine_right")


def form(cartesian: bool) -> str:
    return "cartesian" if cartesian else "spherical"


def verify_set(
    name: str,
    molecule: str,
    bases: Sequence[str],
    cartesian: bool,
    lmax: int,
    per_class: int,
    seed: int,
    tol: Tolerance,
    molecules_dir: str | Path,
) -> pd.DataFrame:
    """Rows of set ``name``: one per (class, basis) that the basis has shells for.

    Classes are the outer loop so that each class is orchestrated once for all bases (plans are
    cached per process). Each basis draws its quartets from its own generator seeded with
    ``seed``, so its rows are those ``verify_molecule`` gives for that basis alone. A class that
    fails has its worst element adjudicated in 40-digit arithmetic."""
    mols = {b: load(molecule, b, cart=cartesian, root=Path(molecules_dir)) for b in bases}
    rngs = {b: np.random.default_rng(seed) for b in bases}
    rows = []
    for cls in canonical_classes(lmax):
        for basis, mol in mols.items():
            quartets = sample_quartets(mol, cls, per_class, rngs[basis])
            if not quartets:
                continue
            errors = verify_class(mol, cls, quartets, tol=tol)
            row = {"set": name, "molecule": molecule, "basis": basis, "form": form(cartesian)}
            row |= {"total": cls.total} | errors.row()
            row |= dict.fromkeys(ADJUDICATION_COLUMNS)
            if not errors.passed:
                verdict = adjudicate(mol, errors.worst_quartet, errors.worst_element, tol=tol)
                row |= {
                    "exact": verdict.exact,
                    "engine_error": verdict.engine_error,
                    "pyscf_error": verdict.pyscf_error,
                    "engine_normalized": verdict.engine_normalized,
                    "engine_right": verdict.engine_right,
                }
            row["verified"] = errors.passed or bool(row["engine_right"])
            rows.append(row)
    return pd.DataFrame(rows)


def failures(errors: pd.DataFrame) -> pd.DataFrame:
    """Rows that fail both the PySCF comparison and the adjudication."""
    return errors[~errors["verified"]]


def coverage(errors: pd.DataFrame, lmax: int) -> pd.DataFrame:
    """Per canonical class and form: on how many molecules (and which sets) it was verified."""
    verified = errors[errors["verified"]]
    rows = []
    for cls in canonical_classes(lmax):
        row: dict = {"class": str(cls), "total": cls.total}
        for f in ("spherical", "cartesian"):
            hits = verified[(verified["cls"] == str(cls)) & (verified["form"] == f)]
            row[f"{f}_molecules"] = hits["molecule"].nunique()
            row[f"{f}_sets"] = " ".join(sorted(hits["set"].unique()))
        rows.append(row)
    return pd.DataFrame(rows)


def uncovered(cov: pd.DataFrame, min_molecules: int) -> pd.DataFrame:
    """Classes verified on fewer than ``min_molecules`` molecules in either form."""
    short = (cov["spherical_molecules"] < min_molecules) | (
        cov["cartesian_molecules"] < min_molecules
    )
    return cov[short]


def set_overview(errors: pd.DataFrame) -> pd.DataFrame:
    """Per set, basis and form: classes checked, passes, adjudications, worst error."""

    def summarize(group: pd.DataFrame) -> pd.Series:
        worst = group.loc[group["max_normalized_error"].idxmax()]
        adjudicated = group[group["engine_right"].notna()]
        return pd.Series(
            {
                "classes": len(group),
                "passed": int(group["passed"].sum()),
                "adjudicated": len(adjudicated),
                "engine_right": int(adjudicated["engine_right"].astype(bool).sum()),
                "failed": int((~group["verified"]).sum()),
                "worst_normalized_error": worst["max_normalized_error"],
                "worst_class": worst["cls"],
                "max_rel_error": group["max_rel_error"].max(),
                "max_primitives": int(group["max_primitives"].max()),
                "max_contractions": int(group["max_contractions"].max()),
            }
        )

    keys = ["set", "molecule", "basis", "form"]
    return errors.groupby(keys, sort=False).apply(summarize, include_groups=False).reset_index()


def adjudications(errors: pd.DataFrame) -> pd.DataFrame:
    cols = ["set", "basis", "form", "cls", "worst_quartet", "worst_element"]
    cols += ["max_normalized_error", *ADJUDICATION_COLUMNS]
    return errors[errors["engine_right"].notna()][cols]


def summary_markdown(
    errors: pd.DataFrame, cov: pd.DataFrame, lmax: int, min_molecules: int, tol: Tolerance
) -> str:
    bad, short = failures(errors), uncovered(cov, min_molecules)
    adj = adjudications(errors)
    top = cls_label(lmax)
    coverage_verdict = "PASS" if short.empty else f"FAIL on {', '.join(short['class'])}"
    failure_verdict = (
        "none"
        if bad.empty
        else ", ".join(f"{r.cls} ({r.set} {r.basis} {r.form})" for r in bad.itertuples())
    )
    lines = [
        "# ERI verification against PySCF",
        f"An element passes when `|mine - pyscf| <= max({tol.abs:g}, {tol.rel:g} |pyscf|)`; "
        f"relative errors are reported where `|pyscf| > {tol.rel_floor:g}`. The normalized "
        "error is the error over its allowance (<= 1 passes). A class that fails has its "
        "worst element evaluated in 40-digit arithmetic; it counts as verified when the "
        "engine is within tolerance of that exact value and closer to it than PySCF.",
        "## Coverage",
        f"Every canonical class up to {top} ({len(cov)} classes) verified in spherical and "
        f"Cartesian form on at least {min_molecules} molecules: **{coverage_verdict}**. "
        f"Fewest molecules per class: {cov['spherical_molecules'].min()} spherical, "
        f"{cov['cartesian_molecules'].min()} Cartesian.",
        f"Classes failing both PySCF and the adjudication: **{failure_verdict}**.",
        "## Per set, basis and form",
        to_markdown(set_overview(errors)),
        f"## Adjudications ({len(adj)})",
        to_markdown(adj) if len(adj) else "None: every class passed the PySCF comparison.",
        "## Molecules per class",
        to_markdown(cov),
    ]
    return "\n\n".join(lines)


def cls_label(lmax: int) -> str:
    letters = "spdfg"
    return f"({letters[lmax]}{letters[lmax]}|{letters[lmax]}{letters[lmax]})"
