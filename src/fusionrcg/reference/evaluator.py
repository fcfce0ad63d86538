"""Reference evaluator: executes an orchestrated class graph with NumPy.

It runs exactly the vertices of the plan in the plan's order, vectorized over the primitive
quartets (Phase 1) and over the contracted quartets and contraction combinations (Phase 2) of a
batch of shell quartets of one class. A value is dropped at its last use, so the evaluator also
checks that the plan's liveness is what the arithmetic needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..angmom import sp_common_factor
from ..errors import InputError
from ..graph import Dag, NodeKind
from ..graph import symbols as S
from ..orchestration.liveness import LiveRanges
from ..orchestration.plan import ClassPlan
from ..shells import Shell
from .boys import boys

_TWO_PI_2_5 = 2.0 * np.pi**2.5

Quartet = tuple[Shell, Shell, Shell, Shell]


def _pair(s1: Shell, s2: Shell):
    """Gaussian-product quantities of a shell pair, shaped (n1, n2[, 3]).

    P - A = b/zeta (B - A) is formed from the centre difference, never from absolute
    coordinates: molecules far from the origin would otherwise lose digits (and P - A would not
    vanish exactly for a one-centre pair)."""
    a = s1.exponents[:, None]
    b = s2.exponents[None, :]
    zeta = a + b
    ba = s2.center - s1.center
    pa = (b / zeta)[..., None] * ba
    k = np.exp(-a * b / zeta * float(ba @ ba))
    return zeta, pa, k


def phase1_symbols(
    quartets: Sequence[Quartet],
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Per-primitive-quartet symbols (``TWO_EXP`` of derivative classes included), the Boys
    argument T and the [00|00] prefactor, each of shape (n_quartets * na * nb * nc * nd,),
    quartet-major."""
    sym_parts: dict[str, list[np.ndarray]] = {name: [] for name in S.PRIMITIVE_SYMBOLS}
    t_parts, pref_parts = [], []
    for name in S.TWO_EXP:
        sym_parts[name] = []
    for sa, sb, sc, sd in quartets:
        zeta, pa, kab = _pair(sa, sb)
        eta, qc, kcd = _pair(sc, sd)
        z = zeta[:, :, None, None]
        e = eta[None, None, :, :]
        ze = z + e
        rho = z * e / ze
        pa4 = np.broadcast_to(pa[:, :, None, None, :], (*ze.shape, 3))
        qc4 = np.broadcast_to(qc[None, None, :, :, :], (*ze.shape, 3))
        pq = (sa.center - sc.center) + pa4 - qc4  # P - Q from differences only
        t_parts.append((rho * np.einsum("...i,...i->...", pq, pq)).ravel())
        factor = np.prod([sp_common_factor(s.l) for s in (sa, sb, sc, sd)])
        pref = _TWO_PI_2_5 / (z * e * np.sqrt(ze)) * kab[:, :, None, None] * kcd[None, None]
        pref_parts.append((factor * pref).ravel())
        wp = -(e / ze)[..., None] * pq  # W - P = eta/(zeta+eta) (Q - P)
        wq = (z / ze)[..., None] * pq  # W - Q = zeta/(zeta+eta) (P - Q)
        for i in range(3):
            sym_parts[S.PA[i]].append(pa4[..., i].ravel())
            sym_parts[S.WP[i]].append(wp[..., i].ravel())
            sym_parts[S.QC[i]].append(qc4[..., i].ravel())
            sym_parts[S.WQ[i]].append(wq[..., i].ravel())
        shape = ze.shape
        exps = np.meshgrid(*(s.exponents for s in (sa, sb, sc, sd)), indexing="ij")
        for name, x in zip(S.TWO_EXP, exps):
            sym_parts[name].append((2.0 * x).ravel())
        sym_parts[S.OO2Z].append(np.broadcast_to(0.5 / z, shape).ravel())
        sym_parts[S.OO2E].append(np.broadcast_to(0.5 / e, shape).ravel())
        sym_parts[S.OO2ZE].append((0.5 / ze).ravel())
        sym_parts[S.ROZ_OO2Z].append((rho / z * 0.5 / z).ravel())
        sym_parts[S.ROE_OO2E].append((rho / e * 0.5 / e).ravel())
    symbols = {k: np.concatenate(v) for k, v in sym_parts.items()}
    return symbols, np.concatenate(t_parts), np.concatenate(pref_parts)


