import sys

import fusionrcg
from qcbench.molecules import load

mol = load("water_clusters/002", "ano")
v = fusionrcg.eri_quartets(mol, [(12, 3, 0, 0)], backend=sys.argv[1])[0][(6, 20, 7, 6)]
print(sys.argv[1], v - (-0.0006125648526069546))
