"""Verification of the engine against PySCF over molecule x basis x output form, with 40-digit
adjudication of every class that misses the tolerance, and the coverage that results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fusionrcg.angmom import QuartetClass, canonical_classes
from qcbench.molecules import load
from qcbench.tables import to_markdown

from ..verify import ClassErrors, Tolerance, adjudicate, sample_quartets, verify_class
from .graph_tables import orchestration_cost

ADJUDICATION_COLUMNS = ("exact", "engine_error", "pyscf_error", "engine_normalized", "engine_right")
BACKEND_TEXT = {
    "reference": "The NumPy evaluation of each class's orchestrated graph.",
    "cpu": "The generated C++ kernels (the same lowering as the CUDA kernels), compiled on "
    "first use into the kernel library.",
    "gpu": "The generated CUDA kernels, launched through CuPy.",
}


@dataclass(frozen=True)
class VerifySet:
    """One molecule in several bases and output forms."""

    name: str
    molecule: str
    bases: tuple[str, ...]
    cartesian: tuple[bool, ...]


def form(cartesian: bool) -> str:
    return "cartesian" if cartesian else "spherical"


def verified_classes(lmax: int, max_total: int, deriv_max_total: int = -1) -> list[QuartetClass]:
    """The canonical classes a backend is verified on, and the first-derivative classes (the
    gradient on each of the four positions) of those up to ``deriv_max_total``."""
    classes = [c for c in canonical_classes(lmax) if c.total <= max_total]
    top = min(max_total, deriv_max_total)
    return classes + [c.with_deriv(p) for c in classes if c.total <= top for p in range(4)]


def load_sets(sets: Sequence[VerifySet], molecules_dir: str | Path) -> dict[tuple, object]:
    """Built molecules keyed by (set, basis, cartesian)."""
    return {
        (s.name, basis, cart): load(s.molecule, basis, cart=cart, root=Path(molecules_dir))
        for s in sets
        for cart in dict.fromkeys(s.cartesian)
        for basis in s.bases
    }


def class_rows(
    cls: QuartetClass,
    sets: Sequence[VerifySet],
    mols: dict[tuple, object],
    backends: Sequence[str],
    per_class: int,
    seed: int,
    tol: Tolerance,
    deriv_tol: Tolerance | None = None,
) -> list[dict]:
    """Rows of ``cls`` for each backend on every set, basis and output form that has shells
    for it; a derivative class is held to ``deriv_tol`` (default ``tol``).

    Forms are the outer loop, so the class is orchestrated once per form for every set, basis
    and backend (plans are cached per process). Quartets come from a generator seeded with
    ``seed`` and the class, so a row does not depend on how classes are grouped into jobs;
    both forms of a basis and every backend get the same quartets. A class that fails has its
    worst element adjudicated in 40-digit arithmetic against that backend's value (the exact
    value is computed once for all backends)."""
    molecule = {s.name: s.molecule for s in sets}
    if cls.deriv is not None and deriv_tol is not None:
        tol = deriv_tol
    rows = []
    for cart in (False, True):
        for (name, basis, mol_cart), mol in mols.items():
            if mol_cart != cart:
                continue
            quartets = sample_quartets(mol, cls, per_class, np.random.default_rng([seed, *cls.ls]))
            if not quartets:
                continue
            for backend in backends:
                errors = verify_class(mol, cls, quartets, backend, tol=tol)
                row = {"backend": backend, "set": name, "molecule": molecule[name]}
                row |= {"basis": basis, "form": form(cart), "total": cls.total} | errors.row()
                rows.append(row | adjudicated(mol, errors, backend, tol, cls.deriv))
    return rows


def adjudicated(
    mol, errors: ClassErrors, backend: str, tol: Tolerance, centre: int | None = None
) -> dict:
    """The adjudication columns of a row (empty when the class passed) and ``verified``;
    ``centre``: the derivative position of a derivative class."""
    row: dict = dict.fromkeys(ADJUDICATION_COLUMNS)
    if not errors.passed:
        verdict = adjudicate(
            mol, errors.worst_quartet, errors.worst_element, tol=tol, backend=backend,
            centre=centre,
        )  # fmt: skip
        row |= {
            "exact": verdict.exact,
            "engine_error": verdict.engine_error,
            "pyscf_error": verdict.pyscf_error,
            "engine_normalized": verdict.engine_normalized,
            "engine_right": verdict.engine_right,
        }
    row["verified"] = errors.passed or bool(row["engine_right"])
    return row


def verification_cost(cls: QuartetClass, backends: Sequence[str]) -> float:
    """Rough seconds to verify ``cls`` with ``backends`` on the configured sets, for balancing
    jobs only (fitted to timed runs). Orchestration and evaluation grow with the accumulator
    bank; the C++ kernels add their compilation and evaluate deep general contractions segment
    by segment; classes of small total are where ANO elements go to the 40-digit adjudication
    (tens of seconds each, shared by the backends)."""
    seconds = len(backends) * (2.0 + orchestration_cost(cls) / 600)
    if "cpu" in backends:
        seconds += 5.0
    if cls.total <= 4:
        seconds += 15.0
    return seconds


def failures(errors: pd.DataFrame) -> pd.DataFrame:
    """Rows that fail both the PySCF comparison and the adjudication."""
    return errors[~errors["verified"]]


def coverage(errors: pd.DataFrame, classes: Sequence[QuartetClass]) -> pd.DataFrame:
    """Per class and form: on how many molecules (and which sets) it was verified."""
    verified = errors[errors["verified"]]
    rows = []
    for cls in classes:
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

    keys = ["set", "molecule", "basis", "form"]  # one backend per table
    return errors.groupby(keys, sort=False).apply(summarize, include_groups=False).reset_index()


def adjudications(errors: pd.DataFrame) -> pd.DataFrame:
    cols = ["set", "basis", "form", "cls", "worst_quartet", "worst_element"]
    cols += ["max_normalized_error", *ADJUDICATION_COLUMNS]
    return errors[errors["engine_right"].notna()][cols]


def scope(classes: Sequence[QuartetClass], capital: bool = False) -> str:
    """``every canonical class up to (4,4|4,4)`` or ``... with total <= 8``, as computed, and
    the first-derivative classes among them."""
    energy = [c for c in classes if c.deriv is None]
    top = max(energy, key=lambda c: (c.total, c.ls))
    lmax = max(max(c.ls) for c in energy)
    text = f"every canonical class with l <= {lmax} and total <= {top.total}"
    if top.total == 4 * lmax:
        text = f"every canonical class up to {top}"
    derivs = [c for c in classes if c.deriv is not None]
    if derivs:
        text += (
            f", and the first derivatives (gradient on each of the four positions) of those "
            f"with total <= {max(c.total for c in derivs)}"
        )
    return text[0].upper() + text[1:] if capital else text


def summary_markdown(
    errors: pd.DataFrame,
    cov: pd.DataFrame,
    classes: Sequence[QuartetClass],
    backend: str,
    min_molecules: int,
    tol: Tolerance,
    deriv_tol: Tolerance | None = None,
) -> str:
    bad, short = failures(errors), uncovered(cov, min_molecules)
    adj = adjudications(errors)
    coverage_verdict = "PASS" if short.empty else f"FAIL on {', '.join(short['class'])}"
    failure_verdict = (
        "none"
        if bad.empty
        else ", ".join(f"{r.cls} ({r.set} {r.basis} {r.form})" for r in bad.itertuples())
    )
    lines = [
        f"# ERI verification against PySCF: backend `{backend}`",
        f"{BACKEND_TEXT[backend]} An element passes when "
        f"`|mine - pyscf| <= max({tol.abs:g}, {tol.rel:g} |pyscf|)`; "
        f"relative errors are reported where `|pyscf| > {tol.rel_floor:g}`. The normalized "
        "error is the error over its allowance (<= 1 passes). A class that fails has its "
        "worst element evaluated in 40-digit arithmetic; it counts as verified when the "
        "engine is within tolerance of that exact value and closer to it than PySCF."
        + (
            f" Derivative classes: `max({deriv_tol.abs:g}, {deriv_tol.rel:g} |pyscf|)`, "
            "against `int2e_ip1` / `int2e_ip2`."
            if deriv_tol is not None and any(c.deriv is not None for c in classes)
            else ""
        ),
        "## Coverage",
        f"{scope(classes, capital=True)} ({len(cov)} classes) verified in spherical and "
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
