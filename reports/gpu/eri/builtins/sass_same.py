"""Whether the Tier 1 store kernels of total 4-6 that the library builds now have the SASS of
those measured for the FP64 goal (kernels in MEASURED_DIR, measurements.jsonl naming them by
class): each is built here into BUILD_DIR and both disassembled, internal names stripped."""

import json
import re
import subprocess
import sys
from pathlib import Path

from fusionrcg import QuartetClass
from fusionrcg.build.library import get_kernel

measured_dir, build_dir, records = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def sass(cubin: Path) -> str:
    text = subprocess.run(
        ["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    return re.sub(r"_INTERNAL_[0-9a-z_]*", "", text)


index = {json.loads(p.read_text())["binary"]: p for p in (measured_dir / "index").glob("*.json")}
for rec in map(json.loads, Path(records).read_text().splitlines()):
    if rec.get("variant") != "tier1-only" or not 4 <= rec["total"] <= 6:
        continue
    ls = tuple(int(c) for c in rec["cls"] if c.isdigit())
    k = get_kernel(QuartetClass(*ls), "tier1-only", True, "store", directory=build_dir)
    old = [b for b in index if b.startswith(k.name + "-")]
    same = any(sass(measured_dir / b) == sass(k.binary) for b in old)
    print(
        json.dumps({"class": rec["cls"], "new": k.binary.name, "measured": old, "same_sass": same}),
        flush=True,
    )
