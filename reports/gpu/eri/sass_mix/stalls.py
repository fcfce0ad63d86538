"""Where the warps of the slot-bound Tier 1 store kernels wait, by phase and instruction kind,
from ncu's SASS-level warp-state sampling (``src_<class>.csv.gz``: ``ncu -i r.ncu-rep --page
source --csv --print-source sass``, gzipped; see ``profile/run.sh``).

    python stalls.py [FOLDER] > stalls.md

Phases as in ``sass_mix.py``: the primitive loops' inner body (Phase 1, one primitive quartet
with its Boys function), the rest of the loops (pair rows, loop control), Phase 2 after the
loops, and the prologue before them. Shares are of all samples of the kernel; the stall reasons
are ncu's (``wait``: the fixed latency ptxas encoded, ``selected``: issuing, ``short_sb``:
shared-memory results, ``long_sb``: global loads, ``no_inst``: instruction fetch).
"""

from __future__ import annotations

import csv
import gzip
import re
import sys
from collections import Counter
from pathlib import Path

CLASSES = {"2211": "(2,2|1,1)", "2121": "(2,1|2,1)", "3111": "(3,1|1,1)"}
REASONS = ("wait", "selected", "short_sb", "long_sb", "no_inst", "mio", "math", "branch_resolving")
KINDS = {"DFMA": "FP64", "DMUL": "FP64", "DADD": "FP64", "LDS": "LDS", "STS": "STS", "STG": "STG",
         "LDG": "LDG", "IMAD": "IMAD/LDC", "LDC": "IMAD/LDC"}  # fmt: skip


def regions(rows: list[dict]) -> list[str]:
    """The region of each instruction (rows in address order)."""
    address = [int(r["Address"], 16) for r in rows]
    back = []
    for a, r in zip(address, rows):
        m = re.search(r"BRA\s+0x([0-9a-f]+)", r["Source"])
        if m and int(m.group(1), 16) < a:
            back.append((int(m.group(1), 16), a))
    inner, outer = max(back), min(back)
    exit_after = min(a for a, r in zip(address, rows) if "EXIT" in r["Source"] and a > outer[1])
    names = []
    for a in address:
        if inner[0] <= a <= inner[1]:
            names.append("Phase 1 (inner loop body)")
        elif outer[0] <= a <= outer[1]:
            names.append("loops, outside the inner body")
        elif outer[1] < a <= exit_after:
            names.append("Phase 2")
        else:
            names.append("prologue and the rest")
    return names


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    for tag, cls in CLASSES.items():
        with gzip.open(folder / f"src_{tag}.csv.gz", "rt") as fh:
            lines = list(csv.reader(fh))
        header = lines[1]
        rows = [dict(zip(header, r)) for r in lines[2:]]
        where = regions(rows)
        samples = [float(r["Warp Stall Sampling (All Samples)"] or 0) for r in rows]
        total = sum(samples)
        by_region: Counter = Counter()
        by_kind: Counter = Counter()
        reasons: dict[str, Counter] = {}
        for r, region, s in zip(rows, where, samples):
            by_region[region] += s
            mnemonic = re.sub(r"^@!?U?P\w+\s+", "", r["Source"].strip()).split()[0]
            op = "MOV" if mnemonic.startswith("IMAD.MOV") else mnemonic.split(".")[0]
            by_kind[(region, KINDS.get(op, "other"))] += s
            acc = reasons.setdefault(region, Counter())
            for reason in REASONS:
                acc[reason] += float(r.get(f"stall_{reason}") or 0)
        print(f"### {cls}: {int(total)} samples\n")
        print("| region | share | by instruction kind | by stall reason |")
        print("|---|---|---|---|")
        for region, s in by_region.most_common():
            kinds = ", ".join(
                f"{k} {v / total:.1%}"
                for (reg, k), v in by_kind.most_common()
                if reg == region and v / total >= 0.005
            )
            why = ", ".join(
                f"{k} {v / total:.1%}"
                for k, v in reasons[region].most_common()
                if v / total >= 0.005
            )
            print(f"| {region} | {s / total:.1%} | {kinds} | {why} |")
        print()


if __name__ == "__main__":
    main()
