"""Build the verification kernels of MIN <= total <= MAX into KERNEL_DIR, largest first."""

import json
import sys
from concurrent.futures import ProcessPoolExecutor

from fusionrcg.campaign import _build_one, _kernel_jobs

kernel_dir, low, high, jobs_n, timeout, out = (
    sys.argv[1],
    int(sys.argv[2]),
    int(sys.argv[3]),
    int(sys.argv[4]),
    float(sys.argv[5]),
    sys.argv[6],
)
jobs = [j for j in _kernel_jobs([], verify=True) if low <= sum(map(int, j[0])) <= high]
jobs.sort(key=lambda j: (-sum(map(int, j[0])), j))
with ProcessPoolExecutor(jobs_n) as pool, open(out, "w") as fh:
    for rec in pool.map(
        _build_one, jobs, [kernel_dir] * len(jobs), [timeout] * len(jobs), [1] * len(jobs)
    ):
        fh.write(json.dumps(rec) + "\n")
        fh.flush()
        print(rec.get("kernel") or rec.get("error", "")[:100], flush=True)
