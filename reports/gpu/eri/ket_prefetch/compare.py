"""The next ket pair row read one primitive quartet ahead, on every class (``all.jsonl``, tree
of ``04d5866`` plus the prefetch in every kernel) against the kernels of ``04d5866``
(``../ket_prefetch_base/``): Tier 1 store up to total 6, one H200, the two benches back to back
on one machine (``scripts/a.sh``). The product prefetches where a class has at most 16
accumulators (``lowering.kernel.PREFETCH_MAX_ACCUMULATORS``), so ``measurements.jsonl`` keeps
those classes' records and ``../ket_prefetch_base/`` stands for the others, whose kernels are
unchanged.

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
    return rows[rows.quartets_per_second.notna()].set_index("cls")


def main() -> None:
    base = load(HERE.parent / "ket_prefetch_base" / "measurements.jsonl")
    ahead = load(HERE / "all.jsonl")
    both = ahead.index.intersection(base.index)
    acc = [plan_class(QuartetClass.parse(c), "tier1-only").n_accumulators for c in both]
    t = pd.DataFrame(
        {
            "total": ahead.total[both],
            "accumulators": acc,
            "primitive_quartets": ahead.mean_primitive_quartets[both],
            "regs_base": base.registers[both],
            "regs_ahead": ahead.registers[both],
            "base_peak": 100 * base.fraction_of_peak[both],
            "ahead_peak": 100 * ahead.fraction_of_peak[both],
            "speedup": ahead.quartets_per_second[both] / base.quartets_per_second[both],
        }
    )
    t = t.reset_index().sort_values(["accumulators", "cls"]).round(2)
    print("## Ket pair rows read one primitive quartet ahead, Tier 1 store up to total 6\n")
    print(t.to_markdown(index=False))
    print()
    for label, part in (("<= 16", t[t.accumulators <= 16]), ("> 16", t[t.accumulators > 16])):
        s = part.speedup
        print(
            f"- {label} accumulators: {len(part)} classes, {s.min():.2f}x-{s.max():.2f}x "
            f"(median {s.median():.2f}x)"
        )


if __name__ == "__main__":
    main()
