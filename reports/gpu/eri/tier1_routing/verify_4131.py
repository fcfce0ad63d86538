"""GPU check of (4,1|3,1), the class a limit of 2350 registers (instead of 2300) adds to Tier 1:
two shell quartets against PySCF per set, as verify_tier1.py.

    FUSIONRCG_KERNEL_DIR=KERNELS python verify_4131.py OUT.jsonl
"""

import json
import sys

from verify_tier1 import quartet_records

from fusionrcg.angmom import QuartetClass
from fusionrcg.verify import Tolerance


def main() -> None:
    with open(sys.argv[1], "w") as out:
        for rec in quartet_records(Tolerance(), [QuartetClass(4, 1, 3, 1)]):
            out.write(json.dumps(rec, default=str) + "\n")


if __name__ == "__main__":
    main()
