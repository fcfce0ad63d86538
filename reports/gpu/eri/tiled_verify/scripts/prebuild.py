"""Kernels of `campaign verify` (every canonical class, spherical and Cartesian) with total in
[lo, hi], largest first, and with `tests` those of tests/fusionrcg/test_gpu.py; one JSON line
per kernel."""

import json
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed

from fusionrcg.angmom import canonical_classes
from fusionrcg.campaign import _build_one

d, workers, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
jobs = {
    (c.tag, "full", s, "store", "auto")
    for c in canonical_classes()
    if lo <= c.total <= hi
    for s in (True, False)
}
if "tests" in sys.argv[5:]:
    jobs |= {(c.tag, "full", True, "jk", "auto") for c in canonical_classes(2)}
    jobs |= {(t, "tier1-only", True, "store", "auto") for t in ("1111", "3021", "3300")}
order = sorted(jobs, key=lambda j: -sum(map(int, j[0])))
with ProcessPoolExecutor(workers) as pool:
    futs = [pool.submit(_build_one, j, d, 900.0, None) for j in order]
    for f in as_completed(futs):
        print(json.dumps(f.result()), flush=True)