def execute(
    dag: Dag,
    order: Sequence[int],
    ranges: LiveRanges,
    leaf_value,
    symbols: dict[str, np.ndarray],
) -> dict[int, np.ndarray]:
    """Run ``order`` on ``dag``; returns the values of the outputs."""
    values: dict[int, np.ndarray] = {}
    if dag.leaves_preexist:
        for v in dag.leaves:
            values[v] = leaf_value(v)
    outputs: dict[int, np.ndarray] = {v: values[v] for v in dag.outputs if v in values}
    coef_cache: dict[tuple[float, str | None], np.ndarray | float] = {}

    def coefficient(c: float, sym: str | None):
        key = (c, sym)
        if key not in coef_cache:
            coef_cache[key] = c if sym is None else (symbols[sym] if c == 1.0 else c * symbols[sym])
        return coef_cache[key]

    death = ranges.death
    for step, v in enumerate(order):
        node = dag.nodes[v]
        if node.is_leaf:
            values[v] = leaf_value(v)
        else:
            total = None
            for t in node.terms:
                x = values[t.src]
                term = (
                    x if (t.coef == 1.0 and t.symbol is None) else coefficient(t.coef, t.symbol) * x
                )
                total = term if total is None else total + term
            values[v] = total
        if v in dag.output_set:
            outputs[v] = values[v]
        for p in dag.parents[v]:
            if death[p] == step and p in values:
                del values[p]
        if death[v] == step and v in values:
            del values[v]
    return outputs


def evaluate_batch(plan: ClassPlan, quartets: Sequence[Quartet]) -> np.ndarray:
    """Contracted integrals of shell quartets of ``plan.cls`` sharing primitive and contraction
    counts, shaped (n, nctr_a * n_a, nctr_b * n_b, nctr_c * n_c, nctr_d * n_d) in PySCF order
    ((n, 3, ...) for a derivative class: the gradient component after the quartet)."""
    graph = plan.graph
    first = quartets[0]
    for q in quartets:
        if tuple(s.l for s in q) != plan.cls.ls:
            raise InputError(f"shell quartet class {tuple(s.l for s in q)} is not {plan.cls}")
        if any(s.coefficients.shape != f.coefficients.shape for s, f in zip(q, first)):
            raise InputError("a batch must share primitive and contraction counts")
    nq = len(quartets)
    nprims = tuple(s.nprim for s in first)
    nctrs = tuple(s.nctr for s in first)

    # Phase 1: VRR per primitive quartet, then contraction into the accumulators
    symbols, t, pref = phase1_symbols(quartets)
    fm = boys(plan.cls.boys_order, t)

    def boys_leaf(v: int) -> np.ndarray:
        return pref * fm[graph.vrr.nodes[v].label[2]]

    vrr_out = execute(graph.vrr, plan.vrr_order, plan.vrr_ranges, boys_leaf, symbols)
    prims = np.stack([vrr_out[v] for v in graph.vrr.outputs]).reshape(-1, nq, *nprims)
    coefs = [np.stack([q[i].coefficients for q in quartets]) for i in range(4)]
    acc = np.einsum("kqabcd,qaw,qbx,qcy,qdz->kqwxyz", prims, *coefs, optimize=True)
    n_combo = int(np.prod(nctrs))
    acc = acc.reshape(acc.shape[0], nq * n_combo)

    # Phase 2: HRR and spherical steps per contracted quartet and contraction combination
    rep = lambda x: np.repeat(x, n_combo)  # noqa: E731
    ab = np.stack([q[0].center - q[1].center for q in quartets])
    cd = np.stack([q[2].center - q[3].center for q in quartets])
    hsym = {S.AB[i]: rep(ab[:, i]) for i in range(3)} | {S.CD[i]: rep(cd[:, i]) for i in range(3)}
    hrr_out = execute(graph.hrr, plan.hrr_order, plan.hrr_ranges, lambda v: acc[v], hsym)
    for v in graph.hrr.leaves:
        if graph.hrr.nodes[v].kind != NodeKind.ACC:
            raise AssertionError("Phase 2 leaves must be accumulators")
    out = np.stack([hrr_out[v] for v in graph.hrr.outputs])
    shape = graph.output_shape
    lead, n = shape[:-4], shape[-4:]  # lead: the gradient component of a derivative class
    h = len(lead)
    out = out.reshape(*shape, nq, *nctrs)  # [i] mu nu la si q wa wb wc wd
    q = h + 4
    out = out.transpose(q, *range(h), q + 1, h, q + 2, h + 1, q + 3, h + 2, q + 4, h + 3)
    return out.reshape(nq, *lead, *(w * k for w, k in zip(nctrs, n)))
