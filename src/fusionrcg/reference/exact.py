"""Arbitrary-precision evaluation of a class graph for one shell quartet (mpmath).

It runs the same vertices as the double-precision evaluator with every quantity carried at
``digits`` decimal digits, starting from the shells' double-precision data. Where the engine and
libcint disagree by more than the rounding of the large terms allows, it tells which of the two
is off; it is far too slow for anything but single quartets.
"""

from __future__ import annotations

import itertools

import mpmath
import numpy as np

from ..angmom import sp_common_factor
from ..graph import Dag
from ..graph import symbols as S
from ..orchestration.plan import ClassPlan
from ..shells import Shell


def boys_exact(m: int, t) -> mpmath.mpf:
    if t == 0:
        return mpmath.mpf(1) / (2 * m + 1)
    h = mpmath.mpf(m) + mpmath.mpf(1) / 2
    return mpmath.gammainc(h, 0, t) / (2 * t**h)


def _run(dag: Dag, leaf, symbols: dict) -> list:
    val: list = [None] * len(dag)
    for v, node in enumerate(dag.nodes):
        if node.is_leaf:
            val[v] = leaf(v)
        else:
            val[v] = mpmath.fsum(
                mpmath.mpf(t.coef) * (symbols[t.symbol] if t.symbol else 1) * val[t.src]
                for t in node.terms
            )
    return [val[v] for v in dag.outputs]


def exact_eri(
    plan: ClassPlan, quartet: tuple[Shell, Shell, Shell, Shell], digits: int = 40
) -> np.ndarray:
    """(ab|cd) rounded to double from a ``digits``-digit evaluation; PySCF layout."""
    with mpmath.workdps(digits):
        return _exact(plan, quartet)


def _exact(plan: ClassPlan, quartet) -> np.ndarray:
    g = plan.graph
    mp = lambda x: mpmath.mpf(float(x))  # noqa: E731
    centers = [[mp(x) for x in s.center] for s in quartet]
    a_c, b_c, c_c, d_c = centers
    nctrs = [s.nctr for s in quartet]
    factor = mpmath.fprod(mp(sp_common_factor(s.l)) for s in quartet)
    combos = list(itertools.product(*(range(n) for n in nctrs)))
    acc = {(w, k): mpmath.mpf(0) for w in combos for k in range(len(g.vrr.outputs))}
    for prims in itertools.product(*(range(s.nprim) for s in quartet)):
        a, b, c, d = (mp(s.exponents[i]) for s, i in zip(quartet, prims))
        z, e = a + b, c + d
        ze = z + e
        rho = z * e / ze
        p = [(a * a_c[i] + b * b_c[i]) / z for i in range(3)]
        q = [(c * c_c[i] + d * d_c[i]) / e for i in range(3)]
        w = [(z * p[i] + e * q[i]) / ze for i in range(3)]
        ab2 = mpmath.fsum((a_c[i] - b_c[i]) ** 2 for i in range(3))
        cd2 = mpmath.fsum((c_c[i] - d_c[i]) ** 2 for i in range(3))
        t = rho * mpmath.fsum((p[i] - q[i]) ** 2 for i in range(3))
        pref = (
            factor
            * 2
            * mpmath.pi ** mpmath.mpf(2.5)
            / (z * e * mpmath.sqrt(ze))
            * mpmath.exp(-a * b / z * ab2 - c * d / e * cd2)
        )
        sym = {S.OO2Z: 1 / (2 * z), S.OO2E: 1 / (2 * e), S.OO2ZE: 1 / (2 * ze)}
        sym[S.ROZ_OO2Z] = rho / z / (2 * z)
        sym[S.ROE_OO2E] = rho / e / (2 * e)
        for i in range(3):
            sym[S.PA[i]] = p[i] - a_c[i]
            sym[S.WP[i]] = w[i] - p[i]
            sym[S.QC[i]] = q[i] - c_c[i]
            sym[S.WQ[i]] = w[i] - q[i]
        for k, x in enumerate((a, b, c, d)):
            sym[S.TWO_EXP[k]] = 2 * x
        boys_values = [pref * boys_exact(m, t) for m in range(plan.cls.boys_order + 1)]
        targets = _run(g.vrr, lambda v, f=boys_values: f[g.vrr.nodes[v].label[2]], sym)
        for combo in combos:
            weight = mpmath.fprod(
                mp(s.coefficients[i, k]) for s, i, k in zip(quartet, prims, combo)
            )
            for k, value in enumerate(targets):
                acc[(combo, k)] += weight * value
    hsym = {}
    for i in range(3):
        hsym[S.AB[i]] = a_c[i] - b_c[i]
        hsym[S.CD[i]] = c_c[i] - d_c[i]
    shape = g.output_shape
    lead = shape[:-4]  # the gradient component of a derivative class
    out = np.zeros((*lead, *(n * k for n, k in zip(nctrs, shape[-4:]))))
    for combo in combos:
        values = _run(g.hrr, lambda v, combo=combo: acc[(combo, v)], hsym)
        block = np.array([float(x) for x in values]).reshape(shape)
        where = tuple(slice(c * k, (c + 1) * k) for c, k in zip(combo, shape[-4:]))
        out[(Ellipsis, *where)] = block
    return out
