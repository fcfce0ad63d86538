"""Block-pair screening on a real molecule: executed work falls, error rises with t_d."""

from __future__ import annotations

import numpy as np

import kerneldi


def test_executed_pairs_monotone_in_t_d(get_system, get_reference):
    case = ("water_clusters/003", "def2-svp", 0)
    mol, grids, dm = get_system(*case)
    n0, e0, v0 = get_reference(*case, "pbe", "rks")
    fractions, errors = [], []
    for t_d in (1e-14, 1e-12, 1e-8, 1e-5, 1e-3):
        ni = kerneldi.NumInt(t_d=t_d)
        _, e, v = ni.nr_rks(mol, grids, "pbe", dm)
        s = ni.stats()
        fractions.append((s["density_pair_fraction"], s["potential_pair_fraction"]))
        errors.append(max(abs(e - e0), np.abs(v - v0).max()))
    for a, b in zip(fractions, fractions[1:]):
        assert b[0] <= a[0] and b[1] <= a[1]
    assert fractions[-1][1] < 0.9 * fractions[0][1]  # screening did drop work
    assert errors[1] <= 1e-8 < errors[-1]  # and costs accuracy only when t_d is loose
