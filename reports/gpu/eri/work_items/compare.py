"""Launch order (most primitive quartets first) and work items (quartets over 64 primitive
quartets split into items) against the launches before them, the same kernels (tree
``d6006c1``), every class up to total 6 on the H200. ``../primitive_pairs/measurements.jsonl``:
patterns in ascending order, no items; ``measurements.jsonl``: descending order, items of at
most 64 primitive quartets in every launch (store launches summing split quartets' items with
``cupy.add.at``); ``../whole_store/measurements.jsonl``: descending order, Tier 1 store, one item
per quartet (the runtime's store launches since). Fractions of the FP64 peak against the peak
of each run's own process.

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
    before = load(HERE.parent / "primitive_pairs" / "measurements.jsonl")
    items = load(HERE / "measurements.jsonl")
    whole = load(HERE.parent / "whole_store" / "measurements.jsonl")
    both = items.index.intersection(before.index)
    t = pd.DataFrame(
        {
            "total": items.total[both],
            "before_peak": 100 * before.fraction_of_peak[both],
            "items_peak": 100 * items.fraction_of_peak[both],
            "items_speedup": items.quartets_per_second[both] / before.quartets_per_second[both],
        }
    )
    w = whole.index.intersection(both)
    t.loc[w, "whole_peak"] = 100 * whole.fraction_of_peak[w]
    t.loc[w, "whole_speedup"] = whole.quartets_per_second[w] / before.quartets_per_second[w]
    t = t.reset_index().sort_values(["variant", "epilogue", "total", "cls"]).round(2)
    print("## Launch order and work items, both tiers up to total 6\n")
    print(
        "`items_*`: most work first, items of at most 64 primitive quartets; `whole_*`: most "
        "work first, one item per quartet (Tier 1 store only); speedups over "
        "`../primitive_pairs`.\n"
    )
    print(t.drop(columns="kernel2").to_markdown(index=False))
    print()
    for (variant, epi), part in t.groupby(["variant", "epilogue"]):
        s = part.items_speedup
        print(
            f"- {variant} {epi}, items: {len(part)} classes, {s.min():.2f}x-{s.max():.2f}x "
            f"(median {s.median():.2f}x)"
        )
    st = t[t.whole_speedup.notna()]
    s = st.whole_speedup
    print(
        f"- tier1-only store, whole: {len(st)} classes, {s.min():.2f}x-{s.max():.2f}x "
        f"(median {s.median():.2f}x)"
    )
    mid = st[st.total.between(4, 6)]
    print(
        f"\nTier 1 store, total 4-6, at 30% of the peak or more: "
        f"{int((mid.before_peak >= 30).sum())} of {len(mid)} before, "
        f"{int((mid.items_peak >= 30).sum())} with items, {int((mid.whole_peak >= 30).sum())} "
        "whole."
    )


if __name__ == "__main__":
    main()
