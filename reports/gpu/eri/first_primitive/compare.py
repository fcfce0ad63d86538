"""Accumulators assigned by a quartet's first primitive quartet (tree ``18a0614``) against the
kernels before it (``04d5866``: slots and bank cleared, then added to), Tier 1 with the store
epilogue on every class up to total 6, one H200, the two runs back to back on one machine
(``old/``, ``measurements.jsonl``). Speedups are quartets per second; the FP64 fractions count
K - 1 additions per accumulator in both (the old records' FLOPs are recounted), against the
peak measured in each run's own process.

    python compare.py > study.md
"""

import json
from pathlib import Path

import pandas as pd

from fusionrcg.angmom import QuartetClass
from fusionrcg.orchestration.plan import plan_class

HERE = Path(__file__).parent


def load(path: Path) -> pd.DataFrame:
    rows = pd.DataFrame([json.loads(line) for line in path.open()])
    rows = rows[rows.quartets_per_second.notna() & (rows.epilogue == "store")]
    return rows.set_index("cls")


def recounted_fraction(rows: pd.DataFrame) -> pd.Series:
    """FP64 fraction with K - 1 accumulations (the records before ``18a0614`` counted K)."""
    acc = [plan_class(QuartetClass.parse(c), "tier1-only").n_accumulators for c in rows.index]
    excess = pd.Series(acc, index=rows.index) * rows.quartets_per_second
    return (rows.flop_rate - excess) / (rows.flop_rate / rows.fraction_of_peak)


def tier2_against_work_items() -> None:
    """Tier 2 J/K (bank cleared per quartet before; assigned by the first primitive quartet
    here) against ``../work_items`` (same kernels otherwise; another machine and day)."""
    runs = []
    for path in (HERE.parent / "work_items" / "measurements.jsonl", HERE / "measurements.jsonl"):
        rows = pd.DataFrame([json.loads(line) for line in path.open()])
        rows = rows[(rows.variant == "tier2-only") & (rows.epilogue == "jk")]
        auto = rows.kernel2_request.fillna("auto") == "auto"
        auto &= rows.bank_request.fillna("auto") == "auto"
        runs.append(rows[auto].set_index("cls").quartets_per_second)
    s = (runs[1] / runs[0]).dropna()
    print(
        f"- Tier 2 J/K against `../work_items` (other run): {len(s)} classes up to total 6, "
        f"{s.min():.2f}x-{s.max():.2f}x (median {s.median():.2f}x)"
    )


def main() -> None:
    old = load(HERE / "old" / "measurements.jsonl")
    new = load(HERE / "measurements.jsonl")
    both = new.index.intersection(old.index)
    t = pd.DataFrame(
        {
            "total": new.total[both],
            "slots": new.slots_per_quartet[both],
            "regs_old": old.registers[both],
            "regs_new": new.registers[both],
            "old_peak": 100 * recounted_fraction(old.loc[both]),
            "new_peak": 100 * new.fraction_of_peak[both],
            "speedup": new.quartets_per_second[both] / old.quartets_per_second[both],
        }
    )
    t = t.reset_index().sort_values(["total", "cls"]).round(2)
    print("## First primitive quartet assigns, Tier 1 store up to total 6\n")
    print(t.to_markdown(index=False))
    print()
    for label, part in (("with slots", t[t.slots > 0]), ("without slots", t[t.slots == 0])):
        s = part.speedup
        print(
            f"- {label}: {len(part)} classes, {s.min():.2f}x-{s.max():.2f}x "
            f"(median {s.median():.2f}x)"
        )
    mid = t[(t.total >= 4) & (t.total <= 6)]
    for col in ("old_peak", "new_peak"):
        below = mid[mid[col] < 30].sort_values(col, ascending=False)
        print(
            f"- {col}: {int((mid[col] >= 30).sum())} of {len(mid)} classes of total 4-6 at 30% "
            f"or more; below: " + ", ".join(f"{c} {v:.1f}%" for c, v in zip(below.cls, below[col]))
        )


if __name__ == "__main__":
    main()
    tier2_against_work_items()
