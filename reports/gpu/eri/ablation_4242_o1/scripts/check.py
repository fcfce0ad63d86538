"""(4,2|4,2) integrals of the given variants against PySCF (int2e_sph) on the water dimer in
cc-pVQZ, from the kernel library in FUSIONRCG_KERNEL_DIR: one JSON line per variant."""

import json
import os
import sys

import numpy as np

from fusionrcg.angmom import QuartetClass
from fusionrcg.verify import Tolerance, sample_quartets, verify_class
from qcbench.molecules import load

library, variants = sys.argv[1], sys.argv[2:]
mol = load("water_clusters/002", "cc-pvqz")
cls = QuartetClass(4, 2, 4, 2)
quartets = sample_quartets(mol, cls, 32, np.random.default_rng(7))
for variant in variants:
    row = verify_class(mol, cls, quartets, "gpu", variant, Tolerance())
    rec = row.row() | {
        "variant": variant,
        "library": library,
        "passed": row.passed,
        "kernel_dir": os.path.basename(os.environ["FUSIONRCG_KERNEL_DIR"]),
    }
    print(json.dumps(rec), flush=True)
