"""Per-kernel stall reasons (cycles per issued instruction) from ncu's raw export.

python stalls.py [FOLDER] > FOLDER/stalls.md   (FOLDER holds raw.csv; default: this one)
"""

import csv
import sys
from pathlib import Path

PREFIX, SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
SHOWN = {
    "sm__warps_active.avg.pct_of_peak_sustained_active": "warps active %",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue active %",
    "launch__registers_per_thread": "registers",
    "launch__occupancy_limit_shared_mem": "blocks (shared memory limit)",
}


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    rows = list(csv.reader((folder / "raw.csv").open()))
    header, data = rows[0], rows[2:]
    stalls = [i for i, h in enumerate(header) if h.startswith(PREFIX) and h.endswith(SUFFIX)]
    print("| kernel | " + " | ".join(SHOWN.values()) + " | largest stalls (cycles per issue) |")
    print("|---" * (len(SHOWN) + 2) + "|")
    for d in data:
        top = sorted(
            (
                (float(d[i].replace(",", "")), header[i][len(PREFIX) : -len(SUFFIX)])
                for i in stalls
                if d[i]
            ),
            reverse=True,
        )[:6]
        shown = [d[header.index(h)] for h in SHOWN]
        text = ", ".join(f"{name} {v:.2f}" for v, name in top)
        print(f"| {d[header.index('Kernel Name')]} | " + " | ".join(shown) + f" | {text} |")


if __name__ == "__main__":
    main()
