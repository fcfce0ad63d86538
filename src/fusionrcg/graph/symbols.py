"""Names of the per-quartet quantities that graph coefficients refer to.

Phase 1 (per primitive quartet), with zeta = a + b, eta = c + d, rho = zeta*eta/(zeta+eta):
``PA{x,y,z}`` = P - A, ``WP*`` = W - P, ``QC*`` = Q - C, ``WQ*`` = W - Q, ``oo2z`` = 1/(2 zeta),
``oo2e`` = 1/(2 eta), ``oo2ze`` = 1/(2 (zeta+eta)), ``roz_oo2z`` = rho/zeta * 1/(2 zeta),
``roe_oo2e`` = rho/eta * 1/(2 eta).

Derivative classes (per primitive quartet): ``two_ea`` .. ``two_ed`` = twice the exponent of the
primitive on centre A .. D, the weight of the raised-l term of a first derivative.

Phase 2 (per contracted quartet): ``AB*`` = A - B, ``CD*`` = C - D.
"""

AXES = "xyz"

PA = tuple(f"PA{a}" for a in AXES)
WP = tuple(f"WP{a}" for a in AXES)
QC = tuple(f"QC{a}" for a in AXES)
WQ = tuple(f"WQ{a}" for a in AXES)
AB = tuple(f"AB{a}" for a in AXES)
CD = tuple(f"CD{a}" for a in AXES)
OO2Z, OO2E, OO2ZE = "oo2z", "oo2e", "oo2ze"
ROZ_OO2Z, ROE_OO2E = "roz_oo2z", "roe_oo2e"

PRIMITIVE_SYMBOLS = (*PA, *WP, *QC, *WQ, OO2Z, OO2E, OO2ZE, ROZ_OO2Z, ROE_OO2E)
CONTRACTED_SYMBOLS = (*AB, *CD)

TWO_EXP = ("two_ea", "two_eb", "two_ec", "two_ed")
