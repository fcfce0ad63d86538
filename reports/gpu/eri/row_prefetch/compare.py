"""L1 prefetches of the pair rows (``scripts/prefetch.patch``) against none (the product of
``96a627b``): Tier 1 store (total 4-6) and Tier 1 J/K through the store kernel, two rounds of
each tree in one command (``scripts/a.sh``).

    python compare.py > study.md

Reads the ``campaign bench`` logs (``old_1.log`` ... ``new_2.log``): quartets per second and
the fraction of the FP64 peak per item; the speedup is new over old, each the mean of its two
rounds; the drift is a tree's second round over its first.
"""

import re
import statistics
from pathlib import Path

HERE = Path(__file__).parent
LINE = re.compile(r"(\(\S+\))\s+(\S+)\s+(\S+)\s+T\d\s+([\d.e+]+) q/s\s+([\d.]+)%")


def read(name: str) -> dict[tuple[str, str], tuple[float, float]]:
    out = {}
    for line in (HERE / name).read_text().splitlines():
        if m := LINE.match(line):
            out[(m.group(1), m.group(3))] = (float(m.group(4)), float(m.group(5)))
    return out


def main() -> None:
    old = [read("old_1.log"), read("old_2.log")]
    new = [read("new_1.log"), read("new_2.log")]
    print(
        "| class | epilogue | old % of peak | new % of peak | new / old | drift old | drift new |"
    )
    print("|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {}
    for key in old[0]:
        if not all(key in run for run in (*old, *new)):
            continue
        o = sum(run[key][0] for run in old) / 2
        n = sum(run[key][0] for run in new) / 2
        fo = sum(run[key][1] for run in old) / 2
        fn = sum(run[key][1] for run in new) / 2
        ratios.setdefault(key[1], []).append(n / o)
        drift_old = old[1][key][0] / old[0][key][0]
        drift_new = new[1][key][0] / new[0][key][0]
        print(f"| {key[0]} | {key[1]} | {fo:.1f} | {fn:.1f} | {n / o:.3f}x | {drift_old:.3f} | "
              f"{drift_new:.3f} |")  # fmt: skip
    print()
    for epilogue, r in ratios.items():
        print(f"- {epilogue}: {len(r)} classes, {min(r):.3f}x-{max(r):.3f}x "
              f"(median {statistics.median(r):.3f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
