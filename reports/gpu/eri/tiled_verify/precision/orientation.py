"""A first look for an orientation rule: the rounding spread (as in noise.py, three draws;
largest standard deviation over the quartet, in units of the tolerance) of equal-l bra classes
in ANO-RCC with the bra as sampled and swapped, for sampled quartets whose bra shells sit on
different atoms."""

import numpy as np

from fusionrcg.angmom import QuartetClass
from fusionrcg.orchestration.plan import plan_class
from fusionrcg.reference import evaluator
from fusionrcg.shells import shell_quartet
from fusionrcg.variants import get_variant
from fusionrcg.verify import Tolerance, sample_quartets
from qcbench.molecules import load

tol = Tolerance()
mol = load("water_clusters/002", "ano")
plain = evaluator.execute
rng = np.random.default_rng(0)
state = {}


def noisy(dag, order, ranges, leaf, symbols):
    out = plain(dag, order, ranges, leaf, symbols)
    if dag is state["plan"].graph.vrr:
        out = {k: v * (1 + 1e-16 * rng.standard_normal(np.shape(v))) for k, v in out.items()}
    return out


def spread(plan, shells, axes):
    state["plan"] = plan
    evaluator.execute = plain
    clean = evaluator.evaluate_batch(plan, [shells])[0].transpose(axes)
    evaluator.execute = noisy
    d = np.stack(
        [evaluator.evaluate_batch(plan, [shells])[0].transpose(axes) - clean for _ in range(3)]
    )
    evaluator.execute = plain
    return float((tol.normalized(d.std(0), clean)).max())


for ls in [(3, 3, 0, 0), (2, 2, 0, 0), (4, 4, 0, 0), (3, 3, 1, 0), (2, 2, 1, 1)]:
    plan = plan_class(QuartetClass(*ls), get_variant("full"), True)
    for q in sample_quartets(mol, QuartetClass(*ls), 4, np.random.default_rng(5)):
        s = shell_quartet(mol, q)
        if np.allclose(s[0].center, s[1].center):
            continue
        a = spread(plan, s, (0, 1, 2, 3))
        b = spread(plan, (s[1], s[0], s[2], s[3]), (1, 0, 2, 3))
        print(
            ls,
            q,
            f"A max exp {s[0].exponents.max():.3g} n{s[0].nprim},",
            f"B max exp {s[1].exponents.max():.3g} n{s[1].nprim}:",
            f"as is {a:.3g}, swapped {b:.3g}",
            flush=True,
        )
