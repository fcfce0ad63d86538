"""GPU check of (4,1|3,1), the class a limit of 2350 registers (instead of 2300) adds to Tier 1:
two shell quartets against PySCF per set, as verify_tier1.py.

    FUSIONRCG_KERNEL_DIR=KERNELS python verify_4131.py OUT.jsonl
"""

import json
import sys

import numpy as np
from verify_tier1 import SETS

from fusionrcg.angmom import QuartetClass
from fusionrcg.verify import Tolerance, sample_quartets, verify_class
from qcbench.molecules import load

CLS = QuartetClass(4, 1, 3, 1)


def main() -> None:
    with open(sys.argv[1], "w") as out:
        for name, basis in SETS:
            for cart in (False, True):
                mol = load(name, basis, cart=cart)
                quartets = sample_quartets(mol, CLS, 2, np.random.default_rng(5))
                row = verify_class(mol, CLS, quartets, "gpu", "full", Tolerance())
                rec = row.row() | {"molecule": name, "basis": basis, "cartesian": cart}
                out.write(json.dumps(rec, default=str) + "\n")
                print(name, basis, cart, row.passed, row.max_normalized_error, flush=True)


if __name__ == "__main__":
    main()
