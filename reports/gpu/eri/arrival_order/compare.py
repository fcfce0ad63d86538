"""Fraction of the FP64 peak per class: the best of each side's rounds, and the ratio.

    python compare.py BEFORE_DIR[,BEFORE_DIR...] AFTER_DIR[,AFTER_DIR...] > table.md

Each DIR holds a ``measurements.jsonl`` of ``python -m fusionrcg.campaign bench``."""

import json
import statistics
import sys
from pathlib import Path


def best(dirs: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for d in dirs.split(","):
        for line in (Path(d) / "measurements.jsonl").read_text().splitlines():
            r = json.loads(line)
            if "fraction_of_peak" in r and r["fraction_of_peak"] > out.get(r["cls"], {}).get(
                "fraction_of_peak", -1
            ):
                out[r["cls"]] = r
    return out


def main(before: str, after: str) -> None:
    b, a = best(before), best(after)
    print("| class | total | before | after | after / before | slots | registers |")
    print("|---" * 7 + "|")
    ratios, below = [], []
    for cls in sorted(b, key=lambda c: (b[c]["total"], c)):
        if cls not in a:
            continue
        x, y = b[cls]["fraction_of_peak"], a[cls]["fraction_of_peak"]
        ratios.append(y / x)
        if 4 <= a[cls]["total"] <= 6 and y < 0.30:
            below.append(f"{cls} {y:.1%}")
        print(f"| {cls} | {a[cls]['total']} | {x:.3f} | {y:.3f} | {y / x:.2f}x | "
              f"{a[cls]['slots_per_quartet']} | {a[cls]['registers']} |")  # fmt: skip
    print(f"\n{len(ratios)} classes: {min(ratios):.2f}x-{max(ratios):.2f}x, "
          f"median {statistics.median(ratios):.2f}x; total 4-6 below 30% after: "
          f"{', '.join(below) or 'none'}")  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:3])
