"""The old tree's library for the Tier 2 J/K items: store and J/K requests (that tree cannot
serve a Tier 2 J/K request from the store kernel).

    PYTHONPATH=OLD_SRC python build_old.py KERNEL_DIR plan.json
"""

import json
import sys
from pathlib import Path

from fusionrcg.angmom import QuartetClass
from fusionrcg.build.library import get_kernel

for item in json.loads(Path(sys.argv[2]).read_text()):
    cls = QuartetClass(*(int(c) for c in item["class"]))
    for epi in ("store", "jk"):
        k = get_kernel(cls, item["variant"], epilogue=epi, directory=sys.argv[1])
        print(item["class"], epi, k.name, flush=True)
