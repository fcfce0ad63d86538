"""How much the element cancels: its value against the sum of the magnitudes of its
contributions from each ket primitive pair (the two ANO-RCC s columns, 14 primitives each)."""

import dataclasses

import numpy as np
from case import CANON, EXACT, reference_error

sa, sb, sc, sd = CANON
parts = []
for c in range(sc.nprim):
    for d in range(sd.nprim):
        only_c = np.zeros_like(sc.coefficients)
        only_c[c] = sc.coefficients[c]
        only_d = np.zeros_like(sd.coefficients)
        only_d[d] = sd.coefficients[d]
        shells = (sa, sb, dataclasses.replace(sc, coefficients=only_c),
                  dataclasses.replace(sd, coefficients=only_d))  # fmt: skip
        parts.append(reference_error(shells) + EXACT)
parts = np.array(parts)
print(f"exact {EXACT:.6e}; sum of contributions {parts.sum():.6e}")
print(f"sum of |contributions| {np.abs(parts).sum():.4g}, largest {np.abs(parts).max():.4g}")
print("reference evaluator error", reference_error())
