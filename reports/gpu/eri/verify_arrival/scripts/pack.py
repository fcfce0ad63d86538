"""Copy the verification kernels of total >= LOW that the current code indexes from SRC into DST
(index entries and their files only), for the tarball carried to the GPU machine."""

import json
import shutil
import sys
from pathlib import Path

from fusionrcg.angmom import QuartetClass
from fusionrcg.build.library import DEFAULT_SEGMENT_SIZE, _request_key
from fusionrcg.campaign import _kernel_jobs
from fusionrcg.lowering.target import Epilogue
from fusionrcg.variants import get_variant

src, dst, low = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
(dst / "index").mkdir(parents=True, exist_ok=True)
n = missing = 0
for tag, variant, sph, _, bank in _kernel_jobs([], verify=True):
    if sum(map(int, tag)) < low:
        continue
    cls = QuartetClass(*map(int, tag))
    for epi in Epilogue:  # a Tier 2 entry serves both epilogues
        key = _request_key(
            cls, get_variant(variant), sph, epi, "cuda", "sm_90", DEFAULT_SEGMENT_SIZE, bank
        )
        entry = src / "index" / f"{key}.json"
        if not entry.exists():
            missing += epi is Epilogue.STORE
            continue
        info = json.loads(entry.read_text())
        shutil.copy(entry, dst / "index" / entry.name)
        stem = info["binary"].rsplit(".", 1)[0]
        for f in src.glob(stem + ".*"):
            if f.suffix != ".cu":
                shutil.copy(f, dst / f.name)
        n += 1
print(n, "entries;", missing, "store kernels missing")
