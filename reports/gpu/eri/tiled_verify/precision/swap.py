"""The same rounding noise as noise.py (1e-16 relative on every VRR output, six draws) with the
bra shells as they are and swapped ((ab| = (ba|, both f): which centre the HRR builds on
decides how much of the rounding reaches the element."""

import numpy as np
from case import CANON, ELEMENT, EXACT, PLAN

from fusionrcg.reference import evaluator

sa, sb, sc, sd = CANON
print("A: exponents", sa.exponents, "B: exponents", sb.exponents)
rng = np.random.default_rng(0)
plain = evaluator.execute


def noisy(dag, order, ranges, leaf, symbols):
    out = plain(dag, order, ranges, leaf, symbols)
    if dag is PLAN.graph.vrr:
        out = {k: v * (1 + 1e-16 * rng.standard_normal(np.shape(v))) for k, v in out.items()}
    return out


for name, shells, axes in (
    ("as is", (sa, sb, sc, sd), (0, 1, 2, 3)),
    ("swapped", (sb, sa, sc, sd), (1, 0, 2, 3)),
):
    evaluator.execute = plain
    clean = evaluator.evaluate_batch(PLAN, [shells])[0].transpose(axes)[ELEMENT] - EXACT
    evaluator.execute = noisy
    errors = [
        evaluator.evaluate_batch(PLAN, [shells])[0].transpose(axes)[ELEMENT] - EXACT
        for _ in range(6)
    ]
    print(f"{name}: error {clean:.3g}; with noise std {np.std(errors):.3g}, "
          f"largest {np.max(np.abs(errors)):.3g}")  # fmt: skip
