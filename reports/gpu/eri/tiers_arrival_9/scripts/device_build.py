"""Kernels built on the GPU machine while the verification runs: those of the tier
comparison's remaining total-9 classes (PLAN) and those the GPU tests ask for that the
verification set lacks (J/K of every class of cc-pVDZ, three forced Tier 1 store kernels)."""

import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from fusionrcg.angmom import canonical_classes
from fusionrcg.campaign import _build_one, _kernel_jobs

kernel_dir, plan, jobs_n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
jobs = _kernel_jobs(json.loads(Path(plan).read_text()), verify=False)
jobs += [(c.tag, "full", True, "jk", "auto") for c in canonical_classes(2)]
jobs += [(t, "tier1-only", True, "store", "auto") for t in ("1111", "3021", "3300")]
jobs.sort(key=lambda j: (-sum(map(int, j[0])), j))
with ProcessPoolExecutor(jobs_n) as pool, open(out, "w") as fh:
    for rec in pool.map(
        _build_one, jobs, [kernel_dir] * len(jobs), [300.0] * len(jobs), [1] * len(jobs)
    ):
        fh.write(json.dumps(rec) + "\n")
        fh.flush()
