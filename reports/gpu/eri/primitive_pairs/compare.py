"""Precomputed primitive pairs against the kernels before them, every class up to total 6, the
same plan in three runs on the H200: ``../prologue_tiers`` (before), ``study/pairs.jsonl``
(pair data read one double per load) and ``measurements.jsonl`` (pair data and Boys table rows
read two doubles per load: the final kernels). Quartets per second; fractions of the FP64 peak
against the peak measured in each run's own process.

    python compare.py > study.md
"""

import json
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
KEY = ["cls", "variant", "epilogue", "kernel2"]


def load(path: Path) -> pd.DataFrame:
    rows = pd.DataFrame([json.loads(line) for line in path.open()])
    rows = rows[rows.quartets_per_second.notna()]
    return rows.assign(kernel2=rows.kernel2.fillna("")).set_index(KEY)


def main() -> None:
    before = load(HERE.parent / "prologue_tiers" / "measurements.jsonl")
    pairs = load(HERE / "study" / "pairs.jsonl")
    final = load(HERE / "measurements.jsonl")
    both = final.index.intersection(before.index).intersection(pairs.index)
    t = pd.DataFrame(
        {
            "total": final.total[both],
            "before_peak": (100 * before.fraction_of_peak[both]).round(1),
            "after_peak": (100 * final.fraction_of_peak[both]).round(1),
            "pairs_speedup": (pairs.quartets_per_second[both] / before.quartets_per_second[both]),
            "speedup": (final.quartets_per_second[both] / before.quartets_per_second[both]),
        }
    ).reset_index()
    t = t.sort_values(["variant", "epilogue", "total", "cls"]).round(2)
    print("## Primitive pairs, both tiers up to total 6\n")
    print(
        "`pairs_speedup`: pair data, one double per load; `speedup`: the final kernels (pair "
        "data and Boys table rows two doubles per load); both against `../prologue_tiers`.\n"
    )
    print(t.drop(columns="kernel2").to_markdown(index=False))
    print()
    for (variant, epi), part in t.groupby(["variant", "epilogue"]):
        s = part.speedup
        print(
            f"- {variant} {epi}: {len(part)} classes, {s.min():.2f}x-{s.max():.2f}x "
            f"(median {s.median():.2f}x)"
        )
    mid = t[(t.variant == "tier1-only") & (t.epilogue == "store") & t.total.between(4, 6)]
    print(
        f"\nTier 1 store, total 4-6: {int((mid.before_peak >= 30).sum())} of {len(mid)} classes "
        f"at 30% of the peak or more before, {int((mid.after_peak >= 30).sum())} after."
    )


if __name__ == "__main__":
    main()
