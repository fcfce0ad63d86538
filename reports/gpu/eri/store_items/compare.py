"""Store launches with split quartets' items summed (``measurements.jsonl``, the second split
run; ``split_first/``, the first) against one item per quartet (``whole/``), same kernels,
Tier 1 store up to total 6, in the order split_first, whole, split.

    python compare.py > study.md
"""

import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent


def load(path: Path) -> dict[str, dict]:
    return {r["cls"]: r for r in map(json.loads, path.open())}


def main() -> None:
    split, first = load(HERE / "measurements.jsonl"), load(HERE / "split_first/measurements.jsonl")
    whole = load(HERE / "whole/measurements.jsonl")
    print("## Split store launches (items summed) against one item per quartet, H200\n")
    print("Fraction of the FP64 peak; speedup: whole seconds over the mean of the two split runs;")
    print("drift: first split run's seconds over the second's.\n")
    print("| class | total | primitive quartets (mean) | whole | split | speedup | drift |")
    print("|---|---|---|---|---|---|---|")
    speedups = []
    for cls, w in whole.items():
        s, f = split[cls], first[cls]
        speedup = w["seconds_median"] / statistics.mean([s["seconds_median"], f["seconds_median"]])
        speedups.append(speedup)
        print(f"| {cls} | {w['total']} | {w['mean_primitive_quartets']:.1f} | "
              f"{w['fraction_of_peak']:.3f} | {s['fraction_of_peak']:.3f} | {speedup:.2f}x | "
              f"{f['seconds_median'] / s['seconds_median']:.3f} |")  # fmt: skip
    print(f"\nSpeedup {min(speedups):.2f}x-{max(speedups):.2f}x, median "
          f"{statistics.median(speedups):.2f}x over {len(speedups)} classes.")  # fmt: skip


if __name__ == "__main__":
    main()
