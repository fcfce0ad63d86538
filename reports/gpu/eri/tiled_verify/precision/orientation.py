"""Looking for an orientation rule for equal-l pairs: the rounding spread (as in noise.py,
three draws; largest standard deviation over the quartet, in units of the tolerance) with the
pair as sampled and swapped, for sampled quartets whose pair shells sit on different atoms; and
how often putting the shell with the larger largest exponent first gives the smaller spread.
The reference evaluator runs each quartet as given (no reorientation).

    python orientation.py BASIS SAMPLES_PER_CLASS [bra|ket]
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

PAIRS = {
    "bra": ((0, 1), [(1, 1, 0, 0), (2, 2, 0, 0), (3, 3, 0, 0), (4, 4, 0, 0), (2, 2, 1, 0),
                     (3, 3, 1, 0), (2, 2, 1, 1), (3, 3, 1, 1)]),
    "ket": ((2, 3), [(1, 1, 1, 1), (2, 1, 1, 1), (2, 2, 1, 1), (3, 1, 1, 1), (3, 3, 1, 1),
                     (2, 2, 2, 2), (3, 2, 2, 2), (4, 1, 2, 2)]),
}  # fmt: skip
basis, samples = sys.argv[1], int(sys.argv[2])
(first, second), CLASSES = PAIRS[sys.argv[3] if len(sys.argv) > 3 else "bra"]
swap = list(range(4))
swap[first], swap[second] = second, first
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
        if np.allclose(s[first].center, s[second].center):
            continue
        as_is = spread(plan, s, (0, 1, 2, 3))
        swapped = spread(plan, tuple(s[i] for i in swap), swap)
        tight_first = s[first].exponents.max() >= s[second].exponents.max()
        rule, other = (as_is, swapped) if tight_first else (swapped, as_is)
        judged += 1
        rule_better += rule <= other
        a, b = s[first], s[second]
        print(f"{ls} {q}: first max exponent {a.exponents.max():.3g} ({a.nprim}),",
              f"second {b.exponents.max():.3g} ({b.nprim}): as is {as_is:.3g},",
              f"swapped {swapped:.3g}; tighter first {rule:.3g}", flush=True)  # fmt: skip
print(f"{basis}: tighter shell first gives the smaller spread on {rule_better} of {judged}")
