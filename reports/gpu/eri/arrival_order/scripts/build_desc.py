"""Build the verification kernels of total >= MIN into KERNEL_DIR, largest classes first."""

import json
import sys
from concurrent.futures import ProcessPoolExecutor

from fusionrcg.campaign import _build_one, _kernel_jobs

kernel_dir, low, jobs_n, timeout, out = (
    sys.argv[1],
    int(sys.argv[2]),
    int(sys.argv[3]),
    float(sys.argv[4]),
    sys.argv[5],
)
jobs = [j for j in _kernel_jobs([], verify=True) if sum(map(int, j[0])) >= low]
jobs.sort(key=lambda j: (-sum(map(int, j[0])), j))
with ProcessPoolExecutor(jobs_n) as pool, open(out, "w") as fh:
    futures = [pool.submit(_build_one, j, kernel_dir, timeout, 1) for j in jobs]
    for fut in futures:
        rec = fut.result()
        fh.write(json.dumps(rec) + "\n")
        fh.flush()
        print(rec.get("kernel") or rec.get("error", "")[:100], flush=True)
