"""Two trees' ``campaign bench`` runs, old / new / old / new in one command (``scripts/a.sh``
of each study folder): here the tiled output layout against the (k, q) layout, Tier 1 store
(total 4-6) and Tier 1 J/K through the store kernel; ``row_prefetch/`` and
``tiled_output_tier2/`` use it on their own folders.

    python compare.py [FOLDER] > FOLDER/study.md   (default FOLDER: this one)

Reads the logs ``old_1.log`` ... ``new_2.log`` in FOLDER: quartets per second and the fraction
of the FP64 peak per item; the speedup is new over old, each the mean of its two rounds; the
drift is a tree's second round over its first.
"""

import re
import statistics
import sys
from pathlib import Path

LINE = re.compile(r"(\(\S+\))\s+(\S+)\s+(\S+)\s+T\d\s+([\d.e+]+) q/s\s+([\d.]+)%")


def read(path: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(class, epilogue) -> (quartets per second, % of peak); a class's later items of the same
    epilogue (other Kernel 2 forms, in plan order) get ``#2``, ``#3`` ... after the epilogue."""
    out = {}
    for line in path.read_text().splitlines():
        if m := LINE.match(line):
            key, n = (m.group(1), m.group(3)), 1
            while key in out:
                n += 1
                key = (m.group(1), f"{m.group(3)} #{n}")
            out[key] = (float(m.group(4)), float(m.group(5)))
    return out


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    old = [read(folder / "old_1.log"), read(folder / "old_2.log")]
    new = [read(folder / "new_1.log"), read(folder / "new_2.log")]
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
