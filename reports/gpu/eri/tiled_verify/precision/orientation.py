"""Looking for an orientation rule for equal-l bra pairs: the rounding spread (as in noise.py,
three draws; largest standard deviation over the quartet, in units of the tolerance) with the
bra as sampled and swapped, for sampled quartets whose bra shells sit on different atoms; and
how often putting the shell with the larger largest exponent as A gives the smaller spread.

    python orientation.py BASIS SAMPLES_PER_CLASS
"""

import sys

import numpy as np

from fusionrcg.angmom import QuartetClass
from fusionrcg.orchestration.plan import plan_class
from fusionrcg.reference import evaluator
from fusionrcg.shells import shell_quartet
from fusionrcg.variants import get_variant
from fusionrcg.verify import Tolerance, sample_quartets
from qcbench.molecules import load

CLASSES = [(1, 1, 0, 0), (2, 2, 0, 0), (3, 3, 0, 0), (4, 4, 0, 0), (2, 2, 1, 0), (3, 3, 1, 0),
           (2, 2, 1, 1), (3, 3, 1, 1)]  # fmt: skip
basis, samples = sys.argv[1], int(sys.argv[2])
tol = Tolerance()
mol = load("water_clusters/002", basis)
plain = evaluator.execute
rng = np.random.default_rng(0)
state = {}


def noisy(dag, order, ranges, leaf, symbols):
    out = plain(dag, order, ranges, leaf, symbols)
    if dag is state["plan"].graph.vrr:
        out = {k: v * (1 + 1e-16 * rng.standard_normal(np.shape(v))) for k, v in out.items()}
    return out


def spread(plan, shells, axes) -> float:
    state["plan"] = plan
    evaluator.execute = plain
    clean = evaluator.evaluate_batch(plan, [shells])[0].transpose(axes)
    evaluator.execute = noisy
    draws = [evaluator.evaluate_batch(plan, [shells])[0].transpose(axes) for _ in range(3)]
    evaluator.execute = plain
    return float(tol.normalized(np.stack(draws).std(0), clean).max())


rule_better = judged = 0
for ls in CLASSES:
    plan = plan_class(QuartetClass(*ls), get_variant("full"), True)
    for q in sample_quartets(mol, QuartetClass(*ls), samples, np.random.default_rng(5)):
        s = shell_quartet(mol, q)
        if np.allclose(s[0].center, s[1].center):
            continue
        as_is = spread(plan, s, (0, 1, 2, 3))
        swapped = spread(plan, (s[1], s[0], s[2], s[3]), (1, 0, 2, 3))
        tight_first = s[0].exponents.max() >= s[1].exponents.max()
        rule, other = (as_is, swapped) if tight_first else (swapped, as_is)
        judged += 1
        rule_better += rule <= other
        print(f"{ls} {q}: A max exponent {s[0].exponents.max():.3g} ({s[0].nprim}),",
              f"B {s[1].exponents.max():.3g} ({s[1].nprim}): as is {as_is:.3g},",
              f"swapped {swapped:.3g}; tighter as A {rule:.3g}", flush=True)  # fmt: skip
print(f"{basis}: tighter shell as A gives the smaller spread on {rule_better} of {judged}")
