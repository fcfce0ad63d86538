"""The prologue change against the kernels before it, Tier 1 (tier1-only), every class up to
total 6: store epilogue and fused J/K epilogue, quartets per second and fraction of the FP64
peak (``measurements.jsonl`` against ``../primitive_order/measurements.jsonl``; two runs on two
machines, each fraction against the peak measured in its own process).

    python compare.py > study.md
"""

import json
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent


def tier1(path: Path) -> pd.DataFrame:
    rows = pd.DataFrame([json.loads(line) for line in path.open()])
    rows = rows[(rows.variant == "tier1-only") & rows.quartets_per_second.notna()]
    rows = rows[rows.kernel2.fillna("").isin(["", "fused"])]
    return rows.set_index(["cls", "epilogue"])


def main() -> None:
    new, old = (
        tier1(HERE / "measurements.jsonl"),
        tier1(HERE.parent / "primitive_order" / "measurements.jsonl"),
    )
    both = new.index.intersection(old.index)
    t = pd.DataFrame(
        {
            "total": new.total[both],
            "before_peak": (100 * old.fraction_of_peak[both]).round(1),
            "after_peak": (100 * new.fraction_of_peak[both]).round(1),
            "speedup": (new.quartets_per_second[both] / old.quartets_per_second[both]).round(2),
        }
    ).reset_index()
    t = t.sort_values(["epilogue", "total", "cls"])
    print("## Prologue change, Tier 1 up to total 6\n")
    print(t.to_markdown(index=False))
    for epi, part in t.groupby("epilogue"):
        s = part.speedup
        print(
            f"\n{epi}: {len(part)} classes, {s.min():.2f}x-{s.max():.2f}x "
            f"(median {s.median():.2f}x)"
        )
    mid = t[(t.epilogue == "store") & t.total.between(4, 6)]
    print(
        f"\nStore, total 4-6: {int((mid.before_peak >= 30).sum())} of {len(mid)} classes at 30% "
        f"of the peak or more before, {int((mid.after_peak >= 30).sum())} after."
    )


if __name__ == "__main__":
    main()
