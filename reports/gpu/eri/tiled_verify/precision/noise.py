"""Sensitivity of the element to rounding: relative noise of one double's rounding (1e-16)
put on every VRR output (per primitive quartet) or every HRR output of the reference evaluator,
six draws each; the spread is what any double-precision run of this arithmetic can land on."""

import numpy as np
from case import PLAN, reference_error

from fusionrcg.reference import evaluator

rng = np.random.default_rng(0)
plain = evaluator.execute
print("without noise", reference_error())
for phase in ("vrr", "hrr"):

    def noisy(dag, order, ranges, leaf, symbols, phase=phase):
        out = plain(dag, order, ranges, leaf, symbols)
        if (dag is PLAN.graph.vrr) == (phase == "vrr"):
            out = {k: v * (1 + 1e-16 * rng.standard_normal(np.shape(v))) for k, v in out.items()}
        return out

    evaluator.execute = noisy
    errors = [reference_error() for _ in range(6)]
    evaluator.execute = plain
    print(f"{phase} outputs x (1 + 1e-16 N(0,1)): std {np.std(errors):.3g}, "
          f"largest {np.max(np.abs(errors)):.3g}")  # fmt: skip
