"""Table of the register-target sweep (rt.jsonl): Tier 1 store fraction of the FP64 peak per
class and target, the speedup over the full budget, and the target the model picks.

    python compare.py > study.md   (needs the package: the model's pick comes from plan_class)
"""

import json
from collections import defaultdict
from pathlib import Path

from fusionrcg.angmom import QuartetClass
from fusionrcg.orchestration.plan import plan_class

HERE = Path(__file__).parent


def main() -> None:
    rows = [json.loads(line) for line in (HERE / "rt.jsonl").open()]
    by = defaultdict(dict)
    for r in rows:
        by[r["cls"]][(r["R"], r["F"])] = r
    targets = sorted({k for v in by.values() for k in v}, reverse=True)
    print("## Tier 1 register targets, store epilogue, every class up to total 6 (H200)\n")
    print("Fraction of the FP64 peak (speedup over 255 registers); `R/F`: registers per thread")
    print("held by launch bounds / registers the placement leaves to ptxas besides the VRR")
    print("frontier and the accumulators in registers. Targets that spilled were not run.\n")
    print("| class | picked | " + " | ".join(f"{r}/{f}" for r, f in targets) + " |")
    print("|---" * (len(targets) + 2) + "|")
    for cls, v in by.items():
        ls = tuple(int(c) for c in cls.strip("()").replace("|", ",").split(","))
        picked = plan_class(QuartetClass(*ls), "tier1-only").tier1_registers or 255
        base = v[(255, 130)]
        cells = []
        for t in targets:
            r = v.get(t)
            cells.append(
                f"{r['fraction_of_peak']:.3f} ({base['seconds'] / r['seconds']:.2f}x)" if r else "-"
            )
        print(f"| {cls} | {picked} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
